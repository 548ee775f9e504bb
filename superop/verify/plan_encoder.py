"""The plan IR over a bounded symbolic table: one encoder per operator
(:class:`PlanEncoder`), with SQL's NULL rules, bag semantics and ANSI errors.

Every Scan of the encoder's table reads the same rows, so a model of the solver is one
concrete input table. ``seeds`` replaces sub-plans by given relations (by node identity):
the template proofs encode what lies above a GROUP BY for one key's group this way.

Errors: an operator raises when evaluating one of its expressions raises on a row it
evaluates: σ / π on every present input row, GROUP BY keys and aggregate arguments on
every present input row (every aggregate of a group is computed, whatever the item
expressions use of it), item expressions once per group, window functions per row.
A hash join evaluates its equi-key expressions on every present row of each side and its
residual condition only on pairs whose equi keys are equal (every pair without equi
keys). The join semantics (pairs, null-extended rows, semi/anti rows) live in
:func:`pair_rows` / :func:`side_rows` so that the template proofs reuse them.
"""
from __future__ import annotations

from typing import Optional, Sequence

import z3
from sqlglot import exp

from ..ir.dialect import DIALECT
from ..ir.nodes import (Aggregate, Join, Limit, Node, Opaque, Project, Rename, Scan, Select, Sort,
                        UnionAll, Window, resolve_field)
from . import folds
from ..dsl import BY_FUNCS, by_parts
from .aggregates import agg_call_func, agg_calls
from .exprs import Ctx, cmp, ev
from .relations import Rel, Table, clean, first_of_group, members_of, union
from .result import Unsupported
from .values import (FALSE, NULL, TRUE, V, any_err, common_kind, is_true, lt, not_distinct,
                     or_all, rows_not_distinct)

def row_ctx(fields, vals) -> Ctx:
    """Columns of an operator's input row, resolved against its input fields."""
    def col(c: exp.Column) -> V:
        try:
            return vals[resolve_field(fields, c)]
        except KeyError as err:
            raise Unsupported(str(err)) from None
    return Ctx(col)


# ---------------------------------------------------------------------------
# join semantics, shared with the template proofs
# ---------------------------------------------------------------------------
def pair_rows(kind: str, L: Sequence, R: Sequence, M) -> list:
    """The matched pairs an inner/outer/cross join outputs (none for semi/anti)."""
    if kind not in ("inner", "left", "right", "full", "cross"):
        return []
    return [(M[i][j], list(lv) + list(rv)) for i, (_, lv) in enumerate(L) for j, (_, rv) in enumerate(R)]


def side_rows(kind: str, side: str, rows: Sequence, matched: Sequence[z3.BoolRef], other_width: int) -> list:
    """The rows a join outputs for the rows of one ``side`` given whether each was matched
    by some row of the other side: null-extended rows (outer joins), the rows of a
    semi / anti join (left side only)."""
    nulls = [NULL] * other_width
    out = []
    if kind == "semi" and side == "left":
        return [(m, list(v)) for (_, v), m in zip(rows, matched)]
    if kind == "anti" and side == "left":
        return [(z3.And(p, z3.Not(m)), list(v)) for (p, v), m in zip(rows, matched)]
    if (side == "left" and kind in ("left", "full")) or (side == "right" and kind in ("right", "full")):
        for (p, v), m in zip(rows, matched):
            out.append((z3.And(p, z3.Not(m)), list(v) + nulls if side == "left" else nulls + list(v)))
    return out


