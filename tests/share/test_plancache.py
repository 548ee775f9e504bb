"""The on-disk planning cache (``superop.share.plancache``).

* a batch planned again with the same inputs comes from the cache, same plan;
* another batch over the same sub-plans reuses the stored proofs and Spark estimates
  (the in-process proof cache emptied: what it gets comes from disk);
* a table's fingerprint changes with its contents' statistics."""
from __future__ import annotations

from superop.share import plan_batch, proofs
from superop.share.estimate import CostModel
from superop.share.planner import BatchQuery
from superop.share.plancache import table_fingerprint

J = "SELECT st.a, st.c, su.d FROM st JOIN su ON st.a = su.a WHERE "
Q = [J + "st.b = 'x' AND su.d > 5", J + "st.b = 'x' AND su.d < 15"]
FREE = CostModel(write_factor=0.0, read_factor=0.0, fill_fixed=0.0)


def test_a_repeated_batch_is_planned_once(spark, share_schema, tmp_path, monkeypatch):
    monkeypatch.setattr(proofs, "_SHARED_CACHE", {})
    first = plan_batch(Q, spark, budget=10 ** 9, cost=FREE, cache_dir=tmp_path)
    assert first.cache.startswith("stored") and first.cached, first.report()
    again = plan_batch(Q, spark, budget=10 ** 9, cost=FREE, cache_dir=tmp_path)
    assert again.cache.startswith("hit") and list(again.seconds) == ["cache"]
    assert [r.sql for r in again.rewrites] == [r.sql for r in first.rewrites]
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
