"""Aggregate calls of a GROUP BY (sqlglot only, no Z3): which fold each call is and its
argument. Shared by the plan encoder and the z3-free certificate checks."""
from __future__ import annotations

from typing import Optional

from sqlglot import exp

from ..dsl import NoAccumulator, accumulator_call
from ..ir.dialect import DIALECT
from .result import Unsupported


def agg_call_func(a: exp.Expression) -> tuple[str, Optional[exp.Expression]]:
    """(fold name, argument expression) of an aggregate call; count(*) has no argument.
    The one table is :func:`superop.synth.dsl.accumulator_call`; what it cannot fold is
    :class:`Unsupported` here."""
    if not isinstance(a, exp.AggFunc):
        raise Unsupported(f"aggregate {a.sql(dialect=DIALECT)}")
    try:
        return accumulator_call(a)
    except NoAccumulator as e:
        raise Unsupported(str(e)) from None


def agg_calls(n) -> list[exp.AggFunc]:
    """The aggregate calls of an Aggregate node's items, in order."""
    return [c for x, _ in n.items for c in x.find_all(exp.AggFunc)]
