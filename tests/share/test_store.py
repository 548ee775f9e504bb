"""Where chosen CEs live (``superop/share/store.py``): both stores hold exactly the CE's rows
under its view and give everything back on release; a batch stored either way returns
what its queries return alone; a checkpoint whose blocks are lost falls back to the query
as written."""
from __future__ import annotations

import dataclasses

import pytest

from superop.ir import to_sql
from superop.share import plan_batch
from superop.share import run as ex
from superop.share.estimate import CACHE_COST, CostModel
from superop.share.store import CACHE, CHECKPOINT, keep, store
from superop.sparkutil import bag

from .conftest import alone, assert_same_results

FREE = CostModel(write_factor=0.0, read_factor=0.0, fill_fixed=0.0)
SQLS = ["SELECT a, c FROM st WHERE c > 3", "SELECT a, b FROM st WHERE b = 'x'",
        "SELECT a, SUM(c) AS s FROM st WHERE b = 'y' GROUP BY a"]


@pytest.mark.parametrize("storage", [CHECKPOINT, CACHE])
def test_store_holds_the_rows_and_release_gives_everything_back(spark, share_tables, storage):
    sql = "SELECT a, b, c FROM st WHERE c > 3 OR c IS NULL"
    before = ex.cached_bytes(spark)
    s = store(spark, sql, "_superop_ce_test_store", storage)
    assert bag(spark.table("_superop_ce_test_store").collect()) == alone(spark, sql)
    held = ex.cached_bytes(spark) - before
    assert held > 0                                    # filled now, held by the block manager
    assert s.stored_bytes(spark) == held               # what this one store holds, found by its RDD
    s.release(spark)
    assert not spark.catalog.tableExists("_superop_ce_test_store")
    assert ex.cached_bytes(spark) == before and s.df is None and s.stored_bytes(spark) == -1


def test_unknown_storage_is_an_error(spark, share_tables):
    with pytest.raises(ValueError, match="unknown CE storage 'disk'"):
        keep(spark.table("st"), "disk")


@pytest.mark.parametrize("cost", [FREE, dataclasses.replace(CACHE_COST, write_factor=0.0, read_factor=0.0,
                                                             fill_fixed=0.0)], ids=["checkpoint", "cache"])
def test_batch_results_equal_alone_with_either_store(spark, share_tables, cost):
    plan = plan_batch(SQLS, spark, budget=10 ** 9, cost=cost)
    assert plan.storage == cost.storage and plan.cached, plan.report()
    res = ex.execute(spark, plan, "collect")
    assert_same_results(spark, res, SQLS)
    assert sum(r.rewritten for r in res.runs) >= 2 and not any(r.fallback for r in res.runs)
    # each CE's stored bytes, measured apart; together they are what the cache held
    assert set(res.stored_bytes) == {ce.id for ce in plan.cached}
    assert all(b > 0 for b in res.stored_bytes.values()) and sum(res.stored_bytes.values()) == res.cache_bytes


def test_lost_checkpoint_blocks_fall_back_to_the_query_as_written(spark, share_tables):
    plan = plan_batch(SQLS, spark, budget=10 ** 9, cost=FREE)
    assert plan.storage == CHECKPOINT and plan.cached
    lost: list[str] = []
    jsc = spark.sparkContext._jsc
    others = set(jsc.getPersistentRDDs().keys())

    def consume(df, name):
        if not lost:     # the executor holding the checkpoint is gone: its blocks with it
            for rdd_id, rdd in jsc.getPersistentRDDs().items():
                if rdd_id not in others:
                    rdd.unpersist(True)
            lost.append(name)
        return df.collect()

    before = ex.cached_bytes(spark)
    res = ex.execute(spark, plan, consume)
    assert_same_results(spark, res, SQLS)
    first = next(r for r in res.runs if r.name == lost[0])
    assert first.fallback and "not found" in first.fallback.lower() and not first.rewritten, first
    assert ex.cached_bytes(spark) <= before          # release after a loss does not fail