class PlanEncoder:
    """Encodes an IR sub-plan over ONE base table (every Scan of it reads the same rows)."""

    def __init__(self, table: Table, seeds: Optional[dict] = None):
        self.table = table
        self.K = table.K
        self.memo: dict[int, Rel] = dict(seeds or {})

    def row_ctx(self, fields, vals) -> Ctx:
        """How an operator's expressions see one input row (override to extend)."""
        return row_ctx(fields, vals)

    def encode(self, node: Node) -> Rel:
        r = self.memo.get(id(node))
        if r is None:
            fn = getattr(self, "_" + type(node).__name__.lower(), None)
            if fn is None:
                raise Unsupported(f"operator {node.op} is not modelled")
            r = fn(node)
            self.memo[id(node)] = r
        return r

    # -- leaves / unary ----------------------------------------------------
    def _scan(self, n: Scan) -> Rel:
        if n.table != self.table.name:
            raise Unsupported(f"sub-plan reads a second table {n.table!r}")
        if [c for c, _ in n.columns] != [c for c, _ in self.table.columns]:
            raise Unsupported(f"scan columns of {n.table} differ from the table's")
        return self.table.rel()

    def _opaque(self, n: Opaque) -> Rel:
        raise Unsupported(f"opaque SQL ({n.reason or 'not lowered'})")

    def _select(self, n: Select) -> Rel:
        child = self.encode(n.child)
        f = n.child.fields
        rows, errs = [], [child.err]
        for p, vals in child.rows:
            x = ev(n.predicate, self.row_ctx(f, vals))
            rows.append((z3.And(p, is_true(x)), vals))
            errs.append(z3.And(p, x.err))
        return Rel(rows, or_all(errs))

    def _project(self, n: Project) -> Rel:
        child = self.encode(n.child)
        f = n.child.fields
        rows, errs = [], [child.err]
        for p, vals in child.rows:
            items = [ev(x, self.row_ctx(f, vals)) for x, _ in n.items]
            rows.append((p, [clean(x) for x in items]))
            errs.append(z3.And(p, any_err(items)))
        return Rel(rows, or_all(errs))

    def _rename(self, n: Rename) -> Rel:
        child = self.encode(n.child)
        f = n.child.fields
        idx = []
        for fld, _ in n.mapping:
            try:
                idx.append(resolve_field(f, fld.column()))
            except KeyError as err:
                raise Unsupported(str(err)) from None
        return Rel([(p, [vals[i] for i in idx]) for p, vals in child.rows], child.err)

    def _sort(self, n: Sort) -> Rel:
        return self.encode(n.child)   # ORDER BY does not change the bag

    def _limit(self, n: Limit) -> Rel:
        raise Unsupported("LIMIT is not modelled (order-dependent)")

    # -- aggregate ---------------------------------------------------------
    def agg_inputs(self, n: Aggregate, vals) -> tuple[list[V], list[tuple[str, Optional[V]]], z3.BoolRef]:
        """For one input row of ``n``: its grouping-key values, each aggregate call's
        (fold, argument value) in :func:`agg_calls` order, and the error of evaluating them."""
        ctx = self.row_ctx(n.child.fields, vals)
        keys = [ev(k, ctx) for k in n.keys]
        args: list = []
        for call in agg_calls(n):
            func, arg = agg_call_func(call)
            if func in BY_FUNCS:          # (payload, ordering), both evaluated on every row
                pay, order = by_parts(arg)
                args.append((func, folds.ByArg(ev(pay, ctx), ev(order, ctx))))
            else:
                args.append((func, None if arg is None else ev(arg, ctx)))
        err = or_all([any_err(keys)] + [x.err for _, x in args if x is not None])
        return ([clean(k) for k in keys],
                [(f, None if x is None else x.clean() if isinstance(x, folds.ByArg) else clean(x)) for f, x in args],
                err)

    def group_row(self, n: Aggregate, key_ctx: Optional[Ctx], calls: Sequence[V]) -> tuple[list[V], z3.BoolRef]:
        """The output row of one group: the items evaluated with the group's key columns
        (``key_ctx``; None for a global aggregate) and the finalized aggregate calls (in
        :func:`agg_calls` order). Returns (values, error): every call is computed."""
        it = iter(calls)
        by_id = {}
        for c in agg_calls(n):
            by_id[id(c)] = next(it)

        def aggf(a: exp.Expression) -> V:
            if id(a) not in by_id:
                raise Unsupported(f"aggregate {a.sql(dialect=DIALECT)} nested in an aggregate")
            return by_id[id(a)]

        def col(c: exp.Column) -> V:
            if key_ctx is None:
                raise Unsupported(f"column {c.sql()} outside an aggregate in a global aggregate")
            return key_ctx.col(c)
        ctx = Ctx(col, aggf)
        items = [ev(x, ctx) for x, _ in n.items]
        return [clean(x) for x in items], z3.Or(any_err(items), any_err(list(calls)))

    def _aggregate(self, n: Aggregate) -> Rel:
        child = self.encode(n.child)
        rows = child.rows
        f = n.child.fields
        ins = [self.agg_inputs(n, vals) for _, vals in rows]
        errs = [child.err] + [z3.And(p, e) for (p, _), (_, _, e) in zip(rows, ins)]
        keys = [k for k, _, _ in ins]
        if not n.keys:  # global aggregate: exactly one row, also over empty input
            reps = [(TRUE, [p for p, _ in rows], None)]
        else:
            firsts = first_of_group(rows, keys)
            reps = [(firsts[i], members_of(rows, keys, i), self.row_ctx(f, rows[i][1])) for i in range(len(rows))]
        funcs = [agg_call_func(c)[0] for c in agg_calls(n)]
        tie = folds.tie_order(len(rows)) if any(f in BY_FUNCS for f in funcs) else []
        out = []
        for present, members, rep_ctx in reps:
            calls = []
            for ci, func in enumerate(funcs):
                pairs = [(m, ins[j][1][ci][1]) for j, m in enumerate(members)]
                if func in BY_FUNCS:      # ties resolved in the order the program reads too
                    calls.append(folds.extremum_by(func, [(m, a.payload, a.ordering) for m, a in pairs], tie))
                    continue
                calls.append(folds.fold(func, pairs, self.K))
            vals, err = self.group_row(n, rep_ctx, calls)
            out.append((present, vals))
            errs.append(z3.And(present, err))
        return Rel(out, or_all(errs))

    # -- window ------------------------------------------------------------
    def _window(self, n: Window) -> Rel:
        """Aggregate window functions over PARTITION BY with the whole partition as frame
        (no ORDER BY), Spark's default RANGE frame under ORDER BY (all rows up to the
        current row's peers), or ``ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW``; and
        ``row_number()``, ``rank()`` and ``dense_rank()`` under ORDER BY. Rows that tie on
        the ORDER BY are ordered by their position in the symbolic table — any order the
        solver chooses, so a result that depends on how Spark breaks ties is found (rank
        and dense_rank give peers one value: they do not depend on it). Other frames and
        ranking functions are not modelled."""
        child = self.encode(n.child)
        f = n.child.fields
        rows = child.rows
        ctxs = [self.row_ctx(f, vals) for _, vals in rows]
        cols = []
        errs = [child.err]
        for w, _name in n.items:
            w = w.this if isinstance(w, exp.Alias) else w
            if not isinstance(w, exp.Window) or not isinstance(w.this, (exp.AggFunc, exp.RowNumber,
                                                                         exp.Rank, exp.DenseRank)):
                raise Unsupported(f"window item {w.sql(dialect=DIALECT)}")
            if isinstance(w.this, (exp.Lag, exp.Lead)):
                col, err = self._offset(w, rows, ctxs)
                cols.append(col)
                errs.append(err)
                continue
            spec = w.args.get("spec")
            order = w.args.get("order")
            frame = _frame(spec, order)
            parts = [[ev(k, c) for k in (w.args.get("partition_by") or [])] for c in ctxs]
            ords = []
            for o in (order.expressions if order is not None else []):
                desc = bool(o.args.get("desc"))
                nf = o.args.get("nulls_first")
                nf = (not desc) if nf is None else bool(nf)
                ords.append((desc, nf, [ev(o.this, c) for c in ctxs]))
            rownum = isinstance(w.this, exp.RowNumber)
            ranking = isinstance(w.this, (exp.Rank, exp.DenseRank))
            if rownum and not ords:
                raise Unsupported("row_number() without ORDER BY (nondeterministic)")
            if ranking and (not ords or w.this.expressions):
                raise Unsupported(f"{w.this.sql(dialect=DIALECT)} without ORDER BY or with arguments")
            func, arg = (None, None) if rownum or ranking else agg_call_func(w.this)
            if func in BY_FUNCS:
                raise Unsupported(f"{func} as a window function is not modelled")
            args = [None if arg is None else ev(arg, c) for c in ctxs]
            for i, (p, _) in enumerate(rows):
                row_errs = [any_err(parts[i])] + [vals[i].err for _, _, vals in ords]
                if args[i] is not None:
                    row_errs.append(args[i].err)
                errs.append(z3.And(p, or_all(row_errs)))
            out = []
            for i in range(len(rows)):
                same = [z3.And(rows[j][0], rows_not_distinct(parts[j], parts[i])) for j in range(len(rows))]
                if rownum:
                    out.append(V(_row_number(ords, same, i), FALSE, "int", FALSE, 32))
                    continue
                if ranking:
                    cnt = _rank_before(ords, rows, parts, same, i, isinstance(w.this, exp.DenseRank))
                    out.append(V(cnt + 1, FALSE, "int", FALSE, 32))
                    continue
                members = []
                for j in range(len(rows)):
                    m = same[j]
                    if frame == "range" and ords:
                        m = z3.And(m, _at_or_before(ords, j, i))
                    elif frame == "rows":
                        m = z3.And(m, _at_or_before(ords, j, i),
                                   z3.Or(z3.Not(_at_or_before(ords, i, j)), z3.BoolVal(j <= i)))
                    members.append(m)
                v = folds.fold(func, [(m, None if a is None else clean(a)) for m, a in zip(members, args)], self.K)
                errs.append(z3.And(rows[i][0], v.err))
                out.append(clean(v))
            cols.append(out)
        return Rel([(p, list(vals) + [c[i] for c in cols]) for i, (p, vals) in enumerate(rows)], or_all(errs))

    def _offset(self, w: exp.Window, rows, ctxs) -> tuple[list[V], z3.BoolRef]:
        """``lag(x, k)`` / ``lead(x, k)`` under ORDER BY: x of the row k positions before /
        after in its partition's order (ties in the order of table positions, as
        ``row_number()``), NULL when there is none; x is evaluated on every row."""
        f = w.this
        order = w.args.get("order")
        if order is None or f.args.get("default") is not None:
            raise Unsupported(f"{f.sql(dialect=DIALECT)} without ORDER BY or with a default")
        off = f.args.get("offset")
        try:
            k = 1 if off is None else int(off.this) if isinstance(off, exp.Literal) and not off.is_string else None
        except ValueError:
            k = None
        if k is None:
            raise Unsupported(f"{f.sql(dialect=DIALECT)}: the offset is not an integer literal")
        k = -k if isinstance(f, exp.Lag) else k
        ords = [(bool(o.args.get("desc")),
                 (not bool(o.args.get("desc"))) if o.args.get("nulls_first") is None else bool(o.args["nulls_first"]),
                 [ev(o.this, c) for c in ctxs]) for o in order.expressions]
        parts = [[ev(p, c) for p in (w.args.get("partition_by") or [])] for c in ctxs]
        args = [ev(f.this, c) for c in ctxs]
        err = or_all([z3.And(p, or_all([any_err(parts[i]), args[i].err] + [v[i].err for _, _, v in ords]))
                      for i, (p, _) in enumerate(rows)])
        kind = common_kind(args)
        width = args[0].width if args else None
        pos = []
        sames = []
        for i in range(len(rows)):
            same = [z3.And(rows[j][0], rows_not_distinct(parts[j], parts[i])) for j in range(len(rows))]
            sames.append(same)
            pos.append(_row_number(ords, same, i))
        out = []
        for i in range(len(rows)):
            hits = [z3.And(sames[i][j], pos[j] == pos[i] + k) for j in range(len(rows)) if j != i]
            cands = [args[j] for j in range(len(rows)) if j != i]
            if kind is None or not hits:
                out.append(NULL)
                continue
            val, null = cands[-1].val(kind), TRUE
            for h, a in zip(reversed(hits), reversed(cands)):
                val = z3.If(h, a.val(kind), val)
                null = z3.If(h, a.null, null)
            out.append(V(val, null, kind, FALSE, width))
        return out, err

    # -- multi-input -------------------------------------------------------
    def join_match(self, n: Join, lv: Sequence[V], rv: Sequence[V]) -> tuple[z3.BoolRef, z3.BoolRef, z3.BoolRef]:
        """(the ON condition is TRUE, the equi keys are all equal, the residual raises when
        evaluated) for one left row and one right row."""
        ctx = self.row_ctx(n.left.fields + n.right.fields, list(lv) + list(rv))
        eq = [cmp(exp.EQ, ev(a, ctx), ev(b, ctx)) for a, b in n.equi]
        eq_true = z3.And(*[is_true(c) for c in eq]) if eq else TRUE
        if n.residual is None:
            return eq_true, eq_true, FALSE
        r = ev(n.residual, ctx)
        return z3.And(eq_true, is_true(r)), eq_true, r.err

    def join_key_err(self, n: Join, side: str, vals: Sequence[V]) -> z3.BoolRef:
        """Error of evaluating the equi-key expressions of one row of ``side``."""
        nl, nr = len(n.left.fields), len(n.right.fields)
        full = list(vals) + [NULL] * nr if side == "left" else [NULL] * nl + list(vals)
        ctx = self.row_ctx(n.left.fields + n.right.fields, full)
        return or_all([ev(a if side == "left" else b, ctx).err for a, b in n.equi])

    def _join(self, n: Join) -> Rel:
        L, R = self.encode(n.left), self.encode(n.right)
        nl, nr = len(n.left.fields), len(n.right.fields)
        errs = [L.err, R.err]
        errs += [z3.And(p, self.join_key_err(n, "left", v)) for p, v in L.rows]
        errs += [z3.And(p, self.join_key_err(n, "right", v)) for p, v in R.rows]
        if n.kind == "cross":
            return Rel([(z3.And(lp, rp), lv + rv) for lp, lv in L.rows for rp, rv in R.rows], or_all(errs))
        M = []
        for lp, lv in L.rows:
            row = []
            for rp, rv in R.rows:
                m, eq, rerr = self.join_match(n, lv, rv)
                both = z3.And(lp, rp)
                row.append(z3.And(both, m))
                errs.append(z3.And(both, eq if n.equi else TRUE, rerr))
            M.append(row)
        l_any = [or_all(M[i]) for i in range(len(L.rows))]
        r_any = [or_all([M[i][j] for i in range(len(L.rows))]) for j in range(len(R.rows))]
        out = pair_rows(n.kind, L.rows, R.rows, M)
        out += side_rows(n.kind, "left", L.rows, l_any, nr)
        out += side_rows(n.kind, "right", R.rows, r_any, nl)
        return Rel(out, or_all(errs))

    def _unionall(self, n: UnionAll) -> Rel:
        width = len(n.inputs[0].fields)
        rels = []
        for c in n.inputs:
            if len(c.fields) != width:
                raise Unsupported("UNION ALL of inputs with different widths")
            rels.append(self.encode(c))
        return union(rels)


