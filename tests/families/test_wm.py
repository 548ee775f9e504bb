"""WinMagic (superop/families/wm.py) beyond the fixture table: TPC-DS q1/q30/q81/q6/q32/q92
lower and match as ONE instance each (the decorrelated sub-query's LEFT join sunk onto the
input it reads, q32/q92 after regrouping the outer block around the sub-query's sub-join);
the canonical form is idempotent and keeps regions it must not touch; the unbounded proof
fails without the NULL-key guard; differential runs on Spark (NULL keys, NULL measures,
groups the sub-query's own filter empties, duplicates, an empty input). TPC-DS q24a/q24b: a
HAVING compared with an uncorrelated global aggregate of the same CTE is ONE keyless instance
(the product with the aggregate's one row pushed below the GROUP BY, ``AVG(x) OVER ()``);
sub-queries that may return several rows or none, or that are nondeterministic, stay as
written."""
from __future__ import annotations

from dataclasses import replace

import pytest
from sqlglot import exp

from superop import families
from superop.families.kit import joinback
from superop.ir import Aggregate, Join, Select, lower, walk
from superop.rewrite.rewriter import Rewriter, rewrite_structural
from superop.sparkutil import bag
from superop.dsl import BUFFERING
from superop.families.instances import find, program_of
from superop.verify.template_proofs import prove_instance
from superop.workloads.tpcds import TPCDS_SCHEMA, queries

from ..runtime.runtime_fixtures import SCHEMA

# statement -> the partition key of its window (the sub-query's correlation column)
TPCDS = {"q1": ("ctr_store_sk",), "q30": ("ctr_state",), "q81": ("ctr_state",), "q6": ("i_category",),
         "q32": ("cs_item_sk",), "q92": ("ws_item_sk",)}


def test_tpcds_correlated_aggregates_are_one_winmagic_instance_each():
    for name, keys in TPCDS.items():
        found = families.scan(lower(queries()[name], TPCDS_SCHEMA).plan)
        assert [(type(f).__name__, f.family, f.join_kind) for f in found] == [("Match", "WM", "left")], name
        prog = found[0].program
        assert prog.keys == keys and prog.memory == BUFFERING and not prog.sort, name
        assert [a.func for a in prog.accumulators] == ["avg"], name


def test_the_left_join_sinks_onto_the_cte_and_the_canonical_form_is_idempotent():
    plan = lower(queries()["q1"], TPCDS_SCHEMA).plan
    canon = families.regroup(plan)
    assert canon is not plan and families.regroup(canon) is canon
    (left,) = [n for n in walk(canon) if isinstance(n, Join) and n.kind == "left"]
    # the CTE's use ctr1 is its left input now; store and customer are joined above it
    assert left.left.op == "Rename" and left.left.qualifier == "ctr1"
    assert {n.table for n in walk(left) if n.op == "Scan"} == {"store_returns", "date_dim"}


def test_q32_is_regrouped_around_the_sub_querys_sub_join():
    plan = lower(queries()["q32"], TPCDS_SCHEMA).plan
    (m,) = families.scan(plan)
    # the shared input is the sub-query's (catalog_sales ⋈ date_dim, date filter) — one node
    # read by the rows and by the aggregate; item is joined above the window
    assert m.source.op == "Select" and m.source.child.op == "Join"
    assert {n.table for n in walk(m.source) if n.op == "Scan"} == {"catalog_sales", "date_dim"}
    agg = m.branches[1].agg
    assert agg is not None and any(n is m.source for n in walk(agg))


# an outer block the sink must leave alone: its filter is nondeterministic (moving the
# LEFT join below it would evaluate rand() on other rows)
KEEP = [
    "SELECT o.a, o.s FROM ops AS o, accounts AS x WHERE x.a = o.a AND rand() < 2 "
    "AND o.s > (SELECT AVG(i.s) FROM ops AS i WHERE i.a = o.a)",
    # the ON clause reads a column of another input that nothing equates with ops's
    "SELECT o.a, o.s FROM ops AS o, accounts AS x WHERE x.a = o.a "
    "AND o.s > (SELECT AVG(i.s) FROM ops AS i WHERE i.b = x.tier)",
]


@pytest.mark.parametrize("sql", KEEP)
def test_regions_the_sink_must_not_touch(sql):
    plan = lower(sql, SCHEMA).plan
    assert families.regroup(plan) is plan
    assert not [f for f in families.scan(plan) if isinstance(f, families.Match)]


