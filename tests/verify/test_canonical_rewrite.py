"""A certificate about a match found in the canonical form of a query (``families.regroup``:
shared aggregates regrouped, decorrelated sub-queries sunk) checks the query AS WRITTEN
against the canonical form with the match replaced — not the query against itself, which
any program would pass."""
from __future__ import annotations

from dataclasses import replace

from superop import families
from superop.ir import lower
from superop.verify.check import check_rewrite

from .conftest import SCHEMA

PIVOT = ("WITH t AS (SELECT a, c, SUM(s) AS total, COUNT(*) AS n FROM ops GROUP BY a, c) "
         "SELECT t1.a, t1.total, t2.total AS total2 FROM t t1 JOIN t t2 ON t1.a = t2.a WHERE t1.c = 1 AND t2.c = 2")
WINMAGIC = ("SELECT o.a, o.s, p.n FROM ops AS o, (SELECT a, COUNT(*) AS n FROM ops WHERE b > 0 GROUP BY a) AS p "
            "WHERE p.a = o.a AND o.s > (SELECT AVG(i.s) FROM ops AS i WHERE i.a = o.a)")


def _wrong(program, func_from: str, func_to: str):
    accs = tuple(replace(a, func=func_to) if a.func == func_from else a for a in program.accumulators)
    return replace(program, accumulators=accs)


def test_a_wrong_program_is_refuted_where_the_match_is_in_the_regrouped_plan():
    plan = lower(PIVOT, SCHEMA).plan
    assert families.regroup(plan) is not plan
    m = families.first_match(plan, finished=True)
    assert check_rewrite(plan, m.program, K=3).status == "verified"
    assert check_rewrite(plan, _wrong(m.program, "sum", "max"), K=3).status == "refuted"


def test_a_wrong_program_is_refuted_where_the_sub_query_was_sunk():
    plan = lower(WINMAGIC, SCHEMA).plan
    assert families.regroup(plan) is not plan
    m = families.first_match(plan, finished=True)
    assert m.family == "WM"
    assert check_rewrite(plan, m.program, K=3).status == "verified"
    assert check_rewrite(plan, _wrong(m.program, "avg", "max"), K=3).status == "refuted"
