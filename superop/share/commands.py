"""``superop share`` — run a batch of queries with work sharing.

    superop share --sql-dir DIR [--tables-dir DIR] [--budget 2g] [--cost-model FILE] [--plan-only]
                  [--plan-cache DIR | --no-plan-cache] [--plan-cache-max-mb MB] [--out FILE.json] [--json]
    superop share --sql-file FILE            (statements separated by ';')
    superop share --log PATH --start T --end T [--format auto]   (a window of a query log)

Prints the sharing plan (similar sub-expressions, covering expressions, why each was or
was not cached, which queries read them) and, unless ``--plan-only``, runs the batch and
prints each query's time. Tables come from the Spark catalog, or from ``--tables-dir``
(each ``name.parquet`` file or ``name/`` directory becomes the view ``name``).
"""
from __future__ import annotations

import sys

from ..cliutil import add_json_arg, add_spark_args, deprecated, plain, seconds_as_ms, spark_conf
from ..errors import SuperopError
from ..sparkutil import get_spark
from ..storage import atomic_write_json
from .estimate import cost_model, parse_budget
from .inputs import read_sql_dir, read_sql_file, register_tables_dir
from .opportunities import read_log_window
from .plancache import DEFAULT_MAX_BYTES
from .planner import plan_batch
from .run import analyze, execute
from .store import STORAGES


def register(sub) -> None:
    p = sub.add_parser("share", help="run a batch of queries with work sharing (cached covering expressions)",
                       description=plain(__doc__.split("\n\n")[0]))
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--sql-dir", metavar="DIR", help="directory of .sql files (one batch)")
    src.add_argument("--sql-file", metavar="FILE", help="file of SQL statements separated by ';'")
    src.add_argument("--log", metavar="PATH", help="query log (any format superop mine reads); with --start/--end")
    p.add_argument("--start", help="log window start (ISO time or epoch seconds)")
    p.add_argument("--end", help="log window end, exclusive")
    p.add_argument("--format", default="auto", help="log format (default auto)")
    p.add_argument("--tables-dir", help="register NAME.parquet files / NAME/ directories as views")
    p.add_argument("--budget", help="cache budget, e.g. 512m or 2g (default: from Spark's storage memory)")
    p.add_argument("--min-consumers", type=int, default=2,
                   help="sub-trees needed for a similar sub-expression (the paper's k, default 2)")
    p.add_argument("--bound", type=int, default=3, dest="proof_rows", metavar="K",
                   help="rows per table in the bounded proofs (default 3)")
    deprecated(p, "--proof-rows", dest="proof_rows", use="--bound", type=int)
    p.add_argument("--timeout-s", type=seconds_as_ms, default=20000, dest="timeout_ms", metavar="S",
                   help="seconds per Z3 proof (default 20)")
    deprecated(p, "--timeout-ms", dest="timeout_ms", use="--timeout-s (seconds)", type=int)
    p.add_argument("--proof-budget-s", type=float, metavar="S",
                   help="solver seconds for all proofs of the run (default 300); "
                        "an obligation past it is unknown and its consumer is not rewritten")
    p.add_argument("--cost-model", metavar="FILE",
                   help="cost model JSON (benchmarks/share_calibration.py's share_calibration.json or "
                        "its cost_model fields; default: the constants calibrated on the project's machine)")
    p.add_argument("--storage", choices=STORAGES,
                   help="how chosen CEs are stored: a local checkpoint (default) or Spark's columnar cache "
                        "(smaller, slower to fill); the shipped constants of that store unless --cost-model")
    p.add_argument("--plan-cache", metavar="DIR", default=".superop/share-cache",
                   help="on-disk planning cache: a batch planned before with the same queries, tables and "
                        "settings is not planned again; proofs and estimates are reused (default %(default)s)")
    p.add_argument("--no-plan-cache", action="store_true", help="plan from scratch, store nothing")
    p.add_argument("--plan-cache-max-mb", type=float, default=DEFAULT_MAX_BYTES / 2 ** 20, metavar="MB",
                   help="bound of the planning cache: the oldest records are evicted past it "
                        "(default %(default)g; 0 keeps nothing)")
    p.add_argument("--analyze", action="store_true", help="ANALYZE the catalog tables first (CBO estimates)")
    p.add_argument("--consume", choices=["collect", "count", "noop"], default="noop",
                   help="what running a query means (default noop: computed, not shipped)")
    p.add_argument("--results-dir", help="write each query's result as parquet to DIR/<query name>")
    p.add_argument("--plan-only", action="store_true", help="print the sharing plan, run nothing")
    p.add_argument("--no-grouping-sets", dest="grouping_sets", action="store_false",
                   help="keep queries with GROUP BY ROLLUP/CUBE/GROUPING SETS out of sharing (they take "
                        "part by default; superop/share/README.md)")
    p.add_argument("--out", metavar="FILE", help="write the plan (and the run) as JSON to this file")
    add_json_arg(p, "the plan (and the run) instead of the text report")
    add_spark_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    if args.min_consumers < 2:
        raise SuperopError("--min-consumers must be at least 2")
    if args.proof_rows < 1:
        raise SuperopError("--bound must be at least 1")
    budget = parse_budget(args.budget) if args.budget else None
    cost = cost_model(args.cost_model, args.storage)
    if (args.start or args.end) and not args.log:
        raise SuperopError("--start/--end need --log")
    batch = read_sql_dir(args.sql_dir) if args.sql_dir else read_sql_file(args.sql_file) if args.sql_file else None
    spark = get_spark(app_name="superop-share", master=args.master, conf=spark_conf(args))
    say = (lambda *a, **k: None) if args.json else print
    if args.tables_dir:
        register_tables_dir(spark, args.tables_dir)
    if batch is None:
        batch = read_log_window(spark, args.log, args.start, args.end, args.format)
        if not batch:
            raise SuperopError(f"no successful statement in {args.log} between {args.start} and {args.end}")
    if args.analyze:
        analyze(spark, batch)
    plan = plan_batch(batch, spark, budget=budget, k=args.min_consumers, K=args.proof_rows,
                      timeout_ms=args.timeout_ms, cost=cost,
                      cache_dir=None if args.no_plan_cache else args.plan_cache,
                      cache_max_bytes=int(args.plan_cache_max_mb * 2 ** 20),
                      grouping_sets=args.grouping_sets,
                      **({} if args.proof_budget_s is None else {"proof_budget_s": args.proof_budget_s}))
    say(plan.report())
    out = {"plan": plan.to_json()}
    if not args.plan_only:
        consume = args.consume
        if args.results_dir:
            from pathlib import Path

            def consume(df, name):   # Spark writes a directory and commits it at the end
                df.write.mode("overwrite").parquet(str(Path(args.results_dir) / name))
        res = execute(spark, plan, consume)
        for r in res.runs:
            extra = f" reads {', '.join(r.ces)}" if r.rewritten else ""
            extra += f" (fell back: {r.fallback})" if r.fallback else ""
            say(f"{r.name}: {r.seconds:.3f}s{extra}")
        say(f"total {res.seconds:.3f}s; cache {res.cache_bytes} bytes")
        out = res.to_json()
    if args.out:
        atomic_write_json(args.out, out)
    if args.json:
        import json
        print(json.dumps(out, indent=2, sort_keys=True, default=str))
    sys.stdout.flush()
    return 0
