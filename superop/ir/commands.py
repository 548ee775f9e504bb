"""`superop plan`: show how superop sees a query (IR tree, shape, regenerated SQL)."""
from __future__ import annotations

import argparse
import json
from typing import Any

from ..cliutil import add_json_arg, add_sql_args, read_sql
from . import lower, render, shape, to_sql
from .dialect import pretty_sql
from .schema import load_schema_arg


def register(sub: Any) -> None:
    p = sub.add_parser("plan", help="lower a query to the plan IR and print tree, shape and SQL",
                       description="Shows how superop sees a query: the plan IR tree, its shape "
                                   "and the SQL regenerated from the IR.")
    add_sql_args(p)
    add_json_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    sql = read_sql(args)
    low = lower(sql, load_schema_arg(args.schema))
    out = {"tree": render(low.plan), "shape": shape(low.plan), "sql": to_sql(low.plan),
           "fully_lowered": low.fully_lowered, "opaque_reasons": low.opaque_reasons}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(out["tree"])
        print(f"shape: {out['shape']}")
        print("sql:   " + pretty_sql(str(out["sql"])).replace("\n", "\n       "))
        if low.opaque_reasons:
            print(f"opaque: {'; '.join(low.opaque_reasons)}")
    return 0
