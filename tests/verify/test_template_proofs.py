"""Unbounded proofs of the programs the families' templates build for their symbolic
instances (``Family.proof_instances``), through the shared encoders; mutations of the
templates (a guard removed, a flag dropped, an emission swapped, outputs evaluated
eagerly, the MJ sort reversed, the Min & Join flag unguarded) fail an obligation."""
from __future__ import annotations

from dataclasses import replace

import pytest

from superop import families
from superop.dsl import PartitionEmit, SortKey, e
from superop.families import Covers
from superop.families.instances import all_instances, find, find_by, program_of
from superop.verify.program_encoder import EAGER
from superop.verify.result import Result
from superop.verify.template_proofs import prove_instance, prove_template

ALL = ("Select", "Project", "Rename")


@pytest.fixture(scope="session")
def proofs(instance_proofs):
    """``prove_instance`` of every instance (the run's proofs, made once: ``instance_proofs``)."""
    names = [inst.name for inst in all_instances()]
    assert set(instance_proofs) == set(names)
    return {n: Result(**{k: instance_proofs[n][k] for k in ("status", "method", "K", "seconds", "reason", "details")})
            for n in names}


def test_every_instance_is_proved(proofs):
    """Every symbolic instance every family declares is proved for every table size — all
    six families (the Min & Join variants that emit the aggregate side alone in two parts:
    without a join residual, and with one behind the group's survival)."""
    assert len(proofs) == sum(len(f.proof_instances()) for f in families.REGISTRY)
    by_family: dict[str, int] = {}
    for n in proofs:
        by_family[n.split("/")[0]] = by_family.get(n.split("/")[0], 0) + 1
    # DU/2-3 with and without COUNT(DISTINCT); GA/2-8, GA/2-3 with COUNT(DISTINCT) and GA/2-3
    # over a keyed filter join (kit.keyedfilter); DJ per
    # kind + DJ/inner/3; MJ (+ its group-limit and partition-wide forms); NB's declared
    # variants; PJ per kind (inner and left with 3 uses too); WinMagic (inner on either side,
    # the rows preserved by a left / right join, a global aggregate cross-joined on either
    # side); self EXISTS (semi / anti x five comparisons
    # and keys only x the window and grouped forms)
    assert by_family == {"DU": 4, "GA": 11, "DJ": 7, "MJ": 36 + 6 + 28, "NB": 11, "PJ": 8, "WM": 6, "EX": 24}
    for name, r in proofs.items():
        obs = r.details["obligations"]
        assert r.method == "inductive" and r.K is None and obs, name
        assert r.status == "verified" and all(o["status"] == "proved" for o in obs), (name, r.reason)
        names = {o["name"] for o in obs}
        fam = name.split("/")[0]
        if fam == "NB":
            assert "emit.row" in names and any(n.startswith("locality.") for n in names)
            continue
        assert {"fold.base", "fold.step"} <= names
        if fam in ("MJ", "WM"):
            assert {"locality", "emit.partition", "emit.row"} <= names
        elif name.startswith("EX"):      # the invariant is the claim (superop.verify.exists_proofs)
            assert names == {"fold.base", "fold.step"}
        else:
            assert "emit" in names and (("locality" in names) == (fam in ("DJ", "PJ")))
    residual = [n for n in proofs if n.endswith("/residual")]
    assert len(residual) == 12 + 8 and all(find(n).covers == find(n[:-len("/residual")]).covers for n in residual)


def test_streaming_min_max_uses_the_sorted_prefix_lemma(proofs):
    for name in ("MJ/inner/agg-left/min", "MJ/left/agg-right/max", "MJ/anti/agg-right/min"):
        obs = {o["name"]: o for o in proofs[name].details["obligations"]}
        assert obs["running.step"]["status"] == "proved"
        assert ("ASC" if name.endswith("min") else "DESC") in obs["running.step"]["text"]


