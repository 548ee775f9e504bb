"""Sinking a self-join onto the input it reads — a semantics-preserving rewrite of the plan
IR that the matching path runs before any family looks at the plan (:func:`sink`; the same
plan object when nothing moves).

A decorrelated sub-query joins the WHOLE outer block: ``σ_p(t1 ⋈ store ⋈ customer) ⟕ γ(t)``
(TPC-DS q1: ``WHERE ctr1.x > (SELECT avg(x) * 1.2 FROM ctr ctr2 WHERE ctr2.k = ctr1.k)``),
``... ⋉ cs2 ON cs1.o = cs2.o AND cs1.w <> cs2.w`` (q16's EXISTS). When the join's ON clause
reads, on its left side, only ONE input ``L`` of that inner join region, the join commutes
down onto ``L``:

* left:       ``σ_p(T) ⟕_c Y  =  σ_p(T[L := L ⟕_c Y])`` (a filter on the preserved side
  commutes with a left join; an inner join of L with the other inputs commutes with a left
  join whose condition reads L and Y only);
* semi, anti: ``σ_p(T) ⋉_c Y  =  σ_p(T[L := L ⋉_c Y])`` (both keep or drop rows of L).

A column of another input that an inner equality of the region equates with a column of
``L`` of the same declared type reads that column instead (q32: ``item.i_item_sk`` for
``cs_item_sk``, equal on every row of the region). The rewrite is done only where it makes
a self-join — ``Y`` reads (through σ/π/ρ/γ) the very node ``L`` reads — and, when the
sub-query's input is a sub-join of the outer block's inputs (q32: ``catalog_sales ⋈
date_dim`` filtered by the date, inside ``catalog_sales ⋈ item ⋈ date_dim`` with the same
conjuncts), after regrouping the region so that sub-join is one of its inputs (the same
node: it becomes the shared input of the self-join).

A left join's columns move inside the region: done only under parents that read columns by
name (through filters: a projection, an aggregate, a ρ). Nothing moves in a region with a
nondeterministic conjunct or one that nests a sub-query in a join condition.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, cast

from sqlglot import exp

from ...ir.analysis import walk_edge
from ...ir.functions import is_nondeterministic_expr
from ...ir.lowering.exprs import conjuncts
from ...ir.nodes import Aggregate, Field, Join, Node, Project, Rename, Select, walk
from .diamond import PlanContext, field_type, find_field, find_field_strict

_SINKS = ("left", "semi", "anti")
_CHAIN = (Select, Project, Rename, Aggregate)


@dataclass
class _Region:
    """A filter chain over a tree of unshared inner/cross joins: its leaves in column
    order and every conjunct (joins' and filters'), each with the (leaf, field) slots of
    the columns it reads."""
    preds: list[exp.Expr]                  # the filters above the join tree
    root: Join
    leaves: list[Node]
    conjs: list["_Conj"]

    def slots(self) -> list[tuple[int, int]]:
        return [(i, p) for i, leaf in enumerate(self.leaves) for p in range(len(leaf.fields))]


@dataclass
class _Conj:
    expr: exp.Expr
    cols: list[tuple[int, int]]            # per column of expr (find_all order): (leaf, field)
    where: bool                            # from the filter chain (else a join condition)

    @property
    def leaves(self) -> frozenset[int]:
        return frozenset(leaf for leaf, _ in self.cols)


def sink(plan: Node) -> Node:
    """``plan`` with every self-join of a decorrelated sub-query sunk onto the input it reads
    (see the module doc); ``plan`` itself when nothing moves."""
    ctx = PlanContext(plan)
    memo: dict[int, Node] = {}
    changed = False
    for n in walk(plan):
        kids = tuple(memo[id(c)] for c in n.children)
        same = n if all(a is b for a, b in zip(kids, n.children)) else n.with_children(kids)
        new = _sink_join(same, n, ctx) if isinstance(same, Join) and same.kind in _SINKS else None
        if new is None and isinstance(same, Join) and same.kind in ("semi", "anti"):
            new = _inner_filters(same, ctx)
        memo[id(n)] = same if new is None else new
        changed = changed or new is not None
    return memo[id(plan)] if changed else plan


def _sink_join(j: Join, original: Node, ctx: PlanContext) -> Optional[Node]:
    if ctx.is_shared(original):
        return None
    reg = _region(j.left, ctx)
    if reg is None:
        return None
    bottom = _chain_bottom(j.right, ctx)
    target = _self_leaf(reg, bottom, ctx)
    reordered = j.kind == "left"          # the right side's columns move inside the region
    if target is None:
        exposed = _expose(reg, bottom)
        if exposed is None:
            return None
        reg, reordered = exposed, True
        target = _self_leaf(reg, bottom, ctx)
        if target is None:
            return None
    if reordered and not ctx.read_by_name(original):
        return None
    on = _on_clause(j, reg, target)
    if on is None:
        return None
    equi, residual = on
    leaves = list(reg.leaves)
    sunk = Join(leaves[target], j.right, j.kind, equi, residual)
    leaves[target] = (_inner_filters(sunk, ctx) or sunk) if j.kind in ("semi", "anti") else sunk
    return _rebuild(reg, leaves)


def _strictly_in(fields: Sequence[Field], c: exp.Column) -> bool:
    """``c`` names exactly one of ``fields`` (its qualifier too, when it has one)."""
    return find_field_strict(fields, c) is not None


def _inner_filters(j: Join, ctx: PlanContext) -> Optional[Join]:
    """A semi / anti self-join (both inputs read one node) with the ON conjuncts that read
    its inner input only as a filter on that input (``EXISTS (... WHERE t2.k = t1.k AND
    t2.c > 0)``: which inner rows exist does not depend on the outer row), the rest kept;
    None when there is none, or the join is not a self-join."""
    if j.residual is None or _chain_bottom(j.right, ctx) is not _chain_bottom(j.left, ctx):
        return None
    lf, rf = j.left.fields, j.right.fields
    inner: list[exp.Expr] = []
    rest: list[exp.Expr] = []
    for c in conjuncts(j.residual):
        cols = list(c.find_all(exp.Column))
        own = cols and all(_strictly_in(rf, x) and not _strictly_in(lf, x) for x in cols)
        ok = own and not is_nondeterministic_expr(c) and not any(isinstance(x, exp.Query) for x in c.walk())
        (inner if ok else rest).append(c)
    if not inner:
        return None
    return Join(j.left, Select(j.right, cast(exp.Expr, and_all(inner))), j.kind, j.equi, and_all(rest))


# ---------------------------------------------------------------------------
# the region under the join's left input
# ---------------------------------------------------------------------------
def _region(n: Node, ctx: PlanContext) -> Optional[_Region]:
    preds: list[exp.Expr] = []
    while isinstance(n, Select) and not ctx.is_shared(n):
        preds = conjuncts(n.predicate) + preds
        n = n.child
    if not isinstance(n, Join) or n.kind not in ("inner", "cross") or ctx.is_shared(n):
        return None
    leaves: list[Node] = []
    joins: list[Join] = []

    def go(x: Node) -> None:
        if isinstance(x, Join) and x.kind in ("inner", "cross") and (x is n or not ctx.is_shared(x)):
            joins.append(x)
            go(x.left)
            go(x.right)
        else:
            leaves.append(x)
    go(n)
    reg = _Region(preds, n, leaves, [])
    slots = reg.slots()
    offsets = {}
    for jn in joins:
        offsets[id(jn)] = _join_slots(jn, reg)
    for jn in joins:
        fields = jn.left.fields + jn.right.fields
        parts = [exp.EQ(this=a.copy(), expression=b.copy()) for a, b in jn.equi] + conjuncts(jn.residual)
        for p in parts:
            c = _attribute(p, fields, offsets[id(jn)], where=False)
            if c is None:
                return None
            reg.conjs.append(c)
    for p in preds:
        c = _attribute(p, n.fields, slots, where=True)
        if c is None:
            return None
        reg.conjs.append(c)
    return reg


def _join_slots(jn: Join, reg: _Region) -> list[tuple[int, int]]:
    """The (leaf, field) slots of a region join's input columns (left then right)."""
    def of(x: Node) -> list[tuple[int, int]]:
        for i, leaf in enumerate(reg.leaves):
            if x is leaf:
                return [(i, p) for p in range(len(leaf.fields))]
        assert isinstance(x, Join)
        return of(x.left) + of(x.right)
    return of(jn.left) + of(jn.right)


