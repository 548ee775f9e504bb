"""Pairs under set semantics — a semantics-preserving rewrite of the plan IR that the
matching path runs before any family looks at the plan (:func:`existence`; the same plan
object when nothing moves).

The right side of a semi / anti join is read for existence only: a row of the left input
is kept (dropped) when SOME right row satisfies the ON clause, however many do. Below it,
through projections, renames, filters and inner joins that are read the same way (every
parent of the node is such a reader), only the SET of rows matters, and of each row only
the columns its readers use. There an inner join whose used columns all come from ONE
input ``A`` is a semi join:

    DISTINCT π_A(A ⋈_c B)  =  DISTINCT (A ⋉_c B)        (a row of A pairs with some row of B)

TPC-DS q95's ``ws_wh`` (``web_sales ws1 ⋈ web_sales ws2 ON ws1.o = ws2.o AND ws1.w <>
ws2.w``, every PAIR of an order's lines from different warehouses) is read only through
``ws_order_number IN (SELECT ws_order_number FROM ws_wh)``: its pairs are the rows of
``web_sales ws1 ⋉ web_sales ws2`` on the same ON clause — a self EXISTS (``ex.py``), which
its key's MIN / MAX decide without the blow-up.

The rewrite is done only where it makes a self-join (``A`` and ``B`` read, through σ/π/ρ,
one node) at a projection directly over the inner join: the projection keeps its columns
(the readers name them); an item that reads the dropped input is unused by construction
and becomes a typed NULL. Nothing moves where a node on the way is read by a parent that
counts rows (an aggregate, a window, a UNION ALL, an outer join, the query's result), or
where an expression is nondeterministic.
"""
from __future__ import annotations

from typing import Any, Optional

from sqlglot import exp

from ...ir.functions import is_nondeterministic_expr
from ...ir.nodes import Join, Node, Project, Rename, Select, walk
from .diamond import PlanContext, field_type, find_field

_EXISTS = ("semi", "anti")
_SET_PRESERVING = (Project, Rename, Select)
_INNER = ("inner", "cross")


def existence(plan: Node) -> Node:
    """``plan`` with every self-join read for existence only on one side turned into a semi
    join (see the module doc); ``plan`` itself when nothing moves."""
    ctx = PlanContext(plan)
    in_sets = _set_context(plan, ctx)
    if not in_sets:
        return plan
    used: dict[int, Optional[set[int]]] = {}
    memo: dict[int, Node] = {}
    changed = False
    for n in walk(plan):
        kids = tuple(memo[id(c)] for c in n.children)
        same = n if all(a is b for a, b in zip(kids, n.children)) else n.with_children(kids)
        new = None
        if id(n) in in_sets and isinstance(n, (Project, Rename)):
            new = _as_semi(same, _used(n, ctx, in_sets, used), ctx)
        memo[id(n)] = new if new is not None else same
        changed = changed or memo[id(n)] is not n
    return memo[id(plan)] if changed else plan


def _set_context(plan: Node, ctx: PlanContext) -> set[int]:
    """The nodes whose every reader reads them for existence only: the right input of a
    semi / anti join, and below it through σ/π/ρ and inner joins."""
    out: set[int] = set()
    for n in reversed(list(walk(plan))):            # parents before children
        ps = ctx.parents.get(id(n), ())
        if n is plan or not ps:
            continue
        if all(_reads_as_set(p, n, out) for p in ps):
            out.add(id(n))
    return out


def _reads_as_set(p: Node, n: Node, out: set[int]) -> bool:
    if isinstance(p, Join) and p.kind in _EXISTS:
        return p.right is n and p.left is not n
    if isinstance(p, Join):
        return p.kind in _INNER and id(p) in out
    return isinstance(p, _SET_PRESERVING) and id(p) in out


def _refs(e: Optional[exp.Expr], fields: tuple[Any, ...], into: set[int]) -> bool:
    """Add the positions in ``fields`` of the columns ``e`` reads; False when one does not
    resolve (or ``e`` is nondeterministic)."""
    if e is None:
        return True
    if is_nondeterministic_expr(e):
        return False
    for c in e.find_all(exp.Column):
        i = find_field(fields, c)
        if i is None:
            return False
        into.add(i)
    return True


