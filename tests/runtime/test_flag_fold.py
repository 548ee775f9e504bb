"""Flags written to share an accumulator's aggregation buffer (rewrite.sqlparts.flag_sql):
what crosses the exchange after a DU/DJ rewrite whose edges filter. The program
(and so its proof) is unchanged; only its SQL form is. Differential on the runtime tests'
data (NULLs, duplicates, empty groups) + the partial aggregate's buffer count in Spark's plan."""
from __future__ import annotations

import re

import pytest
from sqlglot import exp

from superop.ir.dialect import DIALECT
from superop.rewrite.sqlparts import flag_sql as _flag_sql
from superop.sparkutil import bag


def _e(sql: str) -> exp.Expression:
    return exp.maybe_parse(sql, dialect=DIALECT)


def test_flag_is_a_count_that_spark_can_share():
    assert _flag_sql(_e("b > 0")) == "(count(CASE WHEN b > 0 THEN 1 END) > 0)"
    assert _flag_sql(None) == "(count(1) > 0)"
    assert _flag_sql(_e("b > 0"), over="OVER (PARTITION BY a)") == \
        "(count(CASE WHEN b > 0 THEN 1 END) OVER (PARTITION BY a) > 0)"


@pytest.mark.parametrize("func,arg,guard,form", [
    ("min", "c", "c > 0", "(min(CASE WHEN c > 0 THEN c END) IS NOT NULL)"),
    ("max", "c", "d = 'x' AND c IN (1, 2)", "(max(CASE WHEN d = 'x' AND c IN (1, 2) THEN c END) IS NOT NULL)"),
    ("count", "s", "NOT s IS NULL", "(count(CASE WHEN NOT s IS NULL THEN s END) > 0)"),
])
def test_flag_folds_into_an_accumulator_whose_guard_rejects_null_arguments(func, arg, guard, form):
    assert _flag_sql(_e(guard), [(func, _e(arg), _e(guard))]) == form


def test_flag_folds_into_an_integral_sum_only():
    # an integral sum is NULL only over no non-NULL input (it wraps with ANSI off); a decimal
    # one (or a column of unknown type) is not folded: with ANSI off its overflow is NULL
    assert _flag_sql(_e("s >= 5"), [("sum", _e("s"), _e("s >= 5"))], integral={"s"}) == \
        "(sum(CASE WHEN s >= 5 THEN s END) IS NOT NULL)"
    for integral in ((), {"c"}):
        assert _flag_sql(_e("s >= 5"), [("sum", _e("s"), _e("s >= 5"))], integral=integral) == \
            "(count(CASE WHEN s >= 5 THEN 1 END) > 0)"
    assert _flag_sql(_e("d = 'x'"), [("sum", _e("s"), _e("d = 'x'"))], integral={"s"}) == \
        "(count(CASE WHEN d = 'x' THEN 1 END) > 0)"                 # d = 'x' allows a NULL s


@pytest.mark.parametrize("func,arg,guard,acc_guard", [
    ("min", "c", "b > 0", "b > 0"),          # b > 0 says nothing about c
    ("min", "c", "c <=> 1", "c <=> 1"),      # null-safe: not recognized (conservative)
    ("min", "c", "c > 0 OR b > 0", "c > 0 OR b > 0"),
    ("sum", "c", "c > 0", "c > 0"),          # a decimal sum overflowing with ANSI off is NULL
    ("avg", "c", "c > 0", "c > 0"),
    ("min", "c + 1", "c > 0", "c > 0"),      # only a bare column
    ("min", "c", "c > 0", "c > 1"),          # another guard
])
def test_flag_keeps_its_own_count_otherwise(func, arg, guard, acc_guard):
    assert _flag_sql(_e(guard), [(func, _e(arg), _e(acc_guard))]) == \
        f"(count(CASE WHEN {_e(guard).sql(dialect=DIALECT)} THEN 1 END) > 0)"


def _partial_buffers(spark, sql: str) -> list[int]:
    """Aggregate functions of every partial HashAggregate (what the shuffle carries)."""
    text = spark.sql(f"EXPLAIN {sql}").collect()[0][0]
    return [len(re.findall(r"partial_\w+\(", ln)) for ln in text.splitlines() if "functions=[partial_" in ln]


CASES = [
    # both flags fold: count(*) under b > 0; min(c) under c > 0 (c > 0 rejects NULL c)
    ("DU-fold-both", "du-2way",
     "SELECT a, count(*) AS n FROM ops WHERE b > 0 GROUP BY a "
     "UNION ALL SELECT a, min(c) FROM ops WHERE c > 0 GROUP BY a", [2]),
    # b > 0 does not imply c IS NOT NULL (a=5: b=1, c=NULL): the flag keeps its own count
    ("DU-no-fold-other-column", "du-2way",
     "SELECT a, min(c) AS m FROM ops WHERE b > 0 GROUP BY a "
     "UNION ALL SELECT a, count(*) FROM ops GROUP BY a", [3]),
    # sum: no fold; count(*) under d = 'x' folds
    ("DJ-inner-sigma", "dj-inner",
     "SELECT l.a, l.n, r.x FROM (SELECT a, count(*) AS n FROM ops WHERE d = 'x' GROUP BY a) l "
     "JOIN (SELECT a, sum(s) AS x FROM ops WHERE d = 'y' GROUP BY a) r ON l.a = r.a", [3]),
    # the micro benchmark's du_pi shape: both flags fold (count(*) under s < 5; the int sum
    # under s >= 5, which rejects NULL s; a=5 has only NULL s: no row in either branch)
    ("DU-fold-int-sum", "du-2way",
     "SELECT a, 'small' AS kind, count(*) AS v FROM ops WHERE s < 5 GROUP BY a "
     "UNION ALL SELECT a, 'big' AS kind, sum(s) AS v FROM ops WHERE s >= 5 GROUP BY a", [2]),
    ("DJ-full-sigma", "dj-full",
     "SELECT l.a AS la, r.a AS ra, l.n, r.x FROM (SELECT a, count(*) AS n FROM ops WHERE b > 0 GROUP BY a) l "
     "FULL JOIN (SELECT a, max(s) AS x FROM ops WHERE s >= 5 GROUP BY a) r ON l.a = r.a", [2]),
]


@pytest.mark.parametrize("name,rule,sql,buffers", CASES, ids=[c[0] for c in CASES])
def test_filtered_edges_rewrite_with_shared_flag_buffers(spark, so, name, rule, sql, buffers):
    r = so.rewrite(sql)
    assert r.changed and r.applied == [rule], r.explanation
    assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(sql).collect()), r.sql
    assert _partial_buffers(spark, r.sql) == buffers, r.sql


def test_unsafe_filter_stays_unchanged(so):
    sql = ("SELECT a, count(*) AS n FROM ops WHERE rand() < 0.5 GROUP BY a "
           "UNION ALL SELECT a, min(c) FROM ops WHERE c > 0 GROUP BY a")
    r = so.rewrite(sql)
    assert not r.changed and r.sql == sql, r.explanation
