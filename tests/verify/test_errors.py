"""Errors as outcomes (ANSI mode, Spark 4's default): the encodings raise where Spark
raises, and a program that can raise where the query cannot is refuted — the trap of
issue 11: a DU whose output divides behind a HAVING."""
from __future__ import annotations

from dataclasses import replace

import pytest

from superop.dsl import PartitionEmit, e
from superop.families import build_program
from superop.verify.check import RaisesError, check_equivalence, evaluate
from superop.verify.program_encoder import EAGER, GUARDED
from superop.verify.streamability import find_match

from .conftest import SCHEMA, TIMEOUT_MS, plan_of

TRAP = ("SELECT a, 10 / (n - 1) AS x FROM (SELECT a, count(*) AS n FROM ops GROUP BY a HAVING count(*) > 1) t "
        "UNION ALL SELECT a, sum(s) AS x FROM ops GROUP BY a")
CAST_TRAP = ("SELECT a, CAST(m AS INT) AS x FROM (SELECT a, count(*) AS n, max(d) AS m FROM ops GROUP BY a "
             "HAVING count(*) > 1) t UNION ALL SELECT a, sum(s) AS x FROM ops GROUP BY a")


def _runtime_program(sql):
    d = find_match(plan_of(sql))
    return d, build_program(d)


def test_ansi_trap_refuted_when_outputs_are_evaluated_for_every_group(spark):
    d, prog = _runtime_program(TRAP)
    r = check_equivalence(d.root, prog, K=3, timeout_ms=TIMEOUT_MS, emit_outputs=EAGER)
    assert r.status == "refuted", r.reason
    cex = r.counterexample
    assert cex.program_error and not cex.plan_error
    # Spark (ANSI on) runs the query on the counterexample rows without an error, as the model says
    from superop.sparkutil import bag
    from superop.verify.replay import run_sql_on_rows
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    assert bag(run_sql_on_rows(spark, TRAP, cex)) == bag(cex.plan_output)


def test_ansi_trap_verified_when_outputs_are_evaluated_under_their_guard():
    d, prog = _runtime_program(TRAP)
    assert check_equivalence(d.root, prog, K=3, timeout_ms=TIMEOUT_MS, emit_outputs=GUARDED).status == "verified"
    # the same safety written into the program: outputs wrapped in IF(guard, output, NULL) are
    # verified even when every output is evaluated for every group
    wrapped = replace(prog, partition_emits=tuple(
        PartitionEmit(em.guard, tuple(o if em.guard is None else e(f"IF({em.guard.sql(dialect='spark')}, "
                                                                   f"{o.sql(dialect='spark')}, NULL)")
                                      for o in em.outputs))
        for em in prog.partition_emits))
    assert check_equivalence(d.root, wrapped, K=3, timeout_ms=TIMEOUT_MS, emit_outputs=EAGER).status == "verified"


def test_invalid_cast_behind_having():
    d, prog = _runtime_program(CAST_TRAP)
    eager = check_equivalence(d.root, prog, K=3, timeout_ms=TIMEOUT_MS, emit_outputs=EAGER)
    assert eager.status == "refuted" and eager.counterexample.program_error
    assert check_equivalence(d.root, prog, K=3, timeout_ms=TIMEOUT_MS).status == "verified"


def test_non_ansi_mode_divides_by_zero_to_null():
    d, prog = _runtime_program(TRAP)
    assert check_equivalence(d.root, prog, K=3, timeout_ms=TIMEOUT_MS, emit_outputs=EAGER,
                             ansi=False).status == "verified"


ROWS = [(1, 0, 2, "x", 5), (2, 4, 0, "y", 7), (None, 0, 1, None, None)]


@pytest.mark.parametrize("sql", [
    "SELECT a, 10 / b AS x FROM ops",                                     # raises (b = 0)
    "SELECT a FROM ops WHERE b <> 0 AND 10 / b > 1",                      # AND short-circuits
    "SELECT a, CASE WHEN b = 0 THEN NULL ELSE 10 / b END AS x FROM ops",  # CASE is lazy
    "SELECT a, s % c AS x FROM ops",                                      # remainder by zero raises
    "SELECT a, b + 2147483647 AS x FROM ops",                             # INT overflow raises
    "SELECT a, CAST(b AS BIGINT) + 2147483647 AS x FROM ops",             # BIGINT does not overflow
    "SELECT a, coalesce(s, 10 / b) AS x FROM ops",                        # raises on the NULL s row
])
def test_error_semantics_agree_with_spark(spark, sql):
    from superop.sparkutil import bag
    from superop.verify.replay import run_sql_on_rows
    from superop.verify.result import Counterexample
    cols = list(SCHEMA["ops"])
    cex = Counterexample("ops", cols, list(SCHEMA["ops"].values()), ROWS, [], [])
    try:
        want = bag(run_sql_on_rows(spark, sql, cex))
    except Exception as err:   # Spark raised (ANSI)
        assert "DIVIDE_BY_ZERO" in str(err) or "REMAINDER_BY_ZERO" in str(err) or "OVERFLOW" in str(err), err
        with pytest.raises(RaisesError):
            evaluate(plan_of(sql), ROWS)
        return
    assert bag(evaluate(plan_of(sql), ROWS)) == want
