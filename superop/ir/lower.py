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

from ..errors import SqlError
from .nodes import (Aggregate, Join, Limit, Node, Opaque, Project, Rename, Scan, Select,
                    Sort, UnionAll, Window, expressions_of, intern, resolve_field, walk)


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


def lower(sql: str, schema) -> Lowered:
    """Lower one Spark SQL query. ``schema`` is the mapping form
    ``{"table": {"column": "type"}}`` (names are case-insensitive) or a SparkSession
    (the tables the query names are looked up in its catalog). Raises SqlError only
    for unparsable SQL and unknown tables/columns; everything else that is unmodeled
    becomes Opaque."""
    schema = _as_schema(sql, schema)
    return lower_ast(qualified(sql, schema), schema)


def _as_schema(sql: str, schema) -> dict:
    if hasattr(schema, "catalog") and hasattr(schema, "table"):      # a SparkSession
        from .schema import schema_from_spark
        tree = parse(sql)
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        names = sorted({t.name.lower() for t in tree.find_all(exp.Table)
                        if t.name and t.name.lower() not in ctes})
        names = [n for n in names if schema.catalog.tableExists(n)]
        return schema_from_spark(schema, names)
    if isinstance(schema, dict) and all(isinstance(v, dict) and all(isinstance(t, str)
                                                                   for t in v.values())
                                        for v in schema.values()):
        if any(k != k.lower() for k in schema) or any(c != c.lower() for v in schema.values()
                                                      for c in v):
            from .schema import normalize_schema
            return normalize_schema(schema)
    return schema


def lower_ast(ast: exp.Query, schema: dict) -> Lowered:
    lw = _Lowerer(schema)
    plan = intern(lw.query(ast, {}))
    bad = unresolved(plan)
    if bad:
        # Never hand out a plan whose expressions do not resolve (generation would
        # fail on it): the whole query is carried through as SQL instead.
        why = f"lowering error: unresolved column {bad}"
        body = ast.copy()
        return Lowered(Opaque(body.sql(dialect="spark"), tuple(ast.named_selects), why), ast,
                       lw.reasons + [why])
    return Lowered(plan, ast, lw.reasons)


def unresolved(plan: Node) -> str | None:
    """The first column reference (outside nested queries) that does not resolve
    against its node's input fields, or None when the plan is consistent."""
    for n in walk(plan):
        if isinstance(n, (Scan, Opaque, UnionAll, Limit)):
            continue
        fields = n.input_fields()
        if isinstance(n, Rename):
            cols = [f.column() for f, _ in n.mapping]
        else:
            cols = [c for e in expressions_of(n) for c in _columns_outside_queries(e)]
        for c in cols:
            try:
                resolve_field(fields, c)
            except KeyError:
                return c.sql(dialect="spark")
    return None


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
    """Flat ``p1 AND p2 AND ...`` (sqlglot's and_ would add nested parentheses)."""
    out = None
    for p in preds:
        if isinstance(p, (exp.Or, exp.Xor)):
            p = exp.Paren(this=p)
        out = p if out is None else exp.And(this=out, expression=p)
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


def _outermost_queries(e: exp.Expression) -> list[exp.Query]:
    """Query expressions nested in ``e`` that are not inside another nested query."""
    out, stack = [], list(e.iter_expressions())
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Query):
            out.append(n)
            continue
        stack.extend(n.iter_expressions())
    return out


def _defined_aliases(q: exp.Expression) -> set[str]:
    """Relation names/aliases introduced anywhere inside ``q`` (after qualify every
    FROM item carries an alias)."""
    out = set()
    for ta in q.find_all(exp.TableAlias):
        if ta.name:
            out.add(ta.name.lower())
    for t in q.find_all(exp.Table):
        out.add(t.alias_or_name.lower())
    for c in q.find_all(exp.CTE):
        out.add(c.alias_or_name.lower())
    return out


