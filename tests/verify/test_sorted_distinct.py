"""The sorted, constant-state COUNT(DISTINCT) (``count_distinct_sorted``): the reference
interpreter runs the (last value, count) fold in sort order, Z3 encodes the same fold over
the sort order of K symbolic rows (NULLs not counted, duplicates once), and the memory
class is streaming ONLY when the program's sort order really provides it."""
from __future__ import annotations

from dataclasses import replace

from superop.dsl import (
    BUFFERING,
    STREAMING,
    Accumulator,
    PartitionEmit,
    Program,
    SortKey,
    distinct_sort_obstacle,
    e,
    sort_distinct,
)
from superop.dsl.interpreter import run_program_rows
from superop.verify.check import check_equivalence, check_memory_class

from .conftest import K_TEST, TIMEOUT_MS, plan_of

SQL = "SELECT a, COUNT(DISTINCT b) AS n, COUNT(DISTINCT CASE WHEN s > 2 THEN b END) AS m FROM ops GROUP BY a"


def _prog(func: str, sort_col: str = "b") -> Program:
    return Program(keys=("a",), output=("a", "n", "m"),
                   accumulators=(Accumulator("n", func, e("row.b")),
                                 Accumulator("m", func, e("row.b"), e("row.s > 2"))),
                   partition_emits=(PartitionEmit(None, (e("key.a"), e("acc.n"), e("acc.m"))),),
                   sort=(SortKey(sort_col),) if sort_col else ())


def test_the_interpreter_counts_runs_in_sort_order():
    cols = ["a", "b", "c", "d", "s"]
    rows = [(1, 3, 0, "x", 5), (1, None, 0, "x", 5), (1, 2, 0, "x", 1), (1, 3, 0, "x", 9), (1, 2, 0, "x", 9),
            (2, None, 0, "x", 1)]
    # sorted on b: duplicates count once, NULLs not at all, guarded values per accumulator
    assert sorted(run_program_rows(_prog("count_distinct_sorted"), cols, rows)) == [(1, 2, 2), (2, 0, 0)]
    assert sorted(run_program_rows(_prog("count_distinct"), cols, rows)) == [(1, 2, 2), (2, 0, 0)]
    # in another order the fold counts runs, which is NOT the distinct count
    assert sorted(run_program_rows(_prog("count_distinct_sorted", "s"), cols, rows))[0] != (1, 2, 2)


def test_z3_proves_the_sorted_fold_and_refutes_the_wrong_sort():
    plan = plan_of(SQL)
    ok = check_equivalence(plan, _prog("count_distinct_sorted"), K=K_TEST, timeout_ms=TIMEOUT_MS)
    assert ok.status == "verified", ok.reason
    bad = check_equivalence(plan, _prog("count_distinct_sorted", "s"), K=K_TEST, timeout_ms=TIMEOUT_MS)
    assert bad.status == "refuted" and bad.counterexample is not None
    none = check_equivalence(plan, _prog("count_distinct_sorted", ""), K=K_TEST, timeout_ms=TIMEOUT_MS)
    assert none.status == "refuted"


def test_memory_class_is_streaming_only_when_the_sort_provides_it():
    plan = plan_of(SQL)
    assert check_memory_class(plan, _prog("count_distinct_sorted"), K=K_TEST) == STREAMING
    assert check_memory_class(plan, _prog("count_distinct"), K=K_TEST) == BUFFERING
    assert check_memory_class(plan, _prog("count_distinct_sorted", "s"), K=K_TEST) is None


def test_sort_distinct_applies_only_to_one_sortable_column():
    p = sort_distinct(replace(_prog("count_distinct", ""), memory=BUFFERING))
    assert {a.func for a in p.accumulators} == {"count_distinct_sorted"}
    assert p.sort == (SortKey("b"),) and p.memory == STREAMING
    two = replace(_prog("count_distinct", ""), accumulators=(
        Accumulator("n", "count_distinct", e("row.b")), Accumulator("m", "count_distinct", e("row.c"))))
    assert sort_distinct(two) == two
    assert "two columns" in (distinct_sort_obstacle(two.accumulators) or "")
    expr = replace(_prog("count_distinct", ""), accumulators=(
        Accumulator("n", "count_distinct", e("row.b % 3")), Accumulator("m", "count_distinct", e("row.b % 3"))))
    assert sort_distinct(expr) == expr
    assert "not an input column" in (distinct_sort_obstacle(expr.accumulators) or "")
    # a program already sorted on another column keeps its set
    other = _prog("count_distinct", "s")
    assert sort_distinct(other) == other
