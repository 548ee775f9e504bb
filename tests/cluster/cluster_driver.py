"""The driver of the standalone-cluster test (its own process: the suite's one SparkSession
stays local). Argument: a JSON file {master, executor_python, bare_python, catalog, log, out,
query}. Runs on the cluster, executors on an environment without superop:

1. the mining job (its mapInPandas runs superop's code on the executors: shipped);
2. the runtime: SuperOpSession and enable() rewrite a DU query whose rows are compared
   with the original's;
3. the mining job again with executors on a Python lacking pandas: the one-line error.

Prints one JSON object with what happened and how long each step took."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # tests.runtime.runtime_fixtures

from superop.errors import SuperopError  # noqa: E402
from superop.mining.job import run_mining  # noqa: E402
from superop.runtime import SuperOpSession, disable, enable  # noqa: E402
from superop.sparkutil import bag, get_spark  # noqa: E402
from tests.runtime.runtime_fixtures import OPS_ROWS, OPS_SCHEMA, values_view  # noqa: E402


def session(master: str, python: str):
    return get_spark(app_name="superop-cluster-test", master=master, conf={
        "spark.pyspark.python": python, "spark.executor.memory": "512m", "spark.executor.cores": "1",
        "spark.cores.max": "2", "spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2",
        "spark.sql.autoBroadcastJoinThreshold": "-1", "spark.driver.memory": "1g"})


def main() -> int:
    a = json.loads(Path(sys.argv[1]).read_text())
    out: dict = {}
    t = time.perf_counter()
    spark = session(a["master"], a["executor_python"])
    out["spark_start_s"] = round(time.perf_counter() - t, 2)
    out["executors"] = sorted({str(e) for e in spark.sparkContext._jsc.sc().getExecutorMemoryStatus().keys()
                               .toList().mkString(",").split(",")})
    t = time.perf_counter()
    res = run_mining(a["log"], a["out"], spark=spark, mlflow_run=False, progress=False)
    out["mine_s"] = round(time.perf_counter() - t, 2)
    out["mined"] = {k: res.summary.get(k) for k in ("queries_read", "templates", "candidates", "near_misses")}
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
    spark.stop()
    t = time.perf_counter()
    spark = session(a["master"], a["bare_python"])
    try:
        run_mining(a["log"], a["out"] + "-bare", spark=spark, mlflow_run=False, progress=False)
        out["bare_error"] = None
    except SuperopError as e:
        out["bare_error"] = str(e)
    out["bare_s"] = round(time.perf_counter() - t, 2)
    spark.stop()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