def test_the_program_proved_is_the_template_builders(proofs):
    from superop.verify.certificate import program_sha256
    for name in ("DU/3", "DJ/full", "MJ/right/agg-left/max", "MJ/full/agg-left/min/residual"):
        d = proofs[name].details
        assert d["program"] == program_of(find(name)).to_json()
        assert d["program_sha256"] == program_sha256(program_of(find(name)))
        assert d["covers"] == find(name).covers.to_json()


def test_covers_records_are_the_registrys():
    du = find_by("DU", branches=3).covers
    assert du == Covers.make("DU", branches=3, aggregates=["avg", "count", "count_star", "max", "min", "sum"],
                             edges=[ALL] * 6)
    mj = find_by("MJ", join_kind="semi", agg_left=False, func="max").covers
    assert mj.agg_side == "right" and mj.aggregates == ("max",) and mj.join_kinds == ("semi",)
    assert mj.edges[0] == ("Project", "Rename")        # no σ into a streaming MIN/MAX
    # a rule of a skeleton needs every part of each record (Family.proofs_for)
    # (MIN and MAX whichever the members fold: one proof each)
    need = families.get("MJ").proofs_for(("MJ", 2, "full", "left"), ["min"])
    assert [i.name for i in need] == [f"MJ/full/agg-left/{f}{form}{part}" for f in ("min", "max")
                                      for form in ("", "/partition-wide") for part in ("", "/residual")]


def _failed(r):
    return {o["name"] for o in r.details["obligations"] if o["status"] == "failed"}


def test_removing_the_key_not_null_guard_fails_the_proof(monkeypatch):
    from superop.families.kit import program as kit_program  # DJ's join emits (join_tree_emits)
    monkeypatch.setattr(kit_program, "keys_not_null", lambda keys: None)
    r = prove_template("DJ", join_kind="inner")
    assert r.status == "refuted" and "emit" in _failed(r)
    # ... and the bounded check of the same instance refutes it too
    from superop.families.instances import match_of
    from superop.verify.check import check_equivalence
    inst = find("DJ/inner")
    b = check_equivalence(match_of(inst).root, program_of(inst), K=2, functions=inst.functions)
    assert b.status == "refuted"


def test_dropping_the_emptiness_flags_fails_the_proof(monkeypatch):
    from superop.families.kit.program import Accs
    monkeypatch.setattr(Accs, "flag", lambda self, guard: None)
    r = prove_template("DU", branches=2)
    assert r.status == "refuted" and "emit" in _failed(r)


def test_swapping_two_emissions_fails_the_proof():
    inst = find("DU/2")
    p = program_of(inst)
    a, b = p.partition_emits
    swapped = replace(p, partition_emits=(PartitionEmit(a.guard, b.outputs), PartitionEmit(b.guard, a.outputs)))
    r = prove_instance(inst, program=swapped)
    assert r.status == "refuted" and "emit" in _failed(r)


def test_dropping_the_null_extended_emit_of_a_left_join_fails():
    inst = find("DJ/left")
    p = program_of(inst)
    r = prove_instance(inst, program=replace(p, partition_emits=p.partition_emits[:1]))
    assert r.status == "refuted" and "emit" in _failed(r)


def test_outputs_evaluated_for_every_partition_can_raise():
    """Eager evaluation (what an array(struct(guard, outputs)) generator does): the upper
    edge's projection is evaluated for groups its predicate drops — refuted."""
    r = prove_template("DU", branches=2, emit_outputs=EAGER)
    assert r.status == "refuted" and "emit" in _failed(r)


def test_reversed_sort_fails_the_running_lemma():
    inst = find("MJ/inner/agg-left/max")
    p = program_of(inst)
    (sk,) = p.sort
    r = prove_instance(inst, program=replace(p, sort=(SortKey(sk.column, not sk.ascending, sk.nulls_first),)))
    assert r.status == "refuted" and "running.step" in _failed(r)


def test_guarded_running_min_fails_the_running_lemma():
    """Fig. 13: a σ into the MIN makes the running value after the first row not final."""
    inst = find("MJ/inner/agg-right/min")
    p = program_of(inst)
    (acc,) = p.accumulators
    r = prove_instance(inst, program=replace(p, accumulators=(replace(acc, guard=e("row.b > 0")),)))
    assert r.status == "refuted" and "running.step" in _failed(r)