def test_the_proof_fails_without_the_null_key_guard(monkeypatch):
    """A NULL key never joins: the row compares with NULL. Without the guard the window
    would hand it the NULL group's aggregate — the template prover refutes that program."""
    inst = find("WM/left/agg-right")
    assert prove_instance(inst).status == "verified"
    monkeypatch.setattr(joinback, "keys_not_null", lambda keys: None)
    r = prove_instance(inst)
    assert r.status == "refuted", r.reason


DIFFERENTIAL = [
    # NULL-key rows get NULL, not the NULL group's average; AVG over only-NULL s (a = 5)
    "SELECT o.a, o.s, g.av FROM ops AS o LEFT JOIN (SELECT a, AVG(s) AS av FROM ops GROUP BY a) AS g ON o.a = g.a",
    "SELECT o.a, o.s FROM ops AS o WHERE o.s > (SELECT 0.8 * AVG(i.s) FROM ops AS i WHERE i.a = o.a)",
    # the sub-query's own filter empties a = 3 (every b < 0)
    "SELECT o.a, o.b, o.c FROM ops AS o WHERE o.c >= (SELECT MIN(i.c) FROM ops AS i WHERE i.a = o.a AND i.b > 0)",
    # duplicates (a = 1) count in the window as in the group
    "SELECT o.a, o.d, g.n, g.t FROM ops AS o JOIN (SELECT a, COUNT(*) AS n, SUM(s) AS t FROM ops GROUP BY a) AS g "
    "ON o.a = g.a AND o.s * g.n >= g.t",
    "WITH t AS (SELECT a, d, SUM(s) AS tot FROM ops GROUP BY a, d) SELECT t1.a, t1.d, x.region FROM t AS t1, "
    "accounts AS x WHERE t1.tot > (SELECT AVG(t2.tot) * 1.2 FROM t AS t2 WHERE t2.d = t1.d) AND x.a = t1.a",
    # HAVING against a global aggregate of the same input (TPC-DS q24): AVG(..) OVER ()
    "SELECT a, SUM(s) AS t FROM ops WHERE b > 0 GROUP BY a HAVING SUM(s) > (SELECT 0.5 * AVG(s) FROM ops)",
    "WITH t AS (SELECT a, d, c, SUM(s) AS tot FROM ops GROUP BY a, d, c) SELECT a, d, SUM(tot) AS paid FROM t "
    "WHERE c > 0 GROUP BY a, d HAVING SUM(tot) > (SELECT 0.05 * AVG(tot) FROM t)",
    # the sub-query's own filter; COUNT over no row is 0; another HAVING conjunct kept
    "SELECT a, COUNT(*) AS n FROM ops GROUP BY a HAVING COUNT(*) >= (SELECT COUNT(*) FROM ops WHERE b > 0) / 4 "
    "AND MIN(c) > 0",
    # a NULL grouping key (d) is a group; the sub-query's NULL (no row passes) keeps no group
    "SELECT d, MAX(c) AS mc FROM ops GROUP BY d HAVING MAX(c) >= (SELECT AVG(c) FROM ops WHERE a IS NOT NULL)",
    "SELECT a, SUM(s) AS t FROM ops GROUP BY a HAVING SUM(s) <> (SELECT MAX(s) FROM ops WHERE b > 1000)",
]


@pytest.mark.parametrize("sql", DIFFERENTIAL)
def test_differential_on_spark(sql, proof_catalog, tables, ops_empty, spark):
    for table in ("ops", "ops_empty"):
        q = sql.replace("FROM ops", f"FROM {table}")
        schema = ops_empty if table == "ops_empty" else tables
        r = rewrite_structural(Rewriter(proof_catalog), q, schema)
        assert r.changed and all(a.startswith("winmagic-") for a in r.applied), r.explanation
        assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(q).collect()), q


def test_tpcds_q24_is_one_keyless_winmagic_instance():
    """q24a/q24b: ``ssales`` (a 6-table join and aggregate) filtered by a colour and grouped,
    HAVING above 0.05 × the average of all of ``ssales``: one window over the whole CTE."""
    for name, colour in (("q24a", "'pale'"), ("q24b", "'chiffon'")):
        found = families.scan(lower(queries()[name], TPCDS_SCHEMA).plan)
        assert [(type(f).__name__, f.family, f.join_kind) for f in found] == [("Match", "WM", "cross")], name
        (m,) = found
        prog = m.program
        assert prog.keys == () and prog.memory == BUFFERING and not prog.sort, name
        assert [(a.func, a.guard) for a in prog.accumulators] == [("avg", None)], name
        (emit,) = prog.row_emits
        assert colour in emit.guard.sql() and emit.outputs[-1].sql() == "0.05 * acc.f1", name
        assert m.source.op == "Rename" and m.source.qualifier == "ssales"


