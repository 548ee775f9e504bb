"""superop.ir.safety: the constructs that block a super-operator match, and the function
knowledge behind it (superop.ir.functions) checked against Spark's own analyzer."""
from __future__ import annotations

import pytest

from superop import families
from superop.ir import lower
from superop.ir.functions import NONDETERMINISTIC, ORDER_DEPENDENT, Determinism, classify_name
from superop.ir.reasons import ReasonCode
from superop.ir.safety import BlockReason, blocking_reason
from superop.ir.spark_builtins import SPARK_BUILTINS

S = {"ops": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"}}
DU = "SELECT a, {agg} AS t FROM {src} {where} GROUP BY a UNION ALL SELECT a, count(*) FROM {src} GROUP BY a"


def diamond(sql: str) -> families.Match:
    """The family pattern's instance (before the matching path's checks)."""
    m = families.first_match(lower(sql, S).plan)
    assert m is not None, "the test query must be a diamond"
    return m


def blocker(sql: str):
    m = diamond(sql)
    return blocking_reason(m.interior_nodes(), m.source)


@pytest.mark.parametrize("sql, reason, detail", [
    (DU.format(agg="sum(s)", src="ops", where="WHERE rand() < 0.5"), BlockReason.NONDETERMINISTIC, "rand()"),
    (DU.format(agg="sum(s + rand(3))", src="ops", where=""), BlockReason.NONDETERMINISTIC, "rand()"),
    (DU.format(agg="count(DISTINCT uuid())", src="ops", where=""), BlockReason.NONDETERMINISTIC, "uuid()"),
    (DU.format(agg="sum(size(shuffle(array(s, b))))", src="ops", where=""), BlockReason.NONDETERMINISTIC,
     "shuffle()"),
    (DU.format(agg="sum(s)", src="ops", where="WHERE spark_partition_id() = 0"), BlockReason.NONDETERMINISTIC,
     "spark_partition_id()"),
    (DU.format(agg="first(s)", src="ops", where=""), BlockReason.ORDER_DEPENDENT, "first()"),
    (DU.format(agg="sum(my_udf(s))", src="ops", where=""), BlockReason.UNKNOWN_FUNCTION, "my_udf()"),
    ("SELECT a, t + rand() AS t2 FROM (SELECT a, sum(s) AS t FROM ops GROUP BY a) q "
     "UNION ALL SELECT a, count(*) FROM ops GROUP BY a", BlockReason.NONDETERMINISTIC, "rand()"),
    ("WITH o AS (SELECT * FROM ops LIMIT 5) " + DU.format(agg="sum(s)", src="o", where=""),
     BlockReason.LIMIT_IN_SOURCE, "LIMIT 5"),
    ("WITH o AS (SELECT * FROM ops ORDER BY s LIMIT 5) " + DU.format(agg="sum(s)", src="o", where=""),
     BlockReason.LIMIT_IN_SOURCE, "LIMIT 5"),
    ("WITH o AS (SELECT * FROM ops TABLESAMPLE (10 PERCENT)) " + DU.format(agg="sum(s)", src="o", where=""),
     BlockReason.SAMPLE_IN_SOURCE, "TABLESAMPLE"),
    ("WITH o AS (SELECT *, rand() AS r FROM ops) " + DU.format(agg="sum(s)", src="o", where=""),
     BlockReason.NONDETERMINISTIC, "rand()"),
    ("WITH o AS (SELECT a, s, row_number() OVER (PARTITION BY a ORDER BY b) AS rn FROM ops) "
     + DU.format(agg="sum(s)", src="o", where=""), BlockReason.ORDER_DEPENDENT, "row_number()"),
    ("WITH o AS (SELECT a, sum(s) OVER (ORDER BY b ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s FROM ops) "
     + DU.format(agg="sum(s)", src="o", where=""), BlockReason.ORDER_DEPENDENT, "ROWS window frame"),
    # a sub-query on an edge that is not one value per query (a LIMIT picks any row): the
    # uncorrelated, deterministic ones are values (superop.ir.subqueries, tests below)
    (DU.format(agg="sum(s)", src="ops", where="WHERE b IN (SELECT c FROM ops WHERE c > 1 LIMIT 3)"),
     BlockReason.SUBQUERY_ON_MATCH, "sub-query in Select"),
])
def test_blocked(sql, reason, detail):
    b = blocker(sql)
    assert b is not None and b.reason is reason and detail in b.detail, b
    assert str(b).startswith(reason.value + ": ")
    # the ONE matching path reports it as the near-miss reason (mining = runtime)
    found = families.scan(lower(sql, S).plan)
    assert [(type(f), f.reason, f.detail) for f in found] == [(families.NearMiss, reason, b.detail)]


@pytest.mark.parametrize("sql", [
    DU.format(agg="sum(s)", src="ops", where="WHERE b > 0"),
    DU.format(agg="sum(s)", src="ops", where="WHERE current_date() > DATE '2000-01-01'"),
    DU.format(agg="max(upper(d))", src="ops", where="WHERE current_timestamp() IS NOT NULL"),
    "WITH o AS (SELECT a, s, rank() OVER (PARTITION BY a ORDER BY b) AS r FROM ops) "
    + DU.format(agg="sum(s)", src="o", where=""),
    "WITH o AS (SELECT a, s FROM ops WHERE c IN (1, 2)) " + DU.format(agg="sum(s)", src="o", where=""),
    # a sub-query inside the shared source runs as written
    "WITH o AS (SELECT a, s FROM ops WHERE b > (SELECT avg(b) FROM ops)) " + DU.format(agg="sum(s)", src="o", where=""),
])
def test_not_blocked(sql):
    assert blocker(sql) is None
    assert any(isinstance(f, families.Match) for f in families.scan(lower(sql, S).plan))


def test_blocking_reason_takes_nodes():
    m = diamond(DU.format(agg="sum(s)", src="ops", where="WHERE rand() < 1"))
    assert blocking_reason([m.root], m.source) is None          # only the root: nothing random
    lower_edge = m.branches[0].lower
    assert lower_edge is not None
    assert blocking_reason([m.root] + list(lower_edge.ops), m.source) is not None


def test_every_reason_is_a_described_near_miss_reason():
    codes = families.reason_codes()
    for r in BlockReason:
        assert isinstance(r, ReasonCode) and r.text and codes[r.value] is r


def test_function_lists_agree_with_spark(spark):
    """Spark's analyzer calls exactly our NONDETERMINISTIC functions nondeterministic
    (aes_encrypt is ours: Spark marks it deterministic, its IV is random); the built-in
    list names only functions Spark has."""
    spark.sql("CREATE OR REPLACE TEMP VIEW fn_probe AS SELECT 1 AS x, 2 AS y, 'a' AS s")
    calls = {"rand": "rand()", "randn": "randn()", "random": "random()", "uuid": "uuid()",
             "shuffle": "shuffle(array(x, y))", "monotonically_increasing_id": "monotonically_increasing_id()",
             "spark_partition_id": "spark_partition_id()", "input_file_name": "input_file_name()",
             "input_file_block_start": "input_file_block_start()",
             "input_file_block_length": "input_file_block_length()", "uniform": "uniform(0, 10)",
             "randstr": "randstr(5)", "reflect": "reflect('java.util.UUID', 'randomUUID')",
             "java_method": "java_method('java.util.UUID', 'randomUUID')",
             "try_reflect": "try_reflect('java.util.UUID', 'randomUUID')",
             "aes_encrypt": "aes_encrypt(s, '0000111122223333')",
             "current_timestamp": "current_timestamp()", "abs": "abs(x)", "upper": "upper(s)"}

    def spark_deterministic(call: str) -> bool:
        plan = spark.sql(f"SELECT {call} FROM fn_probe")._jdf.queryExecution().analyzed()
        it = plan.expressions().iterator()
        out = True
        while it.hasNext():
            out = out and it.next().deterministic()
        return out

    for name, call in calls.items():
        ours = classify_name(name) is Determinism.NONDETERMINISTIC
        assert ours == (name in NONDETERMINISTIC)
        if name != "aes_encrypt":
            assert ours == (not spark_deterministic(call)), name
    spark_names = {r[0] for r in spark.sql("SHOW SYSTEM FUNCTIONS").collect()}
    assert SPARK_BUILTINS <= spark_names
    assert NONDETERMINISTIC <= spark_names and ORDER_DEPENDENT <= spark_names