def _attribute(e: exp.Expr, fields: Sequence[Field], slots: Sequence[tuple[int, int]],
               where: bool) -> Optional[_Conj]:
    if is_nondeterministic_expr(e):
        return None
    if any(isinstance(x, exp.Query) for x in e.walk()):
        # a sub-query (uncorrelated: TPC-DS q6's month) stays in the filter it is in
        return _Conj(e, [], where) if where else None
    cols = []
    for c in e.find_all(exp.Column):
        i = find_field(fields, c)
        if i is None:
            return None
        cols.append(slots[i])
    return _Conj(e, cols, where)


def _chain_bottom(n: Node, ctx: PlanContext) -> Node:
    """Where ``n``'s chain of σ/π/ρ/γ stops: a shared node, or a filter chain over a join
    (a sub-join the region may hold), or any other operator."""
    while isinstance(n, _CHAIN) and not ctx.is_shared(n):
        below = walk_edge(n, ctx.shared_ids, (Select,)).bottom
        if isinstance(n, Select) and isinstance(below, Join) and not ctx.is_shared(below):
            return n
        n = n.children[0]
    return n


def _self_leaf(reg: _Region, bottom: Node, ctx: PlanContext) -> Optional[int]:
    """The one input of the region that reads ``bottom`` through σ/π/ρ."""
    hits = [i for i, leaf in enumerate(reg.leaves)
            if leaf is bottom or walk_edge(leaf, ctx.shared_ids).bottom is bottom]
    return hits[0] if len(hits) == 1 else None



