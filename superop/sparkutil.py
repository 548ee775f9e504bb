"""SparkSession construction and small helpers shared by every Spark-using stage.

Local mode by default; any master URL (or the usual spark-defaults / SPARK_* env)
points it at a cluster."""
from __future__ import annotations

import os
from collections import Counter
from typing import Optional


def get_spark(app_name: str = "superop", master: Optional[str] = None, conf: Optional[dict] = None):
    from pyspark.sql import SparkSession
    b = SparkSession.builder.appName(app_name)
    master = master or os.environ.get("SUPEROP_SPARK_MASTER") or os.environ.get("MASTER")
    if master:
        b = b.master(master)
    elif not os.environ.get("SPARK_HOME_CONF_MASTER"):
        b = b.master("local[2]")
    base = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": os.environ.get("SUPEROP_DRIVER_MEMORY", "4g"),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
    }
    base.update(conf or {})
    for k, v in base.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _norm(v):
    # Compare floats with tolerance-free rounding: aggregation order may differ.
    if isinstance(v, float):
        return round(v, 6)
    try:
        from decimal import Decimal
        if isinstance(v, Decimal):
            return round(float(v), 6)
    except Exception:  # pragma: no cover
        pass
    return v


def bag(rows) -> Counter:
    """A multiset of rows (tuples) for order-insensitive comparison."""
    return Counter(tuple(_norm(v) for v in r) for r in rows)


def bag_of(spark, sql: str) -> Counter:
    return bag(spark.sql(sql).collect())
