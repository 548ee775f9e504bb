"""FROM items (tables, derived tables, CTE references) and joins, including the
join predicates that a comma join states in WHERE."""
from __future__ import annotations

from typing import Optional, Sequence

from sqlglot import exp

from ..dialect import DIALECT
from ..names import TableName
from ..nodes import Field, Join, Node, Rename, Scan
from .base import Unsupported, check_args
from .exprs import and_all, columns_outside_queries, conjuncts, has_query, nondeterministic
from .scope import all_resolve, resolves
from .setops import SetOpLowering


class FromLowering(SetOpLowering):
    def _source(self, src: exp.Expr, ctes: dict[str, Node]) -> Node:
        check_args(src)
        if isinstance(src, exp.Table):
            if src.args.get("joins") or src.args.get("laterals") or src.args.get("pivots"):
                raise Unsupported("PIVOT/LATERAL on a table")
            try:
                name = TableName.from_table(src)
            except ValueError:
                raise Unsupported(f"table expression {src.sql(dialect=DIALECT)}") from None
            alias = src.alias or self.norm(name.name)
            base: Node
            if len(name.parts) == 1 and self.norm(name.name) in ctes:
                base = ctes[self.norm(name.name)]
                self.reasons.extend(r for r in self.cte_reasons.get(id(base), ()) if r not in self.reasons)
            else:
                info = self.tables.get(name.normalized(self.case_sensitive))
                if info is None:
                    raise Unsupported(f"unknown table {name}")
                base = Scan(name.sql(), info.columns, info.identity, self.norm(name.name), info.volatile,
                            info.keys)
            ta = src.args.get("alias")
            col_aliases = [c.name for c in (ta.columns if ta is not None else [])]
            if col_aliases:                       # FROM t AS x(c1, c2, ...)
                if len(col_aliases) != len(base.fields):
                    raise Unsupported("table alias column count mismatch")
                return Rename(base, tuple(zip(base.fields, col_aliases)), alias)
            if isinstance(base, Scan) and alias == base.qualifier:
                return base
            return Rename(base, tuple((f, f.name) for f in base.fields), alias)
        if isinstance(src, exp.Subquery):
            if any(src.args.get(k) for k in ("order", "limit", "offset", "with_", "with")):
                raise Unsupported("ORDER BY/LIMIT/WITH on a derived table's parentheses")
            base = self.query(src.this, ctes)
            sub_alias: Optional[str] = src.alias or None
            ta = src.args.get("alias")
            col_aliases = [c.name for c in (ta.columns if ta is not None else [])]
            new_names = col_aliases or [f.name for f in base.fields]
            if len(new_names) != len(base.fields):
                raise Unsupported("derived table column alias count mismatch")
            return Rename(base, tuple(zip(base.fields, new_names)), sub_alias)
        raise Unsupported(f"FROM item {src.key}")

    def _from(self, s: exp.Select, ctes: dict[str, Node]) -> Node:
        frm = s.args.get("from_") or s.args.get("from")
        if frm is None:
            raise Unsupported("SELECT without FROM")
        node = self._source(frm.this, ctes)
        for j in s.args.get("joins") or []:
            node = self._join(node, j, ctes)
        if s.args.get("laterals"):
            raise Unsupported("LATERAL VIEW")
        return node

    def _join(self, left: Node, j: exp.Join, ctes: dict[str, Node]) -> Node:
        check_args(j)
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
        conjs = conjuncts(on)
        for c in conjs:
            if has_query(c):
                raise Unsupported("subquery in a join condition")
        equi, residual = self._split_on(conjs, left.fields, right.fields)
        if jk == "cross" and (equi or residual):
            jk = "inner"
        return Join(left, right, jk, tuple(equi), and_all(residual))

    def _split_on(self, conjs: list[exp.Expr], lf: Sequence[Field], rf: Sequence[Field]
                  ) -> tuple[list[tuple[exp.Expr, exp.Expr]], list[exp.Expr]]:
        """ON conjuncts -> (equi pairs (left expr, right expr), residual conjuncts).
        An equality is an equi key only if each side reads exactly one input."""
        equi: list[tuple[exp.Expr, exp.Expr]] = []
        residual: list[exp.Expr] = []
        for c in conjs:
            if isinstance(c, exp.EQ) and not nondeterministic(c):
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
    def _side(e: exp.Expr, lf: Sequence[Field], rf: Sequence[Field]) -> Optional[str]:
        cols = list(columns_outside_queries(e))
        if not cols or any(isinstance(n, exp.Query) for n in e.find_all(exp.Query)):
            return None
        sides: set[str] = set()
        for c in cols:
            in_l = resolves(lf, c)
            in_r = resolves(rf, c)
            if in_l == in_r:
                return None          # unknown or ambiguous: keep it as a residual
            sides.add("L" if in_l else "R")
        return sides.pop() if len(sides) == 1 else None

    def _push_join_preds(self, node: Node, conjs: list[exp.Expr]) -> tuple[Node, list[exp.Expr]]:
        spine: list[Join] = []
        n = node
        while isinstance(n, Join) and n.kind in ("inner", "cross"):
            spine.append(n)
            n = n.left
        if not spine or not conjs:
            return node, list(conjs)
        extra: dict[int, list[exp.Expr]] = {i: [] for i in range(len(spine))}
        rest: list[exp.Expr] = []
        for c in conjs:
            cols = list(columns_outside_queries(c))
            target: Optional[int] = None
            if cols and not has_query(c) and not nondeterministic(c):
                for i in range(len(spine) - 1, -1, -1):       # lowest join first
                    j = spine[i]
                    if all_resolve(j.fields, c):
                        if not all_resolve(j.left.fields, c) and not all_resolve(j.right.fields, c):
                            target = i
                        break
            if target is None:
                rest.append(c)
            else:
                extra[target].append(c)
        if not any(extra.values()):
            return node, rest
        cur: Node = spine[-1].left
        for i in range(len(spine) - 1, -1, -1):
            j = spine[i]
            equi, residual = self._split_on(extra[i], cur.fields, j.right.fields)
            res = ([j.residual] if j.residual is not None else []) + residual
            kind = "inner" if (j.kind == "inner" or equi or res) else "cross"
            cur = Join(cur, j.right, kind, tuple(j.equi) + tuple(equi), and_all(res))
        return cur, rest