def _used(n: Node, ctx: PlanContext, in_sets: set[int], memo: dict[int, Optional[set[int]]]
          ) -> Optional[set[int]]:
    """The positions of ``n``'s columns its readers use (None: unknown)."""
    if id(n) in memo:
        return memo[id(n)]
    memo[id(n)] = None                               # a cycle cannot occur; be safe
    out: set[int] = set()
    for p in ctx.parents.get(id(n), ()):
        got = _read_by(p, n, ctx, in_sets, memo)
        if got is None:
            return None
        out |= got
    memo[id(n)] = out
    return out


def _read_by(p: Node, n: Node, ctx: PlanContext, in_sets: set[int], memo: dict[int, Optional[set[int]]]
             ) -> Optional[set[int]]:
    """The positions of ``n``'s columns that its parent ``p`` reads."""
    out: set[int] = set()
    if isinstance(p, Join):
        fields = p.left.fields + p.right.fields
        on: set[int] = set()
        ok = all(_refs(e, fields, on) for pair in p.equi for e in pair) and _refs(p.residual, fields, on)
        above = _used(p, ctx, in_sets, memo) if p.kind not in _EXISTS else set()
        if not ok or above is None:
            return None
        width = len(p.left.fields)
        if p.right is n:
            return {i - width for i in on | above if i >= width}
        return {i for i in on | above if i < width}
    above = _used(p, ctx, in_sets, memo)
    if above is None:
        return None
    if isinstance(p, Select):
        out |= above
        return out if _refs(p.predicate, n.fields, out) else None
    if isinstance(p, Project):
        return out if all(_refs(p.items[i][0], n.fields, out) for i in above) else None
    if isinstance(p, Rename):
        for i in above:
            f = p.mapping[i][0]
            if f not in n.fields:
                return None
            out.add(n.fields.index(f))
        return out
    return None


def _stop(n: Node) -> Node:
    while isinstance(n, _SET_PRESERVING):
        n = n.child
    return n


def _as_semi(q: Node, used: Optional[set[int]], ctx: PlanContext) -> Optional[Node]:
    """``π(A ⋈ B)`` (or ``ρ(A ⋈ B)``, the projection of bare columns) read for existence
    only, its used items reading one input: ``π'(A ⋉ B)`` (the items reading the other input
    as typed NULLs), else None."""
    if isinstance(q, Rename):
        q = Project(q.child, tuple((f.column(), new) for f, new in q.mapping), q.qualifier)
    assert isinstance(q, Project)
    j = q.child
    if used is None or not isinstance(j, Join) or j.kind != "inner" or _stop(j.left) is not _stop(j.right):
        return None
    width = len(j.left.fields)
    reads: list[set[int]] = []
    for e, _ in q.items:
        r: set[int] = set()
        if not _refs(e, j.fields, r):
            return None
        reads.append(r)
    need = set().union(*(reads[i] for i in used)) if used else set()
    for keep_left in (True, False):
        if all((i < width) == keep_left for i in need):
            return _rebuild(q, j, reads, keep_left, ctx)
    return None


def _rebuild(q: Project, j: Join, reads: list[set[int]], keep_left: bool, ctx: PlanContext) -> Optional[Node]:
    width = len(j.left.fields)
    kept = j.left if keep_left else j.right
    other = j.right if keep_left else j.left
    equi = tuple(pair if keep_left else (pair[1], pair[0]) for pair in j.equi)
    items: list[tuple[exp.Expr, str]] = []
    for (e, name), r in zip(q.items, reads):
        if all((i < width) == keep_left for i in r):
            items.append((e, name))
            continue
        # unused by every reader (the used items read ``kept`` only): a typed NULL
        col = e if isinstance(e, exp.Column) and len(r) == 1 else None
        t = field_type(j, next(iter(r))) if col is not None else None
        if t is None:
            return None
        items.append((exp.cast(exp.null(), t), name))
    if isinstance(kept, Rename) and ctx.is_shared(kept):
        # a FROM alias the outer block reads too (q95's ``ws1``): the semi join reads its own
        # copy, so that both its inputs are paths to the one input they read
        kept = Rename(kept.child, kept.mapping, kept.qualifier)
    return Project(Join(kept, other, "semi", equi, j.residual.copy() if j.residual is not None else None),
                   tuple(items), q.qualifier)
