"""Differential tests: every batch result equals the queries run alone (bags of rows,
data with NULLs and duplicates), and the trap batches are never shared wrongly.

The batches run with an eager cost model (caching costs nothing), so that everything
the planner finds sound is shared — the traps must hold even then."""
from __future__ import annotations

import pytest

from superop.share import run_batch
from superop.share.estimate import CostModel

from .conftest import assert_same_results

EAGER = CostModel(write_factor=0.0, read_factor=0.0, fill_fixed=0.0)   # caching is free: share
BUDGET = 10 ** 9


def run(spark, sqls):
    return run_batch(spark, sqls, budget=BUDGET, cost=EAGER, consume="collect")


def shared_queries(res):
    return {r.index for r in res.runs if r.rewritten}


def test_filters_and_projections(spark, share_tables):
    sqls = ["SELECT a, c FROM st WHERE c > 3",
            "SELECT a, b FROM st WHERE b = 'x'",
            "SELECT b, f FROM st WHERE f IS NULL OR c < 0",
            "SELECT a, SUM(c) AS s FROM st WHERE b = 'y' GROUP BY a"]
    res = run(spark, sqls)
    assert_same_results(spark, res, sqls)
    assert len(shared_queries(res)) >= 3, res.plan.report()
    assert res.cache_bytes > 0
    assert not [t for t in spark.catalog.listTables() if t.name.startswith("_superop_ce_")]


def test_covering_aggregates(spark, share_tables):
    sqls = ["SELECT a, SUM(c) AS s, COUNT(*) AS n, MAX(f) AS mf FROM st WHERE a > 1 GROUP BY a",
            "SELECT a, MAX(c) AS m, MIN(f) AS mf FROM st WHERE a IS NULL OR a = 1 GROUP BY a",
            "SELECT a, AVG(c) AS v, SUM(f) AS sf FROM st GROUP BY a HAVING COUNT(*) > 1",
            "SELECT b, COUNT(DISTINCT a) AS n FROM st WHERE b = 'x' GROUP BY b",
            "SELECT b, MIN(c) AS m FROM st WHERE b IN ('x', 'z') OR b IS NULL GROUP BY b"]
    res = run(spark, sqls)
    assert_same_results(spark, res, sqls)
    used = [c for c in res.plan.cached if c.kind == "agg"]
    assert used, res.plan.report()
    assert {c.query for ce in used for c in res.plan.used[ce.id]} >= {0, 1, 2}


def test_joins(spark, share_tables):
    sqls = ["SELECT st.a, su.d FROM st JOIN su ON st.a = su.a WHERE st.c > 1",
            "SELECT st.b, SUM(su.d) AS s FROM st JOIN su ON st.a = su.a WHERE su.e = 'q' GROUP BY st.b",
            "SELECT su.e, COUNT(*) AS n FROM st, su WHERE st.a = su.a AND st.f > 0 GROUP BY su.e",
            "SELECT st.a, su.d, sv.w FROM st JOIN su ON st.a = su.a JOIN sv ON sv.a = st.a WHERE sv.w > 100"]
    res = run(spark, sqls)
    assert_same_results(spark, res, sqls)
    assert len(shared_queries(res)) >= 3, res.plan.report()


def test_traps_different_tables_keys_and_non_key_filters(spark, share_tables):
    sqls = ["SELECT a, SUM(c) AS s FROM st GROUP BY a",
            "SELECT b, SUM(c) AS s FROM st GROUP BY b",                    # other keys
            "SELECT a, SUM(c) AS s FROM st WHERE b = 'x' GROUP BY a",      # non-key filter
            "SELECT a, d FROM su WHERE d > 1"]                             # other table
    res = run(spark, sqls)
    assert_same_results(spark, res, sqls)
    for ce in res.plan.ces:
        assert "su" not in ce.se.tables or "st" not in ce.se.tables
        if ce.kind == "agg":
            assert {c.query for c in ce.consumers} <= {0, 2} and ce.template != "covering-aggregate" or \
                {c.query for c in ce.consumers} == set()


def test_traps_nondeterministic_filters_are_never_shared(spark, share_tables):
    sqls = ["SELECT a FROM st WHERE rand() < 0.5",
            "SELECT a, b FROM st WHERE rand() < 0.5",
            "SELECT a, c FROM st WHERE c > 1",
            "SELECT a, b FROM st WHERE c > 2"]
    res = run(spark, sqls)
    assert not res.runs[0].rewritten and not res.runs[1].rewritten
    assert all(c.query not in (0, 1) for ce in res.plan.ces for c in ce.consumers)
    from superop.sparkutil import bag
    for r, sql in zip(res.runs[2:], sqls[2:]):
        assert bag(r.rows) == bag(spark.sql(sql).collect())


def test_traps_two_databases(spark, two_databases):
    db1, db2 = two_databases
    sqls = [f"SELECT k, x FROM {db1}.t WHERE x > 10", f"SELECT k, x FROM {db2}.t WHERE x > 10",
            f"SELECT k FROM {db1}.t WHERE k > 1"]
    res = run(spark, sqls)
    from superop.sparkutil import bag
    for r, sql in zip(res.runs, sqls):
        assert bag(r.rows) == bag(spark.sql(sql).collect()), res.plan.report()
    for ce in res.plan.ces:   # never one CE over db1.t and db2.t
        assert not {0, 1} <= {c.query for c in ce.consumers}


