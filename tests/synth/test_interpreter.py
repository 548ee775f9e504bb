"""The DSL's reference semantics on hand-checked inputs (the paper's Fig. 7, 8, 11, 13)."""
from __future__ import annotations

import pandas as pd
import pytest

from superop.dsl import (
    BUFFERING,
    STREAMING,
    Accumulator,
    Flag,
    Neighbour,
    PartitionEmit,
    Program,
    RowEmit,
    RowNumber,
    SortKey,
    e,
)
from superop.dsl.interpreter import ProgramError, run_program
from superop.sparkutil import bag

OPS = ["a", "b", "c", "d", "s"]


def df(rows, cols=OPS):
    return pd.DataFrame(rows, columns=cols, dtype=object)


def fig8(with_flag: bool) -> Program:
    return Program(
        keys=("a",), output=("a", "x"),
        accumulators=(Accumulator("f1", "sum", e("row.s"), e("row.s < 100")),
                      Accumulator("f2", "count_star")),
        flags=(Flag("out1", e("row.s < 100")),) if with_flag else (),
        partition_emits=(PartitionEmit(e("flag.out1") if with_flag else None, (e("key.a"), e("acc.f1"))),
                         PartitionEmit(e("acc.f2 > 1"), (e("key.a"), e("acc.f2")))))


def test_fig8_guarded_folds_flags_and_null_key_partition():
    rows = [(1, 0, 0, "r", 5), (1, 0, 0, "r", 200), (1, 0, 0, "r", None),
            (2, 0, 0, "w", 300),            # group 2: no row passes s < 100
            (None, 0, 0, "w", 1), (None, 0, 0, "w", 2)]   # NULL keys: one partition
    out = run_program(fig8(True), df(rows))
    assert bag(out) == bag([(1, 5), (1, 3), (None, 3), (None, 2)])
    # without the flag the empty left group 2 still emits (2, NULL): that is the bug
    # the paper's out_1 flag prevents
    assert bag(run_program(fig8(False), df(rows))) == bag(out + [(2, None)])


def test_aggregate_null_semantics():
    p = Program(keys=("a",), output=("n", "nc", "s", "mn", "mx", "av", "cd"),
                accumulators=(Accumulator("n", "count_star"), Accumulator("nc", "count", e("row.s")),
                              Accumulator("s", "sum", e("row.s")), Accumulator("mn", "min", e("row.s")),
                              Accumulator("mx", "max", e("row.s")), Accumulator("av", "avg", e("row.s")),
                              Accumulator("cd", "count_distinct", e("row.b"))),
                partition_emits=(PartitionEmit(None, tuple(e(f"acc.{x}") for x in
                                                           ("n", "nc", "s", "mn", "mx", "av", "cd"))),))
    out = run_program(p, df([(1, 7, 0, "r", None), (1, 7, 0, "r", None), (2, 1, 0, "r", 4),
                             (2, None, 0, "r", 2)]))
    assert bag(out) == bag([(2, 0, None, None, None, None, 1), (2, 2, 6, 2, 4, 3.0, 1)])


def test_three_valued_guards_and_expressions():
    # NULL AND FALSE is FALSE, NULL OR TRUE is TRUE, NOT NULL is NULL (guard fails)
    p = Program(keys=("a",), output=("a", "v"), accumulators=(Accumulator("n", "count_star"),),
                partition_emits=(
                    PartitionEmit(e("NOT (NULL AND FALSE)"), (e("key.a"), e("1"))),
                    PartitionEmit(e("NULL OR TRUE"), (e("key.a"), e("2"))),
                    PartitionEmit(e("NOT (NULL = 1)"), (e("key.a"), e("3"))),
                    PartitionEmit(e("key.a IN (2, NULL)"), (e("key.a"), e("4"))),
                    PartitionEmit(None, (e("key.a"),
                                         e("CASE WHEN key.a > 1 THEN 'big' ELSE COALESCE(NULL, 'small') END"))),
                    PartitionEmit(None, (e("key.a"), e("CAST(key.a AS DOUBLE) / 0"))),
                ))
    out = run_program(p, df([(1, 0, 0, "r", 0), (2, 0, 0, "r", 0)]))
    assert bag(out) == bag([(1, 1), (2, 1), (1, 2), (2, 2), (2, 4), (1, "small"), (2, "big"),
                            (1, None), (2, None)])


