"""`superop mine`: the nightly job (mine → synthesize → verify → generalize → export,
``superop.pipeline.nightly``); ``--mine-only`` runs just the mining stage (run_mining)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..cliutil import add_json_arg, add_schema_arg, add_spark_args, deprecated, spark_conf, timeout_s
from ..errors import SuperopError
from ..ir.schema import load_schema_arg
from ..mining.job import run_mining
from ..mining.readers import parse_column_map, table_source
from ..mining.selection import MIN_COST_SHARE, MIN_EXECUTIONS, ROUTES
from ..sparkutil import get_spark
from ..storage import scheme
from ..rules_out.signing import signing_key
from .nightly import run_nightly


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "mine", help="the nightly job: mine a query log, synthesize + verify super-operators, "
                     "write the rule catalog",
        description="Reads a query log (query-history JSON Lines / CSV / Parquet files or a "
                    "table, or Spark event logs; any path Spark reads: local, file:, hdfs:, "
                    "s3a:, abfss:), finds recurring sub-plans and Diamond UnionAll / Diamond "
                    "Join / Min & Join candidates, synthesizes and verifies a super-operator "
                    "per candidate, generalizes them into abstract rules and writes the rule "
                    "catalog. Outputs in DIR: candidates.parquet, near_misses.parquet, "
                    "recurring.parquet, summary.json, synthesis.json, catalog.json, report.md, "
                    "report.html; they replace the previous run's together, only when the "
                    "whole run succeeded. Runs are logged to MLflow ($MLFLOW_TRACKING_URI, "
                    "else a local store DIR/mlflow.db); the catalog is registered as model "
                    "'superop-catalog' with alias 'candidate'. --mine-only stops after mining.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--log", metavar="PATH",
                     help="log file or directory (local path or any Hadoop filesystem URI)")
    src.add_argument("--log-table", metavar="NAME",
                     help="a query-history table of the Spark catalog (e.g. a Delta table)")
    p.add_argument("--format", default="auto",
                   choices=["auto", "jsonl", "csv", "parquet", "spark-eventlog"],
                   help="log format of every file (default auto: each file by its own)")
    add_schema_arg(p, "default: the paper's tables + TPC-H")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="output directory (local path or any Hadoop filesystem URI)")
    p.add_argument("--min-templates", type=int, default=None, dest="k", metavar="N",
                   help="select by support instead of cost: a sub-plan recurs when seen in at "
                        "least N distinct query templates (default: unset, select by "
                        "recurring cost)")
    deprecated(p, "-k", dest="k", use="--min-templates", type=int)
    p.add_argument("--min-cost-share", type=float, default=MIN_COST_SHARE, metavar="F",
                   help="cost selection (default): a sub-plan recurs when the queries containing "
                        "it cost at least this share of the log's summed duration "
                        f"(default {MIN_COST_SHARE:g} = {MIN_COST_SHARE * 100:g}%%) ...")
    p.add_argument("--min-executions", type=int, default=MIN_EXECUTIONS, metavar="N",
                   help="... and ran at least N times, from one template (a dashboard re-run "
                        f"with new literals) or from many (default {MIN_EXECUTIONS})")
    p.add_argument("--column-map", help="source column names for other warehouses, e.g. "
                                        "statement_text=QUERY_TEXT,duration_ms=TOTAL_ELAPSED_TIME")
    p.add_argument("--include-failed", action="store_true",
                   help="also mine failed / canceled statements")
    p.add_argument("--mine-only", action="store_true",
                   help="only mine (no synthesis, verification or catalog)")
    p.add_argument("--no-mlflow", action="store_true",
                   help="do not log an MLflow run (only with --mine-only)")
    p.add_argument("--bound", type=int, default=4, dest="K", metavar="K",
                   help="rows per symbolic table in bounded verification (default 4)")
    deprecated(p, "-K", "--K", dest="K", use="--bound", type=int)
    p.add_argument("--min-bound", type=int, default=3, dest="min_bound", metavar="K",
                   help="after a Z3 timeout at --bound rows, check again with fewer rows, down "
                        "to this many (default 3); the certificate records its bound")
    p.add_argument("--synth-timeout-s", type=timeout_s, default=60.0, dest="synth_timeout",
                   metavar="S", help="seconds per candidate for synthesis incl. verification "
                                     "(default 60)")
    deprecated(p, "--synth-timeout", dest="synth_timeout", use="--synth-timeout-s", type=timeout_s)
    p.add_argument("--verify-timeout-s", type=timeout_s, default=20.0, dest="verify_timeout",
                   metavar="S", help="seconds per Z3 check (default 20); a timeout is "
                                     "'unknown', never verified")
    deprecated(p, "--verify-timeout", dest="verify_timeout", use="--verify-timeout-s",
               type=timeout_s)
    p.add_argument("--parametric-timeout-s", type=timeout_s, default=120.0, dest="parametric_timeout",
                   metavar="S", help="seconds for the Z3 check of an instance's parametric form, "
                                     "which covers it with every literal value (default 120)")
    p.add_argument("--max-candidates", type=int, metavar="N",
                   help="synthesize at most N candidates (the costliest first)")
    p.add_argument("--no-register", action="store_true",
                   help="do not register the catalog in the MLflow Model Registry")
    p.add_argument("--signing-key", metavar="PEM",
                   help="Ed25519 private key the catalog is signed with (default $SUPEROP_SIGNING_KEY, "
                        "else the local key store's, generated on first use)")
    add_spark_args(p)
    add_json_arg(p, "the summary")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=_run)


def _log_source(args) -> str:
    if args.log_table:
        return table_source(args.log_table)
    if scheme(args.log) == "" and not Path(args.log).exists():   # URIs: checked by Spark
        raise SuperopError(f"log not found: {args.log}")
    return args.log


def _spark(args, app: str):
    return get_spark(app_name=app, master=args.master, conf=spark_conf(args))


def _run(args) -> int:
    log = _log_source(args)
    schema = load_schema_arg(args.schema) or None
    if not args.mine_only:
        if args.no_mlflow:
            raise SuperopError("--no-mlflow needs --mine-only (the nightly job is tracked in MLflow)")
        return _nightly(args, log, schema, parse_column_map(args.column_map))
    res = run_mining(log, args.out, fmt=args.format, schema=schema, k=args.k,
                     min_cost_share=args.min_cost_share, min_executions=args.min_executions,
                     mlflow_run=not args.no_mlflow, column_map=parse_column_map(args.column_map),
                     include_failed=args.include_failed, progress=not args.quiet,
                     spark=_spark(args, "superop-mine"))
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
    _print_unreadable(s)
    if res.mlflow_run_id:
        print(f"mlflow run {res.mlflow_run_id}", file=sys.stderr)
    return 0


def _print_unreadable(summary: dict) -> None:
    files = summary.get("files") or {}
    if files.get("unreadable"):
        what = ", ".join(f"{n} {r}" for r, n in files["unreadable"].items())
        names = ", ".join(f"{u['file'].rsplit('/', 1)[-1]} ({u['reason']})"
                          for u in files.get("unreadable_files", [])[:5])
        print(f"skipped unreadable files: {what}: {names}", file=sys.stderr)


def _nightly(args, log, schema, column_map) -> int:
    signer = signing_key(args.signing_key)      # before Spark starts: a bad key fails at once
    r = run_nightly(log, args.out, fmt=args.format, schema=schema, k=args.k, K=args.K,
                    min_bound=min(args.min_bound, args.K), min_cost_share=args.min_cost_share,
                    min_executions=args.min_executions,
                    synth_timeout_s=args.synth_timeout, verify_timeout_s=args.verify_timeout,
                    parametric_timeout_s=args.parametric_timeout,
                    spark=_spark(args, "superop-nightly"), column_map=column_map,
                    progress=not args.quiet, register=not args.no_register,
                    max_candidates=args.max_candidates, include_failed=args.include_failed,
                    signer=signer)
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
    print(f"catalog: {r.catalog_path} (signed with key {signer.key_id}, {signer.source})")
    print(f"report:  {r.report_path}")
    print(f"mlflow:  run {r.mlflow_run_id} in {r.tracking_uri}"
          + (f" (catalog registered as models:/superop-catalog/{r.registered_version}, alias "
             f"'candidate'; promote with: superop catalog promote --version "
             f"{r.registered_version} --tracking-uri {r.tracking_uri})" if r.registered_version else ""))
    return 0
