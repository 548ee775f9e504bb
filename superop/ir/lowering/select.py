"""One SELECT block: FROM/WHERE (delegated), GROUP BY (ordinals, aliases, ALL), HAVING,
window functions (also over a GROUP BY), DISTINCT, ORDER BY (hidden items) and LIMIT."""
from __future__ import annotations

from typing import Callable, Optional, Sequence

from sqlglot import exp

from ..nodes import (GROUPING_CONSTRUCTS, Aggregate, Field, GroupingAggregate, Node, Project, Rename,
                     Select, Sort, Window, grouping_keys, resolve_field)
from .base import Unsupported
from .exprs import (columns_outside_queries, conjoin, conjuncts, has_agg, has_query, nondeterministic,
                    replace_outside_queries, strip_alias, windows_outside_queries)
from .scope import resolves_strict
from .subqueries import Items, SubqueryLowering


class SelectLowering(SubqueryLowering):
    def _select(self, s: exp.Select, ctes: dict[str, Node]) -> Node:
        if s.args.get("distinct") and s.args["distinct"].args.get("on"):
            raise Unsupported("DISTINCT ON")
        for key in ("qualify", "windows", "cluster", "distribute", "sort", "prewhere", "connect"):
            if s.args.get(key):
                raise Unsupported(f"{key.upper()} clause")
        node = self._from(s, ctes)
        where = s.args.get("where")
        if where is not None:
            node = self._where(node, where.this, ctes)
        items: Items = [strip_alias(e) for e in s.expressions]
        group = s.args.get("group")
        having = s.args.get("having")
        if group is None and having is None and not any(has_agg(e) for e, _ in items):
            node, items = self._select_list_scalars(node, items, ctes)
        for e, _ in items:
            self._check_subqueries(e, "SELECT")
        if having is not None:
            self._check_subqueries(having.this, "HAVING")
        is_agg = group is not None or having is not None or any(has_agg(e) for e, _ in items)
        windows = [w for e, _ in items for w in windows_outside_queries(e)]
        order = s.args.get("order")
        out_names = [n for _, n in items]

        if is_agg:
            sets = grouping_sets_clause(group) if group is not None else None
            if sets is not None:
                return self._grouping_sets(s, node, items, sets, having, order, windows, ctes)
            keys: list[exp.Expr] = []
            if group is not None and group.args.get("all"):
                # GROUP BY ALL: every select item without an aggregate is a key.
                keys = [e.copy() for e, _ in items if not has_agg(e)]
                if any(not list(columns_outside_queries(k)) for k in keys):
                    raise Unsupported("GROUP BY ALL with a constant item")
            for k in (group.expressions if group is not None else []):
                by: exp.Expr = items[int(k.this) - 1][0] if isinstance(k, exp.Literal) and not k.is_string else k
                keys.append(by.copy())
            return self._grouped(s, node, items, keys, having, order, windows,
                                 lambda child, its: Aggregate(child, tuple(keys), its), ctes)

        if windows:
            node, items = self._windows(node, items)
        proj_items = list(items)
        ords = self._order_refs(order, proj_items, None) if order is not None else None
        if (order is not None and len(proj_items) > len(items) and not windows
                and not s.args.get("distinct") and self._order_on_input(order, node)):
            # ORDER BY input columns the select list drops: sort below the projection
            # (a projection keeps the order) instead of carrying hidden columns.
            node = Sort(node, tuple(o.copy() for o in order.expressions))
            node = self._limit(s, node)
            return self._projection(node, list(items))
        node = self._projection(node, proj_items)
        return self._finish(s, node, len(proj_items), ords, out_names)

    def _finish(self, s: exp.Select, node: Node, width: int, ords: Optional[tuple[exp.Ordered, ...]],
                out_names: Sequence[str]) -> Node:
        """DISTINCT, ORDER BY, LIMIT over a block's ``width`` items (the visible ones,
        ``out_names``, then hidden sort columns), and the projection dropping the hidden."""
        if s.args.get("distinct"):
            if width != len(out_names):
                raise Unsupported("DISTINCT with hidden ORDER BY columns")
            node = self._distinct(node)
        if ords is not None:
            node = Sort(node, ords)
        node = self._limit(s, node)
        return self._drop_hidden(node, len(out_names), out_names)

    def _grouped(self, s: exp.Select, node: Node, items: Items, keys: Sequence[exp.Expr],
                 having: Optional[exp.Having], order: Optional[exp.Order], windows: Sequence[exp.Expr],
                 make: Callable[[Node, tuple[tuple[exp.Expr, str], ...]], Node], ctes: dict[str, Node]) -> Node:
        """The rest of an aggregating SELECT block (HAVING, windows, DISTINCT, ORDER BY,
        LIMIT) over the aggregate ``make(child, items)`` grouping by ``keys``. A HAVING
        conjunct comparing with an uncorrelated global aggregate sub-query reads it from
        that aggregate's one row, cross-joined to the groups and projected away after the
        filter (:meth:`_global_comparisons`)."""
        out_names = [n for _, n in items]
        if windows:
            return self._aggregate_window(s, node, items, keys, having, order, make)
        agg_items = list(items)
        having_pred = self._hidden_refs(having.this, agg_items, keys) if having is not None else None
        ords = self._order_refs(order, agg_items, keys) if order is not None else None
        node = make(node, tuple(agg_items))
        if having_pred is not None:
            joined, preds = self._global_comparisons(node, conjuncts(having_pred), ctes)
            if joined is node:
                node = Select(node, having_pred)
            else:
                # the one-row aggregates are read by the filter only
                node = Project(Select(joined, conjoin(preds)), tuple((f.column(), f.name) for f in node.fields))
        return self._finish(s, node, len(agg_items), ords, out_names)

    def _grouping_sets(self, s: exp.Select, node: Node, items: Items, group: exp.Group,
                       having: Optional[exp.Having], order: Optional[exp.Order],
                       windows: Sequence[exp.Expr], ctes: dict[str, Node]) -> Node:
        """GROUP BY ROLLUP / CUBE / GROUPING SETS over the lowered FROM/WHERE: one
        :class:`GroupingAggregate` carrying the clause as written; the rest of the block
        as over any aggregate (``grouping()`` calls are aggregate calls there)."""
        keys = grouping_keys(group)
        for k in keys:
            cols = list(columns_outside_queries(k))
            if not cols or has_query(k) or nondeterministic(k):
                raise Unsupported("GROUPING SETS key that is not a deterministic column expression")
            if not all(resolves_strict(node.fields, c) for c in cols):
                raise Unsupported("GROUPING SETS key that is not an input column")
        return self._grouped(s, node, items, keys, having, order, windows,
                             lambda c, its: GroupingAggregate(c, group, its), ctes)

    @staticmethod
    def _over_outputs(e: exp.Expr, items: Items) -> exp.Expr:
        """An ORDER BY expression over a windowed aggregate's select list (TPC-DS q36:
        ``CASE WHEN lochierarchy = 0 THEN i_category END``): every column is an output
        alias or a select item, whose value Spark sorts by. Anything else (an aggregate,
        a window, a sub-query, an input column the select list does not carry) is
        refused."""
        if has_agg(e) or has_query(e) or e.find(exp.Window) is not None or nondeterministic(e):
            raise Unsupported("ORDER BY over a windowed aggregate not in the select list")

        def fix(n: exp.Expr) -> Optional[exp.Expr]:
            if not isinstance(n, exp.Column):
                return None
            names = [nm for ie, nm in items
                     if (not n.table and nm == n.name) or (isinstance(ie, exp.Column) and ie == n)]
            if len(set(names)) != 1 or sum(nm == names[0] for _, nm in items) != 1:
                raise Unsupported("ORDER BY over a windowed aggregate not in the select list")
            return exp.column(names[0])

        return replace_outside_queries(e, fix)

    @staticmethod
    def _order_on_input(order: exp.Order, node: Node) -> bool:
        """Every ORDER BY item is a deterministic expression over qualified input
        columns (no ordinal, no output alias, no sub-query or aggregate)."""
        for o in order.expressions:
            e = o.this
            cols = list(columns_outside_queries(e))
            if (isinstance(e, exp.Literal) or not cols or has_query(e) or has_agg(e)
                    or e.find(exp.Window) is not None or nondeterministic(e)):
                return False
            if not all(c.table and resolves_strict(node.fields, c) for c in cols):
                return False
        return True

    @staticmethod
    def _windows(node: Node, items: Items) -> tuple[Node, Items]:
        """Window node computing every window call of ``items``; returns it and the
        items with the calls replaced by references to its columns."""
        win_items: Items = []
        new_items: Items = []
        for e, n in items:
            e2 = e.copy()
            for w in list(windows_outside_queries(e2)):
                name = f"_w{len(win_items)}"
                win_items.append((w.copy(), name))
                if w is e2:
                    e2 = exp.column(name)
                else:
                    w.replace(exp.column(name))
            new_items.append((e2, n))
        return Window(node, tuple(win_items)), new_items

    def _aggregate_window(self, s: exp.Select, node: Node, items: Items, keys: Sequence[exp.Expr],
                          having: Optional[exp.Having], order: Optional[exp.Order],
                          make: Callable[[Node, tuple[tuple[exp.Expr, str], ...]], Node]) -> Node:
        """Window functions over a GROUP BY (SQL order: γ, HAVING, windows, SELECT,
        DISTINCT, ORDER BY, LIMIT): the aggregate computes the keys and aggregate
        calls the select list uses, the windows run over its output."""
        agg_items: Items = []

        def ref(sub: exp.Expr) -> exp.Expr:
            for e, n in agg_items:
                if e == sub:
                    return exp.column(n)
            name = f"_h{len(agg_items)}"
            agg_items.append((sub.copy(), name))
            return exp.column(name)

        def fix(n: exp.Expr) -> Optional[exp.Expr]:
            if isinstance(n, exp.Query):
                return n.copy()
            if isinstance(n, exp.AggFunc) and not (isinstance(n.parent, exp.Window)
                                                   and n.arg_key == "this"):
                return ref(n)                       # an aggregate call (not the window's own)
            if not isinstance(n, exp.Literal) and any(k == n for k in keys):
                return ref(n)
            if isinstance(n, exp.Column):
                raise Unsupported("window over an aggregate refers to a non-grouped column")
            return None

        new_items = [(replace_outside_queries(e, fix), name) for e, name in items]
        pred = replace_outside_queries(having.this, fix) if having is not None else None
        if not agg_items:
            raise Unsupported("window over an aggregate without grouped columns")
        node = make(node, tuple(agg_items))
        if pred is not None:
            node = Select(node, pred)
        node, new_items = self._windows(node, new_items)
        node = Project(node, tuple(new_items))
        if s.args.get("distinct"):
            node = self._distinct(node)
        if order is not None:
            ords: list[exp.Ordered] = []
            for o in order.expressions:
                o, e = o.copy(), o.this
                name: Optional[str]
                if isinstance(e, exp.Literal) and not e.is_string:
                    name = items[int(e.this) - 1][1]
                elif isinstance(e, exp.Column) and not e.table and any(n == e.name for _, n in items):
                    name = e.name
                else:
                    name = next((n for ie, n in items if ie == e), None)
                if name is not None:
                    o.set("this", exp.column(name))
                else:
                    o.set("this", self._over_outputs(e, items))
                ords.append(o)
            node = Sort(node, tuple(ords))
        return self._limit(s, node)

    @staticmethod
    def _distinct(node: Node) -> Node:
        keys = tuple(f.column() for f in node.fields)
        return Aggregate(node, keys, tuple((f.column(), f.name) for f in node.fields))

    @staticmethod
    def _projection(node: Node, items: Items) -> Node:
        fields = node.fields
        cols = [e for e, _ in items if isinstance(e, exp.Column)]
        if len(cols) == len(items):
            src: Optional[list[Field]]
            try:
                src = [fields[resolve_field(fields, c)] for c in cols]
            except KeyError:
                src = None
            if src is not None:
                if [f.name for f in src] == [n for _, n in items] and tuple(src) == fields:
                    return node  # identity projection
                if any(f.name != n for f, (_, n) in zip(src, items)):
                    return Rename(node, tuple((f, n) for f, (_, n) in zip(src, items)), None)
        return Project(node, tuple(items))

    @staticmethod
    def _drop_hidden(node: Node, n_visible: int, names: Sequence[str]) -> Node:
        if len(node.fields) == n_visible:
            return node
        visible = node.fields[:n_visible]
        if len({f.name for f in visible}) < n_visible:
            # the projection would refer to ``k`` twice by name: not expressible
            raise Unsupported("duplicate output names with hidden ORDER BY columns")
        return Project(node, tuple((f.column(), f.name) for f in visible))

    def _hidden_refs(self, pred: exp.Expr, items: Items, keys: Sequence[exp.Expr]) -> exp.Expr:
        """Rewrite a HAVING predicate over the aggregate's output: aggregate calls
        and grouping expressions become references to (possibly hidden) items.
        Nested (uncorrelated) sub-queries are left alone."""

        def ref(sub: exp.Expr) -> exp.Expr:
            for e, n in items:
                if e == sub:
                    return exp.column(n)
            name = f"_h{len(items)}"
            items.append((sub.copy(), name))
            return exp.column(name)

        def fix(node: exp.Expr) -> Optional[exp.Expr]:
            if isinstance(node, exp.Query):
                return node.copy()          # keep as is, do not enter
            if isinstance(node, exp.AggFunc) and node.find_ancestor(exp.Window) is None:
                return ref(node)
            for k in keys:
                if k == node and not isinstance(node, exp.Literal):
                    return ref(node)
            if isinstance(node, exp.Column):
                for e, n in items:
                    if e == node:
                        return exp.column(n)
                # An unqualified reference to an output alias stays as is.
                if not node.table and any(n == node.name for _, n in items):
                    return exp.column(node.name)
                raise Unsupported("HAVING refers to a non-grouped column")
            return None

        return replace_outside_queries(pred, fix)

    def _order_refs(self, order: exp.Order, items: Items, keys: Optional[Sequence[exp.Expr]]
                    ) -> tuple[exp.Ordered, ...]:
        out: list[exp.Ordered] = []
        for o in order.expressions:
            o = o.copy()
            e = o.this
            if isinstance(e, exp.Literal) and not e.is_string:
                e = exp.column(items[int(e.this) - 1][1])
            else:
                e = self._order_expr(e, items, keys)
            o.set("this", e)
            out.append(o)
        return tuple(out)

    def _order_expr(self, e: exp.Expr, items: Items, keys: Optional[Sequence[exp.Expr]]) -> exp.Expr:
        if isinstance(e, exp.Column) and not e.table and any(n == e.name for _, n in items):
            return exp.column(e.name)
        for ie, n in items:
            if ie == e and sum(m == n for _, m in items) == 1:
                # an output name shared by two items (``a.k, b.k`` are both ``k``)
                # is ambiguous above the projection: sort by a hidden copy instead
                return exp.column(n)
        if keys is not None and has_agg(e):
            return self._hidden_refs(e, items, keys)
        if keys is not None and not any(k == e for k in keys):
            # expression over group keys / aggregates
            return self._hidden_refs(e, items, keys)
        name = f"_o{len(items)}"
        items.append((e.copy(), name))
        return exp.column(name)


