"""Uncorrelated, deterministic sub-queries on a match (superop.ir.subqueries): a Diamond Join
whose filters and HAVINGs compare with sub-query values is rewritten and returns the
original's rows (a sub-query with a value, with NULL, a set for IN, inner columns named as
the outer ones); a correlated, nondeterministic or LIMITed sub-query keeps the near-miss."""
from __future__ import annotations

import pytest

from superop.sparkutil import bag

_J = "SELECT * FROM ({l}) x JOIN ({r}) y ON x.a = y.k"
CHANGED = {
    "scalar-values": _J.format(
        l="SELECT a, sum(s) AS t FROM ops WHERE b = (SELECT max(b) FROM ops WHERE c > 0) GROUP BY a",
        r="SELECT a AS k, count(*) AS n FROM ops WHERE b = (SELECT min(b) FROM ops) GROUP BY a"),
    "scalar-null": _J.format(
        l="SELECT a, sum(s) AS t FROM ops WHERE b = (SELECT max(b) FROM ops WHERE c > 100000) OR b IS NULL GROUP BY a",
        r="SELECT a AS k, count(*) AS n FROM ops GROUP BY a"),
    "having": _J.format(
        # a grouped sub-query stays an expression (a global one lowers to a product: WinMagic's)
        l="SELECT a, sum(s) AS t FROM ops GROUP BY a "
          "HAVING sum(s) > (SELECT max(s) FROM ops WHERE c > 0 GROUP BY c > 0)",
        r="SELECT a AS k, max(c) AS m FROM ops WHERE c > (SELECT min(c) FROM ops) GROUP BY a"),
    "common-in": _J.format(
        l="SELECT a, sum(s) AS t FROM ops WHERE a IN (SELECT a FROM ops WHERE d = 'x') AND b > 0 GROUP BY a",
        r="SELECT a AS k, count(*) AS n FROM ops WHERE a IN (SELECT a FROM ops WHERE d = 'x') AND c > 0 GROUP BY a"),
    # the sub-query's own s and d are not the outer row's
    "inner-names": _J.format(
        l="SELECT a, sum(s) AS t FROM ops WHERE s > (SELECT avg(s) FROM ops WHERE d = 'x') GROUP BY a",
        r="SELECT a AS k, min(s) AS n FROM ops WHERE d <> (SELECT max(d) FROM ops WHERE s > 0) GROUP BY a"),
}
KEPT = {      # name: (query, the near-miss)
    "nondeterministic": (_J.format(
        l="SELECT a, sum(s) AS t FROM ops WHERE b > (SELECT max(b) * rand() FROM ops) GROUP BY a",
        r="SELECT a AS k, count(*) AS n FROM ops GROUP BY a"), "nondeterministic"),
    "limit": (_J.format(
        l="SELECT a, sum(s) AS t FROM ops WHERE b = (SELECT b FROM ops WHERE b IS NOT NULL LIMIT 1) GROUP BY a",
        r="SELECT a AS k, count(*) AS n FROM ops GROUP BY a"), "subquery_on_match"),
}


@pytest.mark.parametrize("name", sorted(CHANGED))
def test_a_diamond_join_with_subquery_values_keeps_its_rows(spark, so, name):
    sql = CHANGED[name]
    r = so.rewrite(sql)
    assert r.error is None and r.changed and r.applied == ["dj-inner"], r.explanation
    assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(sql).collect()), r.sql


def test_a_common_in_is_read_once(so):
    r = so.rewrite(CHANGED["common-in"])
    assert r.changed and r.sql.count("d = 'x'") == 1, r.sql


@pytest.mark.parametrize("name", sorted(KEPT))
def test_other_subqueries_keep_the_near_miss(so, name):
    sql, reason = KEPT[name]
    r = so.rewrite(sql)
    assert not r.changed and f"not an instance — {reason}" in r.explanation, r.explanation
