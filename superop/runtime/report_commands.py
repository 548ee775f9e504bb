"""``superop runtime report --decision-log PATH [--json]``: what the runtime decided, from its
decision log (:mod:`superop.runtime.report`).
"""
from __future__ import annotations

import json

from ..cliutil import add_json_arg, plain
from . import report


def register(sub) -> None:
    import argparse

    p = sub.add_parser("runtime", help="operate the runtime: summarize its decision log")
    rs = p.add_subparsers(dest="runtime_cmd", metavar="ACTION")
    r = rs.add_parser("report", help="decisions, refusals, rules and time saved, from a decision log",
                      description=plain(report.__doc__ or ""),
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("--decision-log", required=True, metavar="PATH",
                   help="a JSON Lines decision log (spark.superop.decisionLog)")
    add_json_arg(r, "the summary")
    r.set_defaults(func=_report)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])


def _report(args) -> int:
    rep = report.read(args.decision_log)
    print(json.dumps(rep.to_json(), indent=2) if args.json else report.format_report(rep, args.decision_log))
    return 0