# ---------------------------------------------------------------------------
# the ON clause over the target input
# ---------------------------------------------------------------------------
def _on_clause(j: Join, reg: _Region, target: int
               ) -> Optional[tuple[tuple[tuple[exp.Expr, exp.Expr], ...], Optional[exp.Expr]]]:
    """The join's ON clause with its left-side columns read from the target input (an
    equal column of another input moved over, see the module doc); None if it reads
    anything else of the region."""
    classes = _equalities(reg)
    slots = reg.slots()
    fields = [reg.leaves[i].fields[p] for i, p in slots]      # the region's columns, in its order
    lf, rf = j.left.fields, j.right.fields
    leaf = reg.leaves[target]
    scope = tuple(leaf.fields) + tuple(rf)

    def move(e: exp.Expr) -> Optional[exp.Expr]:
        e = e.copy()
        for c in list(e.find_all(exp.Column)):
            if _strictly_in(rf, c) and not _strictly_in(lf, c):
                continue                                     # the right side's own column
            i = find_field_strict(fields, c) if _strictly_in(lf, c) else None
            if i is None:
                return None
            at = _in_target(slots[i], target, classes, reg)
            if at is None:
                return None
            new = leaf.fields[at].column()
            if find_field(scope, new) != at:
                return None
            if c is e:
                return new
            c.replace(new)
        return e
    equi = []
    for a, b in j.equi:
        ma = move(a)
        if ma is None:
            return None
        equi.append((ma, b.copy()))
    residual = None
    if j.residual is not None:
        residual = move(j.residual)
        if residual is None:
            return None
    return tuple(equi), residual


def _in_target(slot: tuple[int, int], target: int, classes: "_Classes", reg: _Region) -> Optional[int]:
    leaf, pos = slot
    if leaf == target:
        return pos
    t = field_type(reg.leaves[leaf], pos)
    for other in classes.members(slot):
        if other[0] == target and t is not None and field_type(reg.leaves[target], other[1]) == t:
            return other[1]
    return None


class _Classes:
    """Columns equated by a bare ``col = col`` conjunct of the region (union-find)."""

    def __init__(self) -> None:
        self.parent: dict[tuple[int, int], tuple[int, int]] = {}

    def find(self, x: tuple[int, int]) -> tuple[int, int]:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            x = self.parent[x]
        return x

    def union(self, a: tuple[int, int], b: tuple[int, int]) -> None:
        self.parent[self.find(a)] = self.find(b)

    def members(self, x: tuple[int, int]) -> list[tuple[int, int]]:
        r = self.find(x)
        return sorted(y for y in list(self.parent) if self.find(y) == r)


def _equalities(reg: _Region) -> _Classes:
    uf = _Classes()
    for c in reg.conjs:
        e = c.expr
        if isinstance(e, exp.EQ) and isinstance(e.this, exp.Column) and isinstance(e.expression, exp.Column) \
                and len(c.cols) == 2:
            uf.union(c.cols[0], c.cols[1])
    return uf


# ---------------------------------------------------------------------------
# rebuilding the region
# ---------------------------------------------------------------------------
def _rebuild(reg: _Region, leaves: list[Node]) -> Node:
    """The region's joins (same tree) over new leaves, and its filters above."""
    index = {id(x): i for i, x in enumerate(reg.leaves)}

    def go(n: Node) -> Node:
        i = index.get(id(n))
        if i is not None:
            return leaves[i]
        assert isinstance(n, Join)
        return Join(go(n.left), go(n.right), n.kind, n.equi, n.residual)
    body = go(reg.root)
    where = and_all(reg.preds)
    return Select(body, where) if where is not None else body


