"""Spark type names checked without Spark (superop.ir.types) agree with Spark's own DDL parser."""
from __future__ import annotations

import pytest

from superop.errors import SchemaError
from superop.ir.schema import normalize_schema
from superop.ir.types import spark_name_of, type_problem

TYPES = ["int", "INTEGER", "bigint", "long", "short", "byte", "tinyint", "smallint", "boolean", "float",
         "real", "double", "string", "binary", "date", "timestamp", "timestamp_ntz", "timestamp_ltz", "void",
         "decimal", "decimal(7,2)", "DECIMAL(38, 0)", "dec(5)", "numeric(10,3)", "char(16)", "varchar(50)",
         "array<int>", "map<string, array<bigint>>", "struct<a:int,b:string>", "struct<a int, b string>",
         "struct<`x y`: double NOT NULL COMMENT 'c'>", "interval day to second", "interval year to month",
         "interval hour", "string collate UTF8_LCASE", "struct<>",
         # not Spark types
         "string_view", "decimal128(7, 2)", "int32", "decimal(39, 2)", "decimal(5, 6)", "varchar",
         "array<int", "map<int>", "timestamp[us]", "large_string", "interval month to day", "text"]


@pytest.mark.parametrize("t", TYPES)
def test_agrees_with_sparks_ddl_parser(spark, t):
    try:
        spark._jvm.org.apache.spark.sql.types.DataType.fromDDL(t)
        spark_ok = True
    except Exception:
        spark_ok = False
    assert (type_problem(t) is None) == spark_ok, type_problem(t)


def test_names_other_tools_print():
    assert spark_name_of("string_view") == "string"
    assert spark_name_of("decimal128(7, 2)") == "decimal(7, 2)"
    assert spark_name_of("timestamp[us, tz=UTC]") == "timestamp"
    assert spark_name_of("large_list<item: int64>") == "array<bigint>"


def test_a_schema_with_an_unknown_type_names_column_and_type():
    with pytest.raises(SchemaError) as e:
        normalize_schema({"store_sales": {"ss_item_sk": "int", "ss_list_price": "decimal128(7, 2)"}}, "s.json")
    msg = str(e.value)
    assert "column store_sales.ss_list_price has type 'decimal128(7, 2)'" in msg
    assert "Spark calls it decimal(7, 2)" in msg and "\n" not in msg
