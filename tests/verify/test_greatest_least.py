"""GREATEST/LEAST in the Z3 encoding (Spark: the extreme non-NULL argument, NULL only when
every argument is NULL): a correct program verifies, a swapped one is refuted, and the
counterexample really separates them on Spark."""
from __future__ import annotations

import dataclasses

from superop.dsl import e as E
from superop.dsl.interpreter import run_program_rows
from superop.families import build_program, first_match
from superop.ir import lower
from superop.sparkutil import bag
from superop.verify.check import check_equivalence

S = {"ops": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"}}
Q = ("SELECT a, MAX(GREATEST(b, c)) AS m FROM ops WHERE LEAST(b, s) > 1 GROUP BY a "
     "UNION ALL SELECT a, MIN(LEAST(b, c)) FROM ops GROUP BY a")


def _program():
    p = lower(Q, S).plan
    d = first_match(p)
    return d, build_program(d)


def test_greatest_least_verify_and_a_swap_is_refuted(spark):
    d, prog = _program()
    assert check_equivalence(d.root, prog, K=3).status == "verified"
    bad = dataclasses.replace(prog, accumulators=tuple(
        dataclasses.replace(a, arg=E("LEAST(row.b, row.c)")) if a.func == "max" else a
        for a in prog.accumulators))
    r = check_equivalence(d.root, bad, K=3)
    assert r.status == "refuted"
    cex = r.counterexample
    spark.createDataFrame(cex.rows, cex.ddl()).createOrReplaceTempView("ops_gl_cex")
    got = bag(spark.sql(Q.replace("FROM ops", "FROM ops_gl_cex")).collect())
    assert got != bag(run_program_rows(bad, cex.columns, cex.rows))
    assert got == bag(run_program_rows(prog, cex.columns, cex.rows))
