"""`superop bench micro|tpch|tpcds|mine|rewrite` — benchmarks."""
from __future__ import annotations

import argparse

from ..cliutil import add_json_arg, add_spark_args
from ..errors import SuperopError
from .harness import bench_spark
from .micro import run_micro, select_queries
from .progress import Progress
from .report import code_version, command_line, log_mlflow, machine_info, now, spark_info, update_readme, write_outputs
from .rewriters import make_rewriter
from .tpcds_bench import register_cli as register_tpcds_bench
from .tpcds_bench import run_tpcds_cmd
from .tpch_bench import parse_queries, run_tpch


# ---------------------------------------------------------------------------
# bench
# ---------------------------------------------------------------------------
def _rows(s: str) -> list[int]:
    out = []
    for part in s.split(","):
        part = part.strip().lower().replace("_", "")
        mult = 1
        for suf, m in (("k", 1_000), ("m", 1_000_000)):
            if part.endswith(suf):
                part, mult = part[:-1], m
        try:
            v = int(float(part) * mult)
        except ValueError:
            raise argparse.ArgumentTypeError(f"bad row count {s!r} (e.g. 10m or 100000,1000000)") from None
        if v <= 0:
            raise argparse.ArgumentTypeError("row counts must be positive")
        out.append(v)
    return out


