"""DataFrame traps: programs a DataFrame rewrite could get wrong. Each is run through
``optimize`` and must either be refused (the DataFrame itself comes back, and
``explain_df`` says why) or be rewritten with exactly the original's schema and rows.

UDFs, ``rand()``, duplicate column names after a join, a cached leaf, leaves read from
paths, a ``limit`` inside the shared input — on a classic session, and the ones a Connect
client can express on Spark Connect."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from superop.runtime.plan import analyze_plan
from superop.sparkutil import bag


def _du(base, F, agg2=None):
    """Two aggregates of ``base`` glued by a union (a Diamond UnionAll over ``base``)."""
    first = base.groupBy("a").agg(F.count("*").alias("n"))
    return first.union(base.groupBy("a").agg((agg2 if agg2 is not None else F.max("s")).alias("n")))


def check(so, df, rewritten: bool, why: str = ""):
    out = so.optimize(df)
    text = so.explain_df(df)
    assert (out is not df) is rewritten, text
    assert why in text
    if rewritten:
        assert [(f.name, f.dataType) for f in out.schema] == [(f.name, f.dataType) for f in df.schema]
        assert bag(out.collect()) == bag(df.collect())
    return out, text


# ---------------------------------------------------------------------------
# classic
# ---------------------------------------------------------------------------
def test_udfs_block_the_match_wherever_they_are(spark, so, ops):
    t = spark.table("ops")
    plus = F.udf(lambda x: None if x is None else x + 1, "int")
    on_edge = t.groupBy("a").agg(F.count("*").alias("n")).union(
        t.withColumn("u", plus("s")).groupBy("a").agg(F.sum("u").alias("n")))
    check(so, on_edge, False, "user-defined function")
    in_source = t.withColumn("u", plus("s"))
    check(so, _du(in_source, F, F.max("u")), False, "user-defined function")


def test_rand_on_an_edge_or_in_the_shared_input(spark, so, ops):
    t = spark.table("ops")
    on_edge = t.groupBy("a").agg(F.count("*").alias("n")).union(
        t.where(F.rand(3) < 0.5).groupBy("a").agg(F.max("s").alias("n")))
    check(so, on_edge, False, "nondeterministic")
    # two uses of one rand() column are two reads that may differ: never one shared input
    noisy = t.withColumn("r", F.rand(3))
    check(so, _du(noisy, F, F.max("r")), False, "nondeterministic")


def test_duplicate_column_names_after_a_join(spark, so, ops):
    t, acc = spark.table("ops"), spark.table("accounts")
    # the shared input has two columns named a: refused (no match on a source with
    # duplicate names), never resolved to the wrong one
    joined = t.join(acc, t["a"] == acc["a"])
    du = joined.groupBy(t["a"]).agg(F.count("*").alias("n")).union(
        joined.groupBy(t["a"]).agg(F.max("tier").alias("n")))
    out = so.optimize(du)
    assert bag(out.collect()) == bag(du.collect())
    # a diamond whose OUTPUT repeats a name (a join without a select): rewritten, same columns
    left = t.groupBy("a").agg(F.count("*").alias("n"))
    right = t.where(F.col("c") > 0).groupBy("a").agg(F.max("b").alias("n"))
    dj = left.join(right, left["a"] == right["a"])
    assert dj.columns == ["a", "n", "a", "n"]
    out, _ = check(so, dj, True, "applied dj-inner")
    assert out.columns == ["a", "n", "a", "n"]


def test_a_cached_leaf_is_read_from_its_cache(spark, so, ops):
    base = spark.table("ops").where(F.col("s") > 0).cache()
    try:
        base.count()
        df = _du(base, F)
        out = so.optimize(df)
        assert "InMemoryTableScan" in analyze_plan(spark, "", df=out).tree      # before it runs
        check(so, df, True, "cached")
    finally:
        base.unpersist()


def test_leaves_read_from_paths(spark, so, ops, tmp_path):
    t = spark.table("ops")
    t.write.parquet(str(tmp_path / "p1"))
    t.where(F.col("a") > 1).write.parquet(str(tmp_path / "p2"))
    p1 = spark.read.parquet(str(tmp_path / "p1"))
    out, text = check(so, _du(p1, F), True, "path)")
    assert "parquet" in analyze_plan(spark, "", df=out).tree.lower()
    # two reads of the same path are one input; two paths are two inputs
    again = spark.read.parquet(str(tmp_path / "p1"))
    check(so, p1.groupBy("a").agg(F.count("*").alias("n")).union(
        again.groupBy("a").agg(F.max("s").alias("n"))), True)
    p2 = spark.read.parquet(str(tmp_path / "p2"))
    check(so, p1.groupBy("a").agg(F.count("*").alias("n")).union(
        p2.groupBy("a").agg(F.max("s").alias("n"))), False, "do not read one shared input")


def test_a_limit_inside_the_shared_input(spark, so, ops):
    check(so, _du(spark.table("ops").limit(5), F), False, "limit_in_source")


# ---------------------------------------------------------------------------
# Spark Connect
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def connect(connect_url):
    pytest.importorskip("grpc")
    from .runtime_fixtures import connect_session
    c = connect_session(connect_url)
    yield c
    c.stop()


@pytest.fixture(scope="module")
def cso(connect, catalog):
    from superop.runtime import SuperOpSession
    return SuperOpSession(connect, catalog, gate="exchanges")


def test_connect_traps(connect, cso):
    from pyspark.sql.connect import functions as CF
    t = connect.table("ops")
    plus = CF.udf(lambda x: None if x is None else x + 1, "int")
    check(cso, _du(t.withColumn("u", plus("s")), CF, CF.max("u")), False, "common_inline_user_defined_function")
    check(cso, _du(t.withColumn("r", CF.rand(3)), CF, CF.max("r")), False, "nondeterministic")
    check(cso, _du(t.limit(5), CF), False, "limit_in_source")
    left = t.groupBy("a").agg(CF.count("*").alias("n"))
    right = t.where(CF.col("c") > 0).groupBy("a").agg(CF.max("b").alias("n"))
    out, _ = check(cso, left.join(right, left["a"] == right["a"]), True, "applied dj-inner")
    assert out.columns == ["a", "n", "a", "n"]
    # a cached DataFrame: Connect's client plan does not say which part the server reads
    # from the cache, so a plan that reads cached data is left as it is
    base = t.where(CF.col("s") > 0).cache()
    try:
        base.count()
        check(cso, _du(base, CF), False, "cached")
    finally:
        base.unpersist()
