"""A DataFrame job with Spark's event log on, for the mining <-> runtime round trip
(``test_dataframe_mining.py``). Run as a child process: the shared test SparkSession cannot
turn event logging on, and no test creates a second session in-process.

    python dataframe_job.py OUT_DIR

writes ``OUT_DIR/logs`` (the event log, one zstd file), ``OUT_DIR/warehouse/dfjob_ops``
(the job's input as a catalog table: ``spark_catalog.default.dfjob_ops``) and
``OUT_DIR/done`` last. :func:`job` is the program: the test builds the same DataFrame in
the shared session and optimizes it.
"""
from __future__ import annotations

import sys
from pathlib import Path

TABLE = "dfjob_ops"
LIMITS = (3, 5, 7)          # the job runs three times with different literals


def job(ops, F, lim: int):
    """A Diamond UnionAll written with the DataFrame API: two aggregates of one table."""
    low = ops.where(F.col("s") < lim).groupBy("a").agg(F.count("*").alias("n"))
    high = ops.where(F.col("s") >= lim).groupBy("a").agg(F.max("b").alias("n"))
    return low.union(high)


def main(out: str) -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from tests.runtime.runtime_fixtures import OPS_ROWS, OPS_SCHEMA
    root = Path(out)
    (root / "logs").mkdir(parents=True, exist_ok=True)
    spark = (SparkSession.builder.master("local[1]").appName("superop-dataframe-job")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.autoBroadcastJoinThreshold", "-1")
             .config("spark.sql.warehouse.dir", str(root / "warehouse"))
             .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", str(root / "logs"))
             .config("spark.eventLog.compress", "true").config("spark.eventLog.compression.codec", "zstd")
             .config("spark.eventLog.rolling.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.createDataFrame(OPS_ROWS, OPS_SCHEMA).write.mode("overwrite").saveAsTable(f"default.{TABLE}")
    ops = spark.table(f"default.{TABLE}")
    for lim in LIMITS:
        job(ops, F, lim).collect()
    spark.stop()
    (root / "done").write_text(str(root / "warehouse" / TABLE))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    main(sys.argv[1])