BY_B = (SortKey("b"),)


def mj(memory: str, guard=None, sort=BY_B) -> Program:
    return Program(keys=("a",), output=("a", "b", "mb"),
                   accumulators=(Accumulator("mb", "min", e("row.b"), guard),),
                   row_emits=(RowEmit(None, (e("row.a"), e("row.b"), e("acc.mb"))),),
                   sort=sort, memory=memory)


def test_streaming_row_emits_see_running_values_buffering_final():
    rows = [(1, 3, 0, "r", 0), (1, None, 0, "r", 0), (1, 1, 0, "r", 0)]
    want = bag([(1, 3, 1), (1, None, 1), (1, 1, 1)])
    # Fig. 11: sorted on b (NULLs last) the first row holds the min: streaming is right
    assert bag(run_program(mj(STREAMING), df(rows))) == want
    # NULLs first: the running min is NULL on the NULL row
    nf = mj(STREAMING, sort=(SortKey("b", True, True),))
    assert bag(run_program(nf, df(rows))) == bag([(1, None, None), (1, 1, 1), (1, 3, 1)])
    # unsorted, running values differ; buffering sees the final min
    assert bag(run_program(mj(STREAMING, sort=()), df(rows))) != want
    assert bag(run_program(mj(BUFFERING, sort=()), df(rows))) == want


def test_fig13_guarded_running_min_is_wrong_when_streaming():
    rows = [(1, 1, 0, "r", 0), (1, 2, 0, "r", 9)]          # only b=2 passes s > 3
    g = e("row.s > 3")
    assert bag(run_program(mj(STREAMING, guard=g), df(rows))) == bag([(1, 1, None), (1, 2, 2)])
    assert bag(run_program(mj(BUFFERING, guard=g), df(rows))) == bag([(1, 1, 2), (1, 2, 2)])


def test_keyless_program_is_one_partition_even_on_empty_input():
    p = Program(keys=(), output=("n",), accumulators=(Accumulator("n", "count_star"),),
                partition_emits=(PartitionEmit(None, (e("acc.n"),)),))
    assert run_program(p, df([])) == [(0,)]
    assert run_program(p, df([(1, 0, 0, "r", 0), (2, 0, 0, "r", 0)])) == [(2,)]


def lag_lead(offsets=(-1, 2)) -> Program:
    """Every row with its neighbours' s at ``offsets`` in (a; rn) order and a marker of the
    first one's presence (its value may be NULL, the marker is TRUE when the row exists)."""
    nbs = (Neighbour("here", offsets[0], e("TRUE")),) + tuple(
        Neighbour(f"s{i}", o, e("row.s")) for i, o in enumerate(offsets))
    return Program(keys=("a",), output=("a", "rn", "here") + tuple(f"s{i}" for i in range(len(offsets))),
                   sort=(SortKey("c"),), neighbours=nbs, requires=(RowNumber("c", ("a",)),),
                   row_emits=(RowEmit(None, (e("key.a"), e("row.c"), e("nb.here"),
                                             *(e(f"nb.s{i}") for i in range(len(offsets))))),))


