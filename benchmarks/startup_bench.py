"""Start-up of the runtime in a new process, as a short scheduled job pays it.

    python benchmarks/startup_bench.py --catalog out/nightly/catalog.json [--repeat 3] [--work DIR]

Each repetition is a new Python process that measures, in order:

* ``spark_s``: ``get_spark()`` and ``SELECT 1`` (Spark's own start, the baseline);
* ``import_s``: ``import superop.runtime``;
* ``session_s``: ``SuperOpSession(spark, catalog)`` — the goal is <= 1 s beyond Spark's start;
* ``enable_s``: ``superop.runtime.enable(spark, catalog)`` (a second load of the catalog);
* ``persisted_ms``: the first decision of a query template an earlier process decided
  (the decision persisted beside the catalog) — the goal is <= 50 ms;
* ``planned_ms``: the same query with a session that has no persisted decisions (the first
  decision plans the original and every candidate with Spark).

The tables live in a Hive metastore (Derby) under ``--work``, so that they and their
versions (part of a decision's key) survive from one process to the next; the first
process creates them and decides the query once. Prints one JSON line per repetition,
then the medians with the machine's load average (a shared machine: repeat and compare).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

QUERY = ("SELECT a, COUNT(*) AS n FROM ops WHERE d = 'append' GROUP BY a "
         "UNION ALL SELECT a, MAX(s) AS n FROM ops WHERE b > 10 GROUP BY a")

CHILD = r'''
import json, os, sys, time
work, catalog, query, setup = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "setup"
out = {"load_start": os.getloadavg()[0]}
t = time.perf_counter()
from superop.sparkutil import get_spark
spark = get_spark(app_name="superop-startup", conf={
    "spark.sql.catalogImplementation": "hive", "spark.sql.warehouse.dir": f"{work}/warehouse",
    "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={work}/metastore_db;create=true",
    "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={work}/metastore_db;create=true",
    "spark.sql.shuffle.partitions": "4", "spark.sql.autoBroadcastJoinThreshold": "-1"})
spark.sql("SELECT 1").collect()
out["spark_s"] = time.perf_counter() - t
if setup:
    spark.sql("CREATE TABLE IF NOT EXISTS ops USING parquet AS SELECT CAST(id % 97 AS INT) AS a, "
              "CAST(id % 31 AS INT) AS b, CAST(id % 13 AS INT) AS c, "
              "element_at(array('append', 'list', 'delete'), CAST(id % 3 AS INT) + 1) AS d, "
              "CAST(id % 1000 AS INT) AS s FROM range(100000)")
t = time.perf_counter()
import superop.runtime
from superop.runtime import SuperOpSession, disable, enable
out["import_s"] = time.perf_counter() - t
t = time.perf_counter()
so = SuperOpSession(spark, catalog, decision_store=f"{work}/decisions")
out["session_s"] = time.perf_counter() - t
t = time.perf_counter()
enable(spark, catalog)
out["enable_s"] = time.perf_counter() - t
disable(spark)
t = time.perf_counter()
r = so.rewrite(query)
out["persisted_ms"] = (time.perf_counter() - t) * 1e3
out["persisted_hit"] = bool(r.timings_ms.get("persisted_hit"))
out["changed"], out["applied"] = r.changed, r.applied
fresh = SuperOpSession(spark, catalog, decision_store=False)
t = time.perf_counter()
r2 = fresh.rewrite(query.replace("b > 10", "b > 11"))
out["planned_ms"] = (time.perf_counter() - t) * 1e3
out["load_end"] = os.getloadavg()[0]
print("RESULT " + json.dumps(out))
spark.stop()
'''


def run_child(work: Path, catalog: str, setup: bool) -> dict:
    p = subprocess.run([sys.executable, "-c", CHILD, str(work), catalog, QUERY, "setup" if setup else "run"],
                       capture_output=True, text=True, cwd=work, timeout=1800)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        raise SystemExit(f"child failed ({p.returncode}): {p.stderr[-2000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--catalog", required=True, help="a signed catalog.json (e.g. out/nightly/catalog.json)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", help="directory for the metastore, warehouse and decisions (default: a temp dir)")
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="superop-startup-"))
    work.mkdir(parents=True, exist_ok=True)
    first = run_child(work, os.path.abspath(args.catalog), setup=True)     # tables + the decision, once
    print(json.dumps({"setup": first}))
    runs = []
    for _ in range(args.repeat):
        runs.append(run_child(work, os.path.abspath(args.catalog), setup=False))
        print(json.dumps(runs[-1]))
    keys = ("spark_s", "import_s", "session_s", "enable_s", "persisted_ms", "planned_ms")
    med = {k: round(statistics.median(r[k] for r in runs), 3) for k in keys}
    med["persisted_hits"] = sum(r["persisted_hit"] for r in runs)
    med["load"] = [round(min(r["load_start"] for r in runs), 1), round(max(r["load_end"] for r in runs), 1)]
    print("median " + json.dumps(med))
    return 0


if __name__ == "__main__":
    sys.exit(main())
