"""The micro benchmark written as DataFrames: each of ``superop bench micro``'s 15 queries
(superop/bench/micro.py) built with the DataFrame API over the same ``ops`` data, timed as
written and as ``SuperOpSession.optimize`` returns it, side by side in one run.

    python benchmarks/dataframe_micro.py --rows 10m --repeat 3 [--catalog FILE] [--out FILE.json]

Per query: the DataFrame twin is checked against the SQL query (the same bag of rows, on
the data); ``optimize`` decides with the session's default cost gate and the catalog the
nightly job mines from the bundled log (as ``superop bench micro``; ``--catalog`` for
another); the SQL path's decision for the query is reported next to it (``so.rewrite``):
the same rule should apply. Then ``--warmup`` and ``--repeat`` alternating rounds of the
original and the optimized DataFrame (noop sink, the order rotating each round), their
median wall times, shuffle bytes (Spark's stage metrics) and a bag-equality check of the
two results. The load average is recorded before and after: timings on a shared machine
are noisy.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from pyspark.sql import functions as F

from superop.bench.harness import check_equal, summarize, timed_df
from superop.bench.micro import MICRO_QUERIES, ops_data, register_ops, select_queries
from superop.bench.mined import mined_catalog
from superop.runtime import SuperOpSession
from superop.runtime.plan import analyze_plan
from superop.sparkutil import get_spark


def _rows(text: str) -> int:
    t = text.lower().replace("_", "")
    mult = {"k": 1_000, "m": 1_000_000}.get(t[-1], 1)
    return int(float(t[:-1] if t[-1] in "km" else t) * mult)


def _agg2(ops, where1, agg1, where2, agg2):
    first = (ops if where1 is None else ops.where(where1)).groupBy("a").agg(*agg1)
    second = (ops if where2 is None else ops.where(where2)).groupBy("a").agg(*agg2)
    return first.alias("l"), second.alias("r")


def _dj(ops, where1, agg1, where2, agg2, how, cols, having=None):
    left, right = _agg2(ops, where1, agg1, where2, agg2)
    if having is not None:
        right = right.where(having).alias("r")
    return left.join(right, F.col("l.a") == F.col("r.a"), how).select(*cols)


def _mj(ops, o, m, cond, how, cols):
    return o.alias("o").join(m.alias("m"), cond, how).select(*cols)


c = F.col
FRAMES = {
    "du_core": lambda ops: ops.groupBy("a").agg(F.count("*").alias("n"), F.sum("s").alias("x")).union(
        ops.groupBy("a").agg(F.count("b").alias("n"), F.max("s").alias("x"))),
    "du_sigma": lambda ops: ops.where(c("s") < 100).groupBy("a").agg(F.count("*").alias("n")).union(
        ops.groupBy("a").agg(F.count("*").alias("n")).where(c("n") > 10).select("a", "n")),
    "du_pi": lambda ops: ops.where(c("s") < 100).groupBy("a").agg(F.count("*").alias("v")).select(
        "a", F.lit("small").alias("kind"), "v").union(
        ops.where(c("s") >= 100).groupBy("a").agg(F.sum("s").alias("v")).select("a", F.lit("big").alias("kind"), "v")),
    "du_rho": lambda ops: ops.select(c("a").alias("acct"), c("s").alias("size")).where(c("size") < 100)
    .groupBy("acct").agg(F.count("*").alias("n")).union(ops.groupBy("a").agg(F.sum("b").alias("n"))),
    "dj_inner_core": lambda ops: _dj(ops, None, [F.count("*").alias("n")], None, [F.sum("s").alias("x")],
                                     "inner", ["l.a", "l.n", "r.x"]),
    "dj_inner_sigma": lambda ops: _dj(ops, c("d") == "read", [F.count("*").alias("n")], c("d") == "write",
                                      [F.sum("s").alias("x")], "inner", ["l.a", "l.n", "r.x"], c("x") > 100),
    "dj_inner_pirho": lambda ops: (
        ops.groupBy(c("a").alias("acct")).agg(F.count("*").alias("n")).alias("l").join(
            ops.select(c("a").alias("acct"), c("s").alias("size")).groupBy("acct")
            .agg(F.max("size").alias("x")).alias("r"), c("l.acct") == c("r.acct"))
        .select("l.acct", (c("l.n") * 2).alias("n2"), "r.x")),
    "dj_left_core": lambda ops: _dj(ops, None, [F.count("*").alias("n")], None, [F.max("b").alias("x")],
                                    "left", ["l.a", "l.n", "r.x"]),
    "dj_left_sigma": lambda ops: _dj(ops, c("s") < 1000, [F.count("*").alias("n")], c("d") == "delete",
                                     [F.sum("c").alias("x")], "left", ["l.a", "l.n", "r.x"]),
    "dj_full_core": lambda ops: _dj(ops, None, [F.count("*").alias("n")], None, [F.min("s").alias("x")],
                                    "full", [c("l.a").alias("la"), c("r.a").alias("ra"), "l.n", "r.x"]),
    "dj_full_sigma": lambda ops: _dj(ops, c("d") == "read", [F.count("*").alias("n")], c("d") == "list",
                                     [F.sum("s").alias("x")], "full",
                                     [c("l.a").alias("la"), c("r.a").alias("ra"), "l.n", "r.x"]),
    "mj_core": lambda ops: _mj(ops, ops, ops.groupBy("a").agg(F.min("b").alias("mb")),
                               c("o.a") == c("m.a"), "inner", ["o.a", "o.b", "o.c", "o.d", "o.s", "m.mb"]),
    "mj_sigma": lambda ops: _mj(ops, ops.where(c("d") == "read").select("a", "b", "s"),
                                ops.groupBy("a").agg(F.min("b").alias("mb")).where(c("mb") < 500),
                                c("o.a") == c("m.a"), "inner", ["o.a", "o.b", "o.s", "m.mb"]),
    "mj_argmin": lambda ops: _mj(ops, ops, ops.groupBy("a").agg(F.min("s").alias("ms")),
                                 (c("o.a") == c("m.a")) & (c("o.s") == c("m.ms")), "inner",
                                 ["o.a", "o.b", "o.c", "o.d", "o.s"]),
    "mj_left_pirho": lambda ops: _mj(ops, ops.select(c("a").alias("acct"), c("s").alias("size")),
                                     ops.groupBy("a").agg(F.max("s").alias("mx")),
                                     c("o.acct") == c("m.a"), "left", ["o.acct", "o.size", "m.mx"]),
}
assert set(FRAMES) == {q.name for q in MICRO_QUERIES}


def measure(spark, name: str, sides: dict, repeat: int, warmup: int) -> dict:
    labels = list(sides)
    runs: dict = {k: [] for k in labels}
    for _ in range(warmup):
        for k in labels:
            timed_df(spark, sides[k], f"{name}-warm-{k}")
    for r in range(repeat):
        for k in labels[r % len(labels):] + labels[:r % len(labels)]:
            runs[k].append(timed_df(spark, sides[k], f"{name}-{k}"))
    return {k: summarize(v) for k, v in runs.items()}


def one(spark, so, q, repeat: int, warmup: int) -> dict:
    ops = spark.table("ops")
    df = FRAMES[q.name](ops)
    twin_equal = check_equal_df(spark, df, spark.sql(q.sql))
    t0 = time.perf_counter()
    opt = so.optimize(df)
    optimize_s = time.perf_counter() - t0
    decision = so.explain_df(df).splitlines()[0]
    sql_decision = so.rewrite(q.sql)
    changed = opt is not df
    ex_before = analyze_plan(spark, "", df=FRAMES[q.name](ops)).exchanges
    ex_after = analyze_plan(spark, "", df=opt).exchanges if changed else ex_before
    out = {"name": q.name, "family": q.family, "rewritten": changed, "decision": decision,
           "sql_rewritten": sql_decision.changed, "sql_applied": sql_decision.applied,
           "twin_equals_sql": twin_equal, "optimize_s": round(optimize_s, 3),
           "exchanges_before": ex_before, "exchanges_after": ex_after}
    if not changed:
        return out
    out["equal"] = check_equal_df(spark, df, opt)
    res = measure(spark, q.name, {"original": lambda: df, "optimized": lambda: opt}, repeat, warmup)
    out.update({f"{k}_{m}": v.get(m) for k, v in res.items() for m in ("median_s", "shuffle_write_bytes")})
    o, p = res["original"].get("median_s"), res["optimized"].get("median_s")
    out["speedup"] = round(o / p, 3) if o and p else None
    return out


def check_equal_df(spark, a, b) -> bool:
    a.createOrReplaceTempView("__so_bench_a")
    b.createOrReplaceTempView("__so_bench_b")
    return bool(check_equal(spark, "SELECT * FROM __so_bench_a", "SELECT * FROM __so_bench_b").equal)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="10m")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--queries", nargs="*", default=None)
    ap.add_argument("--catalog", default=None, help="a catalog file (default: the mined catalog)")
    ap.add_argument("--data-dir", default=".superop/bench-data")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    spark = get_spark(app_name="superop-bench-dataframe-micro")
    load0 = os.getloadavg()
    register_ops(spark, ops_data(spark, _rows(a.rows), a.data_dir))
    catalog = a.catalog or str(mined_catalog(a.data_dir, spark=spark).path)
    so = SuperOpSession(spark, catalog)
    results = []
    for q in select_queries(a.queries):
        r = one(spark, so, q, a.repeat, a.warmup)
        results.append(r)
        print(json.dumps(r), file=sys.stderr, flush=True)
    doc = {"rows": _rows(a.rows), "repeat": a.repeat, "warmup": a.warmup, "catalog": catalog,
           "load_before": load0, "load_after": os.getloadavg(), "results": results}
    print(f"{'query':16} {'rewritten':9} {'sql':4} {'exch':6} {'original s':>10} {'optimized s':>11} "
          f"{'speed-up':>8} equal")
    for r in results:
        print(f"{r['name']:16} {str(r['rewritten']):9} {'yes' if r['sql_rewritten'] else 'no':4} "
              f"{r['exchanges_before']}->{r['exchanges_after']:<3} {r.get('original_median_s') or 0:10.2f} "
              f"{r.get('optimized_median_s') or 0:11.2f} {r.get('speedup') or 0:8.2f} {r.get('equal', '-')}")
    print(f"load average before {load0[0]:.1f}, after {doc['load_after'][0]:.1f}")
    if a.out:
        Path(a.out).write_text(json.dumps(doc, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
