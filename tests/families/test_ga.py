"""Global-aggregate diamonds (superop/families/ga.py) beyond the fixture table: one match per
cross-join chain (TPC-DS q28/q88/q90, where q88's 4-table join is ONE shared node), the
keyless program's one partition over an empty input, differential runs through
SuperOpSession (NULLs, duplicates, COUNT(DISTINCT), empty filters, a HAVING that empties
the product, a partial expression under a branch's filter) and Spark's physical plan of
the rewrite (one scan, one aggregate)."""
from __future__ import annotations

import pytest

from superop import families
from superop.dsl.interpreter import run_program_rows
from superop.ir import lower
from superop.ir.nodes import Join, Scan, Select, walk
from superop.rules_out.catalog import make_catalog
from superop.rules_out.trust import recheck_locally
from superop.runtime import SuperOpSession
from superop.sparkutil import bag
from superop.workloads.tpcds import TPCDS_SCHEMA, queries

from ..runtime.runtime_fixtures import SCHEMA
from .conftest import bounded_rules

GA_QUERIES = [
    # NULLs, duplicates, count distinct, avg over NULLs
    "SELECT * FROM (SELECT COUNT(*) AS n, COUNT(DISTINCT b) AS cd, AVG(c) AS av FROM {t} WHERE s > 2) AS x, "
    "(SELECT SUM(s) AS t, COUNT(c) AS nc FROM {t} WHERE d = 'x') AS y",
    # every filter rejects every row: one row, counts 0, the rest NULL
    "SELECT * FROM (SELECT COUNT(*) AS n, SUM(s) AS t FROM {t} WHERE a > 100) AS x CROSS JOIN "
    "(SELECT MIN(b) AS mn FROM {t} WHERE b > 100) AS y "
    "JOIN (SELECT COUNT(DISTINCT d) AS cd FROM {t} WHERE c > 100) AS z ON TRUE",
    # a HAVING that drops its branch's row empties the product
    "SELECT x.n, y.t FROM (SELECT COUNT(*) AS n FROM {t} WHERE a = 1) AS x, "
    "(SELECT SUM(s) AS t FROM {t} WHERE a = 2 HAVING SUM(s) > 1000) AS y",
    # a partial expression under its branch's filter (ANSI: 10 / 0 would raise)
    "SELECT * FROM (SELECT SUM(10 / b) AS q FROM {t} WHERE b <> 0) AS x, "
    "(SELECT COUNT(*) AS n FROM {t} WHERE b = 0) AS y",
]


def test_one_match_per_cross_join_chain_in_tpcds():
    for name, n in (("q28", 6), ("q88", 8), ("q90", 2)):
        plan = lower(queries()[name], TPCDS_SCHEMA).plan
        found = families.scan(plan)
        assert [(type(f).__name__, f.family) for f in found] == [("Match", "GA")], name
        m = found[0]
        assert len(m.branches) == n and m.program is not None and m.program.keys == ()
        joins = [j for j in walk(plan) if isinstance(j, Join) and j.kind in ("cross", "inner")
                 and any(j is x for x in m.interior_nodes())]
        assert len(joins) == n - 1, name                 # the whole chain is ONE match
        if name in ("q88", "q90"):
            # the shared multi-table join is ONE node below every branch; each branch's
            # time filter is a σ above it (the branch's lower edge)
            assert isinstance(m.source, Join)
            assert all(isinstance(b.lower.ops[0], Select) for b in m.branches)


def test_q9_scalar_subqueries_are_one_match_of_five_branches():
    """q9's fifteen scalar sub-queries over store_sales: three per quantity bucket with the
    same WHERE share one aggregate, the five aggregates are one product below the block."""
    plan = lower(queries()["q9"], TPCDS_SCHEMA).plan
    found = families.scan(plan)
    assert [(type(f).__name__, f.family) for f in found] == [("NearMiss", "GA"), ("Match", "GA")]
    assert found[0].code == "mixed_join_inputs"        # the product with `reason` itself
    m = found[1]
    assert len(m.branches) == 5 and isinstance(m.source, Scan) and m.source.table == "store_sales"
    assert [len(b.agg.items) for b in m.branches] == [3] * 5