def test_a_failed_fill_releases_the_stores_already_filled(spark, share_tables, monkeypatch):
    sqls = SQLS + ["SELECT a, d FROM su WHERE d > 5", "SELECT a, e FROM su WHERE e = 'q'"]
    plan = plan_batch(sqls, spark, budget=10 ** 9, cost=FREE)
    assert len(plan.cached) >= 2, plan.report()
    # each execution names its views afresh (SharingPlan.for_run): the CE is told by its SQL
    bad = to_sql(plan.cached[-1].plan, names=plan.cached[-1].columns)
    real, filled = ex.store, []

    def flaky(spark_, sql, view, *args, **kw):
        if sql == bad:
            raise RuntimeError("fill failed")
        filled.append(real(spark_, sql, view, *args, **kw))
        return filled[-1]
    monkeypatch.setattr(ex, "store", flaky)
    before = ex.cached_bytes(spark)
    with pytest.raises(RuntimeError, match="fill failed"):
        ex.execute(spark, plan, "collect")
    assert filled and all(s.df is None for s in filled)          # stored, then released
    assert not [t for t in spark.catalog.listTables() if t.name.startswith("_superop_ce_")]
    assert ex.cached_bytes(spark) == before


def test_one_plan_runs_in_two_threads_at_once(spark, share_tables):
    """Each execution stores its CEs under views of its own: the first to finish must not
    drop the views the other still reads (both equal alone, nothing left behind)."""
    from concurrent.futures import ThreadPoolExecutor
    plan = plan_batch(SQLS, spark, budget=10 ** 9, cost=FREE)
    assert plan.cached and plan.fresh_views, plan.report()
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: ex.execute(spark, plan, "collect"), range(2)))
    for res in results:
        assert_same_results(spark, res, SQLS)
        assert not [r for r in res.runs if r.fallback]
    views = [{ce.view for ce in res.plan.cached} for res in results]
    assert views[0].isdisjoint(views[1]) and views[0].isdisjoint({ce.view for ce in plan.cached})
    assert not [t for t in spark.catalog.listTables() if t.name.startswith("_superop_ce_")]


def test_a_ce_is_released_after_its_last_reader(spark, share_tables):
    """A CE is held only until the last query that reads it has run: the queries after it
    see its view gone (and the batch's results are still those alone)."""
    sqls = ["SELECT a, d FROM su WHERE d > 5", "SELECT a, e FROM su WHERE e = 'q'",
            "SELECT a, c FROM st WHERE c > 3", "SELECT a, b FROM st WHERE b = 'x'"]
    plan = plan_batch(sqls, spark, budget=10 ** 9, cost=FREE)
    su_ces = [ce for ce in plan.cached if ce.se.tables == ("su",)]
    assert su_ces and {c.query for ce in su_ces for c in plan.used[ce.id]} == {0, 1}, plan.report()
    seen: dict[str, set] = {}

    def consume(df, name):
        seen[name] = {t.name for t in spark.catalog.listTables() if t.name.startswith("_superop_ce_")}
        return bag(df.collect())

    res = ex.execute(spark, plan, consume)
    su_views = {ce.view for ce in res.plan.cached if ce.se.tables == ("su",)}
    assert su_views <= seen["q2"] and su_views.isdisjoint(seen["q3"]), (su_views, seen)
    assert res.cache_bytes > 0
    for r, sql in zip(res.runs, sqls):
        assert r.rows == alone(spark, sql)


def test_queries_that_read_no_ce_run_before_the_cache_is_filled(spark, share_tables):
    """A query that reads no CE runs first, with no CE stored yet; the others run after
    the fill in batch order, and the runs are reported in batch order."""
    sqls = ["SELECT a, d FROM su WHERE d > 5", "SELECT COUNT(*) AS n FROM sv",
            "SELECT a, e FROM su WHERE e = 'q'"]
    plan = plan_batch(sqls, spark, budget=10 ** 9, cost=FREE)
    assert [r.changed for r in plan.rewrites] == [True, False, True], plan.report()
    order, views = [], {}

    def consume(df, name):
        order.append(name)
        views[name] = {t.name for t in spark.catalog.listTables() if t.name.startswith("_superop_ce_")}
        return bag(df.collect())

    res = ex.execute(spark, plan, consume)
    assert order == ["q2", "q1", "q3"]
    assert views["q2"] == set() and views["q1"] and views["q1"] == views["q3"]
    assert [r.name for r in res.runs] == ["q1", "q2", "q3"] and [r.rewritten for r in res.runs] == [True, False, True]
    for r, sql in zip(res.runs, sqls):
        assert r.rows == alone(spark, sql)
