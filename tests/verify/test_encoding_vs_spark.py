"""The Z3 encodings run forwards on concrete tables must agree with Spark (for the SQL
sub-plan) and with the reference interpreter (for the program). Random small tables with
NULLs, duplicates and empty groups, seeded per query."""
from __future__ import annotations

import random

import pytest

from superop.families import build_program
from superop.ir import lower
from superop.sparkutil import bag
from superop.verify.check import evaluate
from superop.verify.corpus import OPS_SCHEMA, TABLE2
from superop.verify.replay import run_program_on_rows, run_sql_on_rows
from superop.verify.result import Counterexample
from superop.verify.streamability import find_match

COLS = list(OPS_SCHEMA["ops"])
TYPES = list(OPS_SCHEMA["ops"].values())


def random_rows(seed: int, n: int = 6):
    rnd = random.Random(seed)
    pick = lambda dom: rnd.choice(dom)  # noqa: E731
    rows = [(pick([1, 2, None]), pick([-1, 0, 2, 6, None]), pick([-1, 0, 1, 4, None]),
             pick(["x", "y", None]), pick([-1, 1, 3, 10, None])) for _ in range(n)]
    return rows + rows[:1]   # a duplicate row: bags, not sets


@pytest.mark.parametrize("name,sql", [(n, q) for n, _, _, q in TABLE2], ids=[n for n, *_ in TABLE2])
def test_plan_encoding_agrees_with_spark(spark, name, sql):
    rows = random_rows(int(name[1:]))
    plan = lower(sql, OPS_SCHEMA).plan
    cex = Counterexample("ops", COLS, TYPES, rows, [], [])
    assert bag(evaluate(plan, rows)) == bag(run_sql_on_rows(spark, sql, cex))


@pytest.mark.parametrize("name,sql", [(n, q) for n, _, _, q in TABLE2], ids=[n for n, *_ in TABLE2])
def test_program_encoding_agrees_with_interpreter(name, sql):
    rows = random_rows(100 + int(name[1:]))
    d = find_match(lower(sql, OPS_SCHEMA).plan)
    prog = build_program(d)
    cex = Counterexample("ops", COLS, TYPES, rows, [], [])
    assert bag(evaluate(d.root, rows, prog)) == bag(run_program_on_rows(prog, cex))
