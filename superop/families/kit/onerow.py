"""A product with a one-row aggregate pushed below a GROUP BY — a semantics-preserving
rewrite of the plan IR that the matching path runs before any family looks at the plan
(:func:`one_row_products`; the same plan object when nothing moves).

An uncorrelated global aggregate compared in a HAVING (TPC-DS q24: ``HAVING sum(netpaid) >
(SELECT 0.05 * avg(netpaid) FROM ssales)``) lowers to a product of the groups with the
sub-query's one row, above the GROUP BY: ``σ_p(γ_K(R) × G)``. Below the GROUP BY it reads
as a join-back with no keys, ``R × γ_∅(S)`` (WinMagic: ``AVG(x) OVER ()``):

    γ_K(R) × G  =  γ_{K; items, MAX(g)…}(R × G)      (K not empty, G exactly one row)

Every row of ``R × G`` is a row of ``R`` with G's one row beside it, so each group of K
holds the same rows (the aggregates keep their values) and carries G's columns as a
constant (``MAX`` of a constant is that constant, NULL included); an empty ``R`` has no
group on either side. Both premises are needed: over a GLOBAL outer aggregate (no K) an
empty ``R`` still makes one row on the left and none on the right, and a G with repeated
rows repeats the groups on the left but folds each group's rows twice on the right —
:mod:`superop.verify.one_row_join` proves the step (bounded) and shows Z3 refuting the
first variant.

G is one row when it is ``γ_∅`` under projections and renames only (no filter: a HAVING
may drop the one row; no LIMIT). The GROUP BY may sit under a ρ (a DataFrame's alias:
``groups.crossJoin(value)``), whose names and qualifier the pushed GROUP BY takes. The step
is done only where it makes a self-join — R and G's aggregate read (through σ/π/ρ) the
same node — and only under parents that read the product's columns by name (through
filters: a projection, an aggregate, a ρ), because G's columns come out of the GROUP BY
under its qualifier; the column names must stay unique.
"""
from __future__ import annotations

from typing import Optional

from sqlglot import exp

from ...ir.analysis import walk_edge
from ...ir.nodes import Aggregate, Join, Node, Project, Rename, resolve_field, walk
from .diamond import PlanContext



def one_row_products(plan: Node) -> Node:
    """``plan`` with every product of a grouped aggregate and a one-row aggregate that
    parents read by name pushed below the GROUP BY (module doc); ``plan`` itself when
    nothing moves. Repeated to a fixpoint (G moves below stacked GROUP BYs one at a
    time), so the canonical form of a canonical plan is that plan."""
    while True:
        new = _one_pass(plan)
        if new is plan:
            return plan
        plan = new


def _one_pass(plan: Node) -> Node:
    ctx = PlanContext(plan)
    moving = {id(n) for n in walk(plan) if isinstance(n, Join) and _pushed(n, ctx) is not None}
    if not moving:
        return plan
    memo: dict[int, Node] = {}
    for n in walk(plan):
        kids = tuple(memo[id(c)] for c in n.children)
        same = n if all(a is b for a, b in zip(kids, n.children)) else n.with_children(kids)
        moved = _pushed(same, None) if id(n) in moving else None
        memo[id(n)] = moved if moved is not None else same
    return memo[id(plan)]


def push_product(grouped: Node, one_row: Node, agg_left: bool) -> Optional[Aggregate]:
    """``γ_{K; items, MAX(g)…}(R × G)`` for the product ``γ_K(R) × G`` (``grouped``: the
    GROUP BY, or a ρ over it — its names and qualifier are the new GROUP BY's, the items it
    drops dropped; ``agg_left``: it is the left input), its columns in the product's order,
    or None when a column would not resolve as before or two columns share a name. No
    premise is checked here (:func:`one_row_products` checks them; the lemma's refuted
    variant calls this on a global outer aggregate)."""
    ren = grouped if isinstance(grouped, Rename) else None
    agg = ren.child if ren is not None else grouped
    if not isinstance(agg, Aggregate):
        return None
    r = agg.child
    prod = Join(r, one_row, "cross") if agg_left else Join(one_row, r, "cross")
    offset = 0 if agg_left else len(one_row.fields)
    for e in [*agg.keys, *(e for e, _ in agg.items)]:
        for c in e.find_all(exp.Column):
            try:
                if resolve_field(prod.fields, c) != resolve_field(r.fields, c) + offset:
                    return None
            except KeyError:
                return None
    items = [(e.copy(), n) for e, n in agg.items]
    if ren is not None:
        items = [(agg.items[agg.fields.index(f)][0].copy(), new) for f, new in ren.mapping]
    carried: list[tuple[exp.Expr, str]] = [(exp.Max(this=f.column()), f.name) for f in one_row.fields]
    names = [n for _, n in items] + [n for _, n in carried]
    if len(set(names)) != len(names):
        return None
    ordered = items + carried if agg_left else carried + items
    return Aggregate(prod, tuple(k.copy() for k in agg.keys), tuple(ordered),
                     ren.qualifier if ren is not None else agg.qualifier)


def is_one_row(n: Node) -> bool:
    """Exactly one row: ``γ_∅`` under projections and renames only."""
    while isinstance(n, (Project, Rename)):
        n = n.child
    return isinstance(n, Aggregate) and not n.keys


def _pushed(j: Node, ctx: Optional[PlanContext]) -> Optional[Aggregate]:
    """The product ``j`` pushed below its GROUP BY, or None; ``ctx``: the plan ``j`` is a
    node of, whose parents must read ``j`` by name and which must not share its GROUP BY
    (None: ``j`` is a rebuilt copy of a node checked so)."""
    if not isinstance(j, Join) or not j.is_product or (ctx is not None and not ctx.read_by_name(j)):
        return None
    for grouped, other, agg_left in ((j.left, j.right, True), (j.right, j.left, False)):
        agg = grouped.child if isinstance(grouped, Rename) else grouped
        if type(agg) is Aggregate and agg.keys and is_one_row(other) \
                and (ctx is None or (not (ctx.is_shared(agg) or ctx.is_shared(grouped))
                                     and _self_product(agg, other, ctx))):
            return push_product(grouped, other, agg_left)
    return None


def _self_product(agg: Aggregate, one_row: Node, ctx: PlanContext) -> bool:
    """Do the GROUP BY and the one-row aggregate read (through σ/π/ρ) the same node? Only
    there the push makes a family's instance (a join-back); elsewhere the plan stays."""
    g = one_row
    while isinstance(g, (Project, Rename)):
        g = g.child
    assert isinstance(g, Aggregate)
    return walk_edge(agg.child, ctx.shared_ids).bottom is walk_edge(g.child, ctx.shared_ids).bottom

