"""The lowerer's state and the query dispatch: CTEs, the Opaque fallback, and the
check that refuses clauses the lowering would otherwise drop silently."""
from __future__ import annotations

from sqlglot import exp

from ..dialect import DIALECT
from ..nodes import Node, Opaque, UnionAll
from ..schema import TableInfo


class Unsupported(Exception):
    """Raised inside lowering for constructs the IR does not model (-> Opaque)."""


ALLOWED_ARGS = {
    exp.Select: {"with_", "with", "expressions", "hint", "distinct", "from_", "from", "joins",
                 "where", "group", "having", "order", "limit", "offset", "windows", "qualify",
                 "cluster", "distribute", "sort", "laterals"},
    exp.Union: {"with_", "with", "this", "expression", "distinct", "order", "limit", "offset"},
    exp.Subquery: {"this", "alias", "with_", "with", "order", "limit", "offset"},
    exp.Join: {"this", "on", "side", "kind", "using", "method", "hint"},
    exp.Table: {"this", "alias", "db", "catalog", "laterals", "joins", "pivots"},
}


def check_args(node: exp.Expr) -> None:
    """Refuse (-> Opaque) clauses the lowering would otherwise silently drop, e.g.
    TABLESAMPLE, UNION ... BY NAME, time travel, sqlglot extensions."""
    allowed = ALLOWED_ARGS.get(type(node))
    if allowed is None:
        return
    for k, v in node.args.items():
        if v not in (None, False, []) and k not in allowed:
            raise Unsupported(f"{k.upper()} in {node.key.upper()}")


class LowererBase:
    """State and dispatch; each seam is a layer on top (setops < from_items < subqueries <
    select = :class:`~superop.ir.lowering.lowerer.Lowerer`)."""

    def __init__(self, tables: dict[tuple[str, ...], TableInfo], case_sensitive: bool = False) -> None:
        self.tables = tables            # normalized table name parts -> resolved table
        self.case_sensitive = case_sensitive
        self.reasons: list[str] = []
        self.cte_sql: dict[str, exp.Expr] = {}  # name -> CTE body AST
        # why a CTE's body became (partly) Opaque: counted only where a FROM reads the CTE
        # (a CTE read only inside a sub-query expression stays that expression's text)
        self.cte_reasons: dict[int, list[str]] = {}    # id(the CTE's node) -> reasons

    def norm(self, name: str) -> str:
        """An identifier as Spark compares it (the qualified AST is normalized already)."""
        return name if self.case_sensitive else name.lower()

    def query(self, q: exp.Expr, ctes: dict[str, Node]) -> Node:
        try:
            return self._query(q, ctes)
        except Unsupported as unsupported:
            self.reasons.append(str(unsupported))
            return self._opaque(q, str(unsupported))
        except (KeyError, ValueError, TypeError, AttributeError, IndexError) as e:
            # A construct the lowering mishandles must not stop the query: carry it
            # through untouched and say so (tests look for this prefix).
            why = f"lowering error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            self.reasons.append(why)
            return self._opaque(q, why)

    def _opaque(self, q: exp.Expr, why: str) -> Opaque:
        body = q.copy()
        self._attach_ctes(body)
        names = tuple(q.named_selects) if isinstance(q, exp.Query) else ()
        return Opaque(body.sql(dialect=DIALECT), names, why)

    def _attach_ctes(self, query: exp.Expr) -> None:
        """Make a query self-contained: prepend the definitions of CTEs it uses
        (transitively), so it can be emitted anywhere."""
        if not isinstance(query, exp.Query):
            return
        needed: list[str] = []

        def visit(node: exp.Expr, local: set[str]) -> None:
            local = local | {self.norm(c.alias_or_name) for c in node.find_all(exp.CTE)}
            for t in node.find_all(exp.Table):
                n = self.norm(t.name)
                if t.args.get("db") is None and n in self.cte_sql and n not in local and n not in needed:
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

    def _query(self, q: exp.Expr, ctes: dict[str, Node]) -> Node:
        ctes = dict(ctes)
        w = q.args.get("with_") or q.args.get("with")
        if w is not None:
            if w.args.get("recursive"):
                raise Unsupported("recursive CTE")
            for cte in w.expressions:
                name = self.norm(cte.alias_or_name)
                self.cte_sql[name] = cte.this
                n_reasons = len(self.reasons)
                ctes[name] = self.query(cte.this, ctes)
                self.cte_reasons[id(ctes[name])] = self.reasons[n_reasons:]
                del self.reasons[n_reasons:]
        check_args(q)
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

    # -- implemented by the layers above (setops, from_items, subqueries, select) -----
    def _select(self, s: exp.Select, ctes: dict[str, Node]) -> Node:
        raise NotImplementedError

    def _order_limit(self, q: exp.Expr, node: Node, _items: None) -> Node:
        raise NotImplementedError

    def _flatten_union(self, q: exp.Expr, ctes: dict[str, Node], out: list[Node],
                       distinct: bool = False) -> None:
        raise NotImplementedError

    @staticmethod
    def _distinct(node: Node) -> Node:
        raise NotImplementedError
