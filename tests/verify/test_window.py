"""Window aggregates (the other way to write Min & Join): whole-partition frames and
Spark's default RANGE frame under ORDER BY; checked against Spark and against a
streaming program."""
from __future__ import annotations

import random

import pytest

from superop.dsl import STREAMING, Accumulator, Program, RowEmit, SortKey, e
from superop.ir import lower
from superop.sparkutil import bag
from superop.verify.check import check_equivalence, evaluate
from superop.verify.corpus import OPS_SCHEMA
from superop.verify.replay import run_sql_on_rows
from superop.verify.result import Counterexample

from .conftest import K_TEST, TIMEOUT_MS

WINDOW_SQL = [
    "SELECT a, b, SUM(b) OVER (PARTITION BY a ORDER BY s) AS rs, COUNT(*) OVER () AS n FROM ops",
    "SELECT a, b, AVG(c) OVER (PARTITION BY a, d ORDER BY s DESC NULLS FIRST, b) AS x, "
    "MAX(d) OVER (PARTITION BY a) AS m FROM ops",
    # ranking: peers (ties, NULLs) share one rank; dense_rank counts distinct peer groups
    "SELECT a, b, RANK() OVER (PARTITION BY a ORDER BY b) AS r, "
    "DENSE_RANK() OVER (PARTITION BY d ORDER BY s DESC NULLS FIRST, b) AS dr, "
    "DENSE_RANK() OVER (ORDER BY a) AS g FROM ops",
]


@pytest.mark.parametrize("i", range(len(WINDOW_SQL)))
def test_window_encoding_agrees_with_spark(spark, i):
    rnd = random.Random(i)
    rows = [(rnd.choice([1, 2, None]), rnd.choice([0, 1, 2, None]), rnd.choice([1, 2, None]),
             rnd.choice(["x", "y", None]), rnd.choice([1, 2, None])) for _ in range(7)]
    cex = Counterexample("ops", list(OPS_SCHEMA["ops"]), list(OPS_SCHEMA["ops"].values()), rows, [], [])
    sql = WINDOW_SQL[i]
    assert bag(evaluate(lower(sql, OPS_SCHEMA).plan, rows)) == bag(run_sql_on_rows(spark, sql, cex))


def test_windowed_min_join_memory_classes():
    from dataclasses import replace

    from superop.verify.check import check_memory_class

    def prog(guard_acc, guard_emit):
        return Program(keys=("a",), output=("a", "b", "mb"), sort=(SortKey("b"),), memory=STREAMING,
                       accumulators=(Accumulator("mn", "min", e("row.b"), guard_acc and e(guard_acc)),),
                       row_emits=(RowEmit(guard_emit and e(guard_emit), (e("row.a"), e("row.b"), e("acc.mn"))),))
    # σ below the window filters both the emitted rows and the MIN: every emitted row comes
    # at or after the first passing row in b order, so the running MIN is final (streaming).
    # Unlike the join form, the window keeps the NULL-key partition: no NOT NULL guard.
    filtered = lower("SELECT a, b, MIN(b) OVER (PARTITION BY a) AS mb FROM ops WHERE s > 0", OPS_SCHEMA).plan
    p1 = prog("row.s > 0", "row.s > 0")
    assert check_equivalence(filtered, p1, K=K_TEST, timeout_ms=TIMEOUT_MS).status == "verified"
    assert check_memory_class(filtered, p1, K=K_TEST) == STREAMING
    # Fig. 13 as a window: every row is emitted but the MIN only sees rows with c > 0
    fig13 = lower("SELECT a, b, MIN(CASE WHEN c > 0 THEN b END) OVER (PARTITION BY a) AS mb FROM ops",
                  OPS_SCHEMA).plan
    p2 = prog("row.c > 0", None)
    assert check_equivalence(fig13, p2, K=K_TEST, timeout_ms=TIMEOUT_MS).status == "refuted"
    assert check_equivalence(fig13, replace(p2, memory="buffering"), K=K_TEST,
                             timeout_ms=TIMEOUT_MS).status == "verified"
    assert check_memory_class(fig13, p2, K=K_TEST) == "buffering"


def test_rows_frame_running_min_and_other_frames_unsupported():
    """ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW (how the runtime compiles a streaming
    program's running values) is modelled, ties in any order; other frames are not."""
    sql = ("SELECT a, MIN(s) OVER (PARTITION BY a ORDER BY s ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS m "
           "FROM ops")

    def prog(nulls_first):
        return Program(keys=("a",), output=("a", "m"), accumulators=(Accumulator("m", "min", e("row.s")),),
                       row_emits=(RowEmit(None, (e("row.a"), e("acc.m"))),),
                       sort=(SortKey("s", nulls_first=nulls_first),))
    plan = lower(sql, OPS_SCHEMA).plan
    # Spark's ORDER BY s is NULLS FIRST: a running min over NULLs-last order differs at the NULL rows
    assert check_equivalence(plan, prog(True), K=K_TEST, timeout_ms=TIMEOUT_MS).status == "verified"
    assert check_equivalence(plan, prog(False), K=K_TEST, timeout_ms=TIMEOUT_MS).status == "refuted"
    other = lower(sql.replace("UNBOUNDED PRECEDING", "1 PRECEDING"), OPS_SCHEMA).plan
    r = check_equivalence(other, prog(True), K=2)
    assert r.status == "unsupported" and "frame" in r.reason
