"""`superop mine`: the mining job from the command line (a thin wrapper of run_mining)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import SuperopError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "mine", help="mine a query log for recurring sub-plans and super-operator candidates",
        description="Reads a query log (query-history JSON Lines / CSV / Parquet, or Spark event "
                    "logs), finds recurring sub-plans and Diamond UnionAll / Diamond Join / "
                    "Min & Join candidates, writes DIR/candidates.parquet, DIR/near_misses.parquet,"
                    " DIR/recurring.parquet and DIR/summary.json and logs an MLflow run "
                    "(to $MLFLOW_TRACKING_URI, else a local SQLite store DIR/mlflow.db with "
                    "artifacts in DIR/mlartifacts).")
    p.add_argument("--log", required=True, help="log file or directory")
    p.add_argument("--format", default="auto",
                   choices=["auto", "jsonl", "csv", "parquet", "spark-eventlog"])
    p.add_argument("--schema", help='JSON schema file {"table": {"column": "type"}} '
                                    "(default: the paper's tables + TPC-H)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("-k", "--min-templates", type=int, default=2, dest="k",
                   help="a sub-plan recurs when seen in at least K distinct templates (2)")
    p.add_argument("--column-map", help="source column names for other warehouses, e.g. "
                                        "statement_text=QUERY_TEXT,duration_ms=TOTAL_ELAPSED_TIME")
    p.add_argument("--include-failed", action="store_true",
                   help="also mine failed / canceled statements")
    p.add_argument("--no-mlflow", action="store_true", help="do not log an MLflow run")
    p.add_argument("--master", help="Spark master URL (default: local[2] or $SUPEROP_SPARK_MASTER)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from ..cliutil import read_schema
    from .job import run_mining
    from .readers import parse_column_map
    if not Path(args.log).exists():
        raise SuperopError(f"log not found: {args.log}")
    schema = read_schema(args) or None
    res = run_mining(args.log, args.out, fmt=args.format, schema=schema, k=args.k,
                     mlflow_run=not args.no_mlflow, column_map=parse_column_map(args.column_map),
                     include_failed=args.include_failed,
                     progress=False if args.quiet else None, master=args.master)
    s = res.summary
    if args.json:
        print(json.dumps(s, indent=2, default=str))
        return 0
    fam = ", ".join(f"{k} {v}" for k, v in s["candidates_by_family"].items())
    print(f"{s['queries_read']} queries read ({s['malformed']} malformed), {s['templates']} "
          f"templates, {s['recurring_subplans']} recurring sub-plans, {s['candidates']} "
          f"candidates ({fam}), {s['near_misses']} near-misses -> {res.out_dir}")
    if res.mlflow_run_id:
        print(f"mlflow run {res.mlflow_run_id}", file=sys.stderr)
    return 0
