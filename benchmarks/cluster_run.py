"""The nightly job and the runtime on a standalone cluster whose executors lack superop.

    python benchmarks/cluster_run.py [--workers 2] [--log PATH] [--compare out/nightly/catalog.json]

Starts a master and ``--workers`` workers with the PySpark distribution's
``sbin/spark-daemon.sh`` (``superop.bench.cluster``), makes a Python environment for the
executors that sees only pandas/pyarrow/numpy (no superop, no sqlglot), and runs, in a
driver process on that cluster:

1. the whole nightly job on the log (default: the bundled one): mining on the executors
   (superop ships itself there), synthesis, verification, generalization, a signed catalog;
2. the runtime with that catalog: ``SuperOpSession`` start-up and a DU query over a table of
   100 000 rows, rewritten, with its rows compared with the original's.

Prints one JSON object: the times of each step, the rules, and with ``--compare`` whether the
rule ids equal those of a catalog mined locally from the same log.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERY = ("SELECT a, COUNT(*) AS n FROM ops WHERE d = 'append' GROUP BY a "
         "UNION ALL SELECT a, MAX(s) AS n FROM ops WHERE b > 10 GROUP BY a")


def driver(args_file: str) -> int:
    from superop.pipeline.nightly import run_nightly
    from superop.runtime import SuperOpSession
    from superop.sparkutil import bag, get_spark
    a = json.loads(Path(args_file).read_text())
    out: dict = {"load_start": os.getloadavg()[0]}
    t = time.perf_counter()
    spark = get_spark(app_name="superop-cluster-run", master=a["master"], conf={
        "spark.pyspark.python": a["executor_python"], "spark.executor.memory": "1g",
        "spark.executor.cores": "1", "spark.sql.shuffle.partitions": "8", "spark.driver.memory": "2g"})
    out["spark_start_s"] = round(time.perf_counter() - t, 1)
    t = time.perf_counter()
    res = run_nightly(a["log"], a["out"], spark=spark, progress=True)
    out["nightly_s"] = round(time.perf_counter() - t, 1)
    out["nightly_metrics"] = {k: res.metrics.get(k) for k in ("queries_read", "candidates", "verified", "rules",
                                                              "mine_seconds", "synthesize_seconds")}
    out["rules"] = sorted(r["id"] for r in res.catalog["rules"])
    out["executors"] = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    spark.sql("SET spark.sql.autoBroadcastJoinThreshold=-1")
    spark.sql("CREATE OR REPLACE TEMP VIEW ops AS SELECT CAST(id % 97 AS INT) AS a, CAST(id % 31 AS INT) AS b, "
              "CAST(id % 13 AS INT) AS c, element_at(array('append', 'list', 'delete'), CAST(id % 3 AS INT) + 1) "
              "AS d, CAST(id % 1000 AS INT) AS s FROM range(100000)")
    t = time.perf_counter()
    so = SuperOpSession(spark, str(res.catalog_path))
    out["session_s"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    r = so.rewrite(QUERY)
    out["first_decision_s"] = round(time.perf_counter() - t, 2)
    out["rewrite"] = {"changed": r.changed, "applied": r.applied,
                      "exchanges": [r.exchanges_before, r.exchanges_after], "explanation": r.explanation[:300]}
    t = time.perf_counter()
    want = bag(spark.sql(QUERY).collect())
    out["original_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    out["rows_equal"] = bag(spark.sql(r.sql).collect()) == want
    out["rewritten_s"] = round(time.perf_counter() - t, 2)
    out["load_end"] = os.getloadavg()[0]
    spark.stop()
    print("RESULT " + json.dumps(out))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--log", help="query log (default: the bundled one)")
    ap.add_argument("--compare", help="a catalog mined locally from the same log")
    ap.add_argument("--work", help="working directory (default: a temp dir)")
    ap.add_argument("--driver", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.driver:
        return driver(args.driver)
    from superop.bench.cluster import Standalone, executor_env
    from superop.workloads.bundled import LOG
    work = Path(args.work or tempfile.mkdtemp(prefix="superop-cluster-"))
    work.mkdir(parents=True, exist_ok=True)
    py = executor_env(work / "executor-env")
    t = time.perf_counter()
    with Standalone(work / "standalone", workers=args.workers, memory="1500m") as c:
        started = round(time.perf_counter() - t, 1)
        spec = work / "args.json"
        spec.write_text(json.dumps({"master": c.url, "executor_python": str(py),
                                    "log": args.log or str(LOG), "out": str(work / "nightly")}))
        p = subprocess.run([sys.executable, __file__, "--driver", str(spec)], capture_output=True, text=True,
                           cwd=work)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        print(p.stderr[-4000:], file=sys.stderr)
        return 1
    out = json.loads(lines[-1][len("RESULT "):])
    out["cluster_start_s"] = started
    out["executor_python"] = str(py)
    if args.compare:
        local = sorted(r["id"] for r in json.loads(Path(args.compare).read_text())["rules"])
        out["same_rules_as_local"] = local == out["rules"]
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
