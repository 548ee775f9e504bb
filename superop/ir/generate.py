"""Plan IR -> Spark SQL, built as sqlglot expressions (never pasted strings).

A node becomes an *open* relation: a FROM item (plus joins), WHERE conjuncts, and one
SQL expression per output field. Selects, deterministic projections and renames stay
open (merged into the enclosing SELECT); aggregates, windows, unions and anything that
would change meaning if merged are closed into a derived table with a fresh alias.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from sqlglot import exp

from .dialect import DIALECT, parse_one
from .functions import is_nondeterministic_expr
from .names import ident, needs_quotes
from .nodes import (
    Aggregate,
    Field,
    GroupingAggregate,
    Join,
    Limit,
    Node,
    Opaque,
    Project,
    Rename,
    Scan,
    Select,
    Sort,
    UnionAll,
    Window,
    parents,
    resolve_field,
    walk,
)


def col(name: str, table: Optional[str] = None) -> exp.Column:
    return exp.Column(this=ident(name), table=ident(table) if table else None)


def translate_columns(e: exp.Expr, fields: Sequence[Field], cols: Sequence[exp.Expr]) -> exp.Expr:
    """A copy of ``e`` whose column references (outside nested queries), resolved against
    ``fields``, are replaced by the matching expression of ``cols`` (parenthesized when
    needed). The substitution every stage uses to move an expression across a node."""
    e = e.copy()
    if isinstance(e, exp.Column):
        return cols[resolve_field(tuple(fields), e)].copy()
    targets = []
    stack = list(e.iter_expressions())
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Column):
            targets.append(n)
        elif not isinstance(n, exp.Query):
            stack.extend(n.iter_expressions())
    for c in targets:
        repl = cols[resolve_field(tuple(fields), c)].copy()
        if not isinstance(repl, (exp.Column, exp.Literal, exp.Paren, exp.Func, exp.Null,
                                 exp.Boolean, exp.Cast)):
            repl = exp.Paren(this=repl)
        c.replace(repl)
    return e


@dataclass
class _Rel:
    source: exp.Expr                   # Table/Subquery with alias
    joins: list[exp.Expr] = field(default_factory=list)
    where: list[exp.Expr] = field(default_factory=list)
    cols: list[exp.Expr] = field(default_factory=list)  # SQL expression per field
    fields: tuple[Field, ...] = ()
    order: Optional[list[exp.Expr]] = None
    limit: Optional[tuple[int, int]] = None

    @property
    def plain(self) -> bool:
        """Only a FROM item: can be a join's right side without changing meaning."""
        return not self.joins and not self.where and self.order is None and self.limit is None


