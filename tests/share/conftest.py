"""Tiny tables with NULLs and duplicate rows for the sharing tests.

Built with ``SELECT * FROM VALUES`` (a local relation: Spark knows its size, so the
estimates are real) and, for the qualified-name traps, as catalog tables db1.t / db2.t."""
from __future__ import annotations

import pytest

from superop.sparkutil import bag

T_ROWS = """(1, 'x', 5, 1.5), (1, 'x', 5, 1.5), (2, NULL, 0, NULL), (NULL, 'y', -3, 2.0),
            (3, 'y', 7, 0.5), (2, 'x', NULL, 4.0), (4, 'z', 12, -1.0), (NULL, NULL, NULL, NULL),
            (5, 'x', 9, 3.25), (3, 'y', 7, 0.5)"""
U_ROWS = "(1, 10, 'p'), (2, 20, 'q'), (2, 20, 'q'), (NULL, 5, 'r'), (3, NULL, NULL), (5, 7, 'p'), (9, 1, 'q')"
V_ROWS = "(1, 100), (2, 200), (3, NULL), (NULL, 400), (5, 500)"

# prefixed names: other test packages register their own views in the same session
SCHEMA = {"st": {"a": "int", "b": "string", "c": "int", "f": "double"},
          "su": {"a": "int", "d": "int", "e": "string"},
          "sv": {"a": "int", "w": "int"}}


def register_views(spark) -> None:
    """st, su, sv as temp views of ``spark`` (classic or Connect)."""
    spark.sql(f"SELECT a, b, c, CAST(f AS DOUBLE) AS f FROM VALUES {T_ROWS} AS st(a, b, c, f)"
              ).createOrReplaceTempView("st")
    spark.sql(f"SELECT * FROM VALUES {U_ROWS} AS su(a, d, e)").createOrReplaceTempView("su")
    spark.sql(f"SELECT * FROM VALUES {V_ROWS} AS sv(a, w)").createOrReplaceTempView("sv")


@pytest.fixture(scope="session")
def share_tables(spark):
    register_views(spark)
    return SCHEMA


@pytest.fixture(scope="session")
def share_schema(spark, share_tables):
    """The views' schema as Spark has it (it must equal SCHEMA)."""
    from superop.ir.schema import schema_from_spark
    got = schema_from_spark(spark, sorted(SCHEMA))
    assert got == SCHEMA, got
    return got


@pytest.fixture(scope="session")
def two_databases(spark):
    """db1.t and db2.t: same name and columns, different rows."""
    for db, rows in (("share_db1", "(1, 10), (2, 20), (2, 20)"), ("share_db2", "(1, 11), (3, 30), (NULL, 5)")):
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
        spark.sql(f"DROP TABLE IF EXISTS {db}.t")
        spark.sql(f"CREATE TABLE {db}.t USING parquet AS SELECT * FROM VALUES {rows} AS t(k, x)")
    return ("share_db1", "share_db2")


def alone(spark, sql):
    return bag(spark.sql(sql).collect())


def assert_same_results(spark, result, sqls):
    """Every query of the batch returned exactly what it returns alone (bags of rows)."""
    assert len(result.runs) == len(sqls)
    for r, sql in zip(result.runs, sqls):
        assert r.rows is not None
        assert bag(r.rows) == alone(spark, sql), (r.name, sql, result.plan.report())
