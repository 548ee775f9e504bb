"""superop.verify.plans: plan-vs-plan bounded equivalence and the row-wise SPJ proof.

Every refutation is replayed on Spark: the counterexample tables are loaded and both
plans' SQL really return different bags on them."""
from __future__ import annotations

import pytest

from superop.ir import lower
from superop.sparkutil import bag
from superop.verify.plans import check_plans_equivalent, prove_spj_equivalent

S = {"pt": {"a": "int", "b": "string", "c": "int"}, "pu": {"a": "int", "d": "int"},
     "pd": {"k": "int", "x": "decimal(7,2)", "day": "date"}}


def plan(sql):
    low = lower(sql, S)
    assert low.fully_lowered, low.opaque_reasons
    return low.plan


def replay(spark, r, sql_a, sql_b):
    """Load the counterexample tables as views and run both queries on them."""
    from pyspark.sql.types import StructType
    for name, t in r.details["tables"].items():
        ddl = ", ".join(f"`{c}` {ty}" for c, ty in zip(t["columns"], t["types"]))
        spark.createDataFrame(t["rows"], StructType.fromDDL(ddl)).createOrReplaceTempView(name)
    try:
        return bag(spark.sql(sql_a).collect()), bag(spark.sql(sql_b).collect())
    finally:
        for name in r.details["tables"]:
            spark.catalog.dropTempView(name)


def test_or_then_filter_is_the_filter():
    a = plan("SELECT a, c FROM pt WHERE c > 3")
    b = plan("SELECT a, c FROM (SELECT a, b, c FROM pt WHERE c > 3 OR b = 'x') s WHERE c > 3")
    r = check_plans_equivalent(a, b, K=3)
    assert r.status == "verified" and r.K == 3, r.reason
    assert prove_spj_equivalent(a, b).status == "verified"


def test_refuted_with_a_replayable_counterexample(spark):
    qa = "SELECT a, c FROM pt WHERE c > 3"
    qb = "SELECT a, c FROM (SELECT a, b, c FROM pt WHERE c > 4 OR b = 'x') s WHERE c > 3"
    r = check_plans_equivalent(plan(qa), plan(qb), K=3)
    assert r.status == "refuted"
    got_a, got_b = replay(spark, r, qa, qb)
    assert got_a != got_b
    assert got_a == bag(r.details["a_output"]) and got_b == bag(r.details["b_output"])
    assert prove_spj_equivalent(plan(qa), plan(qb)).status == "refuted"


def test_several_tables_and_nulls_in_joins(spark):
    qa = "SELECT pt.a, pu.d FROM pt JOIN pu ON pt.a = pu.a WHERE pt.c > 0"
    qb = "SELECT s.a, pu.d FROM (SELECT a FROM pt WHERE c > 0) s JOIN pu ON s.a = pu.a"
    assert check_plans_equivalent(plan(qa), plan(qb), K=3).status == "verified"
    # NULL-safe join is not an equi-join: NULL keys match
    qc = "SELECT pt.a, pu.d FROM pt JOIN pu ON pt.a <=> pu.a WHERE pt.c > 0"
    r = check_plans_equivalent(plan(qa), plan(qc), K=3)
    assert r.status == "refuted"
    got_a, got_c = replay(spark, r, qa, qc)
    assert got_a != got_c


def test_bags_count_duplicates():
    a = plan("SELECT a FROM pt")
    b = plan("SELECT DISTINCT a FROM pt")
    assert check_plans_equivalent(a, b, K=3).status == "refuted"


def test_uninterpreted_predicates_verify_but_never_refute():
    a = plan("SELECT a FROM pt WHERE b LIKE 'x%'")
    b = plan("SELECT a FROM (SELECT a, b FROM pt WHERE b LIKE 'x%' OR c = 1) s WHERE b LIKE 'x%'")
    r = check_plans_equivalent(a, b, K=3)
    assert r.status == "verified" and r.details["uninterpreted_predicates"] >= 1
    assert prove_spj_equivalent(a, b).status == "verified"
    c = plan("SELECT a FROM (SELECT a, b FROM pt WHERE b LIKE 'y%') s WHERE b LIKE 'x%'")
    assert check_plans_equivalent(a, c, K=3).status == "unknown"   # not decided, never verified


def test_decimals_dates_and_aggregates():
    a = plan("SELECT k, SUM(x) AS s FROM pd WHERE day >= DATE '2000-01-01' GROUP BY k")
    b = plan("SELECT k, SUM(x) AS s FROM pd WHERE NOT (day < DATE '2000-01-01') GROUP BY k")
    assert check_plans_equivalent(a, b, K=3).status == "verified"
    c = plan("SELECT k, SUM(x) AS s FROM pd GROUP BY k")
    assert check_plans_equivalent(a, c, K=3).status == "refuted"


def test_unsupported_is_never_verified():
    a = plan("SELECT a FROM pt WHERE rand() < 0.5")
    assert check_plans_equivalent(a, a, K=3).status == "unsupported"
    assert prove_spj_equivalent(a, a).status == "unsupported"
    b = plan("SELECT a, COUNT(*) AS n FROM pt GROUP BY a")
    assert prove_spj_equivalent(b, b).status == "unsupported"     # not a select-project-join
    assert check_plans_equivalent(plan("SELECT a FROM pt"), plan("SELECT a, c FROM pt"), 3).status == "unsupported"


@pytest.mark.parametrize("K", [3, 4])
def test_k_is_reported(K):
    a = plan("SELECT a FROM pt WHERE c = 1")
    assert check_plans_equivalent(a, a, K=K).K == K