def _outer_columns(q: exp.Expression) -> list[exp.Column]:
    """Columns inside ``q`` that refer to a relation defined outside it (correlation).
    SQL resolves a qualifier to the innermost relation with that name, so a qualifier
    defined inside ``q`` is never an outer reference."""
    inner = _defined_aliases(q)
    return [c for c in q.find_all(exp.Column) if c.table and c.table.lower() not in inner]


def _windows_outside_queries(e: exp.Expression) -> list[exp.Window]:
    out, stack = [], [e]
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Window):
            out.append(n)
            continue
        if isinstance(n, exp.Query) and n is not e:
            continue
        stack.extend(n.iter_expressions())
    return out[::-1]


_ALLOWED_ARGS = {
    exp.Select: {"with_", "with", "expressions", "hint", "distinct", "from_", "from", "joins",
                 "where", "group", "having", "order", "limit", "offset", "windows", "qualify",
                 "cluster", "distribute", "sort", "laterals"},
    exp.Union: {"with_", "with", "this", "expression", "distinct", "order", "limit", "offset"},
    exp.Subquery: {"this", "alias", "with_", "with", "order", "limit", "offset"},
    exp.Join: {"this", "on", "side", "kind", "using", "method", "hint"},
    exp.Table: {"this", "alias", "db", "catalog", "laterals", "joins", "pivots"},
}


def _check_args(node: exp.Expression) -> None:
    """Refuse (-> Opaque) clauses the lowering would otherwise silently drop, e.g.
    TABLESAMPLE, UNION ... BY NAME, time travel, sqlglot extensions."""
    allowed = _ALLOWED_ARGS.get(type(node))
    if allowed is None:
        return
    for k, v in node.args.items():
        if v not in (None, False, []) and k not in allowed:
            raise Unsupported(f"{k.upper()} in {node.key.upper()}")


def _has_query(e: exp.Expression) -> bool:
    return any(True for _ in _outermost_queries(e)) or isinstance(e, exp.Query)


def _nondeterministic(e: exp.Expression) -> bool:
    for n in e.walk():
        if isinstance(n, NONDETERMINISTIC):
            return True
        if isinstance(n, exp.Anonymous) and n.name.lower() in (
                "uuid", "rand", "random", "randn", "shuffle", "monotonically_increasing_id"):
            return True
    return False


def _resolves_strict(fields, c: exp.Column) -> bool:
    """Like resolve_field, but a qualified column needs a field with its qualifier."""
    name, q = c.name, (c.table or None)
    hits = [f for f in fields if f.name == name and (q is None or f.qualifier == q)]
    return len(hits) == 1


def _all_resolve(fields, e: exp.Expression) -> bool:
    return all(_resolves_strict(fields, c) for c in _columns_outside_queries(e))


def _replace_outside_queries(e: exp.Expression, fn) -> exp.Expression:
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


_CMP = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def _null_on_empty(e: exp.Expression) -> bool:
    """True if ``e`` (an aggregate expression) is NULL over an empty input: SUM/AVG/
    MIN/MAX, or arithmetic with such an operand. COUNT and COALESCE are not."""
    if isinstance(e, (exp.Sum, exp.Avg, exp.Min, exp.Max)):
        return True
    if isinstance(e, (exp.Paren, exp.Neg, exp.Cast)):
        return _null_on_empty(e.this)
    if isinstance(e, (exp.Add, exp.Sub, exp.Mul, exp.Div)):
        return _null_on_empty(e.this) or _null_on_empty(e.expression)
    return False


def _type_at(node: Node, i: int) -> str | None:
    """Spark type of output field ``i`` when it is a base column passed through
    unchanged (None when unknown)."""
    try:
        if isinstance(node, Scan):
            return node.columns[i][1]
        if isinstance(node, (Select, Sort, Limit)):
            return _type_at(node.child, i)
        if isinstance(node, Rename):
            f = node.mapping[i][0]
            return _type_at(node.child, node.child.fields.index(f))
        if isinstance(node, Join):
            nl = len(node.left.fields)
            return _type_at(node.left, i) if i < nl else _type_at(node.right, i - nl)
        if isinstance(node, Window) and i < len(node.child.fields):
            return _type_at(node.child, i)
    except (ValueError, IndexError):
        return None
    return None


