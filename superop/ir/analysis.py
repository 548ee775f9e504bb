"""IR analyses of the super-operator paper (§4.2-4.4), shared by mining, synthesis,
verification and the runtime.

* :func:`walk_edge` — an abstract edge: the chain of optional operators (σ, π, ρ) below a
  core operator, ending at the next core operator, a leaf or a shared node (Spool).
* :func:`traverse_down` / :func:`traverse_up` — Algorithm 4 and its inverse: map column
  names through the renames of an edge.
* :func:`capture_parameters` — Algorithm 5: an edge's summary predicate and projection
  map, every rename and projected column substituted away, expressed over the columns of
  the edge's bottom node.
* :func:`decompose` — recognizes the three abstract trees of Fig. 6 at a root
  (Diamond UnionAll, Diamond Join, Min & Join) and returns their parts.
* :func:`equalities_imply` — decides ``AND(l_i = r_i) ⇒ AND(a_j = b_j)`` for conjunctions
  of column equalities by union-find (what Algorithms 2-3 ask; ``superop.verify`` decides
  the same implication with Z3 and cross-checks this).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from sqlglot import exp

from .generate import translate_columns
from .nodes import Aggregate, Field, Join, Node, Project, Rename, Select, UnionAll, parents, resolve_field

OPTIONAL_OPS = (Select, Project, Rename)


@dataclass(frozen=True)
class Edge:
    """Optional operators between a parent core operator and ``bottom``, listed from
    the parent down (the paper's ``e.ops`` reversed)."""
    ops: tuple[Node, ...]
    bottom: Node

    @property
    def top(self) -> Node:
        """The node the parent core operator reads (its child)."""
        return self.ops[0] if self.ops else self.bottom

    def symbols(self) -> str:
        from .render import symbol
        return "".join(symbol(o) for o in reversed(self.ops))


def walk_edge(start: Node, stop_ids: frozenset[int] = frozenset(),
              allowed: tuple[type[Node], ...] = OPTIONAL_OPS) -> Edge:
    """Follow unary optional operators from ``start`` down; stop at a node that is not
    allowed, or whose id is in ``stop_ids`` (shared nodes end an edge)."""
    ops = []
    n = start
    while isinstance(n, allowed) and id(n) not in stop_ids:
        ops.append(n)
        n = n.children[0]
    return Edge(tuple(ops), n)


def _bare_source(e: exp.Expr) -> Optional[str]:
    e = e.unnest() if isinstance(e, exp.Paren) else e
    return e.name if isinstance(e, exp.Column) else None


def traverse_down(cols: Sequence[str], edge: Edge) -> Optional[list[str]]:
    """Algorithm 4: names at the edge's top -> names at its bottom, undoing renames.
    A π item that is a bare column counts as a rename too. Returns None if a column is
    computed on the way (it is then not a source column)."""
    params = capture_parameters(edge)
    out = []
    for c in cols:
        e = params.projection_by_name(c)
        if e is None:
            return None
        src = _bare_source(e)
        if src is None:
            return None
        out.append(src)
    return out


def traverse_up(cols: Sequence[str], edge: Edge) -> Optional[list[str]]:
    """Inverse of :func:`traverse_down`: names at the bottom -> names at the top that
    carry them unchanged (the first such top column for each)."""
    params = capture_parameters(edge)
    out = []
    for c in cols:
        hit = None
        for f, e in params.projection:
            if _bare_source(e) == c:
                hit = f.name
                break
        if hit is None:
            return None
        out.append(hit)
    return out


@dataclass(frozen=True)
class EdgeParams:
    """Algorithm 5's result. ``projection`` = ((top field, expression over the bottom's
    columns), ...) in the top node's field order; ``predicate`` the conjunction of every
    σ on the edge over the bottom's columns (None = TRUE). Bottom columns are written as
    unqualified ``exp.Column(name)`` of the bottom node's fields."""
    projection: tuple[tuple[Field, exp.Expr], ...]
    predicate: Optional[exp.Expr]
    bottom_fields: tuple[Field, ...]

    def projection_by_name(self, name: str) -> Optional[exp.Expr]:
        hits = [e for f, e in self.projection if f.name == name]
        return hits[0] if len(hits) == 1 else None

    def substitute(self, e: exp.Expr, fields: Sequence[Field]) -> exp.Expr:
        """Rewrite ``e`` (columns resolved against ``fields`` = the edge top's fields)
        into an expression over the bottom's columns."""
        return translate_columns(e, tuple(fields), [x for _, x in self.projection])


def capture_parameters(edge: Edge) -> EdgeParams:
    """Algorithm 5 (CaptureParameters), computed bottom-up — the same substitutions as
    the paper's top-down walk: each σ's predicate and each π/ρ output is rewritten over
    the bottom's columns."""
    bottom = edge.bottom
    fields = bottom.fields
    exprs: list[exp.Expr] = [_bottom_col(f, fields) for f in fields]
    preds: list[exp.Expr] = []
    for op in reversed(edge.ops):
        child_fields = op.children[0].fields
        if isinstance(op, Select):
            preds.append(translate_columns(op.predicate, child_fields, exprs))
        elif isinstance(op, Project):
            exprs = [translate_columns(e, child_fields, exprs) for e, _ in op.items]
        elif isinstance(op, Rename):
            exprs = [exprs[resolve_field(child_fields, f.column())] for f, _ in op.mapping]
        else:  # pragma: no cover - walk_edge only admits optional ops
            raise TypeError(op.op)
    pred: Optional[exp.Expr] = None
    for p in preds:
        p = p if isinstance(p, (exp.Column, exp.Paren)) else exp.Paren(this=p)
        pred = p if pred is None else exp.and_(pred, p, copy=False)
    return EdgeParams(tuple(zip(edge.top.fields, exprs)), pred, fields)


def _bottom_col(f: Field, fields: Sequence[Field]) -> exp.Column:
    # Unqualified when the name is unique at the bottom (always true for scans).
    if sum(1 for g in fields if g.name == f.name) == 1:
        return exp.column(f.name)
    return f.column()


# ---------------------------------------------------------------------------
# The abstract trees of Fig. 6
# ---------------------------------------------------------------------------
@dataclass
class Branch:
    """One input path of a diamond, from the root down to the shared source:
    ``upper`` edge (root input → aggregate), the aggregate, ``lower`` edge (aggregate
    input → source). For the row side of Min & Join ``agg`` is None and ``upper`` goes
    straight to the source."""
    upper: Edge
    agg: Optional[Aggregate] = None
    lower: Optional[Edge] = None

    @property
    def source(self) -> Node:
        """Where the branch ends: below its aggregate's lower edge, else below ``upper``."""
        return self.lower.bottom if self.lower is not None else self.upper.bottom


@dataclass
class Decomposition:
    family: str                     # "DU" | "DJ" | "MJ"
    root: Node                      # UnionAll or Join
    source: Node                    # the shared input (Spool)
    branches: list[Branch] = field(default_factory=list)
    join_kind: Optional[str] = None
    agg_side: Optional[int] = None  # MJ: index of the aggregate branch (0 = left)

    @property
    def join(self) -> Optional[Join]:
        return self.root if isinstance(self.root, Join) else None


def _branch(start: Node, stop: frozenset[int]) -> Branch:
    up = walk_edge(start, stop)
    if isinstance(up.bottom, Aggregate) and id(up.bottom) not in stop:
        low = walk_edge(up.bottom.child, stop)
        return Branch(up, up.bottom, low)
    return Branch(up)


def decompose(root: Node, plan_root: Optional[Node] = None) -> Optional[Decomposition]:
    """AdvanceNext for the three abstract trees: the core operators in the right order
    through σ/π/ρ edges, all paths ending at ONE shared node. Attribute checks
    (single-input single-output, streamability) are separate."""
    ps = parents(plan_root if plan_root is not None else root)
    shared = frozenset(i for i, p in ps.items() if len(p) >= 2)
    if isinstance(root, UnionAll) and len(root.inputs) >= 2:
        brs = [_branch(c, shared) for c in root.inputs]
        if all(b.agg is not None for b in brs):
            srcs = {id(b.source) for b in brs}
            if len(srcs) == 1:
                return Decomposition("DU", root, brs[0].source, brs)
        return None
    if isinstance(root, Join) and root.kind != "cross":
        brs = [_branch(root.left, shared), _branch(root.right, shared)]
        bottoms = [b.source for b in brs]
        if bottoms[0] is not bottoms[1]:
            return None
        n_agg = sum(b.agg is not None for b in brs)
        if n_agg == 2:
            return Decomposition("DJ", root, bottoms[0], brs, root.kind)
        if n_agg == 1:
            side = 0 if brs[0].agg is not None else 1
            return Decomposition("MJ", root, bottoms[0], brs, root.kind, side)
    return None


def interior_ids(d: Decomposition) -> frozenset[int]:
    """ids of the nodes a super-operator replaces: the root, the aggregates and every
    operator on the abstract edges (not the shared source)."""
    inside: set[int] = {id(d.root)}
    for b in d.branches:
        for e in (b.upper, b.lower):
            if e is not None:
                inside.update(id(o) for o in e.ops)
        if b.agg is not None:
            inside.add(id(b.agg))
    return frozenset(inside)


def single_input_single_output(d: Decomposition, plan_root: Node) -> bool:
    """CheckAttributes part 1: every consumer of every node strictly inside the match
    is inside the match (the source may have outside consumers; it is the one leaf)."""
    inside = interior_ids(d)
    ps = parents(plan_root)
    for nid in inside - {id(d.root)}:
        if any(id(p) not in inside for p in ps.get(nid, ())):
            return False
    return True


# ---------------------------------------------------------------------------
# Equality implication without a solver (union-find)
# ---------------------------------------------------------------------------
def equalities_imply(premises: Sequence[tuple[str, str]], goals: Sequence[tuple[str, str]]) -> bool:
    """Does the conjunction of column equalities ``premises`` imply every equality in
    ``goals``? Equality is an equivalence, so this is exactly connectivity."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in premises:
        parent[find(a)] = find(b)
    return all(a == b or find(a) == find(b) for a, b in goals)


def source_key_columns(agg: Aggregate, lower: Edge) -> Optional[list[str]]:
    """The aggregate's grouping keys traced down to bare source columns
    (TraverseDown of the keys); None when a key is computed."""
    params = capture_parameters(lower)
    out = []
    for k in agg.keys:
        e = params.substitute(k, lower.top.fields)
        src = _bare_source(e)
        if src is None:
            return None
        out.append(src)
    return out


def key_output_columns(agg: Aggregate) -> dict[str, str]:
    """Output item name -> grouping key source name, for items that are bare keys."""
    out = {}
    for e, n in agg.items:
        for k in agg.keys:
            if e == k:
                out[n] = k.name if isinstance(k, exp.Column) else k.sql()
    return out
