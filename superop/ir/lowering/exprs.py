"""Expression helpers of the lowering: conjuncts, nested queries, aggregates, windows."""
from __future__ import annotations

from typing import Callable, Iterator, Optional

from sqlglot import exp

from ..functions import is_nondeterministic_expr


def conjuncts(e: exp.Expr | None) -> list[exp.Expr]:
    if e is None:
        return []
    if isinstance(e, exp.Paren):
        return conjuncts(e.this)
    if isinstance(e, exp.And):
        return conjuncts(e.this) + conjuncts(e.expression)
    return [e]


def and_all(preds: list[exp.Expr]) -> exp.Expr | None:
    """Flat ``p1 AND p2 AND ...`` (sqlglot's and_ would add nested parentheses)."""
    out = None
    for p in preds:
        if isinstance(p, (exp.Or, exp.Xor)):
            p = exp.Paren(this=p)
        out = p if out is None else exp.And(this=out, expression=p)
    return out


def conjoin(preds: list[exp.Expr]) -> exp.Expr:
    """:func:`and_all` of a non-empty list."""
    out = and_all(preds)
    if out is None:
        raise ValueError("no predicate to conjoin")
    return out


def columns_outside_queries(e: exp.Expr) -> Iterator[exp.Column]:
    """Column references of ``e`` that are not inside a nested query."""
    stack: list[exp.Expr] = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Column):
            yield n
            continue
        if isinstance(n, exp.Query) and n is not e:
            continue
        stack.extend(n.iter_expressions())


def has_agg(e: exp.Expr) -> bool:
    """True if ``e`` calls an aggregate function outside window specs and nested queries."""
    for n in e.find_all(exp.AggFunc):
        w = n.find_ancestor(exp.Window)
        if w is not None and is_within(w, e):
            continue
        q = n.find_ancestor(exp.Query)
        if q is not None and is_within(q, e):
            continue
        return True
    return False


def is_within(node: exp.Expr, root: exp.Expr) -> bool:
    p: Optional[exp.Expr] = node
    while p is not None:
        if p is root:
            return True
        p = p.parent
    return False


def outermost_queries(e: exp.Expr) -> list[exp.Query]:
    """Query expressions nested in ``e`` that are not inside another nested query."""
    out: list[exp.Query] = []
    stack = list(e.iter_expressions())
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Query):
            out.append(n)
            continue
        stack.extend(n.iter_expressions())
    return out


def windows_outside_queries(e: exp.Expr) -> list[exp.Window]:
    out: list[exp.Window] = []
    stack: list[exp.Expr] = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Window):
            out.append(n)
            continue
        if isinstance(n, exp.Query) and n is not e:
            continue
        stack.extend(n.iter_expressions())
    return out[::-1]


def has_query(e: exp.Expr) -> bool:
    return any(True for _ in outermost_queries(e)) or isinstance(e, exp.Query)


def nondeterministic(e: exp.Expr) -> bool:
    return is_nondeterministic_expr(e)


def replace_outside_queries(e: exp.Expr, fn: Callable[[exp.Expr], Optional[exp.Expr]]) -> exp.Expr:
    """Copy of ``e`` with sub-expressions replaced by ``fn(node)`` (None = keep and
    recurse); nested queries are never entered."""
    e = e.copy()
    r = fn(e)
    if r is not None:
        return r
    stack = list(e.iter_expressions())
    while stack:
        n = stack.pop()
        r = fn(n)
        if r is not None:
            n.replace(r)
            continue
        if not isinstance(n, exp.Query):
            stack.extend(n.iter_expressions())
    return e


CMP = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def null_on_empty(e: exp.Expr) -> bool:
    """True if ``e`` (an aggregate expression) is NULL over an empty input: SUM/AVG/
    MIN/MAX, or arithmetic with such an operand. COUNT and COALESCE are not."""
    if isinstance(e, (exp.Sum, exp.Avg, exp.Min, exp.Max)):
        return True
    if isinstance(e, (exp.Paren, exp.Neg, exp.Cast)):
        return null_on_empty(e.this)
    if isinstance(e, (exp.Add, exp.Sub, exp.Mul, exp.Div)):
        return null_on_empty(e.this) or null_on_empty(e.expression)
    return False


def strip_alias(e: exp.Expr) -> tuple[exp.Expr, str]:
    if isinstance(e, exp.Alias):
        return e.this.copy(), str(e.alias)
    return e.copy(), str(e.alias_or_name)
