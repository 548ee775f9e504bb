"""Writes REAL Spark event logs for the mining tests (run as a subprocess: the shared test
SparkSession cannot be reconfigured). One JVM, one short-lived SparkContext per codec:

    python eventlog_writer.py OUT_DIR [codec ...]     # codecs: none zstd lz4 snappy

Each application registers the paper's tables and runs, with the statement as the job
description (what the Thrift server records): two templates of a planted Diamond UnionAll
(each twice, different literals), one Diamond Join, one plain query, one DataFrame action
(no SQL text). The plain ("none") log is written as a single file (rolling off), the
compressed ones as Spark 4's default rolling ``eventlog_v2_*`` directories.
"""
import sys
from pathlib import Path

PLANTED = [
    "SELECT a, COUNT(*) AS n FROM ops WHERE s < 100 GROUP BY a "
    "UNION ALL SELECT a, COUNT(*) AS n FROM ops WHERE s >= 100 GROUP BY a",
    "SELECT a, COUNT(*) AS n FROM ops WHERE s < 250 GROUP BY a "
    "UNION ALL SELECT a, COUNT(*) AS n FROM ops WHERE s >= 250 GROUP BY a",
    "SELECT a, SUM(b) AS m FROM ops WHERE d = 'read' GROUP BY a "
    "UNION ALL SELECT a, MAX(c) AS m FROM ops WHERE d <> 'read' GROUP BY a",
    "SELECT a, SUM(b) AS m FROM ops WHERE d = 'write' GROUP BY a "
    "UNION ALL SELECT a, MAX(c) AS m FROM ops WHERE d <> 'write' GROUP BY a",
    "SELECT l.a, l.n, r.m FROM (SELECT a, COUNT(*) AS n FROM ops GROUP BY a) l "
    "JOIN (SELECT a, MAX(s) AS m FROM ops WHERE b > 10 GROUP BY a) r ON l.a = r.a",
    "SELECT acc.region, SUM(o.s) AS v FROM ops o JOIN accounts acc ON o.a = acc.a "
    "GROUP BY acc.region",
]


def main(out: str, codecs: list[str]) -> None:
    from pyspark.sql import SparkSession

    from superop.workloads.loggen import register_tables
    for codec in codecs:
        d = Path(out) / codec
        d.mkdir(parents=True, exist_ok=True)
        # (the builder is a process-wide singleton: options persist, so set every one)
        b = (SparkSession.builder.master("local[1]").appName(f"evlog-{codec}")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", str(d)))
        if codec == "none":
            b = (b.config("spark.eventLog.compress", "false")
                 .config("spark.eventLog.rolling.enabled", "false"))
        else:
            b = (b.config("spark.eventLog.compress", "true")
                 .config("spark.eventLog.rolling.enabled", "true")
                 .config("spark.eventLog.compression.codec", codec))
        spark = b.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        register_tables(spark, n_ops=200)
        for sql in PLANTED:
            spark.sparkContext.setJobDescription(sql)
            spark.sql(sql).collect()
        spark.sparkContext.setJobDescription(None)
        spark.table("ops").groupBy("a").count().collect()      # DataFrame API: no SQL text
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or ["none", "zstd", "lz4", "snappy"])
