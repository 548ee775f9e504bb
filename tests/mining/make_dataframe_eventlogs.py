"""Writes the committed DataFrame event logs of tests/mining/data/ (run once; re-run to
refresh them with this Spark version):

    python tests/mining/make_dataframe_eventlogs.py [OUT_DIR]     # default tests/mining/data

A separate local Spark process (the test session has no event log) with
``spark.eventLog.enabled``, zstd (Spark 4's default codec), no rolling: one file. The
program uses the DataFrame API only (no SQL text in the log) over the paper's tables saved
as catalog tables (so the scans carry qualified names): a Diamond UnionAll (run 3 times
with different literals), a Diamond Join (run 3 times), a dimension join, a window + top-k,
a path-based parquet read, and a Python UDF (opaque to the lowering).
"""
import shutil
import sys
import tempfile
from pathlib import Path

APP = "dataframe-diamonds"


def main(out: str) -> None:
    from pyspark.sql import SparkSession, Window
    from pyspark.sql import functions as F

    from superop.workloads.loggen import register_tables
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="superop-dflog-"))
    logs = work / "logs"
    logs.mkdir()
    spark = (SparkSession.builder.master("local[1]").appName(APP)
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.warehouse.dir", str(work / "warehouse"))
             .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", str(logs))
             .config("spark.eventLog.compress", "true")
             .config("spark.eventLog.compression.codec", "zstd")
             .config("spark.io.compression.zstd.level", "12")
             .config("spark.eventLog.rolling.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register_tables(spark, n_ops=200)
    for t in ("ops", "accounts"):
        spark.table(t).write.mode("overwrite").saveAsTable(f"default.{t}_t")
    spark.table("ops").write.mode("overwrite").parquet(str(work / "ops_files"))
    ops, acc = spark.table("default.ops_t"), spark.table("default.accounts_t")
    for lim in (100, 250, 400):                               # Diamond UnionAll (DU)
        lo = ops.filter(F.col("s") < lim).groupBy("a").agg(F.count(F.lit(1)).alias("n"))
        hi = ops.filter(F.col("s") >= lim).groupBy("a").agg(F.count(F.lit(1)).alias("n"))
        lo.unionByName(hi).collect()
    for b in (10, 20, 30):                                    # Diamond Join (DJ)
        left = ops.groupBy("a").agg(F.count(F.lit(1)).alias("n"))
        right = ops.filter(F.col("b") > b).groupBy("a").agg(F.max("s").alias("m"))
        left.join(right, "a").collect()
    ops.join(acc, "a").groupBy("region").agg(F.sum("s").alias("v")).collect()   # dimension
    w = Window.partitionBy("a").orderBy(F.col("s").desc())
    ops.withColumn("r", F.row_number().over(w)).filter("r <= 2").orderBy("a").limit(5).collect()
    spark.read.parquet(str(work / "ops_files")).groupBy("d").agg(F.avg("b")).collect()
    plus = F.udf(lambda x: (x or 0) + 1, "int")
    ops.select(plus("b").alias("b1")).groupBy("b1").count().collect()
    app = spark.sparkContext.applicationId
    spark.stop()
    src = logs / f"{app}.zstd"
    dst = out_dir / f"{APP}.zstd"
    shutil.copyfile(src, dst)
    shutil.rmtree(work, ignore_errors=True)
    print(f"{dst} ({dst.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).parent / "data"))
