"""The Spark type of an uncorrelated scalar sub-query's value, recorded at lowering.

A sub-query that becomes a value token (:mod:`superop.ir.subqueries`) is read by a
certificate as a free value of its type (:func:`superop.ir.parameters.parameter_name`), so
the lowering — the one place that knows the tables the sub-query reads — types each
outermost sub-query of the plan's expressions once, with sqlglot's type annotation over
those tables' columns, and records it on the sub-query (``meta``). Only one type is
recorded: ``number``, for any numeric value (an integer, a decimal, a double) — a
certificate reads it as a free real or NULL, a domain that contains every value of every
numeric type (sqlglot's annotation is coarse: ``AVG`` of a decimal is a DOUBLE to it, a
DECIMAL to Spark; both are numbers). Anything else (a string, a date, a type sqlglot
cannot derive) records nothing, and a certificate cannot be about that sub-query's value.
"""
from __future__ import annotations

from typing import Mapping, Optional

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.annotate_types import annotate_types

from .dialect import DIALECT
from .names import TableName
from .nodes import Node, expressions_of, walk
from .schema import TableInfo

TYPE_META = "superop_value_type"
NUMBER = "number"


def outermost_subqueries(e: exp.Expr) -> list[exp.Subquery]:
    """The sub-queries of ``e`` not nested in another sub-query of ``e``."""
    return [s for s in e.find_all(exp.Subquery) if _outermost(s, e)]


def _outermost(s: exp.Expr, root: exp.Expr) -> bool:
    p = s.parent
    while p is not None and p is not root:
        if isinstance(p, exp.Subquery):
            return False
        p = p.parent
    return True


def value_type(sub: exp.Subquery, tables: Mapping[tuple[str, ...], TableInfo],
               case_sensitive: bool) -> Optional[str]:
    """``number`` when the one column of the scalar sub-query ``sub`` (reading ``tables``)
    is numeric, else None."""
    q = sub.this.copy() if isinstance(sub.this, exp.Expr) else None
    if not isinstance(q, exp.Select) or len(q.expressions) != 1:
        return None
    w = sub.args.get("with_") or sub.args.get("with")
    if w is not None:            # the CTEs the lowering attached to the sub-query
        q.set("with_" if "with_" in type(q).arg_types else "with", w.copy())
    local = {c.alias_or_name.lower() for c in q.find_all(exp.CTE)}
    mapping: dict[str, object] = {}
    for t in q.find_all(exp.Table):
        try:
            name = TableName.from_table(t)
        except ValueError:
            return None
        if len(name.parts) == 1 and name.name.lower() in local:
            continue
        info = tables.get(name.normalized(case_sensitive))
        if info is None:
            return None
        key = f"__so_v{len(mapping)}"
        mapping[key] = dict(info.columns)
        for k in ("catalog", "db"):
            t.set(k, None)
        if t.args.get("alias") is None:
            t.set("alias", exp.TableAlias(this=exp.to_identifier(name.name)))
        t.set("this", exp.to_identifier(key))
    try:
        typed = annotate_types(q, schema=mapping, dialect=DIALECT).selects[0].type
    except (SqlglotError, KeyError, ValueError, TypeError, AttributeError):
        return None
    return NUMBER if typed is not None and typed.this in exp.DataType.NUMERIC_TYPES else None


def record_subquery_types(plan: Node, tables: Mapping[tuple[str, ...], TableInfo],
                          case_sensitive: bool) -> None:
    """Record on each outermost sub-query of ``plan``'s expressions its value type
    (:func:`value_type`; nothing when it has none)."""
    for n in walk(plan):
        for e in expressions_of(n):
            for s in outermost_subqueries(e):
                if TYPE_META not in s.meta:
                    t = value_type(s, tables, case_sensitive)
                    if t is not None:
                        s.meta[TYPE_META] = t
