"""Sub-queries: uncorrelated ones stay expressions (except ``x IN (SELECT y ...)`` over a
CTE or a join, a semi join); correlated ones become joins only where the rewrite is exact
([NOT] EXISTS / IN -> semi/anti join, a scalar aggregate that is NULL over an empty group
-> LEFT join on the correlation keys)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sqlglot import exp

from ..nodes import Aggregate, Join, Node, Opaque, Rename, Select, walk
from .base import Unsupported
from .from_items import FromLowering
from .exprs import (CMP, and_all, conjoin, conjuncts, has_agg, has_query, is_within, nondeterministic,
                    null_on_empty, outermost_queries, replace_outside_queries)
from .scope import all_resolve, column_type, defined_aliases, outer_columns

Items = list[tuple[exp.Expr, str]]
# operators a scalar sub-query's value may pass through on its way to a comparison
_VALUE_OPS = (exp.Paren, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Neg, exp.Cast)


@dataclass(frozen=True)
class SemiForm:
    """A decorrelatable ``[NOT] EXISTS (SELECT ... WHERE ...)`` / ``x IN (SELECT y ...)``."""
    kind: str                      # "semi" | "anti"
    select: exp.Select
    lhs: Optional[exp.Expr]        # the IN operand, None for EXISTS


@dataclass(frozen=True)
class ScalarForm:
    """A correlated scalar aggregate sub-query: ``pairs`` = (outer, inner) correlation
    columns, ``local`` the conjuncts of its WHERE over the inner side only."""
    sub: exp.Subquery
    select: exp.Select
    pairs: list[tuple[exp.Column, exp.Column]]
    local: list[exp.Expr]


class SubqueryLowering(FromLowering):
    def _check_subqueries(self, e: exp.Expr | None, what: str) -> None:
        """Uncorrelated subquery expressions are kept (made self-contained);
        correlated ones cannot be modeled here (see :meth:`_where` for the
        decorrelated forms)."""
        if e is None:
            return
        for sub in outermost_queries(e):
            if outer_columns(sub):
                raise Unsupported(f"correlated subquery in {what}")
            self._attach_ctes(sub)

    def _fresh(self) -> str:
        self._n_fresh: int = getattr(self, "_n_fresh", 0) + 1
        return f"_sq{self._n_fresh}"

    def _where(self, node: Node, pred: exp.Expr, ctes: dict[str, Node]) -> Node:
        """Lower a WHERE clause over ``node``.

        * conjuncts relating both inputs of an inner/cross join of the FROM clause
          become that join's condition (what ``FROM a, b WHERE a.x = b.y`` means);
        * top-level ``[NOT] EXISTS`` and ``IN`` with a correlated simple sub-query
          become semi/anti joins (exactly their semantics in a WHERE conjunct);
        * ``expr <op> (correlated scalar aggregate)`` becomes a LEFT join with the
          aggregate grouped by the correlation keys (only when the aggregate is NULL
          over an empty group, so an unmatched row sees NULL either way);
        * a top-level uncorrelated ``x IN (SELECT y FROM ...)`` whose sub-query reads a CTE
          or a join becomes a semi join on ``x = y`` (:meth:`_in_join`);
        * other uncorrelated sub-queries stay expressions; other correlated ones -> Opaque.
        """
        plain: list[exp.Expr] = []
        semis: list[exp.Expr] = []
        scalars: list[exp.Expr] = []
        ins: list[tuple[exp.Expr, Node]] = []
        for c in conjuncts(pred):
            subs = outermost_queries(c) if not isinstance(c, exp.Query) else [c]
            sub_node = self._in_subquery(c, ctes) if not any(outer_columns(q) for q in subs) else None
            if sub_node is not None:
                ins.append((c, sub_node))
            elif not any(outer_columns(q) for q in subs):
                self._check_subqueries(c, "WHERE")
                plain.append(c)
            elif self._semi_form(c) is not None:
                semis.append(c)
            elif self._scalar_form(c) is not None:
                scalars.append(c)
            else:
                raise Unsupported("correlated subquery in WHERE")
        node, rest = self._push_join_preds(node, plain)
        if rest:
            node = Select(node, conjoin([r.copy() for r in rest]))
        for c, sub_node in ins:
            node = self._in_join(node, c, sub_node)
        for c in semis:
            node = self._semi_join(node, c, ctes)
        if scalars:
            preds = []
            for c in scalars:
                node, p = self._scalar_join(node, c, ctes)
                preds.append(p)
            node = Select(node, conjoin(preds))
        return node

    @staticmethod
    def _semi_form(c: exp.Expr) -> Optional[SemiForm]:
        """The parts of a decorrelatable [NOT] EXISTS / IN conjunct, else None."""
        neg = False
        e = c
        if isinstance(e, exp.Not):
            neg, e = True, e.this
            while isinstance(e, exp.Paren):
                e = e.this
        lhs: Optional[exp.Expr] = None
        if isinstance(e, exp.Exists):
            sub = e.this
        elif isinstance(e, exp.In) and e.args.get("query") is not None and not neg:
            # NOT IN is not an anti join when NULLs occur: kept out on purpose.
            sub, lhs = e.args["query"], e.this
            if has_query(lhs):
                return None
        else:
            return None
        while isinstance(sub, exp.Subquery):
            sub = sub.this
        if not isinstance(sub, exp.Select):
            return None
        for k in ("group", "having", "limit", "offset", "qualify", "laterals", "with_", "with",
                  "windows", "distribute", "cluster", "sort"):
            if sub.args.get(k):
                return None
        if any(has_agg(x) or x.find(exp.Window) is not None for x in sub.expressions):
            return None      # EXISTS (SELECT COUNT(*) ...) is always true, etc.
        where = sub.args.get("where")
        if where is None or outermost_queries(where.this):
            return None
        outer = outer_columns(sub)
        if not outer or any(not is_within(o, where) for o in outer):
            return None      # outer references only in the sub-query's WHERE
        if lhs is not None:
            if len(sub.expressions) != 1 or any(is_within(o, sub.expressions[0]) for o in outer):
                return None
        return SemiForm("anti" if neg else "semi", sub, lhs)

    def _in_subquery(self, c: exp.Expr, ctes: dict[str, Node]) -> Optional[Node]:
        """The lowered sub-query of an uncorrelated ``x IN (SELECT y FROM ...)`` conjunct that
        becomes a semi join, else None (the conjunct stays an expression).

        In a WHERE conjunct ``x IN (SELECT y ...)`` keeps a row exactly when some ``y``
        equals ``x`` (FALSE and NULL are both filtered): a semi join on ``x = y``, which is
        also how Spark plans it. Done only when the sub-query reads a CTE or a join (TPC-DS
        q95: the pairs of a self-join CTE; q14, q23: shared CTEs) — there the semi join
        exposes a sub-plan a family can rewrite under the semi join's set semantics; an IN
        list over one base table (``i_item_id IN (SELECT i_item_id FROM item WHERE ..)``)
        stays an expression, as every family's matching has always seen it. Only a
        sub-query that lowers fully (no Opaque part, also none from a CTE it reads: q14's
        ``cross_items`` holds an INTERSECT) becomes a node (else nothing changes)."""
        if not isinstance(c, exp.In) or c.args.get("query") is None or has_query(c.this):
            return None
        sub = c.args["query"]
        while isinstance(sub, exp.Subquery):
            sub = sub.this
        if not isinstance(sub, exp.Select) or len(sub.expressions) != 1 \
                or isinstance(sub.expressions[0], exp.Star):
            return None
        frm = sub.args.get("from_") or sub.args.get("from")
        if frm is None:
            return None
        tables = [frm.this] + [j.this for j in sub.args.get("joins") or []]
        reads_cte = any(isinstance(t, exp.Table) and len(t.parts) == 1 and self.norm(t.name) in ctes
                        for t in tables)
        if not (reads_cte or len(tables) > 1):
            return None
        n_reasons = len(self.reasons)
        node = self.query(sub, ctes)
        if len(self.reasons) != n_reasons or len(node.fields) != 1 \
                or any(isinstance(n, Opaque) for n in walk(node)):
            del self.reasons[n_reasons:]
            return None
        return node

    def _in_join(self, node: Node, c: exp.Expr, sub: Node) -> Node:
        """``node ⋉ ρ_fresh(sub) ON x = y`` for the conjunct ``x IN (SELECT y ...)``."""
        assert isinstance(c, exp.In)
        fresh = self._fresh()
        right = Rename(sub, tuple((f, f.name) for f in sub.fields), fresh)
        lhs = c.this
        if not all_resolve(node.fields, lhs):
            raise Unsupported("IN sub-query operand does not resolve")
        (f,) = right.fields
        return Join(node, right, "semi", ((lhs.copy(), exp.column(f.name, fresh)),), None)

    def _semi_join(self, node: Node, c: exp.Expr, ctes: dict[str, Node]) -> Node:
        form = self._semi_form(c)
        if form is None:  # pragma: no cover - _where only passes recognized forms
            raise Unsupported("correlated subquery in WHERE")
        kind, sub, lhs = form.kind, form.select, form.lhs
        right = self._from(sub, ctes)
        conjs = [x.copy() for x in conjuncts(sub.args["where"].this)]
        if lhs is not None:
            item = sub.expressions[0]
            item = item.this if isinstance(item, exp.Alias) else item
            conjs = [exp.EQ(this=lhs.copy(), expression=item.copy())] + conjs
        lq = {f.qualifier for f in node.fields}
        rq = {f.qualifier for f in right.fields}
        if lq & rq:
            # The sub-query reuses an outer alias: re-qualify its side (possible when it
            # has one qualifier and unique names, the common `FROM t` case).
            names = [f.name for f in right.fields]
            if len(rq) != 1 or len(set(names)) != len(names):
                raise Unsupported("correlated sub-query reuses an outer alias")
            (old_q,) = rq
            fresh = self._fresh()
            right = Rename(right, tuple((f, f.name) for f in right.fields), fresh)
            inner_q = defined_aliases(sub)

            def requal(n: exp.Expr) -> Optional[exp.Expr]:
                if isinstance(n, exp.Column) and n.table and n.table == old_q \
                        and old_q in inner_q:
                    return exp.column(n.name, fresh)
                return None
            conjs = [replace_outside_queries(x, requal) for x in conjs]
        both = node.fields + right.fields
        if not all(all_resolve(both, x) for x in conjs):
            raise Unsupported("correlated sub-query columns do not resolve")
        equi, residual = self._split_on(conjs, node.fields, right.fields)
        return Join(node, right, kind, tuple(equi), and_all(residual))

    def _scalar_form(self, c: exp.Expr) -> Optional[ScalarForm]:
        """The parts of ``x <op> (SELECT agg ... WHERE inner = outer ...)``, else None."""
        sub = _compared_subquery(c)
        # used as a value through arithmetic only (``1.2 * (SELECT avg ...)``): the LEFT
        # join's NULL for a row without a group is the sub-query's NULL over no row
        return self._scalar_sub_form(sub) if sub is not None else None

    def _global_comparisons(self, node: Node, preds: list[exp.Expr], ctes: dict[str, Node]
                            ) -> tuple[Node, list[exp.Expr]]:
        """``node`` cross-joined with the one-row aggregate of every conjunct ``x <op>
        (SELECT agg(..) FROM .. [WHERE ..])`` of ``preds`` (an uncorrelated global aggregate,
        :meth:`_global_form`, used as a value through arithmetic only), and ``preds`` reading
        its column instead of the sub-query (TPC-DS q24's HAVING).

        Exact: a global aggregate has exactly ONE row, over any input (no "more than one
        row" error, never empty), so ``node × ρ(γ_∅(..))`` keeps every row of ``node`` once,
        with the sub-query's value — NULL where the sub-query is NULL — beside it; a cross
        join (not LEFT ON TRUE: with one row on the right both keep every left row once; the
        product is the shape the families read). Only a sub-query that lowers fully (no
        Opaque part, also none from a CTE it reads) moves; anything else stays an
        expression."""
        out: list[exp.Expr] = []
        for c in preds:
            sub = _compared_subquery(c)
            sel = self._global_form(sub) if sub is not None else None
            agg = self._global_aggregate(sel, ctes) if sel is not None else None
            if agg is None:
                out.append(c)
                continue
            fresh = self._fresh()
            node = Join(node, Rename(agg, tuple((f, f.name) for f in agg.fields), fresh), "cross", (), None)
            c = c.copy()
            (q,) = outermost_queries(c)
            q.replace(exp.column(agg.fields[0].name, fresh))
            out.append(c)
        return node, out

    def _global_aggregate(self, sel: exp.Select, ctes: dict[str, Node]) -> Optional[Aggregate]:
        """``γ_∅`` of a global aggregate sub-query's one item over its FROM and WHERE, or
        None when some part of it does not lower (the sub-query then stays as written)."""
        n_reasons = len(self.reasons)
        try:
            where = sel.args.get("where")
            inner = self._filtered_from(sel, conjuncts(where.this) if where is not None else [], ctes)
        except Unsupported:
            inner = None
        item = sel.expressions[0]
        item = item.this if isinstance(item, exp.Alias) else item
        if inner is None or len(self.reasons) != n_reasons or any(isinstance(n, Opaque) for n in walk(inner)) \
                or not all_resolve(inner.fields, item):
            del self.reasons[n_reasons:]
            return None
        return Aggregate(inner, (), ((item.copy(), "_v"),))

    def _scalar_sub_form(self, sub: exp.Expr) -> Optional[ScalarForm]:
        """The parts of a correlated scalar aggregate sub-query that can become a
        LEFT join (see :meth:`_where`), or None."""
        if not isinstance(sub, exp.Subquery):
            return None
        sel = sub.this
        if not isinstance(sel, exp.Select) or len(sel.expressions) != 1:
            return None
        for k in ("group", "having", "limit", "offset", "qualify", "laterals", "with_", "with",
                  "distinct", "windows", "order"):
            if sel.args.get(k):
                return None
        item = sel.expressions[0]
        item = item.this if isinstance(item, exp.Alias) else item
        inner_q = defined_aliases(sel)

        def outer_refs(e: exp.Expr) -> list[exp.Column]:
            return [x for x in e.find_all(exp.Column) if x.table and x.table not in inner_q]
        if not null_on_empty(item) or outer_refs(item) or item.find(exp.Window):
            return None
        where = sel.args.get("where")
        if where is None or outermost_queries(where.this):
            return None
        pairs: list[tuple[exp.Column, exp.Column]] = []
        local: list[exp.Expr] = []
        for w in conjuncts(where.this):
            if not outer_refs(w):
                local.append(w)
                continue
            if not isinstance(w, exp.EQ):
                return None
            a, b = w.this, w.expression
            if not (isinstance(a, exp.Column) and isinstance(b, exp.Column)):
                return None
            a_in = a.table in inner_q
            b_in = b.table in inner_q
            if a_in == b_in:
                return None
            pairs.append((b, a) if a_in else (a, b))    # (outer, inner)
        frm = sel.args.get("from_") or sel.args.get("from")
        if not pairs or frm is None:
            return None
        return ScalarForm(sub, sel, pairs, local)

    def _scalar_join(self, node: Node, c: exp.Expr, ctes: dict[str, Node]) -> tuple[Node, exp.Expr]:
        form = self._scalar_form(c)
        if form is None:  # pragma: no cover - _where only passes recognized forms
            raise Unsupported("correlated subquery in WHERE")
        node, val = self._scalar_join_sub(node, form, ctes)
        pred = c.copy()
        (sub,) = outermost_queries(pred)
        sub.replace(val)
        return node, pred

    def _scalar_join_sub(self, node: Node, form: ScalarForm, ctes: dict[str, Node]
                         ) -> tuple[Node, exp.Column]:
        """LEFT join ``node`` with the sub-query's aggregate grouped by its correlation
        keys; returns the join and the column holding the sub-query's value."""
        sel, pairs = form.select, form.pairs
        inner = self._filtered_from(sel, form.local, ctes)
        keys: list[exp.Expr] = []
        for outer_c, inner_c in pairs:
            # Grouping equality must coincide with `=`: same types on both sides.
            t_out, t_in = column_type(node, outer_c), column_type(inner, inner_c)
            if t_out is None or t_out != t_in:
                raise Unsupported("correlated scalar sub-query on keys of different types")
            keys.append(inner_c.copy())
        item = sel.expressions[0]
        item = item.this if isinstance(item, exp.Alias) else item
        if not all_resolve(inner.fields, item) or not all(all_resolve(inner.fields, k) for k in keys):
            raise Unsupported("correlated scalar sub-query columns do not resolve")
        names = [f"_k{i}" for i in range(len(keys))] + ["_v"]
        agg = Aggregate(inner, tuple(keys), tuple(zip([k.copy() for k in keys] + [item.copy()], names)))
        fresh = self._fresh()
        right = Rename(agg, tuple((f, f.name) for f in agg.fields), fresh)
        equi = tuple((o.copy(), exp.column(f"_k{i}", fresh)) for i, (o, _) in enumerate(pairs))
        if not all(all_resolve(node.fields, o) for o, _ in equi):
            raise Unsupported("correlated scalar sub-query columns do not resolve")
        val = exp.column("_v", fresh)
        return Join(node, right, "left", equi, None), val

    def _filtered_from(self, sel: exp.Select, conjs: list[exp.Expr], ctes: dict[str, Node]) -> Node:
        """A sub-query's FROM with the conjuncts ``conjs`` of its WHERE over it: join
        conditions into its joins, the rest as one σ."""
        inner, rest = self._push_join_preds(self._from(sel, ctes), [x.copy() for x in conjs])
        return Select(inner, conjoin(rest)) if rest else inner

    def _select_list_scalars(self, node: Node, items: Items, ctes: dict[str, Node]
                             ) -> tuple[Node, Items]:
        """Correlated scalar aggregate sub-queries in a (non-aggregating) select list
        become LEFT joins, as in WHERE; two or more uncorrelated global aggregates a
        product (:meth:`_hoist_globals`); anything else is left for _check_subqueries."""
        node, items = self._hoist_globals(node, items, ctes)
        out: Items = []
        for e, name in items:
            subs: list[exp.Expr] = [q for q in outermost_queries(e) if outer_columns(q)]
            if isinstance(e, exp.Subquery) and outer_columns(e):
                subs = [e]
            forms = [self._scalar_sub_form(q) for q in subs]
            if not subs or any(f is None for f in forms):
                out.append((e, name))
                continue
            # ``e`` is already a private copy (strip_alias): replace in place.
            for q, f in zip(subs, forms):
                assert f is not None
                node, val = self._scalar_join_sub(node, f, ctes)
                if q is e:
                    e = val
                else:
                    q.replace(val)
            out.append((e, name))
        return node, out

    @staticmethod
    def _global_form(sub: exp.Expr) -> Optional[exp.Select]:
        """The SELECT of an uncorrelated scalar sub-query that is one global aggregate
        (``(SELECT agg(...) FROM ... [WHERE ...])``: exactly one row, whatever its input
        holds), else None."""
        if not isinstance(sub, exp.Subquery) or outer_columns(sub):
            return None
        sel = sub.this
        if not isinstance(sel, exp.Select) or len(sel.expressions) != 1:
            return None
        for k in ("group", "having", "limit", "offset", "qualify", "laterals", "with_", "with",
                  "distinct", "windows", "order", "joins"):
            if sel.args.get(k):
                return None
        item = sel.expressions[0]
        item = item.this if isinstance(item, exp.Alias) else item
        where = sel.args.get("where")
        if not has_agg(item) or item.find(exp.Window) is not None or has_query(item) \
                or (where is not None and has_query(where.this)):
            return None
        if nondeterministic(sel):     # two samples must stay two (no shared aggregate)
            return None
        return sel if (sel.args.get("from_") or sel.args.get("from")) is not None else None

    def _hoist_globals(self, node: Node, items: Items, ctes: dict[str, Node]
                       ) -> tuple[Node, Items]:
        """Uncorrelated scalar sub-queries that are global aggregates — two or more in one
        select list (TPC-DS q9: fifteen over ``store_sales``, three per filter) — become a
        product of their aggregates joined to the block's rows: a global aggregate has
        exactly ONE row (also over no input), so ``node × (A1 × ... × An)`` keeps every row
        of ``node`` once and each sub-query reads as a column of its aggregate. Sub-queries
        with the same FROM and WHERE share one aggregate (one input, several values). The
        product is the shape the global-aggregate family matches; a block with one such
        sub-query keeps it as an expression."""
        found = [(i, q, sel) for i, (e, _) in enumerate(items)
                 for q in ([e] if isinstance(e, exp.Subquery) else outermost_queries(e))
                 for sel in [self._global_form(q)] if sel is not None]
        if len(found) < 2:
            return node, items
        groups: dict[str, list[int]] = {}          # FROM + WHERE -> indexes into ``found``
        for k, (_, _, sel) in enumerate(found):
            body = sel.copy()
            body.set("expressions", [exp.Star()])
            groups.setdefault(body.sql(), []).append(k)
        values: dict[int, exp.Column] = {}
        aggs: list[Node] = []
        for members in groups.values():
            sel = found[members[0]][2]
            where = sel.args.get("where")
            inner = self._filtered_from(sel, conjuncts(where.this) if where is not None else [], ctes)
            outs: list[tuple[exp.Expr, str]] = []
            for k in members:
                item = found[k][2].expressions[0]
                item = item.this if isinstance(item, exp.Alias) else item
                if not all_resolve(inner.fields, item):
                    return node, items           # left as sub-query expressions
                outs.append((item.copy(), f"_v{k}"))
            agg = Aggregate(inner, (), tuple(outs))
            fresh = self._fresh()
            aggs.append(Rename(agg, tuple((f, f.name) for f in agg.fields), fresh))
            values.update((k, exp.column(f"_v{k}", fresh)) for k in members)
        product = aggs[0]
        for right in aggs[1:]:
            product = Join(product, right, "cross", (), None)
        out = list(items)
        for k, (i, q, _) in enumerate(found):
            if q is out[i][0]:
                out[i] = (values[k], out[i][1])
            else:
                q.replace(values[k])             # the item is a private copy (strip_alias)
        return Join(node, product, "cross", (), None), out


def _compared_subquery(c: exp.Expr) -> Optional[exp.Subquery]:
    """The one sub-query of a comparison ``c`` that reaches it as a value through
    arithmetic only (``x > 1.2 * (SELECT ...)``), else None."""
    if not isinstance(c, CMP):
        return None
    subs = outermost_queries(c)
    if len(subs) != 1 or not isinstance(subs[0], exp.Subquery):
        return None
    p = subs[0].parent
    while p is not c:
        if not isinstance(p, _VALUE_OPS):
            return None
        p = p.parent
    return subs[0]