def _frame(spec, order) -> str:
    """whole | range | rows (the frames the encoder models)."""
    if spec is None:
        return "range" if order is not None else "whole"
    kind = str(spec.args.get("kind") or "").upper()
    start = f"{spec.args.get('start')} {spec.args.get('start_side') or ''}".upper().strip()
    end = f"{spec.args.get('end')} {spec.args.get('end_side') or ''}".upper().strip()
    if order is None and start.startswith("UNBOUNDED") and end.startswith("UNBOUNDED"):
        return "whole"
    if kind == "ROWS" and order is not None and start == "UNBOUNDED PRECEDING" and end == "CURRENT ROW":
        return "rows"
    raise Unsupported(f"window frame {spec.sql(dialect=DIALECT)}")


def _row_number(ords, same, i: int) -> z3.ArithRef:
    """row_number() of row i among the rows ``same`` of its partition: ties broken by table
    position."""
    before = [z3.And(same[j], _at_or_before(ords, j, i),
                     z3.Or(z3.Not(_at_or_before(ords, i, j)), z3.BoolVal(j < i)))
              for j in range(len(same)) if j != i]
    cnt = z3.Sum([z3.If(b, 1, 0) for b in before]) if before else z3.IntVal(0)
    return cnt + 1


def _rank_before(ords, rows, parts, same, i: int, dense: bool) -> z3.ArithRef:
    """rank() - 1 of row i: the rows of its partition (``same[j]``) strictly before it
    (peers excluded); dense_rank() - 1: the distinct peer groups strictly before it, each
    counted at its first row (in table position)."""
    def strictly(j: int, k: int) -> z3.BoolRef:
        return z3.And(_at_or_before(ords, j, k), z3.Not(_at_or_before(ords, k, j)))

    terms = []
    for j in range(len(rows)):
        if j == i:
            continue
        t = z3.And(same[j], strictly(j, i))
        if dense:   # no earlier row of j's partition is j's peer
            earlier = [z3.And(rows[k][0], rows_not_distinct(parts[k], parts[j]),
                              _at_or_before(ords, k, j), _at_or_before(ords, j, k)) for k in range(j)]
            t = z3.And(t, z3.Not(or_all(earlier)))
        terms.append(z3.If(t, 1, 0))
    return z3.Sum(terms) if terms else z3.IntVal(0)


def _at_or_before(ords, j: int, i: int) -> z3.BoolRef:
    """Row j precedes row i or is its peer under ORDER BY ``ords`` (RANGE frame)."""
    tail = TRUE
    for desc, nf, vals in reversed(ords):
        a, b = vals[j], vals[i]
        if a.v is None or b.v is None:
            raise Unsupported("ORDER BY a NULL literal")
        k = common_kind([a, b])
        less = lt(b.val(k), a.val(k), k) if desc else lt(a.val(k), b.val(k), k)
        both = z3.And(z3.Not(a.null), z3.Not(b.null))
        nulls = z3.And(a.null, z3.Not(b.null)) if nf else z3.And(z3.Not(a.null), b.null)
        tail = z3.Or(nulls, z3.And(both, less), z3.And(not_distinct(a, b), tail))
    return tail
