"""Start-up of SuperOpSession alone, in this new process: Spark's own start (``get_spark()``
and ``SELECT 1``), ``import superop.runtime``, then ``SuperOpSession(spark, CATALOG)``.

    python benchmarks/startup_session.py out/nightly/catalog.json     # one JSON line; repeat it

(``benchmarks/startup_bench.py`` also measures enable and persisted decisions, with tables
in a metastore.) The imports are timed, so they happen in ``main``.
"""
import importlib
import json
import os
import sys
import time


def main() -> int:
    t0 = time.perf_counter()
    get_spark = importlib.import_module("superop.sparkutil").get_spark
    spark = get_spark(app_name="startup", conf={"spark.sql.shuffle.partitions": "4"})
    spark.sql("SELECT 1").collect()
    t1 = time.perf_counter()
    load0 = os.getloadavg()[0]
    runtime = importlib.import_module("superop.runtime")
    t2 = time.perf_counter()
    so = runtime.SuperOpSession(spark, sys.argv[1])
    t3 = time.perf_counter()
    print(json.dumps({"code": os.path.dirname(runtime.__file__), "spark_start_s": round(t1 - t0, 2),
                      "import_runtime_s": round(t2 - t1, 2), "session_s": round(t3 - t2, 3),
                      "beyond_spark_s": round(t3 - t1, 3), "rules": len(so.catalog["rules"]),
                      "z3_loaded": "z3" in sys.modules, "load1_before": load0,
                      "load1_after": os.getloadavg()[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
