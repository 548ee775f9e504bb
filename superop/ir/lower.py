"""SQL -> plan IR (sqlglot, Spark dialect).

Parses, qualifies against a schema and lowers SELECT / WHERE / GROUP BY / HAVING,
derived tables, CTEs, every join kind, UNION ALL, DISTINCT, ORDER BY / LIMIT and
window functions. A (sub)query that cannot be lowered becomes an :class:`Opaque`
node carrying its SQL — lowering never raises for valid Spark SQL over known tables.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import build_scope

from ..errors import SqlError
from .nodes import (Aggregate, Field, Join, Limit, Node, Opaque, Project, Rename, Scan, Select,
                    Sort, UnionAll, Window, intern, resolve_field)


class Unsupported(Exception):
    """Raised inside lowering for constructs the IR does not model (-> Opaque)."""


NONDETERMINISTIC = (exp.Rand, exp.Uuid) if hasattr(exp, "Uuid") else (exp.Rand,)


def parse(sql: str) -> exp.Expression:
    try:
        stmts = [s for s in sqlglot.parse(sql, dialect="spark") if s is not None]
    except ParseError as e:
        first = str(e).splitlines()[0] if str(e) else "parse error"
        raise SqlError(f"cannot parse SQL: {first}") from None
    if len(stmts) != 1:
        raise SqlError(f"expected one SQL statement, got {len(stmts)}")
    if not isinstance(stmts[0], exp.Query):
        raise SqlError(f"not a query: {stmts[0].key.upper()} statements are not supported")
    return stmts[0]


def qualified(sql: str, schema: dict) -> exp.Query:
    """Parse and qualify (columns get table qualifiers, every projection an alias)."""
    tree = parse(sql)
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    for t in tree.find_all(exp.Table):
        name = t.name.lower()
        if name and name not in ctes and name not in schema:
            raise SqlError(f"unknown table: {t.name}")
    try:
        return qualify(tree, schema=schema, dialect="spark", identify=False,
                       quote_identifiers=False)
    except SqlglotError as e:
        raise SqlError(f"cannot resolve SQL: {str(e).splitlines()[0]}") from None


@dataclass
class Lowered:
    plan: Node
    ast: exp.Query                        # the qualified AST
    opaque_reasons: list[str] = field(default_factory=list)

    @property
    def fully_lowered(self) -> bool:
        return not self.opaque_reasons


def lower(sql: str, schema: dict) -> Lowered:
    """Lower one Spark SQL query. Raises SqlError only for unparsable SQL and
    unknown tables/columns; everything else that is unmodeled becomes Opaque."""
    ast = qualified(sql, schema)
    lw = _Lowerer(schema)
    plan = intern(lw.query(ast, {}))
    return Lowered(plan, ast, lw.reasons)


def lower_ast(ast: exp.Query, schema: dict) -> Lowered:
    lw = _Lowerer(schema)
    plan = intern(lw.query(ast, {}))
    return Lowered(plan, ast, lw.reasons)


# ---------------------------------------------------------------------------
def _conjuncts(e: exp.Expression | None) -> list[exp.Expression]:
    if e is None:
        return []
    if isinstance(e, exp.Paren):
        return _conjuncts(e.this)
    if isinstance(e, exp.And):
        return _conjuncts(e.this) + _conjuncts(e.expression)
    return [e]


def and_all(preds: list[exp.Expression]) -> exp.Expression | None:
    if not preds:
        return None
    out = preds[0]
    for p in preds[1:]:
        out = exp.and_(out, p, copy=False)
    return out


def _columns_outside_queries(e: exp.Expression):
    """Column references of ``e`` that are not inside a nested query."""
    stack = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Column):
            yield n
            continue
        if isinstance(n, exp.Query) and n is not e:
            continue
        stack.extend(n.iter_expressions())


def _has_agg(e: exp.Expression) -> bool:
    """True if ``e`` calls an aggregate function outside window specs and nested queries."""
    for n in e.find_all(exp.AggFunc):
        w = n.find_ancestor(exp.Window)
        if w is not None and _is_within(w, e):
            continue
        q = n.find_ancestor(exp.Query)
        if q is not None and _is_within(q, e):
            continue
        return True
    return False


def _is_within(node: exp.Expression, root: exp.Expression) -> bool:
    p = node
    while p is not None:
        if p is root:
            return True
        p = p.parent
    return False


def _resolves(fields, c: exp.Column) -> bool:
    """Strict: a qualified column belongs to a side only if that side has its qualifier."""
    if c.table and not any(f.qualifier == c.table for f in fields):
        return False
    try:
        resolve_field(fields, c)
        return True
    except KeyError:
        return False


def _strip_alias(e: exp.Expression) -> tuple[exp.Expression, str]:
    if isinstance(e, exp.Alias):
        return e.this.copy(), e.alias
    return e.copy(), e.alias_or_name


class _Lowerer:
    def __init__(self, schema: dict):
        self.schema = schema
        self.reasons: list[str] = []
        self.cte_sql: dict[str, exp.Expression] = {}  # name -> CTE body AST

    # -- queries -----------------------------------------------------------
    def query(self, q: exp.Expression, ctes: dict[str, Node]) -> Node:
        try:
            return self._query(q, ctes)
        except Unsupported as why:
            self.reasons.append(str(why))
            return self._opaque(q, str(why))

    def _opaque(self, q: exp.Expression, why: str) -> Opaque:
        body = q.copy()
        self._attach_ctes(body)
        names = tuple(q.named_selects) if isinstance(q, exp.Query) else ()
        return Opaque(body.sql(dialect="spark"), names, why)

    def _attach_ctes(self, query: exp.Expression) -> None:
        """Make a query self-contained: prepend the definitions of CTEs it uses
        (transitively), so it can be emitted anywhere."""
        if not isinstance(query, exp.Query):
            return
        needed: list[str] = []

        def visit(node: exp.Expression, local: set[str]):
            local = local | {c.alias_or_name.lower() for c in node.find_all(exp.CTE)}
            for t in node.find_all(exp.Table):
                n = t.name.lower()
                if n in self.cte_sql and n not in local and n not in needed:
                    visit(self.cte_sql[n], local)
                    if n not in needed:
                        needed.append(n)

        visit(query, set())
        if not needed:
            return
        existing = query.args.get("with_") or query.args.get("with")
        ctes = [exp.CTE(this=self.cte_sql[n].copy(), alias=exp.TableAlias(this=exp.to_identifier(n)))
                for n in needed]
        if existing is not None:
            existing.set("expressions", ctes + list(existing.expressions))
        else:
            query.set("with_" if "with_" in type(query).arg_types else "with", exp.With(expressions=ctes))

    def _query(self, q: exp.Expression, ctes: dict[str, Node]) -> Node:
        ctes = dict(ctes)
        w = q.args.get("with_") or q.args.get("with")
        if w is not None:
            if w.args.get("recursive"):
                raise Unsupported("recursive CTE")
            for cte in w.expressions:
                name = cte.alias_or_name.lower()
                self.cte_sql[name] = cte.this
                ctes[name] = self.query(cte.this, ctes)
        if isinstance(q, exp.Subquery):
            node = self.query(q.this, ctes)
            return self._order_limit(q, node, None)
        if isinstance(q, exp.Union):
            if q.args.get("distinct"):
                raise Unsupported("UNION (distinct)")
            inputs: list[Node] = []
            self._flatten_union(q, ctes, inputs)
            widths = {len(i.fields) for i in inputs}
            if len(widths) != 1:
                raise Unsupported("UNION ALL inputs of different widths")
            node = UnionAll(tuple(inputs))
            return self._order_limit(q, node, None)
        if isinstance(q, (exp.Intersect, exp.Except)):
            raise Unsupported(f"{q.key.upper()}")
        if isinstance(q, exp.Select):
            return self._select(q, ctes)
        raise Unsupported(f"query kind {q.key}")

    def _flatten_union(self, q, ctes, out):
        for side in (q.this, q.expression):
            if (isinstance(side, exp.Union) and not side.args.get("distinct")
                    and not side.args.get("order") and not side.args.get("limit")
                    and not (side.args.get("with_") or side.args.get("with"))):
                self._flatten_union(side, ctes, out)
            else:
                out.append(self.query(side, ctes))

    def _order_limit(self, q, node: Node, _items) -> Node:
        order = q.args.get("order")
        if order is not None:
            ords = []
            for o in order.expressions:
                o = o.copy()
                for c in list(_columns_outside_queries(o)):
                    try:
                        resolve_field(node.fields, c)
                    except KeyError:
                        raise Unsupported("ORDER BY on a column not in the output") from None
                ords.append(o)
            node = Sort(node, tuple(ords))
        return self._limit(q, node)

    def _limit(self, q, node: Node) -> Node:
        lim = q.args.get("limit")
        off = q.args.get("offset")
        if lim is None and off is None:
            return node
        n = self._int(lim.expression if lim is not None else None)
        o = self._int(off.expression if off is not None else None) if off is not None else 0
        if lim is None:
            raise Unsupported("OFFSET without LIMIT")
        return Limit(node, n, o)

    @staticmethod
    def _int(e) -> int:
        if isinstance(e, exp.Literal) and not e.is_string:
            try:
                return int(e.this)
            except ValueError:
                pass
        raise Unsupported("non-literal LIMIT/OFFSET")

    # -- FROM ----------------------------------------------------------------
    def _source(self, src: exp.Expression, ctes: dict[str, Node]) -> Node:
        if isinstance(src, exp.Table):
            if src.args.get("joins") or src.args.get("laterals") or src.args.get("pivots"):
                raise Unsupported("PIVOT/LATERAL on a table")
            name = src.name.lower()
            if not name:
                raise Unsupported(f"table expression {src.sql(dialect='spark')}")
            alias = (src.alias or src.name).lower()
            if name in ctes and not src.args.get("db"):
                base = ctes[name]
            else:
                cols = self.schema.get(name)
                if cols is None:
                    raise Unsupported(f"unknown table {name}")
                base = Scan(name, tuple(cols.items()))
                if alias == name:
                    return base
            return Rename(base, tuple((f, f.name) for f in base.fields), alias)
        if isinstance(src, exp.Subquery):
            base = self.query(src.this, ctes)
            alias = src.alias.lower() if src.alias else None
            col_aliases = [c.name for c in (src.args.get("alias").columns if src.args.get("alias") else [])]
            new_names = col_aliases or [f.name for f in base.fields]
            if len(new_names) != len(base.fields):
                raise Unsupported("derived table column alias count mismatch")
            return Rename(base, tuple(zip(base.fields, new_names)), alias)
        raise Unsupported(f"FROM item {src.key}")

    def _from(self, s: exp.Select, ctes) -> Node:
        frm = s.args.get("from_") or s.args.get("from")
        if frm is None:
            raise Unsupported("SELECT without FROM")
        node = self._source(frm.this, ctes)
        for j in s.args.get("joins") or []:
            node = self._join(node, j, ctes)
        if s.args.get("laterals"):
            raise Unsupported("LATERAL VIEW")
        return node

    def _join(self, left: Node, j: exp.Join, ctes) -> Node:
        if j.args.get("using"):
            raise Unsupported("JOIN ... USING")
        if j.method:
            raise Unsupported(f"{j.method} join")
        right = self._source(j.this, ctes)
        side = (j.side or "").lower()
        kind = (j.kind or "").lower()
        if kind in ("semi", "anti"):
            jk = kind
            if side == "right":
                raise Unsupported("RIGHT SEMI/ANTI join")
        elif side in ("left", "right", "full"):
            jk = side
        elif kind == "cross" or j.args.get("on") is None:
            jk = "cross"
        else:
            jk = "inner"
        on = j.args.get("on")
        lf, rf = left.fields, right.fields
        equi, residual = [], []
        for c in _conjuncts(on):
            if any(isinstance(n, exp.Query) for n in c.find_all(exp.Query)):
                raise Unsupported("subquery in a join condition")
            if isinstance(c, exp.EQ):
                a, b = c.this, c.expression
                sa, sb = self._side(a, lf, rf), self._side(b, lf, rf)
                if sa == "L" and sb == "R":
                    equi.append((a.copy(), b.copy()))
                    continue
                if sa == "R" and sb == "L":
                    equi.append((b.copy(), a.copy()))
                    continue
            residual.append(c.copy())
        if jk == "cross" and (equi or residual):
            jk = "inner"
        return Join(left, right, jk, tuple(equi), and_all(residual))

    @staticmethod
    def _side(e: exp.Expression, lf, rf) -> str | None:
        cols = list(_columns_outside_queries(e))
        if not cols or any(isinstance(n, exp.Query) for n in e.find_all(exp.Query)):
            return None
        sides = set()
        for c in cols:
            in_l = _resolves(lf, c)
            in_r = _resolves(rf, c)
            if in_l == in_r:
                return None          # unknown or ambiguous: keep it as a residual
            sides.add("L" if in_l else "R")
        return sides.pop() if len(sides) == 1 else None

    # -- SELECT ----------------------------------------------------------------
    def _check_subqueries(self, e: exp.Expression | None, what: str) -> None:
        """Uncorrelated subquery expressions are kept (made self-contained);
        correlated ones cannot be modeled."""
        if e is None:
            return
        for sub in list(e.find_all(exp.Query)):
            if sub is e:
                continue
            if sub.find_ancestor(exp.Query) is not None and _is_within(sub.find_ancestor(exp.Query), e) \
                    and sub.find_ancestor(exp.Query) is not e:
                continue  # nested deeper; handled with its outermost query
            scope = build_scope(sub)
            if scope is None or any(s.external_columns for s in scope.traverse()):
                raise Unsupported(f"correlated subquery in {what}")
            self._attach_ctes(sub)

    def _select(self, s: exp.Select, ctes) -> Node:
        if s.args.get("distinct") and s.args["distinct"].args.get("on"):
            raise Unsupported("DISTINCT ON")
        for key in ("qualify", "windows", "cluster", "distribute", "sort", "prewhere", "connect"):
            if s.args.get(key):
                raise Unsupported(f"{key.upper()} clause")
        node = self._from(s, ctes)
        where = s.args.get("where")
        if where is not None:
            self._check_subqueries(where.this, "WHERE")
            node = Select(node, where.this.copy())
        items = [_strip_alias(e) for e in s.expressions]
        for e, _ in items:
            self._check_subqueries(e, "SELECT")
        group = s.args.get("group")
        having = s.args.get("having")
        if having is not None:
            self._check_subqueries(having.this, "HAVING")
        is_agg = group is not None or having is not None or any(_has_agg(e) for e, _ in items)
        windows = [w for e, _ in items for w in e.find_all(exp.Window)]
        order = s.args.get("order")
        out_names = [n for _, n in items]

        if is_agg:
            if group is not None and any(group.args.get(k) for k in ("grouping_sets", "cube", "rollup")):
                raise Unsupported("GROUPING SETS/CUBE/ROLLUP")
            if windows:
                raise Unsupported("window functions over an aggregate")
            keys = []
            for k in (group.expressions if group is not None else []):
                if isinstance(k, exp.Literal) and not k.is_string:
                    k = items[int(k.this) - 1][0]
                keys.append(k.copy())
            agg_items = list(items)
            post: list[tuple[str, object]] = []
            if having is not None:
                pred = self._hidden_refs(having.this, agg_items, keys)
                post.append(("having", pred))
            ords = self._order_refs(order, agg_items, keys) if order is not None else None
            node = Aggregate(node, tuple(keys), tuple(agg_items))
            for kind, pred in post:
                node = Select(node, pred)
            if s.args.get("distinct"):
                if len(agg_items) != len(items):
                    raise Unsupported("DISTINCT with hidden ORDER BY columns")
                node = self._distinct(node)
            if ords is not None:
                node = Sort(node, ords)
            node = self._limit(s, node)
            return self._drop_hidden(node, len(items), out_names)

        if windows:
            win_items = []
            new_items = []
            for e, n in items:
                e2 = e.copy()
                for w in list(e2.find_all(exp.Window)):
                    name = f"_w{len(win_items)}"
                    win_items.append((w.copy(), name))
                    if w is e2:
                        e2 = exp.column(name)
                    else:
                        w.replace(exp.column(name))
                new_items.append((e2, n))
            node = Window(node, tuple(win_items))
            items = new_items
        proj_items = list(items)
        ords = self._order_refs(order, proj_items, None) if order is not None else None
        node = self._projection(node, proj_items)
        if s.args.get("distinct"):
            if len(proj_items) != len(items):
                raise Unsupported("DISTINCT with hidden ORDER BY columns")
            node = self._distinct(node)
        if ords is not None:
            node = Sort(node, ords)
        node = self._limit(s, node)
        return self._drop_hidden(node, len(items), out_names)

    @staticmethod
    def _distinct(node: Node) -> Node:
        keys = tuple(f.column() for f in node.fields)
        return Aggregate(node, keys, tuple((f.column(), f.name) for f in node.fields))

    @staticmethod
    def _projection(node: Node, items) -> Node:
        fields = node.fields
        if all(isinstance(e, exp.Column) for e, _ in items):
            try:
                src = [fields[resolve_field(fields, e)] for e, _ in items]
            except KeyError:
                src = None
            if src is not None:
                if [f.name for f in src] == [n for _, n in items] and tuple(src) == fields:
                    return node  # identity projection
                if any(f.name != n for f, (_, n) in zip(src, items)):
                    return Rename(node, tuple((f, n) for f, (_, n) in zip(src, items)), None)
        return Project(node, tuple(items))

    @staticmethod
    def _drop_hidden(node: Node, n_visible: int, names) -> Node:
        if len(node.fields) == n_visible:
            return node
        visible = node.fields[:n_visible]
        return Project(node, tuple((f.column(), f.name) for f in visible))

    def _hidden_refs(self, pred: exp.Expression, items: list, keys) -> exp.Expression:
        """Rewrite a HAVING predicate over the aggregate's output: aggregate calls
        and grouping expressions become references to (possibly hidden) items."""
        pred = pred.copy()

        def ref(sub: exp.Expression) -> exp.Expression:
            for e, n in items:
                if e == sub:
                    return exp.column(n)
            name = f"_h{len(items)}"
            items.append((sub.copy(), name))
            return exp.column(name)

        def fix(node):
            if isinstance(node, exp.AggFunc) and not node.find_ancestor(exp.Query):
                return ref(node)
            if isinstance(node, exp.Column):
                for e, n in items:
                    if e == node:
                        return exp.column(n)
                for k in keys:
                    if k == node:
                        return ref(node)
                # An unqualified reference to an output alias stays as is.
                if not node.table and any(n == node.name for _, n in items):
                    return node
                raise Unsupported("HAVING refers to a non-grouped column")
            return node

        return pred.transform(fix, copy=False)

    def _order_refs(self, order, items: list, keys) -> tuple[exp.Ordered, ...]:
        out = []
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

    def _order_expr(self, e: exp.Expression, items: list, keys) -> exp.Expression:
        if isinstance(e, exp.Column) and not e.table and any(n == e.name for _, n in items):
            return exp.column(e.name)
        for ie, n in items:
            if ie == e:
                return exp.column(n)
        if keys is not None and _has_agg(e):
            return self._hidden_refs(e, items, keys)
        if keys is not None and not any(k == e for k in keys):
            # expression over group keys / aggregates
            return self._hidden_refs(e, items, keys)
        name = f"_o{len(items)}"
        items.append((e.copy(), name))
        return exp.column(name)
