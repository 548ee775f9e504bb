"""MAX_BY / MIN_BY (ARGMAX / ARGMIN, the paper's Fig. 15) through the families and the
runtime: a diamond of max_by aggregates is a streaming constant-state program; Z3 proves
it for EVERY order in which ties on the ordering value are resolved (one order shared by
the original and the program) and refutes a wrong guard, min for max, another payload,
another ordering column and a program that equals the original only when the ordering value is unique;
rewritten queries return the original bag of rows on data with NULLs, duplicates and
empty groups where the ordering value is unique per group; on ties the rewrite returns a
payload the original could have returned."""
from __future__ import annotations

from dataclasses import replace

import pytest

from superop import families
from superop.ir import lower
from superop.rules_out.catalog import make_catalog
from superop.runtime import SuperOpSession
from superop.sparkutil import bag
from superop.synth.dsl import STREAMING, Accumulator, e
from superop.verify import check_equivalence

from ..runtime.runtime_fixtures import values_view
from .conftest import bounded_rules

MB_DDL = "a int, b int, c int, d string, s int"
MB_SCHEMA = {"mb": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"}}
# s unique per a except between exact duplicates. a=1: the greatest s has a NULL payload
# under c > 2, NULL orderings, a duplicate; a=2: only NULL orderings; a=3: no row has c > 2
# (no row of the filtered branch); a=NULL: a NULL group; a=4: one row.
MB_ROWS = [
    (1, 1, 3, "x", 10), (1, 2, 5, None, 12), (1, 3, 1, "y", 13), (1, 4, 4, "z", None),
    (1, 3, 1, "y", 13), (2, 5, 3, "p", None), (2, 6, 9, None, None),
    (3, 7, 0, "q", 1), (3, 8, 2, "r", 4), (None, 1, 4, "n", 2), (None, 2, 3, "m", 6),
    (4, 9, 3, "u", 0),
]
FIG15 = ("SELECT a, mb, n FROM (SELECT a, max_by(d, s) AS mb, COUNT(*) AS n FROM mb WHERE c > 2 GROUP BY a) x "
         "UNION ALL SELECT a, mb, n FROM (SELECT a, max_by(upper(d), s) AS mb, COUNT(*) AS n FROM mb GROUP BY a) y")
MINMAX = ("SELECT l.a, l.lo, r.hi FROM (SELECT a, min_by(b, s) AS lo FROM mb GROUP BY a) l "
          "JOIN (SELECT a, max_by(b, s) AS hi FROM mb WHERE c IS NOT NULL GROUP BY a) r ON l.a = r.a")
# first() is order-dependent with no tie model: a max_by catalog leaves it alone
FIRST = ("SELECT a, f FROM (SELECT a, first(d) AS f FROM mb WHERE c > 2 GROUP BY a) x "
         "UNION ALL SELECT a, f FROM (SELECT a, max_by(d, s) AS f FROM mb GROUP BY a) y")


def _match(sql):
    return families.first_match(lower(sql, MB_SCHEMA).plan, finished=True)


def test_a_max_by_diamond_is_a_streaming_program():
    m = _match(FIG15)
    assert m is not None and m.program is not None and m.program.memory == STREAMING
    assert "max_by" in families.get(m.family).point(m).aggregates
    assert {a.func for a in m.program.accumulators} == {"max_by", "count_star"}
    assert _match(FIRST) is None


def _with(prog, name, **kw):
    return replace(prog, accumulators=tuple(replace(a, **kw) if a.name == name else a for a in prog.accumulators))


def test_z3_proves_every_tie_order_and_refutes_the_mutants():
    plan = lower(FIG15, MB_SCHEMA).plan
    prog = _match(FIG15).program
    ok = check_equivalence(plan, prog, K=3, timeout_ms=30000)
    assert ok.status == "verified", ok.reason
    guarded = next(a for a in prog.accumulators if a.func == "max_by" and a.guard is not None)
    pay, order = guarded.arg.expressions
    mutants = {
        "no guard": _with(prog, guarded.name, guard=None),
        "min for max": _with(prog, guarded.name, func="min_by"),
        "another payload": _with(prog, guarded.name, arg=e(f"(UPPER({pay.sql()}), {order.sql()})")),
        "another ordering": _with(prog, guarded.name, arg=e(f"({pay.sql()}, row.b)")),
        # equal to max_by(d, s) whenever s is unique in the group; on a tie it prefers
        # a row whose d is not NULL: a proof that assumed unique orderings would pass it
        "unique-s only": _with(prog, guarded.name, arg=e(
            f"({pay.sql()}, row.s * 2 + CASE WHEN row.d IS NULL THEN 0 ELSE 1 END)")),
    }
    for what, bad in mutants.items():
        r = check_equivalence(plan, bad, K=3, timeout_ms=30000)
        assert r.status == "refuted", (what, r.status, r.reason)
    assert isinstance(Accumulator("x", "max_by", e("(row.d, row.s)")), Accumulator)
    with pytest.raises(ValueError):
        Accumulator("x", "max_by", e("row.d"))


@pytest.fixture(scope="module")
def mb_session(spark):
    values_view(spark, "mb", MB_DDL, MB_ROWS)
    return SuperOpSession(spark, make_catalog(bounded_rules(sqls=[FIG15, MINMAX], schema=MB_SCHEMA)))


@pytest.mark.parametrize("sql", [FIG15, MINMAX])
def test_rewritten_returns_the_original_rows(spark, mb_session, sql):
    r = mb_session.rewrite(sql)
    assert r.changed, r.explanation
    assert "_by(case when" in r.sql.lower()      # the guard on the ordering AND the payload
    assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(sql).collect())


def test_a_max_by_catalog_leaves_first_unchanged(mb_session):
    r = mb_session.rewrite(FIRST)
    assert not r.changed and r.sql == FIRST, r.explanation


def test_on_ties_the_rewrite_returns_a_payload_the_original_could_return(spark, mb_session):
    # a=1 and a=2 tie on their greatest s with different payloads (and a NULL payload)
    ties = [(1, 1, 3, "x", 10), (1, 2, 5, "y", 10), (1, 3, 4, None, 10), (1, 4, 1, "w", 10),
            (2, 5, 3, "p", 7), (2, 6, 4, "q", 7), (2, 7, 1, "r", 3)]
    values_view(spark, "mb", MB_DDL, ties)
    try:
        r = mb_session.rewrite(FIG15)
        assert r.changed, r.explanation
        got = spark.sql(r.sql).collect()
    finally:
        values_view(spark, "mb", MB_DDL, MB_ROWS)
    top = {a: max(s for x, _, _, _, s in ties if x == a) for a in (1, 2)}
    guarded = {a: {d for x, _, c, d, s in ties if x == a and c > 2 and s == top[a]} for a in (1, 2)}
    every = {a: {None if d is None else d.upper() for x, _, _, d, s in ties if x == a and s == top[a]}
             for a in (1, 2)}
    # (a, payload, count): the filtered branch's row counts 3 / 2 rows, the other 4 / 3
    assert sorted((row.a, row.n) for row in got) == [(1, 3), (1, 4), (2, 2), (2, 3)]
    for row in got:
        filtered = row.n == sum(1 for t in ties if t[0] == row.a and t[2] > 2)
        assert row.mb in (guarded if filtered else every)[row.a], row
