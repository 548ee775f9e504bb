"""The nightly job's bound fallback: after a Z3 timeout at K rows the candidate is checked
again with fewer rows (down to ``min_bound``); the verdict records the bound it holds for,
and a timeout at every bound stays "unknown"."""
from __future__ import annotations

from superop.pipeline.candidates import bounds, synthesize_at_bounds, timed_out
from superop.pipeline.certificates import bounded_certificate
from superop.pipeline.records import OutcomeStatus
from superop.synth.result import UNKNOWN, SynthResult
from superop.synth.synthesizer import synthesize as real_synthesize

from .test_records import ROW, S


def _times_out_above(limit: int, calls: list[int]):
    def synth(plan, **kw):
        calls.append(kw["K"])
        if kw["K"] > limit:
            return SynthResult(UNKNOWN, reason="Z3 unknown: solver: timeout", checked_by="z3",
                               verifier={"status": "unknown", "method": "bounded", "K": kw["K"],
                                         "reason": "solver: timeout"})
        return real_synthesize(plan, **kw)
    return synth


def test_bounds_and_timeouts():
    assert bounds(4, 3) == [4, 3] and bounds(4, 4) == [4] and bounds(3, 5) == [3]
    assert timed_out({"status": "unknown", "reason": "solver: timeout"})
    assert not timed_out({"status": "unknown", "reason": "nonlinear"})
    assert not timed_out({"status": "refuted", "reason": "timeout"}) and not timed_out(None)


def test_a_timeout_is_retried_with_fewer_rows_and_the_bound_is_recorded():
    calls: list[int] = []
    o = synthesize_at_bounds(ROW, S, [3, 2], 60, 20, _times_out_above(2, calls))
    assert calls == [3, 2]
    assert o.status is OutcomeStatus.VERIFIED and o.verifier["K"] == 2, o.reason
    assert "timed out at K=3" in o.reason
    cert = bounded_certificate(o, S, K=3, verify_timeout_s=20, min_bound=2)
    assert cert is not None and cert["status"] == "verified" and cert["K"] == 2   # never above


def test_a_timeout_at_every_bound_stays_unknown():
    calls: list[int] = []
    o = synthesize_at_bounds(ROW, S, [3, 2], 60, 20, _times_out_above(1, calls))
    assert calls == [3, 2] and o.status is OutcomeStatus.UNKNOWN and not o.verified
    assert bounded_certificate(o, S, K=3, verify_timeout_s=20) is None


def test_no_retry_without_a_timeout():
    calls: list[int] = []
    o = synthesize_at_bounds(ROW, S, [2, 1], 60, 20, _times_out_above(9, calls))
    assert calls == [2] and o.status is OutcomeStatus.VERIFIED
