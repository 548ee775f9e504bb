"""Generalization, catalog diff and the Markdown report (no Spark needed)."""
from __future__ import annotations

import random
from dataclasses import replace

from superop import families
from superop.families import Side, build_program, first_match
from superop.ir import lower
from superop.rules_out.catalog import make_catalog, validate
from superop.rules_out.diff import diff, format_diff
from superop.rules_out.generalize import Pattern, edges_of, generalize, rule_id
from superop.rules_out.report import draw_tree, to_markdown

S = {"ops": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"}}

DU_PLAIN = ("SELECT a, COUNT(*) AS n FROM ops WHERE s < 100 GROUP BY a "
            "UNION ALL SELECT a, COUNT(*) FROM ops WHERE s >= 100 GROUP BY a")
DU_RHO = ("SELECT k, v FROM (SELECT a AS k, v FROM (SELECT a, SUM(b) AS v FROM ops GROUP BY a) z) q WHERE v > 3 "
          "UNION ALL SELECT a, MAX(c) FROM (SELECT a, c * 2 AS c FROM ops) p GROUP BY a")
DU_3WAY = ("SELECT a, COUNT(*) AS n FROM ops GROUP BY a UNION ALL SELECT a, SUM(b) FROM ops GROUP BY a "
           "UNION ALL SELECT a, MIN(c) FROM ops WHERE d = 'read' GROUP BY a")
DJ_LEFT = ("SELECT x.a, x.sb, y.mc FROM (SELECT a, SUM(b) AS sb FROM ops WHERE s < 100 GROUP BY a) x "
           "LEFT JOIN (SELECT a AS k, mc FROM (SELECT a, MAX(c) AS mc FROM ops GROUP BY a) z) y ON x.a = y.k")
MJ_INNER = ("SELECT o.a, o.b, m.mb FROM ops o JOIN (SELECT a, MIN(b) AS mb FROM ops GROUP BY a) m "
            "ON o.a = m.a")
MJ_BUFFER = ("SELECT o.a, o.b, m.mb FROM ops o JOIN (SELECT a, MIN(b) AS mb FROM ops WHERE c > 0 "
             "GROUP BY a) m ON o.a = m.a")


def _diamond(sql):
    d = first_match(lower(sql, S).plan)
    assert d is not None, "no diamond in " + sql
    return d


def _pattern(cid, sql, verified=True, executions=10, templates=("t1",)):
    d = _diamond(sql)
    prog = build_program(d)
    cert = {"status": "verified" if verified else "unknown", "method": "bounded", "K": 4,
            "produced_by": "test", "seconds": random.random(), "checked_at": "now"}
    return Pattern(candidate_id=cid, family=d.family, shape="s-" + cid, sql=sql, edges=edges_of(d),
                   join_kind=d.join_kind, branches=len(d.branches), agg_side=d.agg_side,
                   aggregates=sorted({a.func for a in prog.accumulators}), memory=prog.memory,
                   program=prog.to_json(), pseudo_code=prog.pretty(), certificate=cert,
                   distinct_queries=len(templates), executions=executions, cost_share=0.01,
                   template_ids=list(templates))


def test_edges_of_follow_the_catalog_edge_order():
    assert edges_of(_diamond(DJ_LEFT)) == [["Select"], [], [], ["Rename"]]
    # DU: lower edges first (spool→γ), then upper edges (γ→∪)
    assert edges_of(_diamond(DU_RHO)) == [[], ["Project"], ["Select", "Rename"], []]
    mj = _diamond(MJ_INNER)
    assert mj.family == "MJ" and mj.agg_side is Side.RIGHT
    assert edges_of(mj) == [[], [], []]  # the alias o is not an operator


def test_generalize_groups_by_skeleton_and_unions_edges():
    # p6: a Min & Join whose program buffers the partition is refused; the same query (a
    # filter below the MIN) is WinMagic's, whose window reads the partition by design (p8)
    pats = [_pattern("p1", DU_PLAIN, templates=("t1", "t2")), _pattern("p2", DU_RHO, templates=("t3",)),
            _pattern("p3", DU_3WAY), _pattern("p4", DJ_LEFT), _pattern("p5", MJ_INNER),
            replace(_pattern("p6", MJ_INNER), memory="buffering"), _pattern("p7", DJ_LEFT, verified=False),
            _pattern("p8", MJ_BUFFER)]
    assert pats[-1].family == "WM" and pats[-1].memory == "buffering"
    rules, rejected = generalize(pats)
    ids = [r["id"] for r in rules]
    assert ids == ["diamond-join-left", "diamond-union-all-2way", "diamond-union-all-3way",
                   "min-join-inner", "winmagic-inner"]
    du = next(r for r in rules if r["id"] == "diamond-union-all-2way")
    assert du["support"]["patterns"] == 2 and du["support"]["distinct_queries"] == 3
    assert du["support"]["executions"] == 20
    # σ seen below branch 1 (p1), π below branch 2 (p2); σ and ρ above branch 1 (p2)
    assert [e["optional"] for e in du["abstract_edges"]] == [["Select"], ["Select", "Project"],
                                                             ["Select", "Rename"], []]
    assert du["proof"] == "bounded" and all(c["status"] == "verified" for c in du["certificates"])
    why = {r.pattern.candidate_id: r.reason for r in rejected}
    assert "buffers" in why["p6"] and "certificate" in why["p7"]
    cat = make_catalog(rules)
    validate(cat)  # schema, checksum, every certificate verified


def _proofs(sk, members):
    """Template-proof certificates as the nightly job makes them (without running Z3): what
    each proof covers comes from its family."""
    fam = families.get(sk[0])
    aggs = sorted({a for m in members for a in m.aggregates})
    return [{"status": "verified", "method": "inductive", "produced_by": "test", "template": i.name,
             "covers": i.covers.to_json()} for i in fam.proofs_for(sk, aggs)]


def test_generalize_is_deterministic_and_uses_template_proofs():
    pats = [_pattern(f"p{i}", q) for i, q in enumerate([DU_PLAIN, DU_RHO, DJ_LEFT, MJ_INNER])]
    a, _ = generalize(pats, _proofs)
    b, _ = generalize(list(reversed(pats)), _proofs)
    assert diff(make_catalog(a), make_catalog(b)) == {
        "added": [], "removed": [], "changed": {}, "unchanged": [r["id"] for r in a]}
    assert all(r["proof"] == "unbounded" and r["certificates"][0]["method"] == "inductive" for r in a)
    # a template proof covers every σ/π/ρ instantiation and every constant-state fold (no
    # COUNT(DISTINCT): the proof does not cover it, only a bounded certificate does) ...
    du = next(r for r in a if r["family"] == "DU")
    assert all(e["optional"] == ["Select", "Project", "Rename"] for e in du["abstract_edges"])
    assert "avg" in du["aggregates"] and "count_distinct" not in du["aggregates"]
    # ... but never a σ into a Min & Join's aggregate (Fig. 13); and the rule admits only the
    # function and the side its certificates cover (the member folds MIN, aggregate on the right)
    mj = next(r for r in a if r["family"] == "MJ")
    assert mj["abstract_edges"][0]["optional"] == ["Project", "Rename"]
    assert mj["aggregates"] == ["max", "min"] and mj["agg_sides"] == ["right"]    # one proof each
    # one admit per proved fold for the window form, and the same for the group-limit and
    # partition-wide forms
    assert [x["agg_side"] for x in mj["admits"] if not x.get("variant")] == ["right", "right"]
    assert {x.get("variant", "") for x in mj["admits"]} == {"", "group-limit", "partition-wide"}
    assert du["template"]["parameters"]["edges_seen"][0] == ["Select"]
    # every admitted record lies inside some certificate's covers
    for r in a:
        covers = [families.Covers.from_json(c["covers"]) for c in r["certificates"]]
        assert all(any(c.contains(families.Covers.from_json(x)) for c in covers) for x in r["admits"])


def test_bounded_rule_admits_the_union_of_its_patterns_not_their_product():
    # two bounded patterns: σ below branch 1 in one, π below branch 2 in the other; the
    # rule admits each, not an instance with both (no certificate covers that)
    only_sigma = ("SELECT a, COUNT(*) AS n FROM ops WHERE s < 100 GROUP BY a "
                  "UNION ALL SELECT a, COUNT(*) FROM ops GROUP BY a")
    only_pi = ("SELECT a, COUNT(*) AS n FROM ops GROUP BY a "
               "UNION ALL SELECT a, COUNT(*) FROM (SELECT a, b * 2 AS b2 FROM ops) p GROUP BY a")
    rules, _ = generalize([_pattern("p1", only_sigma), _pattern("p2", only_pi)])
    (du,) = rules
    assert [e["optional"] for e in du["abstract_edges"]] == [["Select"], ["Project"], [], []]
    assert sorted(x["edges"][:2] for x in du["admits"]) == [[[], ["Project"]], [["Select"], []]]


def test_diff_reports_added_removed_changed_and_ignores_timings():
    pats = [_pattern("p1", DU_PLAIN), _pattern("p2", DJ_LEFT)]
    old, _ = generalize(pats)
    new, _ = generalize([_pattern("p1", DU_PLAIN, executions=99), _pattern("p3", MJ_INNER)])
    d = diff(make_catalog(old), make_catalog(new))
    assert d["added"] == ["min-join-inner"] and d["removed"] == ["diamond-join-left"]
    assert d["changed"] == {"diamond-union-all-2way": ["support"]}
    text = format_diff(d)
    assert "+ min-join-inner" in text and "- diamond-join-left" in text and "~ diamond-union-all-2way" in text


def test_edges_from_mined_shape_strings():
    from superop.rules_out.generalize import edges_from_shape, merge_edges
    assert edges_from_shape("(ρπσ|γ|ρ, σ|γ)∪", "DU") == [["Select", "Project", "Rename"], ["Select"],
                                                        ["Rename"], []]
    assert edges_from_shape("(σ|γ, σ|γ)⟗", "DJ") == [["Select"], ["Select"], [], []]
    assert edges_from_shape("(σ|γ|σ, σπ)⋈", "MJ") == [["Select"], ["Select"], ["Select", "Project"]]
    assert edges_from_shape("(, γ)⋈", "MJ") == [[], [], []]
    assert edges_from_shape("((γ, γ)∪, γ)⋈", "DJ") is None
    assert merge_edges([["Select"], []], [["Rename"], ["Project"]]) == [["Select", "Rename"], ["Project"]]


def test_rule_ids_are_kebab_case_and_stable():
    assert rule_id(("DU", 2, None, None)) == "diamond-union-all-2way"
    assert rule_id(("DJ", 2, "full", None)) == "diamond-join-full"
    assert rule_id(("MJ", 2, "left", "left")) == "min-join-left-aggregate-first"
    assert rule_id(("MJ", 2, "left", "right")) == "min-join-left"


def test_markdown_report_draws_trees_and_examples():
    rules, _ = generalize([_pattern("p1", DJ_LEFT), _pattern("p2", MJ_INNER)])
    cat = make_catalog(rules)
    md = to_markdown(cat, after=lambda sql: "SELECT 1 -- rewritten")
    assert "### `diamond-join-left`" in md and "Spool (shared input)" in md
    assert "e1 [σ]*" in md and "e4 [ρ]*" in md
    assert "SELECT 1 -- rewritten" in md and "Verified super-operator program" in md
    tree = draw_tree(next(r for r in rules if r["family"] == "MJ"))
    assert tree.splitlines()[0].startswith("⋈ Join (inner)")
    assert "γ GroupBy (min|max)" in tree