def _expose(reg: _Region, bottom: Node) -> Optional[_Region]:
    """The region regrouped so that ``bottom`` — a filter chain over inner joins of some of
    the region's own inputs, every conjunct of which the region has too — is ONE input (the
    same node), the other inputs joined to it by the region's remaining conjuncts; None
    when ``bottom`` is not such a sub-join of the region."""
    sub = _region(bottom, PlanContext(bottom))
    if sub is None:
        return None
    ids = [id(x) for x in reg.leaves]
    if any(id(x) not in ids or ids.count(id(x)) != 1 for x in sub.leaves):
        return None
    remap = [ids.index(id(x)) for x in sub.leaves]
    mine = {_canon(c, [remap[leaf] for leaf, _ in c.cols]) for c in sub.conjs}
    if any(not c.cols for c in sub.conjs):
        return None
    rest = [c for c in reg.conjs if _canon(c, [leaf for leaf, _ in c.cols]) not in mine]
    if len(reg.conjs) - len(rest) < len(sub.conjs):
        return None                                     # a conjunct of the sub-join is not the region's
    return _regrouped(reg, bottom, set(remap), rest)


def _canon(c: _Conj, leaves: Sequence[int]) -> str:
    """The conjunct with each column written as its (region leaf, field) slot; equalities
    in a fixed order."""
    e = c.expr.copy()
    for col, leaf, (_, pos) in zip(list(e.find_all(exp.Column)), leaves, c.cols):
        tok = exp.Var(this=f"__slot_{leaf}_{pos}")
        if col is e:
            e = tok
        else:
            col.replace(tok)
    if isinstance(e, exp.EQ):
        a, b = sorted((e.this.sql(), e.expression.sql()))
        return f"EQ({a},{b})"
    return e.sql()


def _regrouped(reg: _Region, sub: Node, members: set[int], rest: list[_Conj]) -> Optional[_Region]:
    """``sub`` (standing for the region inputs ``members``) joined left-deep with the other
    inputs; each remaining join conjunct placed at the first join where the inputs it reads
    are present, filters and what never fits on top."""
    others = [i for i in range(len(reg.leaves)) if i not in members]
    if not others:
        return None
    acc: Node = sub
    have = set(members)
    used = [False] * len(rest)
    for i in others:
        leaf = reg.leaves[i]
        equi: list[tuple[exp.Expr, exp.Expr]] = []
        resid: list[exp.Expr] = []
        for k, c in enumerate(rest):
            if used[k] or c.where or not c.leaves or not c.leaves <= have | {i}:
                continue
            used[k] = True
            side = _equi_sides(c, have, i)
            if side is not None:
                equi.append(side)
            else:
                resid.append(c.expr.copy())
        kind = "inner" if equi or resid else "cross"
        acc = Join(acc, leaf, kind, tuple(equi), and_all(resid))
        have.add(i)
    preds = [c.expr.copy() for k, c in enumerate(rest) if not used[k]]
    root = cast(Join, acc)
    leaves = [sub] + [reg.leaves[i] for i in others]
    again = _region(Select(root, cast(exp.Expr, and_all(preds))) if preds else root, PlanContext(root))
    if again is None or [id(x) for x in again.leaves] != [id(x) for x in leaves]:
        return None
    return again


def and_all(parts: Sequence[exp.Expr]) -> Optional[exp.Expr]:
    """AND of copies of ``parts`` (None for none)."""
    out: Optional[exp.Expr] = None
    for p in parts:
        p = p.copy()
        if isinstance(p, (exp.Or, exp.Xor)):
            p = exp.Paren(this=p)
        out = p if out is None else cast(exp.Expr, exp.and_(out, p, copy=False))
    return out


def _equi_sides(c: _Conj, have: set[int], new: int) -> Optional[tuple[exp.Expr, exp.Expr]]:
    """``a = b`` with ``a`` over the inputs already joined and ``b`` over the new one."""
    e = c.expr
    if not isinstance(e, exp.EQ):
        return None
    a = {leaf for leaf, _ in c.cols[:len(list(e.this.find_all(exp.Column)))]}
    b = {leaf for leaf, _ in c.cols[len(list(e.this.find_all(exp.Column))):]}
    if a and b and a <= have and b == {new}:
        return e.this.copy(), e.expression.copy()
    if a and b and b <= have and a == {new}:
        return e.expression.copy(), e.this.copy()
    return None
