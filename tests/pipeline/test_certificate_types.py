"""The nightly job certifies an instance with Spark's column types (the runtime compiles
the emitted SQL with them): the types are those of the canonical instance it certifies,
also when the instance as recorded lists its columns in another order."""
from __future__ import annotations

from superop.families.identity import instance_of_sql
from superop.pipeline.certificates import certify_instance, spark_types

SCHEMA = {"lines": {"ord": "bigint", "wh": "int", "amt": "decimal(7,2)", "qty": "int"}}
# a self-EXISTS instance (TPC-DS q16's shape) whose select list is not in canonical order
RECORDED = ("SELECT l1.qty, l1.amt, l1.ord, l1.wh FROM lines AS l1 LEFT SEMI JOIN lines AS l2 "
            "ON l1.ord = l2.ord AND l1.wh <> l2.wh")


def test_types_are_read_from_the_canonical_instance(spark):
    canonical = instance_of_sql(RECORDED, SCHEMA)
    assert canonical.sql != RECORDED                    # the recorded order is not canonical
    seen: list[str] = []
    types = spark_types(spark)

    def recording(sql, schema):
        seen.append(sql)
        return types(sql, schema)
    cert = certify_instance(RECORDED, SCHEMA, 3, 30, 3, recording, "lines")
    assert seen == [canonical.sql]
    assert cert is not None and cert["status"] == "verified", cert and cert.get("reason")
    out = cert["inputs"]["output_types"]
    assert out == [f.dataType.simpleString() for f in _analyzed(spark, canonical.sql).schema.fields]


def _analyzed(spark, sql):
    s = spark.newSession()
    s.createDataFrame([], "ord bigint, wh int, amt decimal(7,2), qty int").createOrReplaceTempView("lines")
    return s.sql(sql)
