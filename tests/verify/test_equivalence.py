"""Bounded equivalence on the paper's variants (Fig. 7-13) and on the traps of issue 5.

Programs are written by hand here (the synthesizer is tested elsewhere). Every
refutation is replayed: Spark runs the SQL and the reference interpreter the program
over the counterexample rows, and the outputs must really differ.
"""
from __future__ import annotations

import pytest

from superop.dsl import BUFFERING, STREAMING, Accumulator, Flag, PartitionEmit, Program, RowEmit, SortKey, e
from superop.verify.check import check_equivalence, check_memory_class

from .conftest import K_TEST, TIMEOUT_MS, plan_of


def check(sql, program, K=K_TEST):
    return check_equivalence(plan_of(sql), program, K=K, timeout_ms=TIMEOUT_MS)


A = Accumulator
NOT_NULL_A = "key.a IS NOT NULL"

# ---------------------------------------------------------------------------
# Diamond UnionAll (Fig. 7-9)
# ---------------------------------------------------------------------------
FIG7 = ("SELECT a, SUM(b) AS x, COUNT(*) AS y FROM ops GROUP BY a "
        "UNION ALL SELECT a, MAX(c) AS x, MIN(s) AS y FROM ops GROUP BY a")
FIG7_PROG = Program(
    keys=("a",), output=("a", "x", "y"),
    accumulators=(A("sb", "sum", e("row.b")), A("n", "count_star"),
                  A("mc", "max", e("row.c")), A("ms", "min", e("row.s"))),
    partition_emits=(PartitionEmit(None, (e("key.a"), e("acc.sb"), e("acc.n"))),
                     PartitionEmit(None, (e("key.a"), e("acc.mc"), e("acc.ms")))))

FIG8 = ("SELECT a, SUM(b) AS x FROM ops WHERE s < 100 GROUP BY a "
        "UNION ALL SELECT a, COUNT(*) AS x FROM ops GROUP BY a HAVING COUNT(*) > 1")


def fig8_prog(with_flag=True):
    return Program(
        keys=("a",), output=("a", "x"),
        accumulators=(A("x1", "sum", e("row.b"), e("row.s < 100")), A("n", "count_star")),
        flags=(Flag("out1", e("row.s < 100")),) if with_flag else (),
        partition_emits=(PartitionEmit(e("flag.out1") if with_flag else None, (e("key.a"), e("acc.x1"))),
                         PartitionEmit(e("acc.n > 1"), (e("key.a"), e("acc.n")))))


FIG9 = ("SELECT a, SUM(bc) AS x, 'L' AS side FROM (SELECT a, b + c AS bc FROM ops) t GROUP BY a "
        "UNION ALL SELECT a, MAX(s) AS x, 'R' AS side FROM ops GROUP BY a")
FIG9_PROG = Program(
    keys=("a",), output=("a", "x", "side"),
    accumulators=(A("x1", "sum", e("row.b + row.c")), A("m", "max", e("row.s"))),
    partition_emits=(PartitionEmit(None, (e("key.a"), e("acc.x1"), e("'L'"))),
                     PartitionEmit(None, (e("key.a"), e("acc.m"), e("'R'")))))

FIG15 = ("SELECT MAX(ts) AS hi, mailboxguid AS g, COUNT(*) AS cnt FROM mailbox "
         "WHERE eventname IN ('e1', 'e2') GROUP BY mailboxguid "
         "UNION ALL SELECT MAX(ts) AS hi, mailboxguid AS g, COUNT(*) AS cnt FROM mailbox GROUP BY mailboxguid")
FIG15_PROG = Program(
    keys=("mailboxguid",), output=("hi", "g", "cnt"),
    accumulators=(A("h1", "max", e("row.ts"), e("row.eventname IN ('e1', 'e2')")),
                  A("n1", "count_star", None, e("row.eventname IN ('e1', 'e2')")),
                  A("h2", "max", e("row.ts")), A("n2", "count_star")),
    flags=(Flag("out1", e("row.eventname IN ('e1', 'e2')")),),
    partition_emits=(PartitionEmit(e("flag.out1"), (e("acc.h1"), e("key.mailboxguid"), e("acc.n1"))),
                     PartitionEmit(None, (e("acc.h2"), e("key.mailboxguid"), e("acc.n2")))))


@pytest.mark.parametrize("sql,prog", [(FIG7, FIG7_PROG), (FIG8, fig8_prog()), (FIG9, FIG9_PROG),
                                      (FIG15, FIG15_PROG)], ids=["fig7", "fig8", "fig9", "fig15"])