def test_the_product_is_pushed_below_the_group_by_and_the_form_is_idempotent():
    plan = lower(queries()["q24a"], TPCDS_SCHEMA).plan
    # as lowered: the HAVING filters the product of the groups with the sub-query's one row
    (j,) = [n for n in walk(plan) if isinstance(n, Join) and n.kind == "cross"]
    assert isinstance(j.left, Aggregate) and j.left.keys and not j.right.child.keys
    canon = families.regroup(plan)
    assert canon is not plan and families.regroup(canon) is canon
    (j2,) = [n for n in walk(canon) if isinstance(n, Join) and n.kind == "cross"]
    (outer,) = [n for n in walk(canon) if isinstance(n, Aggregate) and j2 in n.children]
    assert [k.sql() for k in outer.keys] == ["ssales.c_last_name", "ssales.c_first_name", "ssales.s_store_name"]
    assert [(e.sql(), n) for e, n in outer.items][-2:] == [("SUM(ssales.netpaid)", "paid"), ("MAX(_sq1._v)", "_v")]
    assert isinstance(j2.left, Select) and j2.left.predicate.sql() == "ssales.i_color = 'pale'"


# a HAVING sub-query that is not exactly one row of a deterministic aggregate stays as written
# (a grouped one: several rows or none; a LIMIT; rand(); a plain column), and so does one
# that is not a conjunct's compared value
KEEP_SUBQUERY = [
    "SELECT a, SUM(s) AS t FROM ops GROUP BY a HAVING SUM(s) > (SELECT AVG(s) FROM ops WHERE a = 1 GROUP BY a)",
    "SELECT a, SUM(s) AS t FROM ops GROUP BY a HAVING SUM(s) > (SELECT AVG(s) FROM ops LIMIT 1)",
    "SELECT a, SUM(s) AS t FROM ops GROUP BY a HAVING SUM(s) > (SELECT AVG(s) * rand(3) FROM ops)",
    "SELECT a, SUM(s) AS t FROM ops GROUP BY a HAVING SUM(s) > (SELECT MAX(s) FROM ops WHERE a = 2 LIMIT 1)",
    "SELECT a, SUM(s) AS t FROM ops GROUP BY a HAVING SUM(s) > (SELECT s FROM ops WHERE a = 2)",
    "SELECT a, SUM(s) AS t FROM ops GROUP BY a HAVING SUM(s) > 0 OR SUM(s) < (SELECT AVG(s) FROM ops)",
]


@pytest.mark.parametrize("sql", KEEP_SUBQUERY)
def test_subqueries_that_stay_expressions(sql, proof_catalog):
    plan = lower(sql, SCHEMA).plan
    assert not [n for n in walk(plan) if isinstance(n, Join)]
    (sel,) = [n for n in walk(plan) if isinstance(n, Select)]
    assert sel.predicate.find(exp.Subquery) is not None
    r = rewrite_structural(Rewriter(proof_catalog), sql, SCHEMA)
    assert not r.changed and r.sql == sql


def test_a_global_aggregate_of_another_table_is_a_product_but_no_instance(proof_catalog):
    sql = "SELECT a, SUM(s) AS t FROM ops GROUP BY a HAVING SUM(s) > (SELECT AVG(tier) FROM accounts)"
    plan = lower(sql, SCHEMA).plan
    assert [n.kind for n in walk(plan) if isinstance(n, Join)] == ["cross"]
    assert families.regroup(plan) is plan         # no self-join: the product stays above
    found = families.scan(plan)
    assert [(type(f).__name__, f.code) for f in found] == [("NearMiss", "different_inputs")]
    r = rewrite_structural(Rewriter(proof_catalog), sql, SCHEMA)
    assert not r.changed and r.sql == sql


