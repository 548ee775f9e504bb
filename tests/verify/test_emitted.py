"""The SQL the runtime emits is checked against the instance: the generator form, the
window forms and COUNT(DISTINCT) lower, and a mutated emission is refuted."""
from __future__ import annotations

from superop.ir import lower
from superop.verify.check import check_plans_outcomes
from superop.verify.emitted import check_emitted, emitted_sql

from .conftest import SCHEMA

DU_Q = ("SELECT a, sum(s) AS t FROM ops WHERE b > 0 GROUP BY a "
        "UNION ALL SELECT a, count(DISTINCT c) AS t FROM ops WHERE d = 'x' GROUP BY a")
NB_Q = ("WITH v AS (SELECT a, b, n, rank() OVER (PARTITION BY a ORDER BY b) AS rn FROM "
        "(SELECT a, b, count(*) AS n FROM ops GROUP BY a, b) g) "
        "SELECT c.a, c.n, l.n AS prev FROM v c LEFT JOIN v l ON c.a = l.a AND c.rn = l.rn + 1")


def test_the_generator_and_count_distinct_are_checked_bounded():
    em = check_emitted(DU_Q, SCHEMA, K=3)
    assert em["checked_by"] == "bounded" and em["status"] == "verified", em.get("reason")
    assert "INLINE(FILTER(ARRAY(STRUCT(" in em["sql"] and "COLLECT_SET(" in em["sql"]


def test_lag_is_checked_bounded():
    em = check_emitted(NB_Q, SCHEMA, K=3)
    assert em["checked_by"] == "bounded" and em["status"] == "verified", em.get("reason")
    assert "LAG(" in em["sql"]


def test_a_mutated_emission_is_refuted():
    sql, _ = emitted_sql(DU_Q, SCHEMA)
    assert sql is not None and "COALESCE(__so_f_out1, FALSE) AS __so_g" in sql
    # the first branch's guard dropped: a group with no row b > 0 emits a row
    mutant = sql.replace("COALESCE(__so_f_out1, FALSE) AS __so_g", "TRUE AS __so_g")
    r = check_plans_outcomes(lower(DU_Q, SCHEMA).plan, lower(mutant, SCHEMA).plan, K=3)
    assert r.status == "refuted" and r.counterexample is not None