# -- the Min & Join "some row matched" flag (the aggregate side emitted alone) ----------------
def _unguarded_flag(monkeypatch):
    """The template as it was: the flag evaluates the join residual on every row that
    passes the row edge, also rows of keys whose group the σ above γ drops."""
    from superop.families.kit import joinback
    monkeypatch.setattr(joinback, "group_survives_per_row", lambda A, b, keys: e("TRUE"))


def test_the_unguarded_residual_flag_fails_the_proof(monkeypatch):
    _unguarded_flag(monkeypatch)
    for name in ("MJ/full/agg-left/min/residual", "MJ/semi/agg-left/max/residual"):
        r = prove_instance(find(name))
        assert r.status == "refuted" and _failed(r) == {"fold.step"}, (name, r.reason)


# the FULL join of issue 11's ANSI trap: HAVING drops the group of a key whose rows make
# the residual divide by zero; Spark pushes no residual into either side of a full join,
# so the query never evaluates it there
MJ_FULL_TRAP = ("SELECT m.a, m.mn, o.a AS oa, o.s FROM (SELECT a, min(b) AS mn FROM ops GROUP BY a "
                "HAVING {having}) m FULL JOIN (SELECT a, s FROM ops) o ON m.a = o.a AND 10 / (o.s - m.a) > 1")


def test_unguarded_flag_raises_where_spark_does_not(spark, monkeypatch):
    """The bounded check refutes the unguarded program on the trap query; Spark (ANSI on)
    runs the query on the counterexample rows without an error, as the model says."""
    from superop.families import build_program
    from superop.verify.check import check_equivalence
    from superop.verify.streamability import find_match

    from .conftest import plan_of
    _unguarded_flag(monkeypatch)
    sql = MJ_FULL_TRAP.format(having="min(b) > 0")
    m = find_match(plan_of(sql))
    r = check_equivalence(m.root, build_program(m), K=2)
    assert r.status == "refuted" and r.counterexample.program_error and not r.counterexample.plan_error
    from superop.sparkutil import bag
    from superop.verify.replay import run_sql_on_rows
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    assert bag(run_sql_on_rows(spark, sql, r.counterexample)) == bag(r.counterexample.plan_output)


def test_the_template_refuses_a_residual_behind_a_filter_on_aggregates():
    from superop.families import NearMiss, scan
    from superop.families.matching import reason_codes
    from superop.families.kit.joinback import JoinBackReason

    from .conftest import plan_of
    (f,) = scan(plan_of(MJ_FULL_TRAP.format(having="min(b) > 0")))
    assert isinstance(f, NearMiss) and f.reason is JoinBackReason.RESIDUAL_BEHIND_AGGREGATE_FILTER
    assert "filter on aggregates" in f.detail
    assert reason_codes()[f.reason.value] is f.reason      # a code mining and the runtime report


def test_the_guarded_flag_verifies_on_the_trap_with_a_key_filter():
    from superop.families.coverage import match_of_plan
    from superop.verify.check import check_equivalence

    from .conftest import plan_of
    m = match_of_plan(plan_of(MJ_FULL_TRAP.format(having="a <> 2")))
    assert check_equivalence(m.root, m.program, K=3).status == "verified"


def test_no_claim_about_neighbours_or_preconditions():
    """The unbounded proof models one partition's fold, not neighbours (nb.*) nor input
    preconditions: a program with either is ``unsupported`` — neither proved nor refuted
    (the bounded check, which models both, is what certifies NB programs)."""
    from superop.dsl import Neighbour, RowNumber
    inst = find("MJ/inner/agg-left/min")
    p = program_of(inst)
    col = p.keys[0]
    with_nb = replace(p, neighbours=(Neighbour("prev", -1, e(f"row.{col}")),))
    with_req = replace(p, requires=(RowNumber(col, ()),))
    for prog, what in ((with_nb, "neighbours"), (with_req, "preconditions")):
        r = prove_instance(inst, program=prog)
        assert r.status == "unsupported" and what in r.reason, r.reason
        assert r.details["obligations"] == []
