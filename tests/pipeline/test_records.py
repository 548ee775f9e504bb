"""The nightly job's typed records: a mined candidate from its parquet row, and the
synthesis outcome as it is written to synthesis.json."""
from __future__ import annotations

import json

from superop.pipeline.candidates import synthesize_candidate
from superop.pipeline.records import MinedCandidate, Outcome, OutcomeStatus

ROW = {"candidate_id": "DJ-1", "family": "DJ", "join_kind": "anti", "shape": "(γ, σ|γ)▷",
       "example_sql": "SELECT l.a, l.n FROM (SELECT a, COUNT(*) AS n FROM ops GROUP BY a) AS l LEFT ANTI JOIN "
                      "(SELECT a, MAX(b) AS m FROM ops WHERE c > 0 GROUP BY a) AS r ON l.a = r.a",
       "templates": 3, "executions": 12, "cost_share": 0.25, "template_ids": ["t1", "t2"], "extra": 1}
S = {"ops": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"}}


def test_mined_candidate_from_a_parquet_row():
    c = MinedCandidate.from_row(ROW)
    assert (c.candidate_id, c.join_kind, c.templates, c.template_ids) == ("DJ-1", "anti", 3, ("t1", "t2"))


def test_outcome_json_keeps_the_file_format():
    o = Outcome("DJ-1", "DJ", "s", "SELECT 1", status=OutcomeStatus.NO_PROGRAM, reason="r")
    d = json.loads(json.dumps(o.to_json()))
    assert d["status"] == "no_program" and d["reason"] == "r" and "program" not in d
    assert not o.verified and OutcomeStatus.CRASHED == "crashed"


def test_a_synthesized_anti_diamond_join_is_an_instance_with_its_point():
    """The anti-DJ of issue 11 goes through the nightly job's synthesis step as an
    instance: verified, with the family's point of the certified SQL recorded."""
    o = synthesize_candidate(ROW, S, K=2, synth_timeout_s=60, verify_timeout_s=20)
    assert o.status is OutcomeStatus.VERIFIED, o.reason
    assert (o.family, o.join_kind, o.branches, o.agg_side) == ("DJ", "anti", 2, None)
    assert o.edges == [[], ["Select"], [], []] and o.aggregates == ["count_star", "max"]
    assert o.support is not None and o.support.join_kind_mined == "anti"


def test_a_crash_is_an_outcome():
    def boom(plan, **kw):
        raise RuntimeError("no")
    o = synthesize_candidate(ROW, S, K=2, synth_timeout_s=5, verify_timeout_s=5, synth_fn=boom)
    assert o.status is OutcomeStatus.CRASHED and "RuntimeError: no" in o.reason and o.traceback
