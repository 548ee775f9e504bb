"""Shuffle bytes of the DU/DJ rewrites whose edges filter (issue 13 item 3): the flags as
``max(CASE WHEN guard THEN 1 ELSE 0 END) = 1`` (before) vs written to share an
accumulator's aggregation buffer (``compile._flag_sql``, after), on the micro ``ops`` data,
side by side in one Spark session, with the original query. Results are checked equal.

    python benchmarks/flag_fold_bench.py --rows 200k
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from unittest import mock

from superop.rules_out.trust import recheck_locally

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _old_flag_sql(guard, accs=(), over=""):
    from superop.rewrite.compile import _s
    ov = f" {over}" if over else ""
    inner = "max(1)" if guard is None else f"max(CASE WHEN {_s(guard)} THEN 1 ELSE 0 END)"
    return f"({inner}{ov} = 1)"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="200k")
    ap.add_argument("--data-dir", default=".superop/bench-data")
    ap.add_argument("--queries", default="du_sigma,du_pi,du_rho,dj_inner_sigma,dj_left_sigma,dj_full_sigma")
    args = ap.parse_args(argv)
    rows = int(float(args.rows.lower().rstrip("km")) * (1_000_000 if args.rows.lower().endswith("m")
                                                      else 1_000 if args.rows.lower().endswith("k") else 1))
    from superop.bench.harness import check_equal, plan_info, timed_run
    from superop.bench.micro import MICRO_QUERIES, ops_data, register_ops
    from superop.bench.rewriters import default_catalog
    from superop.rewrite import compile as C
    from superop.runtime import SuperOpSession
    from superop.sparkutil import get_spark

    spark = get_spark("superop-flag-fold-bench", conf={})
    register_ops(spark, ops_data(spark, rows, args.data_dir))
    cat = default_catalog()
    names = args.queries.split(",")
    print(f"rows {rows:,}; shuffle write bytes (Spark stage metrics, one run each); before = flags as "
          "max(...) = 1, after = flags sharing accumulator buffers; equal = after vs before and vs original")
    print(f"{'query':16s} {'original B':>12s} {'before B':>12s} {'after B':>12s} after/before  equal")
    for q in [m for m in MICRO_QUERIES if m.name in names]:
        with mock.patch.object(C, "_flag_sql", _old_flag_sql):
            before = SuperOpSession(spark, recheck_locally(cat), gate="ungated", cache=False).rewrite(q.sql)
        after = SuperOpSession(spark, recheck_locally(cat), gate="ungated", cache=False).rewrite(q.sql)
        if not (before.changed and after.changed):
            print(f"{q.name:16s} not rewritten")
            continue
        eq = check_equal(spark, before.sql, after.sql).equal and check_equal(spark, q.sql, after.sql).equal
        b = {k: timed_run(spark, s, f"{q.name}-{k}").shuffle_write_bytes
             for k, s in (("original", q.sql), ("before", before.sql), ("after", after.sql))}
        ex = {k: plan_info(spark, s).shuffle_exchanges for k, s in (("before", before.sql), ("after", after.sql))}
        print(f"{q.name:16s} {b['original']:>12,} {b['before']:>12,} {b['after']:>12,} "
              f"{b['after'] / b['before']:>12.3f}  {eq}  (exchanges {ex['before']}→{ex['after']})", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
