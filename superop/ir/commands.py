"""`superop plan`: show how superop sees a query (IR tree, shape, regenerated SQL)."""
from __future__ import annotations

import argparse
import json
from typing import Any

from ..cliutil import add_sql_args, read_schema, read_sql


def register(sub: Any) -> None:
    p = sub.add_parser("plan", help="lower a query to the plan IR and print tree, shape and SQL")
    add_sql_args(p)
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from . import lower, render, shape, to_sql
    sql = read_sql(args)
    low = lower(sql, read_schema(args))
    out = {"tree": render(low.plan), "shape": shape(low.plan), "sql": to_sql(low.plan),
           "fully_lowered": low.fully_lowered, "opaque_reasons": low.opaque_reasons}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(out["tree"])
        print(f"shape: {out['shape']}")
        print(f"sql:   {out['sql']}")
        if low.opaque_reasons:
            print(f"opaque: {'; '.join(low.opaque_reasons)}")
    return 0