def test_diamond_union_variants_verify(sql, prog):
    r = check(sql, prog)
    assert r.status == "verified", r.reason
    assert r.K == K_TEST and r.method == "bounded"


def test_trap_du_without_emptiness_guard(assert_replayed):
    prog = fig8_prog(with_flag=False)
    cex = assert_replayed(FIG8, prog, check(FIG8, prog))
    # the program emits a left row for a group none of whose rows passes s < 100
    assert len(cex.program_output) > len(cex.plan_output)


def test_trap_different_grouping_keys(assert_replayed):
    sql = ("SELECT a, COUNT(*) AS n FROM ops GROUP BY a "
           "UNION ALL SELECT b AS a, COUNT(*) AS n FROM ops GROUP BY b")
    prog = Program(keys=("a",), output=("a", "n"), accumulators=(A("n", "count_star"),),
                   partition_emits=(PartitionEmit(None, (e("key.a"), e("acc.n"))),) * 2)
    assert_replayed(sql, prog, check(sql, prog))


AVG_SQL = ("SELECT a, AVG(s) AS v FROM ops WHERE c > 0 GROUP BY a "
           "UNION ALL SELECT a, COUNT(*) AS v FROM ops GROUP BY a")


def avg_prog(guarded=True, avg_as_ratio=False):
    acc = (A("sm", "sum", e("row.s"), e("row.c > 0")), A("k", "count_star", None, e("row.c > 0"))) \
        if avg_as_ratio else (A("v", "avg", e("row.s"), e("row.c > 0")),)
    out = e("acc.sm / acc.k") if avg_as_ratio else e("acc.v")
    return Program(keys=("a",), output=("a", "v"), accumulators=acc + (A("n", "count_star"),),
                   flags=(Flag("out1", e("row.c > 0")),),
                   partition_emits=(PartitionEmit(e("flag.out1") if guarded else None, (e("key.a"), out)),
                                    PartitionEmit(None, (e("key.a"), e("acc.n")))))


def test_avg_with_guard_verifies():
    r = check(AVG_SQL, avg_prog())
    assert r.status == "verified", r.reason


def test_trap_avg_over_empty_filtered_group(assert_replayed):
    prog = avg_prog(guarded=False)
    cex = assert_replayed(AVG_SQL, prog, check(AVG_SQL, prog))
    assert any(row[1] is None for row in cex.program_output)  # AVG of no value is NULL


def test_trap_avg_as_sum_over_count_star(assert_replayed):
    # COUNT(*) also counts rows whose s is NULL: sum/count(*) is not AVG(s)
    prog = avg_prog(avg_as_ratio=True)
    cex = assert_replayed(AVG_SQL, prog, check(AVG_SQL, prog))
    assert any(r[4] is None for r in cex.rows)


def test_trap_count_col_vs_count_star(assert_replayed):
    sql = ("SELECT a, COUNT(b) AS n FROM ops GROUP BY a "
           "UNION ALL SELECT a, COUNT(*) AS n FROM ops WHERE s > 0 GROUP BY a")

    def prog(f):
        return Program(keys=("a",), output=("a", "n"),
                       accumulators=(A("n1", f, e("row.b") if f == "count" else None),
                                     A("n2", "count_star", None, e("row.s > 0"))),
                       flags=(Flag("out2", e("row.s > 0")),),
                       partition_emits=(PartitionEmit(None, (e("key.a"), e("acc.n1"))),
                                        PartitionEmit(e("flag.out2"), (e("key.a"), e("acc.n2")))))
    assert check(sql, prog("count")).status == "verified"
    cex = assert_replayed(sql, prog("count_star"), check(sql, prog("count_star")))
    assert any(r[1] is None for r in cex.rows)   # a NULL b tells the two apart


# ---------------------------------------------------------------------------
# Diamond Join
# ---------------------------------------------------------------------------
DJ_LEFT = ("SELECT l.a, l.n, r.m FROM (SELECT a, COUNT(*) AS n FROM ops GROUP BY a) l "
           "LEFT JOIN (SELECT a, MAX(b) AS m FROM ops WHERE c > 0 GROUP BY a) r ON l.a = r.a")


def dj_prog(kind):
    matched = e(f"flag.out2 AND {NOT_NULL_A}")
    emits = [PartitionEmit(matched, (e("key.a"), e("acc.n"), e("acc.m")))]
    if kind == "left":
        emits.append(PartitionEmit(e(f"NOT (flag.out2 AND {NOT_NULL_A})"), (e("key.a"), e("acc.n"), e("NULL"))))
    return Program(keys=("a",), output=("a", "n", "m"),
                   accumulators=(A("n", "count_star"), A("m", "max", e("row.b"), e("row.c > 0"))),
                   flags=(Flag("out2", e("row.c > 0")),), partition_emits=tuple(emits))


