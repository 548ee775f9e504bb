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


def _recording(calls: list, times_out_parametric: bool):
    """check_and_certify that records (parametric?, K, timeout) and times out on the
    parametric form when told to (the instance itself goes to the real verifier)."""
    from superop.ir.parameters import PLACEHOLDER
    from superop.verify.certify import check_and_certify as real

    def check(sql, schema, **kw):
        par = bool(PLACEHOLDER.search(sql))
        calls.append((par, kw["K"], kw["timeout_ms"]))
        if par and times_out_parametric:
            return {"status": "unknown", "reason": "solver: timeout", "K": kw["K"]}
        return real(sql, schema, **kw)
    return check


DJ_LIT = ("SELECT x.a, x.t, y.n FROM (SELECT a, sum(s) AS t FROM ops WHERE b > 0 GROUP BY a) x "
          "JOIN (SELECT a, count(*) AS n FROM ops WHERE c < 3 GROUP BY a) y ON x.a = y.a")


def test_the_parametric_form_is_checked_once_at_the_cover_bound_with_its_own_limit(monkeypatch):
    """Below the runtime's cover bound a certificate covers nothing, so the parametric form
    is not lowered after a timeout (nor tried when K is below it); it gets its own time
    limit; one proof serves every instance of the form in the run (``made``)."""
    import superop.pipeline.certificates as certs
    calls: list = []
    monkeypatch.setattr(certs, "check_and_certify", _recording(calls, times_out_parametric=True))
    schema = {"ops": {"a": "int", "b": "int", "c": "int", "d": "int", "s": "int"}}
    cert = certs.certify_instance(DJ_LIT, schema, K=4, verify_timeout_s=20, min_bound=3,
                                  parametric_timeout_s=90)
    assert calls == [(True, 4, 90000), (False, 4, 20000)]
    assert cert is not None and cert["status"] == "verified" and cert["K"] == 4
    calls.clear()
    certs.certify_instance(DJ_LIT, schema, K=3, verify_timeout_s=20, min_bound=3, parametric_timeout_s=90)
    assert calls == [(False, 3, 20000)]
    # a verified parametric certificate is made once and serves another literal's instance
    calls.clear()
    monkeypatch.setattr(certs, "check_and_certify", _recording(calls, times_out_parametric=False))
    made: dict = {}
    first = certs.certify_instance(DJ_LIT, schema, K=4, verify_timeout_s=20, made=made)
    second = certs.certify_instance(DJ_LIT.replace("b > 0", "b > 7"), schema, K=4, verify_timeout_s=20, made=made)
    assert calls == [(True, 4, 20000)]
    assert first is second and first["status"] == "verified" and len(made) == 1


def test_below_the_cover_bound_the_job_tries_its_own_bound_again(monkeypatch):
    """Synthesis verified at 3 rows after a timeout at 4 (e.g. on a busy machine): a K=3
    certificate covers nothing at run time, so the certificate stage tries K=4 again — the
    parametric form with its own limit, then the instance, down to min_bound only after
    another timeout. A bound synthesis reached at or above the cover bound is kept."""
    import superop.pipeline.certificates as certs
    calls: list = []
    monkeypatch.setattr(certs, "check_and_certify", _recording(calls, times_out_parametric=False))
    schema = {"ops": {"a": "int", "b": "int", "c": "int", "d": "int", "s": "int"}}
    o = synthesize_at_bounds(ROW, S, [4, 3], 60, 20, _times_out_above(3, []))
    assert o.verifier["K"] == 3
    assert certs.certificate_bound(o, 4) == 4 and certs.certificate_bound(o, 3) == 3
    o4 = synthesize_at_bounds(ROW, S, [4], 60, 20, _times_out_above(9, []))
    assert o4.verifier["K"] == 4 and certs.certificate_bound(o4, 5) == 4
    cert = certs.certify_instance(DJ_LIT, schema, K=certs.certificate_bound(o, 4), verify_timeout_s=20,
                                  parametric_timeout_s=90)
    assert calls == [(True, 4, 90000)] and cert is not None and cert["K"] == 4

