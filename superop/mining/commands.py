"""`superop mine`: the nightly job (mine → synthesize → verify → generalize → export,
``superop.pipeline.nightly``); ``--mine-only`` runs just the mining stage (run_mining)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import SuperopError
from .selection import MIN_COST_SHARE, MIN_EXECUTIONS, ROUTES


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "mine", help="the nightly job: mine a query log, synthesize + verify super-operators, "
                     "write the rule catalog",
        description="Reads a query log (query-history JSON Lines / CSV / Parquet, or Spark event "
                    "logs), finds recurring sub-plans and Diamond UnionAll / Diamond Join / "
                    "Min & Join candidates (DIR/candidates.parquet, DIR/near_misses.parquet, "
                    "DIR/recurring.parquet, DIR/summary.json), synthesizes and verifies a "
                    "super-operator per candidate (DIR/synthesis.json), generalizes them into "
                    "abstract rules and writes DIR/catalog.json and DIR/report.md atomically. "
                    "Runs are logged to MLflow ($MLFLOW_TRACKING_URI, else a local SQLite store "
                    "DIR/mlflow.db with artifacts in DIR/mlartifacts); the catalog is registered "
                    "as model 'superop-catalog' with alias 'candidate'. --mine-only stops after "
                    "mining.")
    p.add_argument("--log", required=True, help="log file or directory")
    p.add_argument("--format", default="auto",
                   choices=["auto", "jsonl", "csv", "parquet", "spark-eventlog"])
    p.add_argument("--schema", help='JSON schema file {"table": {"column": "type"}} '
                                    "(default: the paper's tables + TPC-H)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("-k", "--min-templates", type=int, default=None, dest="k",
                   help="select by support instead of cost: a sub-plan recurs when seen in at "
                        "least K distinct templates (default: unset, select by recurring cost)")
    p.add_argument("--min-cost-share", type=float, default=MIN_COST_SHARE,
                   help="cost selection (default): a sub-plan recurs when the queries containing "
                        "it cost at least this share of the log's summed duration "
                        f"({MIN_COST_SHARE:g} = {MIN_COST_SHARE * 100:g}%%) ...")
    p.add_argument("--min-executions", type=int, default=MIN_EXECUTIONS,
                   help="... and ran at least this many times, from one template (a dashboard "
                        f"re-run with new literals) or from many ({MIN_EXECUTIONS})")
    p.add_argument("--column-map", help="source column names for other warehouses, e.g. "
                                        "statement_text=QUERY_TEXT,duration_ms=TOTAL_ELAPSED_TIME")
    p.add_argument("--include-failed", action="store_true",
                   help="also mine failed / canceled statements")
    p.add_argument("--mine-only", action="store_true",
                   help="only mine (no synthesis, verification or catalog)")
    p.add_argument("--no-mlflow", action="store_true",
                   help="do not log an MLflow run (only with --mine-only)")
    p.add_argument("-K", "--bound", type=int, default=4, dest="K",
                   help="rows per symbolic table in bounded verification (4)")
    p.add_argument("--synth-timeout", type=float, default=60.0,
                   help="seconds per candidate for synthesis incl. verification (60)")
    p.add_argument("--verify-timeout", type=float, default=20.0,
                   help="seconds per Z3 check (20); a timeout is 'unknown', never verified")
    p.add_argument("--max-candidates", type=int, help="synthesize at most N candidates "
                                                     "(by cost share)")
    p.add_argument("--no-register", action="store_true",
                   help="do not register the catalog in the MLflow Model Registry")
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
    if not args.mine_only:
        if args.no_mlflow:
            raise SuperopError("--no-mlflow needs --mine-only (the nightly job is tracked in MLflow)")
        return _nightly(args, schema, parse_column_map(args.column_map))
    res = run_mining(args.log, args.out, fmt=args.format, schema=schema, k=args.k,
                     min_cost_share=args.min_cost_share, min_executions=args.min_executions,
                     mlflow_run=not args.no_mlflow, column_map=parse_column_map(args.column_map),
                     include_failed=args.include_failed,
                     progress=False if args.quiet else None, master=args.master)
    s = res.summary
    if args.json:
        print(json.dumps(s, indent=2, default=str))
        return 0
    fam = ", ".join(f"{k} {v}" for k, v in s["candidates_by_family"].items())
    route = ", ".join(f"{k.replace('_', '-')} {v}" for k, v in s["candidates_by_route"].items())
    print(f"{s['queries_read']} queries read ({s['malformed']} malformed), {s['templates']} "
          f"templates, {s['recurring_subplans']} recurring sub-plans, {s['candidates']} "
          f"candidates ({fam}; by route: {route}), {s['near_misses']} near-misses "
          f"-> {res.out_dir}")
    if res.mlflow_run_id:
        print(f"mlflow run {res.mlflow_run_id}", file=sys.stderr)
    return 0


def _nightly(args, schema, column_map) -> int:
    from ..pipeline.nightly import run_nightly
    r = run_nightly(args.log, args.out, fmt=args.format, schema=schema, k=args.k, K=args.K,
                    synth_timeout_s=args.synth_timeout, verify_timeout_s=args.verify_timeout,
                    master=args.master, column_map=column_map,
                    progress=False if args.quiet else None, register=not args.no_register,
                    max_candidates=args.max_candidates, min_cost_share=args.min_cost_share,
                    min_executions=args.min_executions, include_failed=args.include_failed)
    m = r.metrics
    if args.json:
        print(json.dumps({"catalog": str(r.catalog_path), "report": str(r.report_path),
                          "mlflow_run_id": r.mlflow_run_id, "tracking_uri": r.tracking_uri,
                          "registered_version": r.registered_version, "metrics": m},
                         indent=2, default=str))
        return 0
    print(f"{m.get('queries_read')} queries read ({m.get('malformed')} malformed), "
          f"{m.get('templates')} templates, {m.get('candidates')} candidates ("
          + ", ".join(f"{r.replace('_', '-')} {m.get('candidates_' + r, 0)}" for r in ROUTES)
          + "); "
          f"{m.get('verified')} verified, {m.get('refuted')} refuted, {m.get('unknown')} unknown, "
          f"{m.get('no_program')} no program, {m.get('crashed')} crashed; "
          f"{m.get('patterns')} patterns -> {m.get('rules')} rules")
    print(f"catalog: {r.catalog_path}")
    print(f"report:  {r.report_path}")
    print(f"mlflow:  run {r.mlflow_run_id} in {r.tracking_uri}"
          + (f" (catalog registered as models:/superop-catalog/{r.registered_version}, alias "
             f"'candidate'; promote with: superop catalog promote --version "
             f"{r.registered_version} --tracking-uri {r.tracking_uri})" if r.registered_version else ""))
    return 0