def test_the_keyless_partition_exists_over_an_empty_input():
    m = families.first_match(lower(GA_QUERIES[0].format(t="ops"), SCHEMA).plan, finished=True)
    out = run_program_rows(m.program, [c for c in m.source.names], [])
    assert out == [(0, 0, None, None, 0)]


@pytest.fixture(scope="module")
def ga_session(spark, ops_empty):
    schema = ops_empty
    sqls = [q.format(t=t) for q in GA_QUERIES for t in ("ops", "ops_empty")]
    return SuperOpSession(spark, recheck_locally(make_catalog(bounded_rules(sqls=sqls, schema=schema))))


@pytest.mark.parametrize("table", ["ops", "ops_empty"])
@pytest.mark.parametrize("i", range(len(GA_QUERIES)))
def test_rewritten_returns_the_original_rows(spark, ga_session, i, table):
    q = GA_QUERIES[i].format(t=table)
    r = ga_session.rewrite(q)
    assert r.changed and r.applied[0].startswith("global-aggregate-diamond-"), r.explanation
    assert r.exchanges_after < r.exchanges_before
    want = bag(spark.sql(q).collect())
    assert bag(spark.sql(r.sql).collect()) == want
    if i != 2:
        assert sum(want.values()) == 1                    # one row, even over no input


def test_physical_plan_one_scan_one_aggregate(spark, tables, tmp_path):
    spark.table("ops").write.parquet(str(tmp_path / "ops_pq"))
    spark.read.parquet(str(tmp_path / "ops_pq")).createOrReplaceTempView("ops_pq")
    q = ("SELECT * FROM (SELECT COUNT(*) AS n FROM ops_pq WHERE b > 1) AS x, (SELECT SUM(s) AS t FROM ops_pq "
         "WHERE c = 2) AS y, (SELECT COUNT(DISTINCT d) AS cd FROM ops_pq WHERE s < 5) AS z")
    schema = dict(SCHEMA, ops_pq=SCHEMA["ops"])
    so = SuperOpSession(spark, recheck_locally(make_catalog(bounded_rules(sqls=[q], schema=schema))))
    text = so.explain(q)
    after = text.split("== physical plan after ==")[1].split("== rewritten SQL ==")[0]
    before = text.split("== physical plan before ==")[1].split("== physical plan after ==")[0]
    assert before.count("FileScan") == 3 and after.count("FileScan") == 1
    # one aggregate: its partial and final halves, no aggregate per branch
    aggs = [ln for ln in after.splitlines() if "Aggregate(" in ln or "HashAggregate" in ln]
    assert len(aggs) == 2, after
    # the branches' filters reach the one scan as OR (pushed down)
    assert "Or(" in after.split("FileScan")[1].split("PushedFilters:")[1].split("]")[0]
    r = so.rewrite(q)
    assert (r.exchanges_before, r.exchanges_after) == (4, 1), r.explanation
    assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(q).collect())


@pytest.mark.parametrize("name", ["q28", "q88", "q90", "q47", "q57"])
def test_a_mined_sub_plan_re_lowers_to_the_same_match(name):
    """Mining records a match's sub-plan as SQL and the nightly synthesizes from that text:
    a shared join / ranked view is ONE CTE and re-lowers to the same instance and program."""
    from superop.ir import to_sql
    m = families.first_match(lower(queries()[name], TPCDS_SCHEMA).plan, finished=True)
    assert m is not None and m.program is not None
    again = families.first_match(lower(to_sql(m.root), TPCDS_SCHEMA).plan, finished=True)
    assert again is not None and again.family == m.family and again.program == m.program
