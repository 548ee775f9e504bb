"""The on-disk planning cache (``superop.share.plancache``).

* a batch planned again with the same inputs comes from the cache, same plan;
* another batch over the same sub-plans reuses the stored proofs and Spark estimates
  (the in-process proof cache emptied: what it gets comes from disk);
* a table's fingerprint changes with its contents' statistics;
* the store is bounded (oldest records evicted first);
* two runs of one stored plan in one Spark session at once use different temp views."""
from __future__ import annotations

import os

from superop.share import execute, plan_batch, proofs
from superop.share.estimate import CostModel
from superop.share.plancache import PlanningCache, table_fingerprint
from superop.share.sharing_plan import BatchQuery
from superop.sparkutil import bag

from .conftest import SCHEMA

J = "SELECT st.a, st.c, su.d FROM st JOIN su ON st.a = su.a WHERE "
Q = [J + "st.b = 'x' AND su.d > 5", J + "st.b = 'x' AND su.d < 15"]
FREE = CostModel(write_factor=0.0, read_factor=0.0, fill_fixed=0.0)


def test_a_repeated_batch_is_planned_once(spark, share_schema, tmp_path, monkeypatch):
    monkeypatch.setattr(proofs, "_SHARED_CACHE", {})
    first = plan_batch(Q, spark, budget=10 ** 9, cost=FREE, cache_dir=tmp_path)
    assert first.cache.startswith("stored") and first.cached, first.report()
    again = plan_batch(Q, spark, budget=10 ** 9, cost=FREE, cache_dir=tmp_path)
    assert again.cache.startswith("hit") and list(again.seconds) == ["cache"]
    # the same SQL up to the CE views' names (each load of a stored plan gets its own)
    assert again.view_prefix != first.view_prefix
    assert [r.sql.replace(again.view_prefix, first.view_prefix) for r in again.rewrites] == \
        [r.sql for r in first.rewrites]
    # the same sub-plans under other names: a new plan, its proofs and estimates from disk
    monkeypatch.setattr(proofs, "_SHARED_CACHE", {})
    other = plan_batch([BatchQuery(f"r{i}", q) for i, q in enumerate(Q)], spark, budget=10 ** 9,
                       cost=FREE, cache_dir=tmp_path)
    assert other.cache.startswith("stored")
    assert other.prover_stats["solved"] == 0 and other.prover_stats["cached"] > 0, other.prover_stats
    assert other.estimator_stats["spark_plans"] == 0, other.estimator_stats
    assert [r.ces for r in other.rewrites] == [r.ces for r in first.rewrites] and other.cached


def test_a_table_fingerprint_follows_its_data(spark):
    spark.sql("SELECT * FROM VALUES (1, 'a'), (2, NULL) AS t(k, v)").createOrReplaceTempView("share_pc_t")
    one = table_fingerprint(spark, "share_pc_t")
    assert table_fingerprint(spark, "share_pc_t") == one
    spark.sql("SELECT * FROM VALUES (1, 'a'), (2, NULL), (2, NULL) AS t(k, v)").createOrReplaceTempView("share_pc_t")
    assert table_fingerprint(spark, "share_pc_t") != one
    assert table_fingerprint(spark, "share_pc_no_such_table") != one    # never raises


def test_two_runs_of_one_stored_plan_at_once_use_their_own_views(spark, share_schema, tmp_path):
    sqls = ["SELECT a, b FROM st WHERE c > 4", "SELECT a, f FROM st WHERE b = 'y'"]   # one table: cheap proofs
    plan_batch(sqls, spark, budget=10 ** 9, cost=FREE, cache_dir=tmp_path)
    a = plan_batch(sqls, spark, budget=10 ** 9, cost=FREE, cache_dir=tmp_path)
    b = plan_batch(sqls, spark, budget=10 ** 9, cost=FREE, cache_dir=tmp_path)
    assert a.cache.startswith("hit") and b.cache.startswith("hit")
    views_a, views_b = {c.view for c in a.cached}, {c.view for c in b.cached}
    assert views_a and not views_a & views_b
    assert all(any(v in r.sql for v in views_a) and not any(v in r.sql for v in views_b)
               for r in a.rewrites if r.changed)
    assert sum(r.changed for r in a.rewrites) == 2, a.report()
    inner = []

    def run_b_inside_a(df):      # b runs (registers, then drops its views) while a is running
        if not inner:
            inner.append(execute(spark, b))
        return df.collect()
    got = execute(spark, a, run_b_inside_a)
    for res in (got, inner[0]):
        assert not any(r.fallback for r in res.runs), [r.fallback for r in res.runs]
        assert [bag(r.rows) for r in res.runs] == [bag(spark.sql(q).collect()) for q in sqls]


def test_the_store_is_bounded_oldest_first(tmp_path):
    store = PlanningCache(tmp_path, max_bytes=250)
    for i in range(4):                        # ~100 bytes each, oldest first
        store.put_json("costs", f"{i:02d}" + "0" * 62, {"cost": "x" * 80})
        path = store._path("costs", f"{i:02d}" + "0" * 62)
        os.utime(path, ns=(10 ** 18 + i, 10 ** 18 + i))
    partial = tmp_path / "costs" / "03" / ".half-written.json.tmp"
    partial.write_text("x" * 1000)            # a write in progress: never removed
    assert store.prune() == 2 and store.stats["evicted"] == 2
    assert [store.get_json("costs", f"{i:02d}" + "0" * 62) is not None for i in range(4)] == \
        [False, False, True, True]
    assert partial.exists() and PlanningCache(tmp_path, max_bytes=None).prune() == 0
    # a planning run keeps its store within the bound: 0 keeps nothing, so no hit
    sqls = ["SELECT a, c FROM st WHERE c > 2", "SELECT a, c FROM st WHERE c < 1"]
    for _ in range(2):
        p = plan_batch(sqls, schema=SCHEMA, cache_dir=tmp_path / "zero", cache_max_bytes=0)
        assert not p.cache.startswith("hit")
    assert not [f for f in (tmp_path / "zero").rglob("*") if f.is_file()]
