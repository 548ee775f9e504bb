"""Name resolution during lowering: which input a column belongs to, correlation
(outer references of a sub-query), the Spark type of a passed-through column."""
from __future__ import annotations

from typing import Sequence

from sqlglot import exp

from ..nodes import (Aggregate, Field, Join, Limit, Node, Project, Rename, Scan, Select, Sort, UnionAll,
                     Window, resolve_field)
from .exprs import columns_outside_queries


def resolves(fields: Sequence[Field], c: exp.Column) -> bool:
    """Strict: a qualified column belongs to a side only if that side has its qualifier."""
    if c.table and not any(f.qualifier == c.table for f in fields):
        return False
    try:
        resolve_field(fields, c)
        return True
    except KeyError:
        return False


def resolves_strict(fields: Sequence[Field], c: exp.Column) -> bool:
    """Like resolve_field, but a qualified column needs a field with its qualifier."""
    name, q = c.name, (c.table or None)
    hits = [f for f in fields if f.name == name and (q is None or f.qualifier == q)]
    return len(hits) == 1


def all_resolve(fields: Sequence[Field], e: exp.Expr) -> bool:
    return all(resolves_strict(fields, c) for c in columns_outside_queries(e))


def defined_aliases(q: exp.Expr) -> set[str]:
    """Relation names/aliases introduced anywhere inside ``q`` (after qualify every
    FROM item carries an alias)."""
    out = set()
    for ta in q.find_all(exp.TableAlias):
        if ta.name:
            out.add(ta.name)
    for t in q.find_all(exp.Table):
        out.add(t.alias_or_name)
    for c in q.find_all(exp.CTE):
        out.add(c.alias_or_name)
    return out


def outer_columns(q: exp.Expr) -> list[exp.Column]:
    """Columns inside ``q`` that refer to a relation defined outside it (correlation).
    SQL resolves a qualifier to the innermost relation with that name, so a qualifier
    defined inside ``q`` is never an outer reference."""
    inner = defined_aliases(q)
    return [c for c in q.find_all(exp.Column) if c.table and c.table not in inner]


def type_at(node: Node, i: int) -> str | None:
    """Spark type of output field ``i`` when it is a base column passed through
    unchanged — by σ, sorts, limits, renames, joins, windows, a bare column of a
    projection, a grouping key of an aggregate, a UNION ALL whose inputs agree (None
    when unknown)."""
    try:
        if isinstance(node, Scan):
            return node.columns[i][1]
        if isinstance(node, (Select, Sort, Limit)):
            return type_at(node.child, i)
        if isinstance(node, Rename):
            f = node.mapping[i][0]
            return type_at(node.child, node.child.fields.index(f))
        if isinstance(node, Join):
            nl = len(node.left.fields)
            return type_at(node.left, i) if i < nl else type_at(node.right, i - nl)
        if isinstance(node, Window) and i < len(node.child.fields):
            return type_at(node.child, i)
        if isinstance(node, (Project, Aggregate)):
            return _bare_item_type(node, i)
        if isinstance(node, UnionAll):
            types = {type_at(c, i) for c in node.inputs}
            return types.pop() if len(types) == 1 else None
    except (ValueError, IndexError, KeyError):
        return None
    return None


def _bare_item_type(node: Project | Aggregate, i: int) -> str | None:
    """The type of a projection's (an aggregate's) item that is a bare input column (a
    grouping key: an aggregate's other columns are not passed through)."""
    e = node.items[i][0]
    while isinstance(e, exp.Paren):
        e = e.this
    if not isinstance(e, exp.Column):
        return None
    j = resolve_field(node.child.fields, e)
    if isinstance(node, Aggregate) and not any(
            isinstance(k, exp.Column) and resolve_field(node.child.fields, k) == j for k in node.keys):
        return None
    return type_at(node.child, j)


def column_type(node: Node, c: exp.Expr) -> str | None:
    if not isinstance(c, exp.Column) or not resolves_strict(node.fields, c):
        return None
    return type_at(node, resolve_field(node.fields, c))
