"""Unbounded proofs of the programs the template builder returns for the symbolic
instances (superop.verify.instances), through the shared encoders; mutations of the
templates (a guard removed, a flag dropped, an emission swapped, outputs evaluated
eagerly, the MJ sort reversed) fail an obligation."""
from __future__ import annotations

from dataclasses import replace

import pytest

from superop.synth import templates
from superop.synth.dsl import PartitionEmit, SortKey, e
from superop.verify.instances import INSTANCES, all_instances, find, program_of
from superop.verify.program_encoder import EAGER
from superop.verify.template_proofs import prove_instance, prove_template

# The Min & Join variants whose aggregate side is emitted alone (outer-preserved, or the
# left side of a semi/anti join) fold the flag "some row matched" with the join's residual
# evaluated on EVERY row that passes the row edge, also rows of keys whose group the HAVING
# drops. In the query as written the residual is evaluated only on pairs with a group, so
# under ANSI the program can raise where the query cannot: fold.step fails. (Spark's
# optimizer infers the residual as a filter on the row side and pushes it down for
# left/right/semi/anti joins, so there the query raises too; for FULL joins it does not —
# replayed on Spark below.) Every other instance is proved.
MJ_FLAG_BUG = {f"MJ/{k}/agg-{s}/{f}" for k, s in (("left", "left"), ("right", "right"), ("full", "left"),
                                                  ("full", "right"), ("semi", "left"), ("anti", "left"))
               for f in ("min", "max")}


@pytest.fixture(scope="session")
def proofs():
    return {inst.id: prove_instance(inst) for inst in all_instances()}


def test_every_instance_is_covered_and_decided(proofs):
    assert len(proofs) == 2 + 6 + 24
    for iid, r in proofs.items():
        obs = r.details["obligations"]
        assert r.method == "inductive" and r.K is None and obs, iid
        assert all(o["status"] in ("proved", "failed") for o in obs), (iid, obs)   # never "unknown" here
        want = "refuted" if iid in MJ_FLAG_BUG else "verified"
        assert r.status == want, (iid, r.reason)
        names = {o["name"] for o in obs}
        assert {"fold.base", "fold.step"} <= names
        if iid.startswith("MJ"):
            assert {"locality", "emit.partition", "emit.row"} <= names
        else:
            assert "emit" in names and (("locality" in names) == iid.startswith("DJ"))
        if iid in MJ_FLAG_BUG:
            assert [o["name"] for o in obs if o["status"] == "failed"] == ["fold.step"], iid


def test_streaming_min_max_uses_the_sorted_prefix_lemma(proofs):
    for iid in ("MJ/inner/agg-left/min", "MJ/left/agg-right/max", "MJ/anti/agg-right/min"):
        obs = {o["name"]: o for o in proofs[iid].details["obligations"]}
        assert obs["running.step"]["status"] == "proved"
        assert ("ASC" if iid.endswith("min") else "DESC") in obs["running.step"]["text"]


def test_the_program_proved_is_the_template_builders(proofs):
    from superop.verify.certificate import program_sha256
    for iid in ("DU/3", "DJ/full", "MJ/right/agg-left/max"):
        d = proofs[iid].details
        assert d["program"] == program_of(INSTANCES[iid]).to_json()
        assert d["program_sha256"] == program_sha256(program_of(INSTANCES[iid]))
        assert d["covers"]["family"] == iid[:2]


def test_covers_records():
    du = find("DU", branches=3).covers()
    assert du == {"family": "DU", "join_kinds": [], "branches": 3, "agg_side": None,
                  "aggregates": ["avg", "count", "count_star", "max", "min", "sum"],
                  "edges": [["Select", "Project", "Rename"]] * 6}
    mj = find("MJ", join_kind="semi", agg_left=False, func="max").covers()
    assert mj["agg_side"] == "right" and mj["aggregates"] == ["max"] and mj["join_kinds"] == ["semi"]
    assert mj["edges"][0] == ["Project", "Rename"]        # no σ into a streaming MIN/MAX


