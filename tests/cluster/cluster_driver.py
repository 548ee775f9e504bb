"""The driver of the standalone-cluster test (its own process: the suite's one SparkSession
stays local). Argument: a JSON file {master, executor_python, bare_python, catalog, query}.
On the cluster, with executors on a Python environment without superop or sqlglot:

1. superop ships itself to the executors and imports its executor-side code there (the
   mining job's mapInPandas module) — the check the mining job runs before its first stage;
2. the runtime: SuperOpSession and enable() rewrite a DU query whose rows are compared
   with the original's;
3. the same check against a Python lacking pandas (a UDF runs the Python it was created
   with, so one application tries both environments): the one-line error.

Prints one JSON object. The whole nightly job on such a cluster: benchmarks/cluster_run.py."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # tests.runtime.runtime_fixtures

from superop.errors import SuperopError  # noqa: E402
from superop.runtime import SuperOpSession, disable, enable  # noqa: E402
from superop.sparkutil import bag, check_executors, get_spark, prepare_executors  # noqa: E402
from tests.runtime.runtime_fixtures import OPS_ROWS, OPS_SCHEMA, values_view  # noqa: E402


def main() -> int:
    a = json.loads(Path(sys.argv[1]).read_text())
    out: dict = {}
    t = time.perf_counter()
    spark = get_spark(app_name="superop-cluster-test", master=a["master"], conf={
        "spark.pyspark.python": a["executor_python"], "spark.executor.memory": "512m",
        "spark.executor.cores": "1", "spark.cores.max": "2", "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "2", "spark.sql.autoBroadcastJoinThreshold": "-1",
        "spark.driver.memory": "1g"})
    out["spark_start_s"] = round(time.perf_counter() - t, 2)
    sc = spark.sparkContext
    t = time.perf_counter()
    prepare_executors(spark)                    # ship superop + sqlglot, import the mining module there
    out["prepare_s"] = round(time.perf_counter() - t, 2)
    out["executors"] = sc._jsc.sc().getExecutorMemoryStatus().size() - 1     # without the driver
    out["executor_python"] = sorted({s["python"] for s in check_executors(spark)})
    values_view(spark, "ops", OPS_SCHEMA, OPS_ROWS)
    t = time.perf_counter()
    so = SuperOpSession(spark, a["catalog"], gate="exchanges")
    out["session_s"] = round(time.perf_counter() - t, 3)
    r = so.rewrite(a["query"])
    out["rewrite"] = {"changed": r.changed, "applied": r.applied, "exchanges": [r.exchanges_before, r.exchanges_after]}
    want = bag(spark.sql(a["query"]).collect())
    out["rows_equal"] = bag(spark.sql(r.sql).collect()) == want
    enable(spark, a["catalog"], gate="exchanges")
    out["enabled_rows_equal"] = bag(spark.sql(a["query"]).collect()) == want
    out["enabled_counters"] = disable(spark).counters
    good, sc.pythonExec = sc.pythonExec, a["bare_python"]
    try:
        check_executors(spark)
        out["bare_error"] = None
    except SuperopError as e:
        out["bare_error"] = str(e)
    finally:
        sc.pythonExec = good
    spark.stop()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