def grouping_sets_clause(group: exp.Group) -> Optional[exp.Group]:
    """``group`` as one clause of plain keys and ROLLUP / CUBE / GROUPING SETS (``WITH
    ROLLUP`` / ``WITH CUBE`` written inline), or None for a plain GROUP BY."""
    if group.args.get("totals"):
        raise Unsupported("GROUP BY WITH TOTALS")
    if group.args.get("grouping_sets"):
        raise Unsupported("GROUPING SETS outside the GROUP BY list")
    with_ = [k for k in ("rollup", "cube") if group.args.get(k)]
    inline = any(isinstance(k, GROUPING_CONSTRUCTS) for k in group.expressions)
    if not with_ and not inline:
        return None
    if group.args.get("all"):
        raise Unsupported("GROUP BY ALL with grouping sets")
    for e in group.find_all(exp.Literal):
        if not e.is_string and e.find_ancestor(exp.Query) is None:
            raise Unsupported("ordinal in GROUPING SETS")
    if not with_:
        return group.copy()
    marks = group.args[with_[0]]
    if len(with_) > 1 or inline or len(marks) != 1 or marks[0].expressions:
        raise Unsupported("GROUP BY ... WITH ROLLUP/CUBE combined with other grouping sets")
    cls = exp.Rollup if with_[0] == "rollup" else exp.Cube
    return exp.Group(expressions=[cls(expressions=[e.copy() for e in group.expressions])])
