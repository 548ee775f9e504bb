"""``SuperOpSession.optimize`` / ``explain_df`` on DataFrame programs (classic session).

The twins of every family fixture entry run in ``test_dataframe_twins.py`` (classic and
Spark Connect), the traps in ``test_dataframe_traps.py``; this file covers the API: a
rewrite keeps the DataFrame's schema and rows and loses shuffles, ``transform`` works,
explanations say what happened, and every failure returns the DataFrame itself.
"""
from __future__ import annotations

import json

import pytest
from pyspark.sql import functions as F

from superop.ir.lowering.catalyst import lower_catalyst
from superop.ir.lowering.frames import Unsure
from superop.runtime import dataframe as dfmod
from superop.runtime.plan import analyze_plan
from superop.sparkutil import bag


def _exchanges(so, df) -> int:
    """Shuffles of ``df``'s plan (before it runs: afterwards the adaptive plan prints its
    initial and its final form)."""
    return analyze_plan(so.spark, "", df=df).exchanges


def test_a_diamond_union_all_is_rewritten_with_the_same_schema_and_rows(spark, so, ops):
    t = spark.table("ops")
    df = (t.groupBy("a").agg(F.count("*").alias("n"))
          .union(t.where(F.col("b") > 0).groupBy("a").agg(F.sum("s").alias("n"))))
    out = df.transform(so.optimize)
    assert out is not df
    assert [(f.name, f.dataType) for f in out.schema] == [(f.name, f.dataType) for f in df.schema]
    assert _exchanges(so, out) < _exchanges(so, df) == 2      # planned before anything runs
    assert bag(out.collect()) == bag(df.collect())
    text = so.explain_df(df)
    assert text.startswith("superop: rewritten — applied du-2way")
    assert "exchanges before: 2 shuffle" in text and "exchanges after:  1 shuffle" in text
    assert so.explain_df(out).splitlines()[0] == text.splitlines()[0]   # the same decision


def test_a_join_of_two_aggregates_and_an_aggregate_joined_back(spark, so, ops):
    t = spark.table("ops")
    left = t.groupBy("a").agg(F.count("*").alias("n"))
    right = t.where(F.col("c") > 0).groupBy("a").agg(F.max("b").alias("m"))
    dj = left.join(right, left["a"] == right["a"], "left").select(left["a"], "n", "m")
    mj = t.join(t.groupBy("a").agg(F.min("b").alias("mb")), "a").select("a", "b", "mb")
    for df, rule in ((dj, "dj-left"), (mj, "mj-inner")):
        out = so.optimize(df)
        assert out is not df, so.explain_df(df)
        assert so.explain_df(df).startswith(f"superop: rewritten — applied {rule}")
        assert out.columns == df.columns and bag(out.collect()) == bag(df.collect())


def test_no_match_and_failures_return_the_dataframe_itself(spark, so, ops, monkeypatch):
    t = spark.table("ops")
    single = t.groupBy("a").agg(F.sum("s").alias("t"))
    assert so.optimize(single) is single
    assert so.explain_df(single).startswith("superop: unchanged — no rule matches")
    # the eval mode of try_cast is not in Catalyst's JSON: refused, never guessed
    tried = (t.groupBy("a").agg(F.count("*").alias("n"))
             .union(t.groupBy("a").agg(F.sum(F.col("d").try_cast("int")).alias("n"))))
    assert so.optimize(tried) is tried
    assert "try_*" in so.explain_df(tried)

    def broken(spark, df):
        raise RuntimeError("lowering exploded")
    monkeypatch.setattr(dfmod, "frame_of", broken)
    df = t.groupBy("a").agg(F.count("*").alias("n")).union(t.groupBy("a").agg(F.max("s").alias("n")))
    assert so.optimize(df) is df
    assert "DataFrame not optimized, original kept: RuntimeError: lowering exploded" in so.explain_df(df)


def test_lowering_is_pure_and_names_leaves_by_what_they_read(spark, ops):
    t = spark.table("ops")
    df = t.groupBy("a").agg(F.count("*").alias("n")).union(t.groupBy("a").agg(F.max("s").alias("n")))
    plan_json = df._jdf.queryExecution().analyzed().toJSON()
    low = lower_catalyst(plan_json, token="cafe0001")          # no Spark: the JSON alone
    assert low.fully_lowered and low.names == ("a", "n")
    assert {x.kind for x in low.leaves} == {"view"}
    assert {x.identity for x in low.leaves} == {("", "ops")}   # one Scan, read by both branches
    assert all(x.placeholder.startswith("__so_leaf_cafe0001_") for x in low.leaves)
    # a plan the IR cannot bind at all is refused with a reason
    with pytest.raises(Unsure):
        lower_catalyst(json.dumps([{"class": "x.Mystery", "num-children": 0}]))


def test_bind_text_escapes_braces_and_binds_placeholders():
    text, used = dfmod.bind_text("SELECT '{x}' AS s FROM `__so_leaf_ab12cd34_0` AS t JOIN __so_leaf_ab12cd34_1")
    assert text == "SELECT '{{x}}' AS s FROM {__so_leaf_ab12cd34_0} AS t JOIN {__so_leaf_ab12cd34_1}"
    assert used == ["__so_leaf_ab12cd34_0", "__so_leaf_ab12cd34_1"]
    assert dfmod.bind_text("SELECT '{x}'") == ("SELECT '{x}'", [])