def test_dj_left_verifies():
    r = check(DJ_LEFT, dj_prog("left"))
    assert r.status == "verified", r.reason


def test_dj_inner_verifies():
    r = check(DJ_LEFT.replace("LEFT JOIN", "JOIN"), dj_prog("inner"))
    assert r.status == "verified", r.reason


def test_trap_inner_join_program_for_outer_join(assert_replayed):
    prog = dj_prog("inner")
    assert_replayed(DJ_LEFT, prog, check(DJ_LEFT, prog))


def test_trap_dj_null_keys_join_nothing(assert_replayed):
    # Fig. 10 line 20 without a NOT NULL key guard: NULL = NULL is not TRUE in the ON clause
    sql = DJ_LEFT.replace("LEFT JOIN", "JOIN")
    prog = Program(keys=("a",), output=("a", "n", "m"),
                   accumulators=(A("n", "count_star"), A("m", "max", e("row.b"), e("row.c > 0"))),
                   flags=(Flag("out2", e("row.c > 0")),),
                   partition_emits=(PartitionEmit(e("flag.out2"), (e("key.a"), e("acc.n"), e("acc.m"))),))
    cex = assert_replayed(sql, prog, check(sql, prog))
    assert any(r[0] is None for r in cex.rows)


def test_trap_join_on_non_key_columns(assert_replayed):
    sql = ("SELECT l.a, l.n, r.m FROM (SELECT a, COUNT(*) AS n FROM ops GROUP BY a) l "
           "JOIN (SELECT a, COUNT(*) AS m FROM ops WHERE c > 0 GROUP BY a) r ON l.n = r.m")
    prog = Program(keys=("a",), output=("a", "n", "m"),
                   accumulators=(A("n", "count_star"), A("m", "count_star", None, e("row.c > 0"))),
                   flags=(Flag("out2", e("row.c > 0")),),
                   partition_emits=(PartitionEmit(e("flag.out2 AND acc.n = acc.m"),
                                                  (e("key.a"), e("acc.n"), e("acc.m"))),))
    cex = assert_replayed(sql, prog, check(sql, prog))
    assert len({r[0] for r in cex.rows}) >= 2   # needs two groups that cross-match


def test_trap_join_on_subset_of_keys(assert_replayed):
    sql = ("SELECT l.a, l.d, l.n, r.m FROM (SELECT a, d, COUNT(*) AS n FROM ops GROUP BY a, d) l "
           "JOIN (SELECT a, d, MAX(b) AS m FROM ops GROUP BY a, d) r ON l.a = r.a")
    prog = Program(keys=("a", "d"), output=("a", "d", "n", "m"),
                   accumulators=(A("n", "count_star"), A("m", "max", e("row.b"))),
                   partition_emits=(PartitionEmit(e(NOT_NULL_A),
                                                  (e("key.a"), e("key.d"), e("acc.n"), e("acc.m"))),))
    assert_replayed(sql, prog, check(sql, prog))


# ---------------------------------------------------------------------------
# Min & Join (Fig. 11-13)
# ---------------------------------------------------------------------------
FIG11 = ("SELECT o.a, o.b, o.c, m.mb FROM ops o "
         "JOIN (SELECT a, MIN(b) AS mb FROM ops GROUP BY a) m ON o.a = m.a")
FIG11_PROG = Program(keys=("a",), output=("a", "b", "c", "mb"), sort=(SortKey("b"),), memory=STREAMING,
                     accumulators=(A("mn", "min", e("row.b")),),
                     row_emits=(RowEmit(e(NOT_NULL_A), (e("row.a"), e("row.b"), e("row.c"), e("acc.mn"))),))

FIG12 = ("SELECT o.a, o.b, m.mb FROM (SELECT * FROM ops WHERE s > 5) o "
         "JOIN (SELECT a, MIN(b) AS mb FROM ops GROUP BY a HAVING MIN(b) < 10) m ON o.a = m.a")
FIG12_PROG = Program(keys=("a",), output=("a", "b", "mb"), sort=(SortKey("b"),), memory=STREAMING,
                     accumulators=(A("mn", "min", e("row.b")),),
                     row_emits=(RowEmit(e(f"row.s > 5 AND acc.mn < 10 AND {NOT_NULL_A}"),
                                        (e("row.a"), e("row.b"), e("acc.mn"))),))

