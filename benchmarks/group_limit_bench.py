"""Min & Join arg-min rows: original join-back vs the window form vs the group-limit form
(RANK() = 1), side by side in one run, same results checked.

    python benchmarks/group_limit_bench.py --rows 1m --keys 50k --repeat 3

Times ``df.write.format("noop")`` of each query on ``ops`` generated with spark.range
(local Spark). The rule is built for this bench from the instance's own covers (both forms);
the product path (mined catalog, cost gate) is ``superop bench micro --queries mj``."""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import replace


def _n(s: str) -> int:
    s = s.lower()
    return int(float(s[:-1]) * {"k": 1e3, "m": 1e6}[s[-1]]) if s[-1] in "km" else int(s)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="1m")
    ap.add_argument("--keys", default="50k")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from superop.families.coverage import covers_of, match_of
    from superop.rewrite.rewriter import Rewriter, rewrite_structural
    from superop.rules_out.catalog import make_catalog, make_rule
    from superop.sparkutil import bag_of, get_spark
    rows, keys = _n(args.rows), _n(args.keys)
    schema = {"ops": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"}}
    q = ("SELECT o.a, o.b, o.c, o.d, o.s FROM ops o JOIN (SELECT a, MIN(s) AS ms FROM ops GROUP BY a) m "
         "ON o.a = m.a AND o.s = m.ms")
    pt = covers_of(match_of(q, schema))
    rule = make_rule("MJ", branches=pt.branches, join_kinds=pt.join_kinds,
                     admits=[pt, replace(pt, variant="group-limit")])
    rw = Rewriter(make_catalog([rule]))
    window = rewrite_structural(rw, q, schema).sql
    limit = rewrite_structural(rw, q, schema, form="group-limit").sql
    spark = get_spark(app_name="group-limit-bench", conf={"spark.sql.autoBroadcastJoinThreshold": "-1"})
    spark.range(rows).selectExpr(f"CAST(id % {keys} AS INT) AS a", "CAST(id % 97 AS INT) AS b",
                                 "CAST(id % 13 AS INT) AS c", "CASE WHEN id % 3 = 0 THEN 'read' ELSE 'write' END AS d",
                                 "CASE WHEN id % 50 = 0 THEN NULL ELSE CAST((id * 7919) % 1000 AS INT) END AS s"
                                 ).cache().createOrReplaceTempView("ops")
    spark.table("ops").count()
    sides = {"original": q, "window": window, "group-limit": limit}
    same = bag_of(spark, q) == bag_of(spark, window) == bag_of(spark, limit)
    times: dict[str, list[float]] = {k: [] for k in sides}
    for _ in range(args.repeat):
        for k, sql in sides.items():
            t = time.perf_counter()
            spark.sql(sql).write.format("noop").mode("overwrite").save()
            times[k].append(time.perf_counter() - t)
    plan = spark.sql(limit)._jdf.queryExecution().executedPlan().toString()
    print(f"# rows {rows}, keys {keys}, repeat {args.repeat}, load average {os.getloadavg()}")
    print(f"same results: {same}; WindowGroupLimit in the group-limit plan: {'WindowGroupLimit' in plan}")
    o = statistics.median(times["original"])
    for k, ts in times.items():
        m = statistics.median(ts)
        print(f"{k:12s} median {m:7.2f} s  original/this {o / m:5.2f}x  ({', '.join(f'{t:.2f}' for t in ts)})")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