def test_the_keyless_proof_fails_without_the_having_guard():
    """A HAVING above the global aggregate may drop its one row: then no row is emitted.
    The program emitting every row its own filter keeps (the HAVING's conjunct of the guard
    dropped) is refuted."""
    inst = find("WM/cross/agg-right")
    prog = program_of(inst)
    assert prove_instance(inst).status == "verified"
    (emit,) = prog.row_emits
    assert "q1(" in emit.guard.expression.sql().lower()
    mutant = replace(prog, row_emits=(replace(emit, guard=emit.guard.this),))
    r = prove_instance(inst, program=mutant)
    assert r.status == "refuted", r.reason


def test_a_global_outer_aggregate_is_a_product_of_global_aggregates(proof_catalog, tables, spark):
    """Without GROUP BY the product stays above the aggregates (the push needs keys): two
    global aggregates of ops cross-joined, the global-aggregate diamond."""
    sql = "SELECT SUM(s) AS t FROM ops HAVING SUM(s) > (SELECT 0.5 * AVG(s) FROM ops WHERE b > 0)"
    plan = lower(sql, SCHEMA).plan
    assert families.regroup(plan) is plan
    r = rewrite_structural(Rewriter(proof_catalog), sql, SCHEMA)
    assert r.applied == ["global-aggregate-diamond-2way"], r.explanation
    assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(sql).collect())


def test_a_cached_decision_renders_the_window_for_new_literals(spark, tables, twin_catalog):
    """q24a and q24b are one template (the colour is a literal): the decision made for one
    serves the other, re-generated on the canonical plan the decision was made on — the
    window form, as a fresh decision writes it, not the product as lowered."""
    from superop.runtime import SuperOpSession
    q = ("WITH t AS (SELECT a, d, c, SUM(s) AS tot FROM ops GROUP BY a, d, c) SELECT a, d, SUM(tot) AS paid "
         "FROM t WHERE d = 'x' GROUP BY a, d HAVING SUM(tot) > (SELECT 0.05 * AVG(tot) FROM t)")
    so = SuperOpSession(spark, twin_catalog, gate="exchanges")
    fresh = SuperOpSession(spark, twin_catalog, gate=False, cache=False)
    r1 = so.rewrite(q)
    assert r1.changed and r1.applied == ["winmagic-cross"] and "OVER ()" in r1.sql, r1.explanation
    for d in ("y", "z"):
        qd = q.replace("d = 'x'", f"d = '{d}'")
        r = so.rewrite(qd)
        assert r.timings_ms.get("cache_hit") == 1.0 and r.applied == ["winmagic-cross"], r.explanation
        assert r.sql == fresh.rewrite(qd).sql and "OVER ()" in r.sql
        assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(qd).collect())


# the lowered HAVING (a product above the GROUP BY) and its canonical form (the product
# pushed below where it makes a self-join) regenerate SQL that Spark runs with the
# original's rows; (query, pushed)
PUSHED = [
    ("SELECT a, SUM(s) AS t FROM ops WHERE b > 0 GROUP BY a HAVING SUM(s) > (SELECT 0.5 * AVG(s) FROM ops)", True),
    ("SELECT d, COUNT(*) AS n FROM ops GROUP BY d HAVING COUNT(*) >= (SELECT COUNT(*) FROM ops WHERE c > 0) / 3",
     True),
    ("SELECT a, SUM(s) AS t FROM ops GROUP BY a HAVING SUM(s) > (SELECT AVG(tier) FROM accounts)", False),
    # written as a join: the WHERE relating both sides is its condition, not a product
    ("SELECT x.a, x.t, y.m FROM (SELECT a, SUM(s) AS t FROM ops GROUP BY a) AS x "
     "CROSS JOIN (SELECT MIN(s) AS m FROM ops WHERE b > 0) AS y WHERE x.t >= y.m", False),
]


@pytest.mark.parametrize("sql,pushed", PUSHED)
def test_lowered_and_canonical_forms_run_with_the_original_rows(sql, pushed, tables, ops_empty, spark):
    from superop.ir import to_sql
    for table in ("ops", "ops_empty"):
        q = sql.replace("FROM ops", f"FROM {table}")
        plan = lower(q, ops_empty if table == "ops_empty" else tables).plan
        want = bag(spark.sql(q).collect())
        assert bag(spark.sql(to_sql(plan)).collect()) == want, q
        assert bag(spark.sql(to_sql(families.regroup(plan))).collect()) == want, q
    canon = families.regroup(lower(sql, tables).plan)
    below = [n for n in walk(canon) if isinstance(n, Aggregate) and any(isinstance(c, Join) for c in n.children)]
    assert bool(below) == pushed
