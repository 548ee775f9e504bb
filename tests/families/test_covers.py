"""A rule admits exactly what its certificates cover (issue 11 item 3): the MIN/MAX-side
case and a rule whose edge was widened in the JSON (checksum recomputed) are refused by
``superop verify``; the runtime admits only what the rule lists."""
from __future__ import annotations

import copy
import json

import pytest

from superop import families
from superop.cli import main
from superop.families import Covers
from superop.ir import lower
from superop.rewrite.rewriter import Rewriter, rewrite_structural
from superop.rules_out.catalog import checksum, make_catalog, make_rule
from superop.rules_out.coverage import coverage_problems
from superop.rules_out.generalize import Pattern, generalize

S = {"ops": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"}}
ALL = ["Select", "Project", "Rename"]
AGG_FIRST_MIN = ("SELECT m.a, m.mn, o.b FROM (SELECT a, MIN(b) AS mn FROM ops GROUP BY a) m "
                 "JOIN ops o ON o.a = m.a")
AGG_RIGHT_MIN = ("SELECT o.a, o.b, m.mn FROM ops o JOIN (SELECT a, MIN(b) AS mn FROM ops GROUP BY a) m "
                 "ON o.a = m.a")
AGG_FIRST_MAX = AGG_FIRST_MIN.replace("MIN(b)", "MAX(b)")
KEY_FILTER = AGG_FIRST_MIN.replace("FROM ops GROUP BY a", "FROM ops WHERE a > 1 GROUP BY a")


def test_covers_records_order_and_json():
    a = Covers.make("MJ", join_kinds=["inner"], agg_side="left", aggregates=["min"],
                    edges=[["Project", "Rename"], ALL, ALL])
    p = Covers.make("MJ", join_kinds=["inner"], agg_side="left", aggregates=["min"], edges=[[], ["Select"], []])
    assert a.contains(p) and not p.contains(a)
    assert Covers.from_json(json.loads(json.dumps(a.to_json()))) == a
    assert "aggregate on the right" in a.why_not(Covers.make("MJ", join_kinds=["inner"], agg_side="right",
                                                            aggregates=["min"], edges=[[], [], []]))
    assert "Select on an edge (e1)" in a.why_not(Covers.make("MJ", join_kinds=["inner"], agg_side="left",
                                                             aggregates=["min"], edges=[["Select"], [], []]))


def _mj_rule_from_generalize():
    """min-join-inner-aggregate-first as the nightly job builds it: a MIN member, the
    aggregate on the left, certified by the template proof for exactly that."""
    mj = families.get("MJ")
    m = families.first_match(lower(AGG_FIRST_MIN, S).plan, finished=True)
    point = mj.point(m)
    member = Pattern("c1", "MJ", "s", AGG_FIRST_MIN, [list(e) for e in point.edges], join_kind="inner",
                     agg_side=m.agg_side, aggregates=list(point.aggregates),
                     certificate={"status": "verified", "method": "bounded", "produced_by": "test"})

    def proofs(sk, members):       # only the MIN proof holds (e.g. the MAX proof timed out)
        return [{"status": "verified", "method": "inductive", "produced_by": "test",
                 "covers": i.covers.to_json()} for i in mj.proofs_for(sk, ["min"])
                if i.covers.aggregates == ("min",)]
    (rule,), _ = generalize([member], proofs)
    return rule


def test_generalized_rule_admits_one_function_and_one_side():
    rule = _mj_rule_from_generalize()
    assert rule["id"] == "min-join-inner-aggregate-first"
    assert rule["agg_sides"] == ["left"] and rule["aggregates"] == ["min"]
    rw = Rewriter(make_catalog([rule]))
    assert rewrite_structural(rw, AGG_FIRST_MIN, S).applied == [rule["id"]]
    # the case: the rule was applied to an aggregate-right query; and to MAX
    for q, why in ((AGG_RIGHT_MIN, "aggregate on the right"), (AGG_FIRST_MAX, "aggregates ['max']")):
        r = rewrite_structural(rw, q, S)
        assert not r.changed and why in r.explanation, r.explanation


@pytest.fixture(scope="module")
def certified_catalog(tmp_path_factory):
    """A real catalog: the MJ inner aggregate-first MIN rule with its template proof and a
    bounded certificate of one instance (both re-checked by superop verify)."""
    from superop.verify.certify import check_and_certify, prove_and_certify
    mj = families.get("MJ")
    (inst,) = [i for i in mj.proofs_for(("MJ", 2, "inner", "left"))
               if i.covers.aggregates == ("min",) and not i.covers.variant]
    proof = prove_and_certify(inst)
    bounded = check_and_certify(AGG_FIRST_MIN, S, K=2)      # the runtime's program, its own covers
    admits = [inst.covers]
    rule = make_rule("MJ", rule_id="min-join-inner-aggregate-first", join_kinds=["inner"], agg_sides=["left"],
                     edges=[["Project", "Rename"], ALL, ALL], aggregates=["min"], admits=admits,
                     certificates=[proof, bounded])
    path = tmp_path_factory.mktemp("covers") / "catalog.json"
    path.write_text(json.dumps(make_catalog([rule])))
    return path


def _rewrite(path, edit):
    cat = json.loads(path.read_text())
    edit(cat["rules"][0])
    cat["checksum"] = checksum(cat["rules"])       # anyone can recompute the checksum
    out = path.with_name(f"edited-{len(list(path.parent.iterdir()))}.json")
    out.write_text(json.dumps(cat))
    return out, cat


def test_the_min_max_side_widening_is_not_covered(certified_catalog):
    rule = json.loads(certified_catalog.read_text())["rules"][0]
    assert coverage_problems(rule) == []
    wide = copy.deepcopy(rule)          # an old-style rule: both sides, MIN and MAX
    del wide["admits"]
    wide["agg_sides"], wide["aggregates"] = ["left", "right"], ["min", "max"]
    probs = coverage_problems(wide)
    assert any("aggregate right" in p for p in probs) and any("{max}" in p for p in probs), probs


def test_verify_accepts_the_covered_rule(certified_catalog, capsys):
    assert main(["verify", "--catalog", str(certified_catalog)]) == 0
    capsys.readouterr()


def test_verify_refuses_an_edge_widened_in_the_json(certified_catalog, capsys):
    # MJ edge e1 (Spool -> γ) admitting Select: no proof covers a σ into the MIN (Fig. 13)
    def widen_listed(r):
        r["abstract_edges"][0]["optional"] = ALL
    path, cat = _rewrite(certified_catalog, widen_listed)
    assert main(["verify", "--catalog", str(path)]) == 1
    assert "edge e1 lists ['Select', 'Project', 'Rename'] but the rule admits ['Project', 'Rename']" \
        in capsys.readouterr().out
    # the runtime matches against what the rule admits, so the listed edge changes nothing
    r = rewrite_structural(Rewriter(cat), KEY_FILTER, S)
    assert not r.changed and "Select on an edge (e1)" in r.explanation

    def widen_admits(r):
        widen_listed(r)
        r["admits"][0]["edges"][0] = ALL
    path, _ = _rewrite(certified_catalog, widen_admits)
    assert main(["verify", "--catalog", str(path)]) == 1
    out = capsys.readouterr().out
    assert "FAILS" in out and "which no certificate covers" in out and "e1[Select,Project,Rename]" in out

    def widen_everything(r):                 # ... and the certificate's covers record too
        widen_admits(r)
        r["certificates"][0]["covers"]["edges"][0] = ALL
    path, _ = _rewrite(certified_catalog, widen_everything)
    assert main(["verify", "--catalog", str(path)]) == 1
    assert "but its inputs prove" in capsys.readouterr().out


def test_verify_refuses_the_min_max_side_widening(certified_catalog, capsys):
    def both(r):
        r["agg_sides"], r["aggregates"] = ["left", "right"], ["min", "max"]
        for a in r["admits"]:
            a["aggregates"] = ["max", "min"]
        r["admits"].append(dict(r["admits"][0], agg_side="right"))
    path, _ = _rewrite(certified_catalog, both)
    assert main(["verify", "--catalog", str(path)]) == 1
    out = capsys.readouterr().out
    assert "aggregate right" in out and "{max}" in out