FIG13 = ("SELECT o.a, o.b, m.mb FROM ops o "
         "JOIN (SELECT a, MIN(b) AS mb FROM ops WHERE c > 0 GROUP BY a) m ON o.a = m.a")


def fig13_prog(memory):
    return Program(keys=("a",), output=("a", "b", "mb"), sort=(SortKey("b"),), memory=memory,
                   accumulators=(A("mn", "min", e("row.b"), e("row.c > 0")),),
                   flags=(Flag("out1", e("row.c > 0")),),
                   row_emits=(RowEmit(e(f"flag.out1 AND {NOT_NULL_A}"), (e("row.a"), e("row.b"), e("acc.mn"))),))


@pytest.mark.parametrize("sql,prog", [(FIG11, FIG11_PROG), (FIG12, FIG12_PROG)], ids=["fig11", "fig12"])
def test_min_join_streaming_verifies(sql, prog):
    r = check(sql, prog)
    assert r.status == "verified", r.reason


def test_min_join_without_sort_is_not_streaming(assert_replayed):
    unsorted = Program(keys=FIG11_PROG.keys, output=FIG11_PROG.output, memory=STREAMING,
                       accumulators=FIG11_PROG.accumulators, row_emits=FIG11_PROG.row_emits)
    assert_replayed(FIG11, unsorted, check(FIG11, unsorted))


def test_trap_fig13_streaming_claim(assert_replayed):
    prog = fig13_prog(STREAMING)
    cex = assert_replayed(FIG13, prog, check(FIG13, prog))
    assert cex.plan_output != cex.program_output
    # the same program with buffered (final) values is right, and that is its checked class
    assert check(FIG13, fig13_prog(BUFFERING)).status == "verified"
    assert check_memory_class(plan_of(FIG13), prog, K=K_TEST) == BUFFERING
    assert check_memory_class(plan_of(FIG11), FIG11_PROG, K=K_TEST) == STREAMING


def test_unsupported_is_never_verified():
    sql = "SELECT a, COUNT(*) AS n FROM ops WHERE d LIKE 'x%' GROUP BY a"
    prog = Program(keys=("a",), output=("a", "n"), accumulators=(A("n", "count_star", None, e("row.d LIKE 'x%'")),),
                   flags=(Flag("o", e("row.d LIKE 'x%'")),),
                   partition_emits=(PartitionEmit(e("flag.o"), (e("key.a"), e("acc.n"))),))
    r = check(sql, prog)
    assert r.status == "unsupported" and "Like" in r.reason


def test_timeout_is_unknown():
    # a two-key full-size diamond join at K = 6 takes seconds; 100 ms must give "unknown"
    from superop.families import build_program
    from superop.ir import lower
    from superop.verify.corpus import OPS_SCHEMA, TABLE2
    from superop.verify.streamability import find_match
    sql = dict((n, q) for n, _, _, q in TABLE2)["q12"]
    d = find_match(lower(sql, OPS_SCHEMA).plan)
    r = check_equivalence(d.root, build_program(d), K=6, timeout_ms=100)
    assert r.status == "unknown" and r.reason.startswith("solver")
    assert not r.verified


def test_global_aggregates_and_the_empty_table(assert_replayed):
    # no GROUP BY: exactly one row even over an empty (filtered) input
    sql = ("SELECT COUNT(*) AS n, SUM(s) AS t FROM ops WHERE c > 0 "
           "UNION ALL SELECT COUNT(b) AS n, MAX(s) AS t FROM ops")
    accs = (A("n1", "count_star", None, e("row.c > 0")), A("t1", "sum", e("row.s"), e("row.c > 0")),
            A("n2", "count", e("row.b")), A("t2", "max", e("row.s")))
    good = Program(keys=(), output=("n", "t"), accumulators=accs,
                   partition_emits=(PartitionEmit(None, (e("acc.n1"), e("acc.t1"))),
                                    PartitionEmit(None, (e("acc.n2"), e("acc.t2")))))
    assert check(sql, good).status == "verified"
    guarded = Program(keys=(), output=("n", "t"), accumulators=accs, flags=(Flag("o", e("row.c > 0")),),
                      partition_emits=(PartitionEmit(e("flag.o"), (e("acc.n1"), e("acc.t1"))),
                                       good.partition_emits[1]))
    cex = assert_replayed(sql, guarded, check(sql, guarded))
    assert (0, None) in cex.plan_output