def _positive(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {s!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError("must be ≥ 1")
    return v


def _common(p, default_out: str) -> None:
    p.add_argument("--repeat", type=_positive, default=5, help="timed runs per query side (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="untimed warm-up runs per side (default 1)")
    p.add_argument("--out", default=default_out, help=f"output directory (default {default_out})")
    p.add_argument("--data-dir", default=".superop/bench-data",
                   help="where generated data is cached (default .superop/bench-data)")
    p.add_argument("--catalog", help="rule catalog file or MLflow URI (default: the catalog the nightly job "
                   "mines from --log, mined once and cached under --data-dir; 'bench-default' = the "
                   "hand-built catalog, for harness tests only)")
    p.add_argument("--log", help="query log the default catalog is mined from (default: the bundled log)")
    p.add_argument("--rewriter", choices=["runtime", "identity"], default="runtime",
                   help="runtime = superop.runtime.SuperOpSession (default); identity = harness test")
    p.add_argument("--shuffle-partitions", type=_positive, help="spark.sql.shuffle.partitions (default: Spark's)")
    add_spark_args(p)
    p.add_argument("--no-mlflow", action="store_true", help="do not log an MLflow run")
    add_json_arg(p, "the whole result document (instead of the Markdown table)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--readme", metavar="PAGE",
                   help="also put the Markdown table into this page's bench section "
                        "(the benchmark page is docs/BENCHMARKS.md)")
    p.add_argument("--readme-block", help="name of the block in that section (default: micro / tpch)")


# `bench mine` / `bench rewrite` run these scripts of other parts of the project.
_SCRIPTS = {"mine": "mining_bench.py", "rewrite": "rewrite_bench.py"}


def register(sub) -> None:
    p = sub.add_parser("bench", help="benchmarks: super-operators vs stock Spark (micro, tpch, tpcds, mine, "
                                         "rewrite)")
    bs = p.add_subparsers(dest="bench_command", metavar="BENCH")

    m = bs.add_parser("micro", help="DU/DJ/MJ micro set: original vs rewritten vs limit query")
    m.add_argument("--rows", type=_rows, default=[1_000_000, 10_000_000],
                   help="rows of ops, or a comma list for time-vs-rows (default 1m,10m)")
    m.add_argument("--queries", help="comma list of query names or families (du,dj,mj); default all")
    m.add_argument("--seed", type=int, default=7)
    m.add_argument("--budget-min", type=float,
                   help="time budget in minutes: queries that would not finish in it are skipped "
                        "(and listed); queries then run interleaved by family")
    _common(m, "out/bench/micro")
    m.set_defaults(bench_func=run_micro_cmd)

    t = bs.add_parser("tpch", help="TPC-H (tpchgen-cli parquet), 22 queries original vs rewritten")
    t.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1)")
    t.add_argument("--queries", help="comma list of query numbers (default 1..22)")
    _common(t, "out/bench/tpch")
    t.set_defaults(bench_func=run_tpch_cmd)

    register_tpcds_bench(bs, _common, run_tpcds_cmd)

    for name, what in (("mine", "the mining benchmark (queries/s, peak memory)"),
                       ("rewrite", "rewrite overhead vs Spark planning time")):
        script = _SCRIPTS[name]
        w = bs.add_parser(name, help=f"{what}: runs benchmarks/{script}; pass its options "
                          f"after --, e.g. `superop bench {name} -- --help`", add_help=False)
        w.add_argument("args", nargs=argparse.REMAINDER, help=f"passed to benchmarks/{script}")
        w.set_defaults(bench_func=_wrapper(name))

    def dispatch(args) -> int:
        if not getattr(args, "bench_func", None):
            p.print_help()
            return 2
        return args.bench_func(args)
    p.set_defaults(func=dispatch)


def _finish(doc, args, kind: str, progress) -> int:
    import os
    doc["finished_at"] = now()
    try:
        doc["machine"]["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    outs = write_outputs(doc, args.out, kind)
    run_id = None
    if not args.no_mlflow:
        try:
            run_id = log_mlflow(doc, kind)
        except Exception as e:  # the measurements are already on disk; say why MLflow failed
            progress.warn(f"MLflow logging failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    md = open(outs["markdown"]).read()
    if args.readme:
        update_readme(args.readme, args.readme_block or kind, md)
    if getattr(args, "json", False):
        import json
        print(json.dumps(doc, indent=2, default=str))
        return 0
    print(md)
    print(f"wrote {outs['json']}, {outs['markdown']}" + (f", {', '.join(outs['plots'])}" if outs["plots"] else ""))
    if run_id:
        import mlflow
        print(f"MLflow run {run_id} at {mlflow.get_tracking_uri()}")
    return 0


def run_micro_cmd(args) -> int:
    queries = select_queries(args.queries.split(",") if args.queries else None)
    started = now()
    machine = machine_info()
    spark = bench_spark(args)
    rw = make_rewriter(spark, args.rewriter, args.catalog, args.data_dir, args.log)
    progress = Progress(enabled=not args.quiet)
    doc = run_micro(spark, rw, rows=args.rows, repeat=args.repeat, warmup=args.warmup,
                    data_dir=args.data_dir, queries=queries, seed=args.seed, progress=progress,
                    budget_s=args.budget_min * 60 if args.budget_min else None)
    doc.update(started_at=started, command=command_line(), code=code_version(), machine=machine,
               spark=spark_info(spark),
               rewriter={"name": rw.name, **rw.info},
               params={"rows": args.rows, "repeat": args.repeat, "warmup": args.warmup, "conf": args.conf,
                       "queries": [q.name for q in queries], "seed": args.seed,
                       "budget_min": args.budget_min})
    return _finish(doc, args, "micro", progress)


def run_tpch_cmd(args) -> int:
    qs = parse_queries(args.queries)
    started = now()
    machine = machine_info()
    spark = bench_spark(args)
    progress = Progress(enabled=not args.quiet)
    doc = run_tpch(spark, lambda: make_rewriter(spark, args.rewriter, args.catalog, args.data_dir, args.log),
                   sf=args.sf,
                   queries=qs, repeat=args.repeat, warmup=args.warmup, data_dir=args.data_dir,
                   progress=progress)
    doc.update(started_at=started, command=command_line(), code=code_version(), machine=machine,
               spark=spark_info(spark),
               params={"sf": args.sf, "repeat": args.repeat, "warmup": args.warmup, "queries": qs,
                       "conf": args.conf})
    return _finish(doc, args, "tpch", progress)


def _wrapper(name: str):
    def run(args) -> int:
        script = _SCRIPTS[name]
        import subprocess
        import sys
        from pathlib import Path
        root = Path(__file__).resolve().parents[2]
        path = root / "benchmarks" / script
        if not path.is_file():
            raise SuperopError(f"not available: benchmarks/{script} does not exist in this checkout "
                               f"({root}); it belongs to another part of the project")
        rest = [a for a in args.args if a != "--"]
        return subprocess.call([sys.executable, str(path), *rest], cwd=str(root))
    return run