class _Gen:
    def __init__(self, cte_nodes: frozenset[int] = frozenset()) -> None:
        self.counter = itertools.count(1)
        self.used: set[str] = set()
        # Shared sub-plans that must be evaluated once (nondeterministic): emitted as
        # CTEs (Spark does not inline a nondeterministic CTE referenced twice).
        self.cte_nodes = cte_nodes
        self.ctes: list[exp.CTE] = []
        self.cte_of: dict[int, tuple[str, list[str]]] = {}

    def alias(self, hint: Optional[str]) -> str:
        base = (hint or "").lower()
        if base and not needs_quotes(base) and base not in self.used:
            self.used.add(base)
            return base
        while True:
            a = f"_s{next(self.counter)}"
            if a not in self.used:
                self.used.add(a)
                return a

    # -- closing -------------------------------------------------------------
    def select_of(self, rel: _Rel, names: Sequence[str],
                  extra: Optional[dict[str, exp.Expr]] = None) -> exp.Select:
        sel = exp.Select(expressions=[self._aliased(c, n) for c, n in zip(rel.cols, names)])
        sel.set("from_", exp.From(this=rel.source))
        if rel.joins:
            sel.set("joins", list(rel.joins))
        if rel.where:
            w = rel.where[0]
            for p in rel.where[1:]:
                w = exp.and_(w, p, copy=False)
            sel.set("where", exp.Where(this=w))
        if rel.order is not None:
            sel.set("order", exp.Order(expressions=list(rel.order)))
        if rel.limit is not None:
            n, off = rel.limit
            sel.set("limit", exp.Limit(expression=exp.Literal.number(n)))
            if off:
                sel.set("offset", exp.Offset(expression=exp.Literal.number(off)))
        for k, v in (extra or {}).items():
            sel.set(k, v)
        return sel

    @staticmethod
    def _aliased(c: exp.Expr, name: str) -> exp.Expr:
        if isinstance(c, exp.Column) and c.name == name:
            return c
        return exp.Alias(this=c, alias=ident(name))

    @staticmethod
    def unique_names(fields: Sequence[Field]) -> list[str]:
        seen: dict[str, int] = {}
        out: list[str] = []
        for f in fields:
            n = f.name
            k = n.lower()
            if k in seen:
                seen[k] += 1
                n = f"{n}_{seen[k]}"
                while n.lower() in seen:
                    n = n + "_"
            seen.setdefault(n.lower(), 0)
            out.append(n)
        return out

    def wrap(self, query: exp.Expr, fields: tuple[Field, ...], names: list[str],
             hint: Optional[str] = None) -> _Rel:
        a = self.alias(hint)
        src = exp.Subquery(this=query, alias=exp.TableAlias(this=ident(a)))
        return _Rel(src, cols=[col(n, a) for n in names], fields=fields)

    def close(self, rel: _Rel, hint: Optional[str] = None) -> _Rel:
        names = self.unique_names(rel.fields)
        return self.wrap(self.select_of(rel, names), rel.fields, names, hint)

    # -- nodes -----------------------------------------------------------------
    def gen(self, node: Node, hint: Optional[str] = None) -> _Rel:
        if id(node) in self.cte_nodes:
            return self._cte_ref(node, hint)
        return self._dispatch(node)(node, hint)

    def _dispatch(self, node: Node) -> Callable[[Any, Optional[str]], _Rel]:
        m: Callable[[Any, Optional[str]], _Rel] = getattr(self, "g_" + type(node).__name__)
        return m

    def _cte_ref(self, node: Node, hint: Optional[str]) -> _Rel:
        if id(node) not in self.cte_of:
            rel = self._dispatch(node)(node, None)
            names = self.unique_names(rel.fields)
            name = self.alias(f"_cte{len(self.ctes) + 1}")
            self.ctes.append(exp.CTE(this=self.select_of(rel, names),
                                     alias=exp.TableAlias(this=ident(name))))
            self.cte_of[id(node)] = (name, names)
        name, names = self.cte_of[id(node)]
        a = self.alias(hint)
        src = exp.Table(this=ident(name), alias=exp.TableAlias(this=ident(a)))
        return _Rel(src, cols=[col(n, a) for n in names], fields=node.fields)

    def g_Scan(self, n: Scan, hint: Optional[str]) -> _Rel:
        a = self.alias(hint or n.qualifier)
        src = n.name.to_table(alias=a)
        return _Rel(src, cols=[col(c, a) for c, _ in n.columns], fields=n.fields)

    def g_Opaque(self, n: Opaque, hint: Optional[str]) -> _Rel:
        q = parse_one(n.sql)
        names = list(n.output)
        return self.wrap(q, n.fields, names, hint) if len(set(names)) == len(names) else \
            self._wrap_positional(q, n)

    def _wrap_positional(self, q: exp.Expr, n: Opaque) -> _Rel:
        names = self.unique_names(n.fields)
        a = self.alias(None)
        alias = exp.TableAlias(this=ident(a), columns=[ident(x) for x in names])
        return _Rel(exp.Subquery(this=q, alias=alias), cols=[col(x, a) for x in names], fields=n.fields)

    def g_Rename(self, n: Rename, hint: Optional[str]) -> _Rel:
        rel = self.gen(n.child, n.qualifier or hint)
        fields = n.child.fields
        cols = [rel.cols[resolve_field(fields, f.column())] for f, _ in n.mapping]
        rel.cols, rel.fields = cols, n.fields
        return rel

    def g_Select(self, n: Select, hint: Optional[str]) -> _Rel:
        rel = self.gen(n.child, hint)
        if rel.order is not None or rel.limit is not None:
            rel = self.close(rel)
        rel.where.append(translate_columns(n.predicate, rel.fields, rel.cols))
        return rel

    def g_Project(self, n: Project, hint: Optional[str]) -> _Rel:
        rel = self.gen(n.child, hint)
        # ORDER BY / LIMIT do not depend on the select list: a mergeable projection
        # stays in the same SELECT (closing would lose the order).
        mergeable = all(_mergeable(e) for e, _ in n.items)
        if not mergeable:
            rel = self.close(rel)
        rel.cols = [translate_columns(e, rel.fields, rel.cols) for e, _ in n.items]
        rel.fields = n.fields
        if not mergeable:
            # Evaluate once: a parent that references a column twice must not
            # duplicate a nondeterministic expression (or a sub-query).
            rel = self.close(rel, hint)
        return rel

    def g_Aggregate(self, n: Aggregate, hint: Optional[str]) -> _Rel:
        return self._grouped(n, lambda tr: exp.Group(expressions=[tr(k) for k in n.keys]) if n.keys else None,
                             hint)

    def g_GroupingAggregate(self, n: GroupingAggregate, hint: Optional[str]) -> _Rel:
        return self._grouped(n, lambda tr: tr(n.group), hint)

    def _grouped(self, n: Aggregate | GroupingAggregate,
                 group: Callable[[Callable[[exp.Expr], exp.Expr]], Optional[exp.Expr]],
                 hint: Optional[str]) -> _Rel:
        """One SELECT ... GROUP BY over the child; ``group(tr)`` builds the clause with
        ``tr`` moving an expression onto the child's columns (None: a global aggregate)."""
        rel = self.gen(n.child)
        if rel.order is not None or rel.limit is not None:
            rel = self.close(rel)

        def tr(e: exp.Expr) -> exp.Expr:
            return translate_columns(e, rel.fields, rel.cols)

        items = _Rel(rel.source, rel.joins, rel.where, [tr(e) for e, _ in n.items], n.fields)
        names = self.unique_names(n.fields)
        clause = group(tr)
        extra: dict[str, exp.Expr] = {"group": clause} if clause is not None else {}
        return self.wrap(self.select_of(items, names, extra), n.fields, names, hint)

    def g_Window(self, n: Window, hint: Optional[str]) -> _Rel:
        rel = self.gen(n.child)
        if rel.order is not None or rel.limit is not None:
            rel = self.close(rel)
        cols = list(rel.cols) + [translate_columns(e, rel.fields, rel.cols) for e, _ in n.items]
        out = _Rel(rel.source, rel.joins, rel.where, cols, n.fields)
        return self.close(out, hint)

    def g_Sort(self, n: Sort, hint: Optional[str]) -> _Rel:
        rel = self.gen(n.child, hint)
        if rel.order is not None or rel.limit is not None:
            rel = self.close(rel)
        rel.order = [translate_columns(o, rel.fields, rel.cols) for o in n.order]
        return rel

    def g_Limit(self, n: Limit, hint: Optional[str]) -> _Rel:
        rel = self.gen(n.child, hint)
        if rel.limit is not None:
            rel = self.close(rel)
        rel.limit = (n.limit, n.offset)
        return rel

    def g_UnionAll(self, n: UnionAll, hint: Optional[str]) -> _Rel:
        names = self.unique_names(n.fields)
        q: Optional[exp.Expr] = None
        for child in n.inputs:
            rel = self.gen(child)
            s = self.select_of(rel, names if q is None else self.unique_names(rel.fields))
            q = s if q is None else exp.Union(this=q, expression=s, distinct=False)
        assert q is not None, "a union has inputs"
        return self.wrap(q, n.fields, names, hint)

    def g_Join(self, n: Join, hint: Optional[str]) -> _Rel:
        left = self.gen(n.left)
        if left.order is not None or left.limit is not None:
            left = self.close(left)
        right = self.gen(n.right)
        if right.joins or right.order is not None or right.limit is not None:
            right = self.close(right)
        on: list[exp.Expr] = []
        where = list(left.where)
        if n.kind in ("full",) and where:
            left = self.close(left)
            where = []
        if right.where:
            if n.kind in ("inner", "cross"):
                where += right.where
            elif n.kind in ("left", "semi", "anti"):
                on += right.where          # a filter on the optional side moves into ON
            else:                           # right / full: the right side is preserved
                right = self.close(right)
        if n.kind == "right" and where:
            left = self.close(left)
            where = []
        lf, rf = n.left.fields, n.right.fields
        for a, b in n.equi:
            on.append(exp.EQ(this=translate_columns(a, lf, left.cols), expression=translate_columns(b, rf, right.cols)))
        if n.residual is not None:
            on.append(translate_columns(n.residual, lf + rf, left.cols + right.cols))
        cond: Optional[exp.Expr] = None
        for p in on:
            cond = p if cond is None else exp.and_(cond, p, copy=False)
        if n.kind == "cross" and cond is None:
            j = exp.Join(this=right.source, kind="CROSS")
        else:
            side, kind = _JOIN_SQL[n.kind]
            j = exp.Join(this=right.source, on=cond if cond is not None else exp.true())
            if side:
                j.set("side", side)
            if kind:
                j.set("kind", kind)
        cols = left.cols + ([] if n.kind in ("semi", "anti") else right.cols)
        return _Rel(left.source, left.joins + [j], where, cols, n.fields)


