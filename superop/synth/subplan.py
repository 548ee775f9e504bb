"""Facts about a sub-plan the synthesizer and its command need besides the search: the
Spark types of its output columns (so NULL outputs of a program can be typed) and, in a
query that embeds a super-operator shape, the sub-plan to synthesize for.
"""
from __future__ import annotations

from typing import Optional

from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types

from ..ir import to_sql
from ..ir.dialect import DIALECT
from ..ir.lower import qualified
from ..ir.nodes import Node, Project, Rename, Scan, Select, parents, walk
from .parts import NotSupported, analyze


def output_types(plan: Node) -> tuple[str, ...]:
    """Spark types of the sub-plan's output columns (sqlglot type annotation of the
    regenerated SQL), so that NULL outputs of a program can be typed; () if unknown."""
    try:
        schema = {n.table: dict(n.columns) for n in walk(plan) if isinstance(n, Scan)}
        ast = annotate_types(qualified(to_sql(plan), schema), schema=schema, dialect=DIALECT)
        types = []
        for e in ast.selects:
            t = e.type
            if t is None or t.this == exp.DataType.Type.UNKNOWN:
                return ()
            types.append(t.sql(dialect=DIALECT).lower())
        return tuple(types) if len(types) == len(plan.fields) else ()
    except Exception:  # typing is a convenience for the runtime, never a failure
        return ()


def find_subplan(plan: Node) -> Optional[Node]:
    """The top-most node of ``plan`` whose sub-tree has a super-operator shape (a UNION ALL
    or join of σ/π/ρ/γ paths over base tables), with the σ/π/ρ chain right above it —
    for a query that embeds the sub-query (ORDER BY/LIMIT on top, an outer join, ...)."""
    ps = parents(plan)
    for n in reversed(list(walk(plan))):        # reverse post-order: parents before children
        try:
            analyze(n)
        except NotSupported:
            continue
        top = n                                   # include the optional operators above it
        while len(ps.get(id(top), ())) == 1 and isinstance(ps[id(top)][0], (Select, Project, Rename)):
            try:
                analyze(ps[id(top)][0])
            except NotSupported:
                break
            top = ps[id(top)][0]
        return top
    return None