def test_budget_zero_caches_nothing(spark, share_tables):
    sqls = ["SELECT a, c FROM st WHERE c > 3", "SELECT a, b FROM st WHERE b = 'x'"]
    res = run_batch(spark, sqls, budget=0, cost=EAGER, consume="collect")
    assert not res.plan.cached and not shared_queries(res)
    assert_same_results(spark, res, sqls)
    assert all(d.verdict.value in ("larger than the budget", "does not pay") for d in res.plan.decisions
               if d.ce.startswith("ce")), res.plan.report()


def test_cache_is_released_on_error(spark, share_tables, monkeypatch):
    from superop.share import plan_batch
    from superop.share import run as ex
    sqls = ["SELECT a, c FROM st WHERE c > 3", "SELECT a, b FROM st WHERE b = 'x'"]
    before = ex.cached_bytes(spark)
    plan = plan_batch(sqls, spark, budget=BUDGET, cost=EAGER)
    assert plan.cached

    def boom(df):
        raise RuntimeError("consumer failed")
    with pytest.raises(RuntimeError):
        ex.execute(spark, plan, consume=boom)
    assert not [t for t in spark.catalog.listTables() if t.name.startswith("_superop_ce_")]
    assert ex.cached_bytes(spark) == before


def test_covering_aggregate_over_a_join(spark, share_tables):
    """The covering aggregate over a join is built and fully proved (without Spark every
    consumer is proved); on these tiny views the knapsack prefers the join's SPJ CE
    below it (same footprint: one or the other), and the batch result is the same."""
    from superop.share import plan_batch
    sqls = ["SELECT su.e, SUM(st.c) AS s, COUNT(*) AS n FROM st JOIN su ON st.a = su.a WHERE su.e = 'p' GROUP BY su.e",
            "SELECT su.e, MAX(st.f) AS m, SUM(st.c) AS s FROM st JOIN su ON st.a = su.a "
            "WHERE su.e IN ('q', 'r') OR su.e IS NULL GROUP BY su.e"]
    proved = plan_batch(sqls, schema=share_tables)
    (agg,) = [c for c in proved.ces if c.kind == "agg"]
    assert agg.template == "covering-aggregate" and agg.se.tables == ("st", "su")
    mine = [p for p in proved.proofs if p.ce == agg.id]
    assert [p.query for p in mine] == [0, 1] and all(p.verified for p in mine), proved.report()
    assert {o.name for p in mine for o in p.obligations} == {"extraction", "template", "input"}
    res = run(spark, sqls)
    assert_same_results(spark, res, sqls)
    assert shared_queries(res) == {0, 1}, res.plan.report()


def test_grouping_sets_queries_read_the_shared_join(spark, share_tables):
    """ROLLUP / CUBE / GROUPING SETS queries (TPC-DS q27, q36) take part by default: the join below
    their GroupingAggregate is read from the CE, the grouping sets run over it as written
    (NULL keys next to subtotal rows, grouping() values equal alone)."""
    sqls = ["SELECT st.b, su.e, GROUPING(su.e) AS g, SUM(st.c) AS s, AVG(st.f) AS v FROM st "
            "JOIN su ON st.a = su.a WHERE su.d > 1 GROUP BY ROLLUP(st.b, su.e) ORDER BY st.b, su.e",
            "SELECT st.b, su.e, COUNT(*) AS n FROM st JOIN su ON st.a = su.a "
            "WHERE su.d > 5 OR su.e IS NULL GROUP BY CUBE(st.b, su.e)",
            "SELECT st.a, su.e, MAX(st.c) AS m FROM st JOIN su ON st.a = su.a WHERE st.c > 0 "
            "GROUP BY GROUPING SETS ((st.a, su.e), (su.e), ()) HAVING GROUPING_ID(st.a, su.e) < 3",
            "SELECT st.b, su.d FROM st JOIN su ON st.a = su.a WHERE su.d > 1"]
    res = run(spark, sqls)
    assert_same_results(spark, res, sqls)
    assert shared_queries(res) >= {0, 1, 2}, res.plan.report()
    # the aggregate over grouping sets is never itself a covering aggregate
    assert not [ce for ce in res.plan.ces if ce.kind == "agg"
                and {c.query for c in ce.consumers} & {0, 1, 2}], res.plan.report()


def test_grouping_sets_queries_run_as_written_when_turned_off(spark, share_tables):
    """Keep unchanged: with grouping_sets=False a GROUP BY ROLLUP query takes no part
    (blocks.GROUPING_SETS_OFF), the plain queries of the batch still share."""
    from superop.share.blocks import GROUPING_SETS_OFF
    sqls = ["SELECT st.b, su.e, SUM(st.c) AS s FROM st JOIN su ON st.a = su.a WHERE su.d > 1 "
            "GROUP BY ROLLUP(st.b, su.e)",
            "SELECT st.b, su.d FROM st JOIN su ON st.a = su.a WHERE su.d > 1",
            "SELECT st.a, su.e FROM st JOIN su ON st.a = su.a WHERE su.d > 5"]
    res = run_batch(spark, sqls, budget=BUDGET, cost=EAGER, consume="collect", grouping_sets=False)
    assert_same_results(spark, res, sqls)
    assert 0 not in shared_queries(res) and shared_queries(res) == {1, 2}, res.plan.report()
    assert res.plan.rewrites[0].sql == sqls[0]
    from superop.ir import lower
    from superop.share.blocks import blocks_of
    plan = lower(sqls[0], share_tables).plan
    assert [b.why_not for b in blocks_of(plan, 0, grouping_sets=False)] == [GROUPING_SETS_OFF]
    assert [b.anchor_kind for b in blocks_of(plan, 0)] == ["grouping"]
