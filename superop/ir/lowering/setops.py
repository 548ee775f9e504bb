"""UNION [ALL] inputs and ORDER BY / LIMIT / OFFSET on a query."""
from __future__ import annotations

from sqlglot import exp

from ..nodes import Limit, Node, Sort, resolve_field
from .base import LowererBase, Unsupported
from .exprs import columns_outside_queries


class SetOpLowering(LowererBase):
    def _flatten_union(self, q: exp.Expr, ctes: dict[str, Node], out: list[Node],
                       distinct: bool = False) -> None:
        """Inputs of nested unions. Under UNION ALL only UNION ALL children flatten;
        under a distinct UNION any union child does (DISTINCT absorbs inner ones)."""
        for side in (q.this, q.expression):
            if (isinstance(side, exp.Union) and (distinct or not side.args.get("distinct"))
                    and not any(side.args.get(k) for k in ("order", "limit", "offset", "with_",
                                                          "with", "by_name", "side", "kind"))):
                self._flatten_union(side, ctes, out, distinct)
            else:
                out.append(self.query(side, ctes))

    def _order_limit(self, q: exp.Expr, node: Node, _items: None) -> Node:
        order = q.args.get("order")
        if order is not None:
            ords: list[exp.Ordered] = []
            for o in order.expressions:
                o = o.copy()
                for c in list(columns_outside_queries(o)):
                    try:
                        resolve_field(node.fields, c)
                    except KeyError:
                        raise Unsupported("ORDER BY on a column not in the output") from None
                ords.append(o)
            node = Sort(node, tuple(ords))
        return self._limit(q, node)

    def _limit(self, q: exp.Expr, node: Node) -> Node:
        lim = q.args.get("limit")
        off = q.args.get("offset")
        if lim is None and off is None:
            return node
        if lim is None:
            raise Unsupported("OFFSET without LIMIT")
        n = self._int(lim.expression)
        o = self._int(off.expression) if off is not None else 0
        return Limit(node, n, o)

    @staticmethod
    def _int(e: object) -> int:
        if isinstance(e, exp.Literal) and not e.is_string:
            try:
                return int(e.this)
            except ValueError:
                pass
        raise Unsupported("non-literal LIMIT/OFFSET")
