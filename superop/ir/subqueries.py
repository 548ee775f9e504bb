"""Uncorrelated, deterministic sub-queries of a plan's expressions as opaque values.

``d_week_seq = (SELECT d_week_seq FROM date_dim WHERE d_year = 2000 AND …)`` (TPC-DS q14b)
is one value per query, whatever row it is compared with; ``ss_item_sk IN (SELECT …)`` is
one fixed set. A super-operator may evaluate such an expression in another place (a
CASE guard of an accumulator, the source's prefilter) and get the same result — but only
if nothing rewrites the sub-query's own columns on the way: a program's expressions have
their columns renamed into namespaces (``row.x``), which would turn the sub-query's
``date_dim.d_week_seq`` into the outer row's column. :func:`opaque_subqueries` therefore
replaces each such sub-query by a :class:`~superop.ir.dialect.SubqueryValue` holding its
text; the rendered SQL is unchanged.

A sub-query is *uncorrelated* when every column inside it is qualified by a table alias
defined inside it (sqlglot's qualification names every column's source), and
*deterministic* when :func:`superop.ir.safety.sql_blocker` finds nothing in its text (no
rand()/uuid(), no LIMIT or TABLESAMPLE). Anything else stays a sub-query, and a match
over it keeps the near-miss ``subquery_on_match``.
"""
from __future__ import annotations

from dataclasses import replace as dc_replace
from typing import Callable, Optional

from sqlglot import exp

from .dialect import DIALECT, SubqueryValue
from .parameters import value_parameter_name
from .subquery_types import NUMBER, TYPE_META, outermost_subqueries
from .lowering.scope import outer_columns
from .nodes import Aggregate, Join, Node, Project, Select, Window, expressions_of, walk
from .safety import sql_blocker

_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)


def uncorrelated(q: exp.Expr) -> bool:
    """Every column of ``q`` is qualified, by an alias defined inside ``q`` (the lowering's
    own test of correlation, :func:`~superop.ir.lowering.scope.outer_columns`)."""
    return all(c.table for c in q.find_all(exp.Column)) and not outer_columns(q)


def _opaque(e: exp.Expr) -> Optional[SubqueryValue]:
    """The value token of a sub-query expression, or None when it must stay as it is."""
    q = e.this if isinstance(e, exp.Subquery) else e
    if not isinstance(q, exp.Query) or not uncorrelated(q):
        return None
    text = e.sql(dialect=DIALECT)
    if not text.startswith("("):
        text = f"({text})"
    if sql_blocker(text, "in a sub-query") is not None:
        return None
    kind = e.meta.get(TYPE_META)
    return SubqueryValue(this=text, kind=kind) if kind else SubqueryValue(this=text)


def opaque_expression(e: exp.Expr) -> exp.Expr:
    """``e`` with each outermost uncorrelated, deterministic sub-query (a scalar one, or the
    set of an ``IN``) replaced by its value token; ``e`` itself when there is none."""
    subs = outermost_subqueries(e)
    if not subs:
        return e
    tokens = [_opaque(s) for s in subs]
    if all(t is None for t in tokens):
        return e
    out = e.copy()
    copies = outermost_subqueries(out)
    for s, tok in zip(copies, tokens):
        if tok is not None:
            s.replace(tok)
    return out


Rewrite = Callable[[exp.Expr], exp.Expr]


def _items(items: tuple[tuple[exp.Expr, str], ...], f: Rewrite) -> tuple[tuple[exp.Expr, str], ...]:
    new = tuple((f(e), name) for e, name in items)
    return items if all(a[0] is b[0] for a, b in zip(items, new)) else new


def _node(n: Node, f: Rewrite) -> Node:
    """``n`` with ``f`` applied to its expressions; ``n`` itself when none changes (a
    canonical plan is canonicalized to itself)."""
    if isinstance(n, Select):
        p = f(n.predicate)
        return n if p is n.predicate else dc_replace(n, predicate=p)
    if isinstance(n, (Project, Window)):
        items = _items(n.items, f)
        return n if items is n.items else dc_replace(n, items=items)
    if isinstance(n, Aggregate):
        keys = tuple(f(k) for k in n.keys)
        items = _items(n.items, f)
        if items is n.items and all(a is b for a, b in zip(keys, n.keys)):
            return n
        return dc_replace(n, keys=keys, items=items)
    if isinstance(n, Join) and n.residual is not None:
        r = f(n.residual)
        return n if r is n.residual else dc_replace(n, residual=r)
    return n


def _map_expressions(plan: Node, f: Rewrite, kind: type) -> Node:
    """``plan`` with ``f`` applied to the expressions of every node holding a ``kind``
    expression; ``plan`` itself when nothing changes. Sharing is kept."""
    memo: dict[int, Node] = {}
    for n in walk(plan):                      # children before parents
        kids = tuple(memo[id(c)] for c in n.children)
        new = n if all(a is b for a, b in zip(kids, n.children)) else n.with_children(kids)
        if any(e.find(kind) is not None for e in expressions_of(new)):
            new = _node(new, f)
        memo[id(n)] = new
    return memo[id(plan)]


def opaque_subqueries(plan: Node) -> Node:
    """``plan`` with every node's uncorrelated, deterministic sub-queries as value tokens
    (:func:`opaque_expression`); ``plan`` itself when it has none. Sharing is kept."""
    return _map_expressions(plan, opaque_expression, exp.Subquery)


class _NotParametric(Exception):
    pass


def has_tokens(plan: Node) -> bool:
    """Does an expression of ``plan`` hold a sub-query value token?"""
    return any(e.find(SubqueryValue) is not None for n in walk(plan) for e in expressions_of(n))


def tokens_as_parameters(plan: Node) -> Optional[Node]:
    """``plan`` with each scalar value token replaced by a NULLable numeric parameter
    (``:q<i>_number``, :func:`superop.ir.parameters.value_parameter_name`; one parameter per
    distinct sub-query text, numbered in plan order): what a certificate about the plan
    quantifies over — every value the sub-query can have, NULL included. None when a token
    is anything else than an operand of a comparison with a numeric value (an ``IN`` set, an
    argument of arithmetic or of a function, a sub-query of another type): its value cannot
    be read as one free number there."""
    names: dict[str, str] = {}

    def param(e: exp.Expr) -> exp.Expr:
        out = e.copy()
        for tok in list(out.find_all(SubqueryValue)):
            if tok.args.get("kind") != NUMBER or not isinstance(tok.parent, _COMPARISONS):
                raise _NotParametric()
            name = names.setdefault(str(tok.this), value_parameter_name(len(names)))
            tok.replace(exp.Placeholder(this=name))
        return out

    try:
        return _map_expressions(plan, param, SubqueryValue)
    except _NotParametric:
        return None
