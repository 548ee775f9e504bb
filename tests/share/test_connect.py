"""Sharing through Spark Connect: estimates from ``EXPLAIN COST`` text, table fingerprints
from what a Connect client can see (schema, plan text, input files) — no ``df._jdf``.

The server is the test session's (``connect_url`` of ``tests/conftest.py``: Spark's own
``SparkConnectService`` on the session's JVM); the client is PySpark's gRPC client."""
from __future__ import annotations

import pytest

from superop.ir.generate import to_sql
from superop.share import plan_batch
from superop.share.estimate import CostModel
from superop.share.plancache import PlanningCache, sha, table_fingerprint
from superop.share.run import execute
from superop.sparkutil import bag

from .conftest import register_views

pytest.importorskip("grpc", reason="Spark Connect needs the connect extra")

# one SE over st (the join's proofs would double the test's time); tiny data: only a free
# model pays the fill
Q = ["SELECT a, b, c FROM st WHERE c > 3",
     "SELECT a, c, f FROM st WHERE b = 'x' OR c < 0"]
FREE = CostModel(0.0, 0.0, fill_fixed=0.0)


@pytest.fixture(scope="module")
def connect(connect_url):
    from pyspark.sql.connect.session import SparkSession as ConnectSession
    c = ConnectSession.builder.remote(connect_url).create()
    c.conf.set("spark.sql.shuffle.partitions", "4")
    register_views(c)
    yield c
    c.stop()


def _chosen(plan):
    return ([(ce.id, to_sql(ce.plan)) for ce in plan.cached], [(r.name, r.changed, r.sql) for r in plan.rewrites])


def test_a_batch_planned_and_run_on_connect_shares_as_on_classic(spark, share_tables, connect):
    from superop.runtime.tablestats import is_connect
    assert is_connect(connect)
    classic = plan_batch(Q, spark, budget=10 ** 9, cost=FREE, view_prefix="_cn_")
    remote = plan_batch(Q, connect, budget=10 ** 9, cost=FREE, view_prefix="_cn_")
    assert classic.cached and any(r.changed for r in classic.rewrites), classic.report()
    assert _chosen(remote) == _chosen(classic), remote.report()
    # the values come from Spark's statistics (the EXPLAIN COST text), not from nothing
    vals = {(v.ce, v.query): v for vs in remote.consumer_values.values() for v in vs}
    want = {(v.ce, v.query): v for vs in classic.consumer_values.values() for v in vs}
    assert vals.keys() == want.keys() and vals
    for key, v in vals.items():
        assert v.known and v.own_cost == pytest.approx(want[key].own_cost, rel=0.05), (key, v, want[key])
    res = execute(connect, remote)
    for r, sql in zip(res.runs, Q):
        assert bag(r.rows) == bag(spark.sql(sql).collect()), (r.name, remote.report())


def test_table_fingerprints_and_the_plan_cache_on_connect(spark, connect, tmp_path):
    path = str(tmp_path / "fp")
    spark.sql("SELECT * FROM VALUES (1, 'a'), (2, NULL) AS t(k, v)").write.parquet(path)
    connect.sql(f"CREATE OR REPLACE TEMP VIEW cn_fp USING parquet OPTIONS (path '{path}')")
    first = table_fingerprint(connect, "cn_fp")
    assert first != sha("unresolved", "cn_fp", "AnalysisException")
    assert first == table_fingerprint(connect, "cn_fp")                  # stable
    spark.sql("SELECT * FROM VALUES (1, 'a'), (2, NULL), (3, 'c') AS t(k, v)").write.mode("overwrite").parquet(path)
    connect.sql(f"CREATE OR REPLACE TEMP VIEW cn_fp USING parquet OPTIONS (path '{path}')")
    assert table_fingerprint(connect, "cn_fp") != first                  # follows the files
    # a repeated batch on Connect comes from the on-disk planning cache
    cache = tmp_path / "pc"
    p1 = plan_batch(Q, connect, budget=10 ** 9, cost=FREE, cache_dir=cache)
    p2 = plan_batch(Q, connect, budget=10 ** 9, cost=FREE, cache_dir=cache)
    assert "cache" not in p1.seconds and "cache" in p2.seconds
    assert p1.cached and [c.id for c in p2.cached] == [c.id for c in p1.cached]
    assert [r.sql.replace(p2.view_prefix, p1.view_prefix) for r in p2.rewrites] == [r.sql for r in p1.rewrites]
    assert PlanningCache(cache, connect).table("st") == table_fingerprint(connect, "st")


def test_a_volatile_view_is_never_shared_on_connect(connect):
    # Connect has no JVM plan to inspect: the view's definition is read from EXPLAIN text
    connect.sql("CREATE OR REPLACE TEMP VIEW cn_rand AS SELECT a, c, rand() AS r FROM st")
    connect.sql("CREATE OR REPLACE TEMP VIEW cn_lim AS SELECT a, c FROM st LIMIT 5")
    for view in ("cn_rand", "cn_lim"):
        sqls = [f"SELECT a, c FROM {view} WHERE c > 3", f"SELECT a, c FROM {view} WHERE c < 9"]
        plan = plan_batch(sqls, connect, budget=10 ** 9, cost=FREE)
        assert not plan.ces and not any(r.changed for r in plan.rewrites), plan.report()
    # the same batch over a plain view is shared (the views, not the batch, said no)
    connect.sql("CREATE OR REPLACE TEMP VIEW cn_plain AS SELECT a, c FROM st")
    assert plan_batch([q.replace("cn_lim", "cn_plain") for q in sqls], connect, budget=10 ** 9, cost=FREE).ces