_JOIN_SQL: dict[str, tuple[Optional[str], Optional[str]]] = {
    "inner": (None, None), "cross": (None, None), "left": ("LEFT", None), "right": ("RIGHT", None),
    "full": ("FULL", None), "semi": ("LEFT", "SEMI"), "anti": ("LEFT", "ANTI")}


def _mergeable(e: exp.Expr) -> bool:
    """Can a projection item be inlined into the enclosing SELECT? Not if it is
    nondeterministic, aggregates, is a window or holds a subquery."""
    if is_nondeterministic_expr(e):
        return False
    return not any(isinstance(n, (exp.AggFunc, exp.Window, exp.Query)) for n in e.walk())


def to_ast(plan: Node, names: Optional[Sequence[str]] = None) -> exp.Query:
    """The plan as a sqlglot query. ``names`` overrides the output column names
    (e.g. Spark's own names for unaliased expressions)."""
    if isinstance(plan, Opaque) and names is None:
        # A query that is opaque as a whole is emitted exactly as carried (its
        # output may even be unknown, e.g. SELECT * over a table function).
        whole = parse_one(plan.sql)
        if not isinstance(whole, exp.Query):
            raise ValueError("an opaque plan must carry a query")
        return whole
    ps = parents(plan)
    # a shared sub-plan is written once, as a CTE: a nondeterministic one must be evaluated
    # once, and a shared one stays one node when the SQL is lowered again (Spark inlines a
    # deterministic CTE: the plan it runs is the same). A shared table is just read twice.
    once = frozenset(id(n) for n in walk(plan)
                     if len(ps.get(id(n), ())) >= 2 and not isinstance(n, Scan))
    g = _Gen(once)
    rel = g.gen(plan)
    out = list(names) if names is not None else [f.name for f in plan.fields]
    if len(out) != len(rel.cols):
        raise ValueError("names do not match the plan's width")
    sel = g.select_of(rel, out)
    if g.ctes:
        sel.set("with_" if "with_" in type(sel).arg_types else "with", exp.With(expressions=g.ctes))
    return sel


def to_sql(plan: Node, names: Optional[Sequence[str]] = None, pretty: bool = False) -> str:
    text: str = _one_cte_per_definition(to_ast(plan, names)).sql(dialect=DIALECT, pretty=pretty)
    return text


def _one_cte_per_definition(ast: exp.Query) -> exp.Query:
    """Spark SQL generation moves nested WITHs to the top: two opaque sub-queries carrying
    the same CTE (same name, same body) would define it twice (DUPLICATED_CTE_NAMES).
    Keep the first definition of each."""
    seen: set[tuple[str, str]] = set()
    for w in list(ast.find_all(exp.With)):
        for cte in list(w.expressions):
            key = (cte.alias, cte.this.sql(dialect=DIALECT))
            if key in seen:
                cte.pop()
            seen.add(key)
        if not w.expressions:
            w.pop()
    return ast
