"""Helpers for the verifier tests: the paper's schemas and counterexample replay."""
from __future__ import annotations

import pytest

from superop.ir import lower

SCHEMA = {
    "ops": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"},
    "mailbox": {"mailboxguid": "string", "ts": "bigint", "eventid": "string",
                "activityid": "string", "machinename": "string", "eventname": "string"},
}

K_TEST = 3          # small K keeps the suite fast; the benchmark measures K = 2, 4, 6
TIMEOUT_MS = 30000


def plan_of(sql: str):
    low = lower(sql, SCHEMA)
    assert low.fully_lowered, low.opaque_reasons
    return low.plan


@pytest.fixture
def assert_replayed(spark):
    """Replays a refutation: Spark runs the SQL and the reference interpreter runs the
    program over the counterexample rows; both must agree with the Z3 model's claimed
    outputs and differ from each other."""
    from superop.sparkutil import bag
    from superop.verify.replay import replay

    def check(sql, program, result):
        assert result.status == "refuted", (result.status, result.reason)
        cex = result.counterexample
        assert cex is not None, "a refutation carries a counterexample (possibly the empty table)"
        spark_bag, prog_bag = replay(spark, sql, program, cex)
        assert spark_bag == bag(cex.plan_output), (spark_bag, cex.plan_output, cex.rows)
        assert prog_bag == bag(cex.program_output), (prog_bag, cex.program_output, cex.rows)
        assert spark_bag != prog_bag
        return cex
    return check
