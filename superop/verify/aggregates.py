"""Aggregate calls of a GROUP BY (sqlglot only, no Z3): which fold each call is and its
argument. Shared by the plan encoder and the z3-free certificate checks."""
from __future__ import annotations

from typing import Optional

from sqlglot import exp

from ..ir.dialect import DIALECT
from .result import Unsupported

AGG_NAMES = {exp.Sum: "sum", exp.Min: "min", exp.Max: "max", exp.Avg: "avg"}


def agg_call_func(a: exp.Expression) -> tuple[str, Optional[exp.Expression]]:
    """(fold name, argument expression) of an aggregate call; count(*) has no argument."""
    if isinstance(a, exp.Count):
        arg = a.this
        if arg is None or isinstance(arg, exp.Star):
            return "count_star", None
        if isinstance(arg, exp.Distinct):
            if len(arg.expressions) != 1:
                raise Unsupported("COUNT(DISTINCT a, b)")
            return "count_distinct", arg.expressions[0]
        return "count", arg
    name = AGG_NAMES.get(type(a))
    if name is None:
        raise Unsupported(f"aggregate {a.sql(dialect=DIALECT)}")
    if isinstance(a.this, exp.Distinct):
        raise Unsupported(f"{name.upper()}(DISTINCT ...)")
    return name, a.this


def agg_calls(n) -> list[exp.AggFunc]:
    """The aggregate calls of an Aggregate node's items, in order."""
    return [c for x, _ in n.items for c in x.find_all(exp.AggFunc)]
