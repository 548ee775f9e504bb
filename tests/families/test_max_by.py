"""MAX_BY / MIN_BY (ARGMAX / ARGMIN, the paper's Fig. 15) through the families and the
runtime: a diamond of max_by aggregates is a streaming constant-state program; Z3 proves
it for EVERY order in which ties on the ordering value are resolved (one order shared by
the original and the program) and refutes a wrong guard, min for max, another payload,
another ordering column and a program that equals the original only when the ordering value is unique;
the paper's Fig. 15 rewritten returns the original bag of rows on the paper's mailbox
(NULLs, duplicates, an empty group under the filter; ts unique per group); on ties the
rewrite returns a payload the original could have returned."""
from __future__ import annotations

from dataclasses import replace

import pytest

from superop import families
from superop.dsl import STREAMING, Accumulator, e
from superop.ir import lower
from superop.rules_out.catalog import make_catalog
from superop.runtime import SuperOpSession
from superop.sparkutil import bag
from superop.verify.certificate import TIE_ASSUMPTION
from superop.verify.check import check_equivalence

from ..runtime.runtime_fixtures import values_view
from .conftest import bounded_rules

MB_SCHEMA = {"mb": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"}}
FIG15 = ("SELECT a, mb, n FROM (SELECT a, max_by(d, s) AS mb, COUNT(*) AS n FROM mb WHERE c > 2 GROUP BY a) x "
         "UNION ALL SELECT a, mb, n FROM (SELECT a, max_by(upper(d), s) AS mb, COUNT(*) AS n FROM mb GROUP BY a) y")
MINMAX = ("SELECT l.a, l.lo, r.hi FROM (SELECT a, min_by(b, s) AS lo FROM mb GROUP BY a) l "
          "JOIN (SELECT a, max_by(b, s) AS hi FROM mb WHERE c IS NOT NULL GROUP BY a) r ON l.a = r.a")
# first() of a column is order-dependent with no tie model: not matched
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


def test_reference_semantics_are_sparks():
    """As Spark 4 (checked on a real session): a NULL ordering is skipped, a NULL payload
    kept, no row gives NULL; on a tie the later row wins; FIRST of a constant is that
    constant; first(column) stays order-dependent."""
    from superop.dsl.interpreter import run_program_rows
    from superop.dsl.plan_eval import aggregate_values
    from superop.ir.functions import Determinism, classify_call
    pairs = [("x1", 1), (None, 3), ("xn", None), ("x2", 2)]
    assert aggregate_values("max_by", pairs) is None and aggregate_values("min_by", pairs) == "x1"
    assert aggregate_values("max_by", [("u", 7), ("v", 7)]) == "v" == aggregate_values("min_by", [("u", 7), ("v", 7)])
    assert aggregate_values("max_by", [("y", None)]) is None
    prog = _match(FIG15).program
    rows = [(1, 0, 3, "a", 5), (1, 0, 1, "b", 9), (1, 0, 4, None, 6), (2, 0, 0, "c", None)]
    assert sorted(run_program_rows(prog, ["a", "b", "c", "d", "s"], rows), key=str) == \
        sorted([(1, None, 2), (1, "B", 3), (2, None, 1)], key=str)
    assert classify_call(sqlglot_one("first('High')")) is Determinism.DETERMINISTIC
    assert classify_call(sqlglot_one("first(d)")) is Determinism.ORDER_DEPENDENT


def sqlglot_one(sql):
    from superop.ir.dialect import parse_one
    return parse_one(sql)


def test_the_bundled_logs_fig15_variant_plants_max_by():
    from superop.workloads.loggen import load_truth, mining_schema
    (v,) = [v for v in load_truth()["variants"] if any("Fig. 15" in n for n in v["notes"])]
    assert v["agg"] == "MAX_BY" and v["example_sql"].count("MAX_BY(") == 2
    m = families.first_match(lower(v["example_sql"], mining_schema()).plan, finished=True)
    assert m is not None and m.program is not None and m.program.memory == STREAMING
    assert {a.func for a in m.program.accumulators} == {"max_by"}


def _with(prog, name, **kw):
    return replace(prog, accumulators=tuple(replace(a, **kw) if a.name == name else a for a in prog.accumulators))


def test_fig15_and_a_min_by_join_are_verified():
    from superop.workloads import paper
    sql = paper.CORPUS_BY_ID["fig15"].sql
    plan = lower(sql, paper.PAPER_SCHEMA).plan
    m = families.first_match(plan, finished=True)
    assert m is not None and m.program is not None and m.program.memory == STREAMING
    assert {"max_by", "max", "count_star"} == set(families.get(m.family).point(m).aggregates)  # max: FIRST('High')
    assert check_equivalence(plan, m.program, K=3, timeout_ms=60000).status == "verified"
    dj = _match(MINMAX)
    assert dj.family == "DJ" and {a.func for a in dj.program.accumulators} == {"min_by", "max_by"}
    r = check_equivalence(dj.root, dj.program, K=3, timeout_ms=30000)
    assert r.status == "verified", r.reason


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
def paper_session(spark):
    """The paper's mailbox (NULLs in every column, exact duplicates, a mailbox with only
    'Other' events: an empty group under Fig. 15's filter; ts unique except between exact
    duplicates) in a session of its own, and a catalog of the rule Fig. 15's bounded
    certificate makes."""
    from superop.workloads import paper
    s = spark.newSession()
    s.conf.set("spark.sql.shuffle.partitions", "2")
    cols = paper.PAPER_SCHEMA["mailbox"]
    values_view(s, "mailbox", ", ".join(f"{c} {t}" for c, t in cols.items()), paper.paper_rows(60, seed=7)["mailbox"])
    sql = paper.CORPUS_BY_ID["fig15"].sql
    rules = bounded_rules(sqls=[sql], schema=paper.PAPER_SCHEMA)
    (cert,) = [c for r in rules for c in r["certificates"]]
    assert TIE_ASSUMPTION in cert["assumptions"] and "max_by" in cert["covers"]["aggregates"]
    return s, SuperOpSession(s, make_catalog(rules)), sql


def test_fig15_is_verified_and_rewritten_with_the_original_rows(paper_session):
    s, so, sql = paper_session
    r = so.rewrite(sql)
    assert r.changed, r.explanation
    assert "max_by(case when" in r.sql.lower()      # the guard on the ordering AND the payload
    assert r.exchanges_after < r.exchanges_before
    assert bag(s.sql(r.sql).collect()) == bag(s.sql(sql).collect())


def test_spark_agrees_with_the_reference_semantics(paper_session):
    """NULL ordering skipped, NULL payload kept, the guard on the ordering (no row passes:
    NULL) — Spark and :func:`aggregate_values` on the same rows."""
    from superop.dsl.plan_eval import aggregate_values
    s, _, _ = paper_session
    rows = [("x1", 1, True), (None, 3, False), ("xn", None, True), ("x2", 2, True)]
    got = s.sql("SELECT max_by(x, o), min_by(x, o), max_by(x, CASE WHEN g THEN o END), "
                "max_by(CASE WHEN g THEN x END, CASE WHEN g THEN o END), max_by(x, CASE WHEN o > 5 THEN o END) "
                "FROM VALUES ('x1', 1, true), (NULL, 3, false), ('xn', NULL, true), ('x2', 2, true) "
                "AS t(x, o, g)").first()
    plain, guarded = [(x, o) for x, o, _ in rows], [(x, o if g else None) for x, o, g in rows]
    want = (aggregate_values("max_by", plain), aggregate_values("min_by", plain),
            aggregate_values("max_by", guarded), aggregate_values("max_by", guarded), None)
    assert tuple(got) == want == (None, "x1", "x2", "x2", None)


def test_a_max_by_catalog_leaves_first_of_a_column_unchanged(paper_session):
    _, so, _ = paper_session
    q = ("SELECT mailboxguid, f FROM (SELECT mailboxguid, first(eventid) AS f FROM mailbox WHERE ts > 5 "
         "GROUP BY mailboxguid) x UNION ALL "
         "SELECT mailboxguid, max_by(eventid, ts) AS f FROM mailbox GROUP BY mailboxguid")
    r = so.rewrite(q)
    assert not r.changed and r.sql == q, r.explanation


def test_on_ties_the_rewrite_returns_a_payload_the_original_could_return(paper_session):
    s, so, sql = paper_session
    # g1 and g2 tie on their greatest ts with different payloads (one NULL)
    ties = [("g1", 10, "x", "a1", "m1", "Ev1"), ("g1", 10, "y", "a2", "m2", "Ev2"),
            ("g1", 10, None, "a3", "m3", "Other"), ("g1", 4, "w", "a4", "m4", "Ev3"),
            ("g2", 7, "p", "b1", "n1", "Ev1"), ("g2", 7, "q", "b2", "n2", "Other")]
    from superop.workloads import paper
    cols = paper.PAPER_SCHEMA["mailbox"]
    ddl = ", ".join(f"{c} {t}" for c, t in cols.items())
    values_view(s, "mailbox", ddl, ties)
    try:
        r = so.rewrite(sql)
        assert r.changed, r.explanation
        got = s.sql(r.sql).collect()
    finally:
        values_view(s, "mailbox", ddl, paper.paper_rows(60, seed=7)["mailbox"])
    evs = ("Ev1", "Ev2", "Ev3")
    for row in got:       # the filtered branch's row has sevent = upper(eventid), the other 'High'
        g = [t for t in ties if t[0] == row.mailboxguidstring and (row.sevent == "High" or t[5] in evs)]
        top = max(t[1] for t in g)
        tied = [t for t in g if t[1] == top]
        assert row.eventid in {t[2] for t in tied} and row.activityid in {t[3] for t in tied}, row
        assert row.machinename in {t[4] for t in tied} and row.cnt == len(g), row
    assert sorted((row.mailboxguidstring, row.sevent == "High") for row in got) == \
        [("g1", False), ("g1", True), ("g2", False), ("g2", True)]