def _column_type(node: Node, c: exp.Expression) -> str | None:
    if not isinstance(c, exp.Column) or not _resolves_strict(node.fields, c):
        return None
    return _type_at(node, resolve_field(node.fields, c))


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
        except (KeyError, ValueError, TypeError, AttributeError, IndexError) as e:
            # A construct the lowering mishandles must not stop the query: carry it
            # through untouched and say so (tests look for this prefix).
            why = f"lowering error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            self.reasons.append(why)
            return self._opaque(q, why)

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
        _check_args(q)
        if isinstance(q, exp.Subquery):
            node = self.query(q.this, ctes)
            return self._order_limit(q, node, None)
        if isinstance(q, exp.Union):
            distinct = bool(q.args.get("distinct"))
            inputs: list[Node] = []
            self._flatten_union(q, ctes, inputs, distinct)
            widths = {len(i.fields) for i in inputs}
            if len(widths) != 1:
                raise Unsupported("UNION ALL inputs of different widths")
            node = UnionAll(tuple(inputs))
            if distinct:
                # UNION = DISTINCT over UNION ALL (same branches, same type widening).
                node = self._distinct(node)
            return self._order_limit(q, node, None)
        if isinstance(q, (exp.Intersect, exp.Except)):
            raise Unsupported(f"{q.key.upper()}")
        if isinstance(q, exp.Select):
            return self._select(q, ctes)
        raise Unsupported(f"query kind {q.key}")

    def _flatten_union(self, q, ctes, out, distinct: bool = False):
        """Inputs of nested unions. Under UNION ALL only UNION ALL children flatten;
        under a distinct UNION any union child does (DISTINCT absorbs inner ones)."""
        for side in (q.this, q.expression):
            if (isinstance(side, exp.Union) and (distinct or not side.args.get("distinct"))
                    and not any(side.args.get(k) for k in ("order", "limit", "offset", "with_",
                                                          "with", "by_name", "side", "kind"))):
                self._flatten_union(side, ctes, out, distinct)
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
        _check_args(src)
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
            ta = src.args.get("alias")
            col_aliases = [c.name for c in (ta.columns if ta is not None else [])]
            if col_aliases:                       # FROM t AS x(c1, c2, ...)
                if len(col_aliases) != len(base.fields):
                    raise Unsupported("table alias column count mismatch")
                return Rename(base, tuple(zip(base.fields, col_aliases)), alias)
            if isinstance(base, Scan) and alias == name:
                return base
            return Rename(base, tuple((f, f.name) for f in base.fields), alias)
        if isinstance(src, exp.Subquery):
            if any(src.args.get(k) for k in ("order", "limit", "offset", "with_", "with")):
                raise Unsupported("ORDER BY/LIMIT/WITH on a derived table's parentheses")
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
        _check_args(j)
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
        conjs = _conjuncts(on)
        for c in conjs:
            if _has_query(c):
                raise Unsupported("subquery in a join condition")
        equi, residual = self._split_on(conjs, left.fields, right.fields)
        if jk == "cross" and (equi or residual):
            jk = "inner"
        return Join(left, right, jk, tuple(equi), and_all(residual))

    def _split_on(self, conjs, lf, rf):
        """ON conjuncts -> (equi pairs (left expr, right expr), residual conjuncts).
        An equality is an equi key only if each side reads exactly one input."""
        equi, residual = [], []
        for c in conjs:
            if isinstance(c, exp.EQ) and not _nondeterministic(c):
                a, b = c.this, c.expression
                sa, sb = self._side(a, lf, rf), self._side(b, lf, rf)
                if sa == "L" and sb == "R":
                    equi.append((a.copy(), b.copy()))
                    continue
                if sa == "R" and sb == "L":
                    equi.append((b.copy(), a.copy()))
                    continue
            residual.append(c.copy())
        return equi, residual

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
        correlated ones cannot be modeled here (see :meth:`_where` for the
        decorrelated forms)."""
        if e is None:
            return
        for sub in _outermost_queries(e):
            if _outer_columns(sub):
                raise Unsupported(f"correlated subquery in {what}")
            self._attach_ctes(sub)

    # -- WHERE: join predicates, decorrelation ---------------------------------
    def _fresh(self) -> str:
        self._n_fresh = getattr(self, "_n_fresh", 0) + 1
        return f"_sq{self._n_fresh}"

    def _where(self, node: Node, pred: exp.Expression, ctes) -> Node:
        """Lower a WHERE clause over ``node``.

        * conjuncts relating both inputs of an inner/cross join of the FROM clause
          become that join's condition (what ``FROM a, b WHERE a.x = b.y`` means);
        * top-level ``[NOT] EXISTS`` and ``IN`` with a correlated simple sub-query
          become semi/anti joins (exactly their semantics in a WHERE conjunct);
        * ``expr <op> (correlated scalar aggregate)`` becomes a LEFT join with the
          aggregate grouped by the correlation keys (only when the aggregate is NULL
          over an empty group, so an unmatched row sees NULL either way);
        * uncorrelated sub-queries stay expressions; other correlated ones -> Opaque.
        """
        plain, semis, scalars = [], [], []
        for c in _conjuncts(pred):
            subs = _outermost_queries(c) if not isinstance(c, exp.Query) else [c]
            if not any(_outer_columns(q) for q in subs):
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
            node = Select(node, and_all([r.copy() for r in rest]))
        for c in semis:
            node = self._semi_join(node, c, ctes)
        if scalars:
            preds = []
            for c in scalars:
                node, p = self._scalar_join(node, c, ctes)
                preds.append(p)
            node = Select(node, and_all(preds))
        return node

    def _push_join_preds(self, node: Node, conjs: list) -> tuple[Node, list]:
        spine = []
        n = node
        while isinstance(n, Join) and n.kind in ("inner", "cross"):
            spine.append(n)
            n = n.left
        if not spine or not conjs:
            return node, list(conjs)
        extra: dict[int, list] = {i: [] for i in range(len(spine))}
        rest = []
        for c in conjs:
            cols = list(_columns_outside_queries(c))
            target = None
            if cols and not _has_query(c) and not _nondeterministic(c):
                for i in range(len(spine) - 1, -1, -1):       # lowest join first
                    j = spine[i]
                    if _all_resolve(j.fields, c):
                        if not _all_resolve(j.left.fields, c) and not _all_resolve(j.right.fields, c):
                            target = i
                        break
            if target is None:
                rest.append(c)
            else:
                extra[target].append(c)
        if not any(extra.values()):
            return node, rest
        cur = spine[-1].left
        for i in range(len(spine) - 1, -1, -1):
            j = spine[i]
            equi, residual = self._split_on(extra[i], cur.fields, j.right.fields)
            res = ([j.residual] if j.residual is not None else []) + residual
            kind = "inner" if (j.kind == "inner" or equi or res) else "cross"
            cur = Join(cur, j.right, kind, tuple(j.equi) + tuple(equi), and_all(res))
        return cur, rest

    @staticmethod
    def _semi_form(c: exp.Expression):
        """(kind, subquery select, IN left operand or None) for a decorrelatable
        [NOT] EXISTS / IN conjunct, else None."""
        neg = False
        e = c
        if isinstance(e, exp.Not):
            neg, e = True, e.this
            while isinstance(e, exp.Paren):
                e = e.this
        lhs = None
        if isinstance(e, exp.Exists):
            sub = e.this
        elif isinstance(e, exp.In) and e.args.get("query") is not None and not neg:
            # NOT IN is not an anti join when NULLs occur: kept out on purpose.
            sub, lhs = e.args["query"], e.this
            if _has_query(lhs):
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
        if any(_has_agg(x) or x.find(exp.Window) is not None for x in sub.expressions):
            return None      # EXISTS (SELECT COUNT(*) ...) is always true, etc.
        where = sub.args.get("where")
        if where is None or _outermost_queries(where.this):
            return None
        outer = _outer_columns(sub)
        if not outer or any(not _is_within(o, where) for o in outer):
            return None      # outer references only in the sub-query's WHERE
        if lhs is not None:
            if len(sub.expressions) != 1 or any(_is_within(o, sub.expressions[0]) for o in outer):
                return None
        return ("anti" if neg else "semi", sub, lhs)

    def _semi_join(self, node: Node, c: exp.Expression, ctes) -> Node:
        kind, sub, lhs = self._semi_form(c)
        right = self._from(sub, ctes)
        conjs = [x.copy() for x in _conjuncts(sub.args["where"].this)]
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
            inner_q = _defined_aliases(sub)

            def requal(n):
                if isinstance(n, exp.Column) and n.table and n.table.lower() == old_q \
                        and old_q in inner_q:
                    return exp.column(n.name, fresh)
                return None
            conjs = [_replace_outside_queries(x, requal) for x in conjs]
        both = node.fields + right.fields
        if not all(_all_resolve(both, x) for x in conjs):
            raise Unsupported("correlated sub-query columns do not resolve")
        equi, residual = self._split_on(conjs, node.fields, right.fields)
        return Join(node, right, kind, tuple(equi), and_all(residual))

    def _scalar_form(self, c: exp.Expression):
        """(subquery expression, select, correlated (outer, inner) column pairs,
        inner-only conjuncts) for ``x <op> (SELECT agg ... WHERE inner = outer ...)``."""
        if not isinstance(c, _CMP):
            return None
        sides = [c.this, c.expression]
        subs = [x for x in sides if isinstance(x, exp.Subquery)]
        if len(subs) != 1:
            return None
        other = sides[1] if sides[0] is subs[0] else sides[0]
        if _has_query(other):
            return None
        return self._scalar_sub_form(subs[0])

    def _scalar_sub_form(self, sub: exp.Subquery):
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
        inner_q = _defined_aliases(sel)

        def outer_refs(e):
            return [x for x in e.find_all(exp.Column) if x.table and x.table.lower() not in inner_q]
        if not _null_on_empty(item) or outer_refs(item) or item.find(exp.Window):
            return None
        where = sel.args.get("where")
        if where is None or _outermost_queries(where.this):
            return None
        pairs, local = [], []
        for w in _conjuncts(where.this):
            if not outer_refs(w):
                local.append(w)
                continue
            if not isinstance(w, exp.EQ):
                return None
            a, b = w.this, w.expression
            if not (isinstance(a, exp.Column) and isinstance(b, exp.Column)):
                return None
            a_in = a.table.lower() in inner_q
            b_in = b.table.lower() in inner_q
            if a_in == b_in:
                return None
            pairs.append((b, a) if a_in else (a, b))    # (outer, inner)
        frm = sel.args.get("from_") or sel.args.get("from")
        if not pairs or frm is None:
            return None
        return sub, sel, pairs, local

    def _scalar_join(self, node: Node, c: exp.Expression, ctes):
        node, val = self._scalar_join_sub(node, self._scalar_form(c), ctes)
        pred = c.copy()
        for side in ("this", "expression"):
            if isinstance(pred.args.get(side), exp.Subquery):
                pred.set(side, val)
        return node, pred

    def _scalar_join_sub(self, node: Node, form, ctes):
        """LEFT join ``node`` with the sub-query's aggregate grouped by its correlation
        keys; returns the join and the column holding the sub-query's value."""
        subq, sel, pairs, local = form
        inner = self._from(sel, ctes)
        inner, rest = self._push_join_preds(inner, [x.copy() for x in local])
        if rest:
            inner = Select(inner, and_all(rest))
        keys = []
        for outer_c, inner_c in pairs:
            # Grouping equality must coincide with `=`: same types on both sides.
            t_out, t_in = _column_type(node, outer_c), _column_type(inner, inner_c)
            if t_out is None or t_out != t_in:
                raise Unsupported("correlated scalar sub-query on keys of different types")
            keys.append(inner_c.copy())
        item = sel.expressions[0]
        item = item.this if isinstance(item, exp.Alias) else item
        if not _all_resolve(inner.fields, item) or not all(_all_resolve(inner.fields, k) for k in keys):
            raise Unsupported("correlated scalar sub-query columns do not resolve")
        names = [f"_k{i}" for i in range(len(keys))] + ["_v"]
        agg = Aggregate(inner, tuple(keys), tuple(zip([k.copy() for k in keys] + [item.copy()], names)))
        fresh = self._fresh()
        right = Rename(agg, tuple((f, f.name) for f in agg.fields), fresh)
        equi = tuple((o.copy(), exp.column(f"_k{i}", fresh)) for i, (o, _) in enumerate(pairs))
        if not all(_all_resolve(node.fields, o) for o, _ in equi):
            raise Unsupported("correlated scalar sub-query columns do not resolve")
        val = exp.column("_v", fresh)
        return Join(node, right, "left", equi, None), val

    def _select(self, s: exp.Select, ctes) -> Node:
        if s.args.get("distinct") and s.args["distinct"].args.get("on"):
            raise Unsupported("DISTINCT ON")
        for key in ("qualify", "windows", "cluster", "distribute", "sort", "prewhere", "connect"):
            if s.args.get(key):
                raise Unsupported(f"{key.upper()} clause")
        node = self._from(s, ctes)
        where = s.args.get("where")
        if where is not None:
            node = self._where(node, where.this, ctes)
        items = [_strip_alias(e) for e in s.expressions]
        group = s.args.get("group")
        having = s.args.get("having")
        if group is None and having is None and not any(_has_agg(e) for e, _ in items):
            node, items = self._select_list_scalars(node, items, ctes)
        for e, _ in items:
            self._check_subqueries(e, "SELECT")
        if having is not None:
            self._check_subqueries(having.this, "HAVING")
        is_agg = group is not None or having is not None or any(_has_agg(e) for e, _ in items)
        windows = [w for e, _ in items for w in _windows_outside_queries(e)]
        order = s.args.get("order")
        out_names = [n for _, n in items]

        if is_agg:
            if group is not None and (
                    any(group.args.get(k) for k in ("grouping_sets", "cube", "rollup", "totals"))
                    or any(isinstance(k, (exp.GroupingSets, exp.Cube, exp.Rollup))
                           for k in group.expressions)):
                raise Unsupported("GROUPING SETS/CUBE/ROLLUP")
            keys = []
            if group is not None and group.args.get("all"):
                # GROUP BY ALL: every select item without an aggregate is a key.
                keys = [e.copy() for e, _ in items if not _has_agg(e)]
                if any(not list(_columns_outside_queries(k)) for k in keys):
                    raise Unsupported("GROUP BY ALL with a constant item")
            for k in (group.expressions if group is not None else []):
                if isinstance(k, exp.Literal) and not k.is_string:
                    k = items[int(k.this) - 1][0]
                keys.append(k.copy())
            if windows:
                return self._aggregate_window(s, node, items, keys, having, order)
            agg_items = list(items)
            post: list[tuple[str, object]] = []
            if having is not None:
                pred = self._hidden_refs(having.this, agg_items, keys)
                post.append(("having", pred))
            ords = self._order_refs(order, agg_items, keys) if order is not None else None
            node = Aggregate(node, tuple(keys), tuple(agg_items))
            for _kind, pred in post:
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
            node, items = self._windows(node, items)
        proj_items = list(items)
        ords = self._order_refs(order, proj_items, None) if order is not None else None
        if (len(proj_items) > len(items) and not windows and not s.args.get("distinct")
                and self._order_on_input(order, node)):
            # ORDER BY input columns the select list drops: sort below the projection
            # (a projection keeps the order) instead of carrying hidden columns.
            node = Sort(node, tuple(o.copy() for o in order.expressions))
            node = self._limit(s, node)
            return self._projection(node, list(items))
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
    def _order_on_input(order, node: Node) -> bool:
        """Every ORDER BY item is a deterministic expression over qualified input
        columns (no ordinal, no output alias, no sub-query or aggregate)."""
        for o in order.expressions:
            e = o.this
            cols = list(_columns_outside_queries(e))
            if (isinstance(e, exp.Literal) or not cols or _has_query(e) or _has_agg(e)
                    or e.find(exp.Window) is not None or _nondeterministic(e)):
                return False
            if not all(c.table and _resolves_strict(node.fields, c) for c in cols):
                return False
        return True

    def _select_list_scalars(self, node: Node, items, ctes):
        """Correlated scalar aggregate sub-queries in a (non-aggregating) select list
        become LEFT joins, as in WHERE; anything else is left for _check_subqueries."""
        out = []
        for e, name in items:
            subs = [q for q in _outermost_queries(e) if _outer_columns(q)]
            if isinstance(e, exp.Subquery) and _outer_columns(e):
                subs = [e]
            forms = [self._scalar_sub_form(q) for q in subs]
            if not subs or any(f is None for f in forms):
                out.append((e, name))
                continue
            # ``e`` is already a private copy (_strip_alias): replace in place.
            for q, f in zip(subs, forms):
                node, val = self._scalar_join_sub(node, f, ctes)
                if q is e:
                    e = val
                else:
                    q.replace(val)
            out.append((e, name))
        return node, out

    @staticmethod
    def _windows(node: Node, items):
        """Window node computing every window call of ``items``; returns it and the
        items with the calls replaced by references to its columns."""
        win_items, new_items = [], []
        for e, n in items:
            e2 = e.copy()
            for w in list(_windows_outside_queries(e2)):
                name = f"_w{len(win_items)}"
                win_items.append((w.copy(), name))
                if w is e2:
                    e2 = exp.column(name)
                else:
                    w.replace(exp.column(name))
            new_items.append((e2, n))
        return Window(node, tuple(win_items)), new_items

    def _aggregate_window(self, s, node, items, keys, having, order) -> Node:
        """Window functions over a GROUP BY (SQL order: γ, HAVING, windows, SELECT,
        DISTINCT, ORDER BY, LIMIT): the aggregate computes the keys and aggregate
        calls the select list uses, the windows run over its output."""
        agg_items: list = []

        def ref(sub):
            for e, n in agg_items:
                if e == sub:
                    return exp.column(n)
            name = f"_h{len(agg_items)}"
            agg_items.append((sub.copy(), name))
            return exp.column(name)

        def fix(n):
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

        new_items = [(_replace_outside_queries(e, fix), name) for e, name in items]
        pred = _replace_outside_queries(having.this, fix) if having is not None else None
        if not agg_items:
            raise Unsupported("window over an aggregate without grouped columns")
        node = Aggregate(node, tuple(keys), tuple(agg_items))
        if pred is not None:
            node = Select(node, pred)
        node, new_items = self._windows(node, new_items)
        node = Project(node, tuple(new_items))
        if s.args.get("distinct"):
            node = self._distinct(node)
        if order is not None:
            ords = []
            for o in order.expressions:
                o, e = o.copy(), o.this
                if isinstance(e, exp.Literal) and not e.is_string:
                    name = items[int(e.this) - 1][1]
                elif isinstance(e, exp.Column) and not e.table and any(n == e.name for _, n in items):
                    name = e.name
                else:
                    name = next((n for ie, n in items if ie == e), None)
                if name is None:
                    raise Unsupported("ORDER BY over a windowed aggregate not in the select list")
                o.set("this", exp.column(name))
                ords.append(o)
            node = Sort(node, tuple(ords))
        return self._limit(s, node)

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
        and grouping expressions become references to (possibly hidden) items.
        Nested (uncorrelated) sub-queries are left alone."""

        def ref(sub: exp.Expression) -> exp.Expression:
            for e, n in items:
                if e == sub:
                    return exp.column(n)
            name = f"_h{len(items)}"
            items.append((sub.copy(), name))
            return exp.column(name)

        def fix(node):
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

        return _replace_outside_queries(pred, fix)

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