def _failed(r):
    return {o["name"] for o in r.details["obligations"] if o["status"] == "failed"}


def test_removing_the_key_not_null_guard_fails_the_proof(monkeypatch):
    monkeypatch.setattr(templates, "_keys_not_null", lambda keys: None)
    r = prove_template("DJ", join_kind="inner")
    assert r.status == "refuted" and "emit" in _failed(r)
    # ... and the bounded check of the same instance refutes it too
    from superop.verify.check import check_equivalence
    from superop.verify.instances import diamond
    inst = find("DJ", join_kind="inner")
    b = check_equivalence(diamond(inst).root, program_of(inst), K=2, functions=inst.functions)
    assert b.status == "refuted"


def test_dropping_the_emptiness_flags_fails_the_proof(monkeypatch):
    monkeypatch.setattr(templates._Accs, "flag", lambda self, guard: None)
    r = prove_template("DU", branches=2)
    assert r.status == "refuted" and "emit" in _failed(r)


def test_swapping_two_emissions_fails_the_proof():
    inst = find("DU", branches=2)
    p = program_of(inst)
    a, b = p.partition_emits
    swapped = replace(p, partition_emits=(PartitionEmit(a.guard, b.outputs), PartitionEmit(b.guard, a.outputs)))
    r = prove_instance(inst, program=swapped)
    assert r.status == "refuted" and "emit" in _failed(r)


def test_dropping_the_null_extended_emit_of_a_left_join_fails():
    inst = find("DJ", join_kind="left")
    p = program_of(inst)
    r = prove_instance(inst, program=replace(p, partition_emits=p.partition_emits[:1]))
    assert r.status == "refuted" and "emit" in _failed(r)


def test_outputs_evaluated_for_every_partition_can_raise():
    """Eager evaluation (what an array(struct(guard, outputs)) generator does): the upper
    edge's projection is evaluated for groups its predicate drops — refuted."""
    r = prove_template("DU", branches=2, emit_outputs=EAGER)
    assert r.status == "refuted" and "emit" in _failed(r)


def test_reversed_sort_fails_the_running_lemma():
    inst = find("MJ", join_kind="inner", agg_left=True, func="max")
    p = program_of(inst)
    (sk,) = p.sort
    r = prove_instance(inst, program=replace(p, sort=(SortKey(sk.column, not sk.ascending, sk.nulls_first),)))
    assert r.status == "refuted" and "running.step" in _failed(r)


def test_guarded_running_min_fails_the_running_lemma():
    """Fig. 13: a σ into the MIN makes the running value after the first row not final."""
    inst = find("MJ", join_kind="inner", agg_left=False, func="min")
    p = program_of(inst)
    (acc,) = p.accumulators
    r = prove_instance(inst, program=replace(p, accumulators=(replace(acc, guard=e("row.b > 0")),)))
    assert r.status == "refuted" and "running.step" in _failed(r)


def test_mj_flag_bug_is_real_on_a_concrete_query(spark):
    """The failing MJ obligation on a concrete query: a partial residual evaluated by the flag
    on a row whose group the HAVING drops raises in the program; Spark runs the FULL join on
    the counterexample rows (ANSI on) without an error (it pushes no residual into either
    side of a full join)."""
    from superop.synth.templates import build_program
    from superop.verify import check_equivalence
    from superop.verify.streamability import find_decomposition
    from .conftest import plan_of
    sql = ("SELECT m.a, m.mn, o.a AS oa, o.s FROM (SELECT a, min(b) AS mn FROM ops GROUP BY a HAVING min(b) > 0) m "
           "FULL JOIN (SELECT a, s FROM ops) o ON m.a = o.a AND 10 / (o.s - m.a) > 1")
    d = find_decomposition(plan_of(sql))
    r = check_equivalence(d.root, build_program(d), K=2)
    assert r.status == "refuted" and r.counterexample.program_error and not r.counterexample.plan_error
    from superop.sparkutil import bag
    from superop.verify.replay import run_sql_on_rows
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    assert bag(run_sql_on_rows(spark, sql, r.counterexample)) == bag(r.counterexample.plan_output)
