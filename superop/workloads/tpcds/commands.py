"""`superop workload tpcds-log | tpcds-data | tpcds-queries` — the TPC-DS workload."""
from __future__ import annotations

from ...cliutil import add_json_arg
from ...errors import SuperopError
from .data import SMALLEST_SF, generate_tpcds
from .log import write_tpcds_log
from .schema import tpcds_schema


def register(sub) -> None:
    p = sub.add_parser("workload", help="workload generators: TPC-DS query log and data")
    ws = p.add_subparsers(dest="workload_command", metavar="WORKLOAD")

    lg = ws.add_parser(
        "tpcds-log", help="write a TPC-DS query log (JSON Lines, query-history columns)",
        description="The 103 TPC-DS statements with fresh literals per execution and a "
                    "warehouse-like mix (16 dashboard queries 24-48 runs/day, 22 daily "
                    "reports 1-3/day, the rest ad hoc), synthetic durations/bytes. Mine it "
                    "with: superop workload tpcds-schema > tpcds.json; superop mine --log PATH "
                    "--schema tpcds.json --out DIR")
    lg.add_argument("--out", required=True, metavar="FILE", help="log file (.jsonl or .jsonl.gz)")
    lg.add_argument("--days", type=int, default=14,
                    help="simulated days (default 14: in one week, 45 of the 103 statements run once, "
                         "below the mining job's recurrence threshold)")
    lg.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    add_json_arg(lg, "what was written")
    lg.set_defaults(func=_log)

    d = ws.add_parser("tpcds-data", help="generate TPC-DS Parquet with tpcgen-cli")
    d.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1; >= 0.01)")
    d.add_argument("--out", required=True, metavar="DIR", help="output directory (replaced)")
    add_json_arg(d, "what was written")
    d.set_defaults(func=_data)

    s = ws.add_parser("tpcds-schema", help="print the TPC-DS schema JSON (for --schema), with the "
                                                 "declared keys of its dimensions under \"$keys\"")
    s.set_defaults(func=_schema)

    def dispatch(args) -> int:
        if not getattr(args, "func", None) or args.func is dispatch:
            p.print_help()
            return 2
        return args.func(args)
    p.set_defaults(func=dispatch)


def _log(args) -> int:
    r = write_tpcds_log(args.out, days=args.days, seed=args.seed)
    if args.json:
        import json
        print(json.dumps({"out": str(args.out), "days": args.days, "lines": r.lines,
                          "failed": r.failed, "by_class": r.by_class,
                          "executions": r.executions}, indent=2))
        return 0
    top = sorted(r.executions.items(), key=lambda kv: -kv[1])[:5]
    print(f"{r.lines} executions over {args.days} days ({r.failed} failed; dashboard "
          f"{r.by_class['dashboard']}, daily {r.by_class['daily']}, ad hoc "
          f"{r.by_class['adhoc']}); most run: "
          + ", ".join(f"{n}x{k}" for n, k in top) + f" -> {args.out}")
    return 0


def _data(args) -> int:
    if args.sf < SMALLEST_SF:
        raise SuperopError(f"--sf {args.sf:g} is below {SMALLEST_SF:g}: tpcgen-cli writes "
                           f"the same tables as {SMALLEST_SF:g} (or empty ones)")
    out = generate_tpcds(args.sf, args.out)
    if args.json:
        import json
        print(json.dumps({"sf": args.sf, "out": str(out)}, indent=2))
        return 0
    print(f"TPC-DS SF {args.sf:g} -> {out}")
    return 0


def _schema(args) -> int:
    import json
    print(json.dumps(tpcds_schema(), indent=1))
    return 0
