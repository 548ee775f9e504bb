"""The five modelled types (int, double, string, bool, date) through filters, keys,
aggregates and emits, replayed on Spark + the interpreter when refuted."""
from __future__ import annotations

from superop.dsl import Accumulator as A
from superop.dsl import Flag, PartitionEmit, Program, e
from superop.ir import lower
from superop.verify.check import check_equivalence

from .conftest import K_TEST, TIMEOUT_MS

SCHEMA = {"ev": {"id": "int", "name": "string", "amt": "double", "ok": "boolean", "day": "date"}}
SQL = ("SELECT name, AVG(amt) AS v, MAX(day) AS last FROM ev WHERE ok AND amt > 1.5 AND day >= DATE '2020-01-02' "
       "GROUP BY name UNION ALL SELECT name, SUM(amt) AS v, MIN(day) AS last FROM ev GROUP BY name")
GUARD = "row.ok AND row.amt > 1.5 AND row.day >= DATE '2020-01-02'"


def prog(guarded=True):
    return Program(
        keys=("name",), output=("name", "v", "last"),
        accumulators=(A("av", "avg", e("row.amt"), e(GUARD)), A("mx", "max", e("row.day"), e(GUARD)),
                      A("sm", "sum", e("row.amt")), A("mn", "min", e("row.day"))),
        flags=(Flag("out1", e(GUARD)),),
        partition_emits=(PartitionEmit(e("flag.out1") if guarded else e("acc.mx IS NOT NULL OR TRUE"),
                                       (e("key.name"), e("acc.av"), e("acc.mx"))),
                         PartitionEmit(None, (e("key.name"), e("acc.sm"), e("acc.mn")))))


def test_all_types_verify():
    r = check_equivalence(lower(SQL, SCHEMA).plan, prog(), K=K_TEST, timeout_ms=TIMEOUT_MS)
    assert r.status == "verified", r.reason


def test_all_types_trap_replayed(assert_replayed):
    r = check_equivalence(lower(SQL, SCHEMA).plan, prog(guarded=False), K=K_TEST, timeout_ms=TIMEOUT_MS)
    cex = assert_replayed(SQL, prog(guarded=False), r)
    assert cex.types == ["int", "string", "double", "boolean", "date"]


def test_date_literal_filter_verifies():
    sql = ("SELECT name, COUNT(*) AS n FROM ev WHERE day >= DATE '2020-01-02' GROUP BY name "
           "UNION ALL SELECT name, COUNT(*) AS n FROM ev GROUP BY name")
    g = "row.day >= DATE '2020-01-02'"
    p = Program(keys=("name",), output=("name", "n"),
                accumulators=(A("n1", "count_star", None, e(g)), A("n2", "count_star")),
                flags=(Flag("out1", e(g)),),
                partition_emits=(PartitionEmit(e("flag.out1"), (e("key.name"), e("acc.n1"))),
                                 PartitionEmit(None, (e("key.name"), e("acc.n2")))))
    plan = lower(sql, SCHEMA).plan
    assert check_equivalence(plan, p, K=K_TEST, timeout_ms=TIMEOUT_MS).status == "verified"
    wrong = Program(keys=p.keys, output=p.output, accumulators=p.accumulators, flags=p.flags,
                    partition_emits=(PartitionEmit(e("flag.out1"), (e("key.name"), e("acc.n2"))),
                                     p.partition_emits[1]))
    r = check_equivalence(plan, wrong, K=K_TEST, timeout_ms=TIMEOUT_MS)
    assert r.status == "refuted"
    import datetime
    # a row the DATE filter rejects (an earlier day, or NULL) tells the two apart
    assert any(row[4] is None or row[4] < datetime.date(2020, 1, 2) for row in r.counterexample.rows)


def test_typed_encoding_agrees_with_spark(spark):
    import datetime
    import random

    from superop.sparkutil import bag
    from superop.verify.check import evaluate
    from superop.verify.replay import run_sql_on_rows
    from superop.verify.result import Counterexample
    sql = ("SELECT name, AVG(amt) AS v, MAX(day) AS last, COUNT(ok) AS k FROM ev "
           "WHERE day >= DATE '2020-01-02' OR NOT ok GROUP BY name "
           "UNION ALL SELECT name, SUM(amt) / 2 AS v, MIN(day) AS last, COUNT(*) AS k FROM ev GROUP BY name")
    rnd = random.Random(7)
    days = [datetime.date(2020, 1, 1), datetime.date(2020, 1, 2), datetime.date(2021, 3, 4), None]
    rows = [(i, rnd.choice(["p", "q", None]), rnd.choice([0.5, -1.25, 3.0, None]), rnd.choice([True, False, None]),
             rnd.choice(days)) for i in range(7)]
    cex = Counterexample("ev", list(SCHEMA["ev"]), list(SCHEMA["ev"].values()), rows, [], [])
    assert bag(evaluate(lower(sql, SCHEMA).plan, rows)) == bag(run_sql_on_rows(spark, sql, cex))
