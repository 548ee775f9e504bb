"""A refuted extraction is never used: a CE that does not cover a consumer's filter is
refuted by the bounded check (with a counterexample Spark reproduces), and the planner
then rewrites nothing with it."""
from __future__ import annotations

from superop.ir import lower, to_sql
from superop.share import covering, detect, plan_batch, prove
from superop.sparkutil import bag

from .conftest import SCHEMA

Q = ["SELECT a, b, c FROM st WHERE c > 3", "SELECT a, b, c FROM st WHERE b = 'x'"]


def retable(plan, name):
    """The plan reading table ``name`` wherever it read st."""
    from superop.ir.nodes import Scan, replace, walk
    return replace(plan, {id(n): Scan(name, n.columns) for n in walk(plan)
                          if isinstance(n, Scan) and n.table == "st"})


def _narrow(ce):
    """The CE with only the first consumer's filter: it no longer covers the second."""
    cols = ", ".join(ce.columns)
    ce.plan = lower(f"SELECT {cols} FROM st WHERE c > 3", SCHEMA).plan
    return ce


def test_a_ce_that_does_not_cover_is_refuted(spark, share_schema):
    _, (ce,), _ = detect([lower(q, SCHEMA).plan for q in Q])
    assert all(prove(c).verified for c in ce.consumers)
    _narrow(ce)
    ok, bad = prove(ce.consumers[0]), prove(ce.consumers[1])
    assert ok.obligations[0].status == "verified"
    ext = bad.obligations[0]
    assert ext.name == "extraction" and ext.status == "refuted" and not bad.verified
    # the counterexample is real: Spark returns different rows on its table
    from superop.verify.plans import check_plans_equivalent
    r = check_plans_equivalent(ce.inline(ce.consumers[1].extraction), ce.consumers[1].original, K=3)
    rows = r.details["tables"]["st"]["rows"]
    spark.createDataFrame(rows, "a int, b string, c int, f double").createOrReplaceTempView("st_cex")
    try:
        sql_ext = to_sql(retable(ce.inline(ce.consumers[1].extraction), "st_cex"))
        sql_own = to_sql(retable(ce.consumers[1].original, "st_cex"))
        got_ext, got_own = bag(spark.sql(sql_ext).collect()), bag(spark.sql(sql_own).collect())
        assert got_ext != got_own
        assert got_ext == bag(r.details["a_output"]) and got_own == bag(r.details["b_output"])
    finally:
        spark.catalog.dropTempView("st_cex")


def test_planner_never_uses_a_refuted_extraction(spark, share_schema, monkeypatch):
    real = covering.Builder._spj

    def faulty(self, se, cid, view):
        ce, why = real(self, se, cid, view)
        return (_narrow(ce) if ce is not None else ce), why
    monkeypatch.setattr(covering.Builder, "_spj", faulty)
    from superop.share import run_batch
    from superop.share.estimate import CostModel
    res = run_batch(spark, Q, budget=10 ** 9, cost=CostModel(0.0, 0.0, fill_fixed=0.0), consume="collect")
    # without the fault this batch is shared (test_differential); with it, nothing is
    assert not any(r.rewritten for r in res.runs), res.plan.report()
    assert any(p.status == "refuted" for p in res.plan.proofs)
    assert any(d.verdict.value == "not enough proved consumers" for d in res.plan.decisions)
    for r, q in zip(res.runs, Q):
        assert bag(r.rows) == bag(spark.sql(q).collect())


def test_without_spark_unknown_types_are_unsupported_not_verified():
    # a block whose other input is an aggregate: its column types come from Spark; without
    # Spark the placement proof is 'unsupported' and the consumer is not used
    p = plan_batch(["SELECT st.a, x.n FROM st JOIN (SELECT a, COUNT(*) AS n FROM su GROUP BY a) x "
                    "ON st.a = x.a WHERE st.c > 1",
                    "SELECT a, b FROM st WHERE c > 2"], schema=SCHEMA)
    for pr in p.proofs:
        if pr.query == 0:
            assert not pr.verified and pr.status == "unsupported"
