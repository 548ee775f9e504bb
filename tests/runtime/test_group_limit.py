"""Min & Join's group-limit form (RANK() = 1 over the rows with the MIN/MAX column NOT
NULL): original vs rewritten on Spark over data with NULL arguments, ties on the minimum,
duplicates, a NULL key and groups emptied by a filter; keep-unchanged negatives where the
form is not admitted; the emitted SQL checked by the bounded verifier."""
from __future__ import annotations

import pytest

from superop.ir import lower
from superop.rewrite.rewriter import rewrite_structural
from superop.sparkutil import bag_of
from superop.verify.certify import check_and_certify
from superop.verify.check import check_plans_outcomes

from .runtime_fixtures import SCHEMA

_MIN = "(SELECT a, min(s) AS mn FROM ops GROUP BY a)"
ADMITTED = {
    # rows on the left, MIN: a=1 ties (5, 5), a=2 a NULL s, a=5 only NULL s, a NULL key
    "inner-min": f"SELECT o.a, o.d, o.s, m.mn FROM ops o JOIN {_MIN} m ON o.a = m.a AND o.s = m.mn",
    # aggregate first, MAX, a filter on the aggregate (HAVING: empties groups) and on the rows
    "inner-max-sigma": "SELECT m.k, m.mx, o.b, o.d FROM (SELECT a AS k, mx FROM (SELECT a, max(s) AS mx FROM ops "
                       "GROUP BY a) t WHERE mx < 10) m JOIN (SELECT * FROM ops WHERE b > 0) o "
                       "ON m.k = o.a AND o.s = m.mx",
    "semi-min": f"SELECT o.* FROM ops o LEFT SEMI JOIN {_MIN} m ON o.a = m.a AND o.s = m.mn",
}
NOT_ADMITTED = {
    # every row of a group is joined (no equality with the aggregate)
    "no-equality": f"SELECT o.a, o.s, m.mn FROM ops o JOIN {_MIN} m ON o.a = m.a",
    # the row side is preserved: every row survives
    "left": f"SELECT o.a, o.s, m.mn FROM ops o LEFT JOIN {_MIN} m ON o.a = m.a AND o.s = m.mn",
    "anti": f"SELECT o.* FROM ops o LEFT ANTI JOIN {_MIN} m ON o.a = m.a AND o.s = m.mn",
    # the aggregate side is preserved (not even a Min & Join instance: the residual reads the
    # aggregate on the side emitted alone)
    "agg-left-outer": f"SELECT m.a, m.mn, o.d FROM {_MIN} m LEFT JOIN ops o ON m.a = o.a AND o.s = m.mn",
}



@pytest.mark.parametrize("name", sorted(ADMITTED))
def test_group_limit_form_preserves_rows(spark, ops, rw, name):
    sql = ADMITTED[name]
    r = rewrite_structural(rw, sql, SCHEMA, form="group-limit")
    assert r.changed and "group-limit form" in r.explanation, r.explanation
    assert "RANK() OVER" in r.sql
    want = bag_of(spark, sql)
    assert bag_of(spark, r.sql) == want and want, r.sql
    if name == "inner-min":
        plan = spark.sql(r.sql)._jdf.queryExecution().executedPlan().toString()
        assert "WindowGroupLimit" in plan, plan


@pytest.mark.parametrize("name", sorted(NOT_ADMITTED))
def test_group_limit_form_not_admitted_keeps_the_query(rw, name):
    r = rewrite_structural(rw, NOT_ADMITTED[name], SCHEMA, form="group-limit")
    why = "residual_on_aggregates" if name == "agg-left-outer" else "no match in the group-limit form"
    assert not r.changed and why in r.explanation, r.explanation
    assert r.sql == NOT_ADMITTED[name]


def test_the_rules_admit_the_form_only_where_a_proof_covers_it(catalog):
    variants = {r["id"]: {a.get("variant", "") for a in r["admits"]} for r in catalog["rules"]}
    assert "group-limit" in variants["mj-inner"] and "group-limit" in variants["mj-semi"]
    assert all("group-limit" not in variants[k] for k in ("mj-left", "mj-right", "mj-full", "mj-anti"))


def test_the_session_ranks_both_forms(spark, ops, catalog):
    from superop.runtime import SuperOpSession
    so = SuperOpSession(spark, catalog, gate="ungated", cache=False)
    r = so.rewrite(ADMITTED["inner-min"])
    labels = [c["label"] for c in r.candidates]
    assert labels == ["mj-inner", "mj-inner[group-limit]", "mj-inner[partition-wide]"], labels
    # a query without the form says why in the explanation
    r2 = so.rewrite(NOT_ADMITTED["no-equality"])
    labels2 = [c["label"] for c in r2.candidates]
    assert labels2 == ["mj-inner", "mj-inner[partition-wide]"], labels2
    assert r2.changed and "no group-limit form — no_argument_equality" in r2.explanation, r2.explanation


def test_bounded_certificate_of_the_emitted_group_limit_sql():
    c = check_and_certify(ADMITTED["inner-min"], SCHEMA, K=3, form="group-limit")
    assert c["status"] == "verified" and c["covers"]["variant"] == "group-limit"
    em = c["emitted_sql"]
    assert em["checked_by"] == "bounded" and em["status"] == "verified" and "RANK()" in em["sql"]
    # the check can fail: the wrong order picks the maximum rows
    wrong = em["sql"].replace("ORDER BY s ASC", "ORDER BY s DESC")
    assert wrong != em["sql"]
    # the certificate checks the instance alone (the match's sub-plan, not the query around it)
    instance = c["inputs"]["sql"]
    assert "GROUP BY" in instance and instance != ADMITTED["inner-min"]
    r = check_plans_outcomes(lower(instance, SCHEMA).plan, lower(wrong, SCHEMA).plan, K=2)
    assert r.status == "refuted", r.reason