def test_neighbours_are_lag_and_lead_within_the_sorted_partition():
    # c numbers the rows of each partition (NULL a is one partition); input order is shuffled
    rows = [(1, 0, 2, "r", None), (1, 0, 1, "r", 10), (1, 0, 3, "r", 30), (None, 0, 1, "r", 5),
            (2, 0, 1, "r", 7), (None, 0, 2, "r", 6)]
    got = run_program(lag_lead(), df(rows))
    # (a, rn, previous row exists, previous s, s two rows on); rn 3's previous row exists
    # (marker TRUE) although its s is NULL
    assert bag(got) == bag([
        (1, 1, None, None, 30), (1, 2, True, 10, None), (1, 3, True, None, None),
        (None, 1, None, None, None), (None, 2, True, 5, None),
        (2, 1, None, None, None)])


def test_neighbour_arguments_read_only_the_neighbour_row():
    p = Program(keys=("a",), output=("a", "x"), sort=(SortKey("c", ascending=False),),
                neighbours=(Neighbour("nx", 1, e("CASE WHEN row.s > 1 THEN row.b END")),),
                row_emits=(RowEmit(e("nb.nx IS NOT NULL"), (e("key.a"), e("nb.nx"))),))
    rows = [(1, 100, 1, "r", 5), (1, 200, 2, "r", 0), (1, 300, 3, "r", 9)]
    # DESC: rn 3, 2, 1; the next row of 3 is 2 (s = 0: NULL), of 2 is 1 (b = 100)
    assert run_program(p, df(rows)) == [(1, 100)]


@pytest.mark.parametrize("rn", [[1, 1, 2], [1, 3], [0, 1], [1, None]])
def test_an_input_that_is_not_row_numbered_violates_the_precondition(rn):
    rows = [(1, 0, r, "r", 0) for r in rn]
    with pytest.raises(ProgramError, match="precondition"):
        run_program(lag_lead(), df(rows))


def test_neighbours_need_a_sort_order():
    with pytest.raises(ValueError, match="sort order"):
        Program(keys=("a",), output=("x",), neighbours=(Neighbour("p", -1, e("row.s")),),
                row_emits=(RowEmit(None, (e("nb.p"),)),))
    with pytest.raises(ValueError, match="non-zero"):
        Neighbour("p", 0, e("row.s"))


def test_bad_programs_are_rejected():
    p = Program(keys=("zz",), output=("x",), partition_emits=(PartitionEmit(None, (e("key.zz"),)),))
    with pytest.raises(ProgramError):
        run_program(p, df([(1, 0, 0, "r", 0)]))
    q = Program(keys=("a",), output=("x",), partition_emits=(PartitionEmit(None, (e("row.b"),)),))
    with pytest.raises(ProgramError):       # rows are not visible in a partition emit
        run_program(q, df([(1, 0, 0, "r", 0)]))


def test_dates_and_casts():
    import datetime as dt
    g = e("row.d >= DATE '2020-01-02'")
    p = Program(keys=("a",), output=("a", "n", "last", "txt"),
                accumulators=(Accumulator("n", "count_star", None, g), Accumulator("mx", "max", e("row.d"))),
                partition_emits=(PartitionEmit(None, (e("key.a"), e("acc.n"), e("acc.mx"),
                                                      e("CAST(acc.mx AS STRING)"))),))
    rows = pd.DataFrame([(1, dt.date(2020, 1, 1)), (1, dt.date(2020, 1, 3)), (2, None)],
                        columns=["a", "d"], dtype=object)
    assert bag(run_program(p, rows)) == bag([(1, 1, dt.date(2020, 1, 3), "2020-01-03"), (2, 0, None, None)])
    # a datetime64 column arrives as pandas Timestamps: plain datetimes inside
    ts = pd.DataFrame({"a": [1], "d": pd.to_datetime(["2020-01-05"])})
    q = Program(keys=("a",), output=("x",), accumulators=(Accumulator("n", "count_star", None,
                                                                      e("CAST(row.d AS DATE) > DATE '2020-01-04'")),),
                partition_emits=(PartitionEmit(None, (e("acc.n"),)),))
    assert run_program(q, ts) == [(1,)]
