"""IR analyses of the super-operator paper (§4.2-4.4), shared by mining, synthesis,
verification and the runtime.

* :func:`walk_edge` — an abstract edge: the chain of optional operators (σ, π, ρ) below a
  core operator, ending at the next core operator, a leaf or a shared node (Spool).
* :func:`traverse_down` / :func:`traverse_up` — Algorithm 4 and its inverse: map column
  names through the renames of an edge.
* :func:`capture_parameters` — Algorithm 5: an edge's summary predicate and projection
  map, every rename and projected column substituted away, expressed over the columns of
  the edge's bottom node.

The abstract trees of Fig. 6 (what used to be ``decompose`` here) are declared by the
super-operator families (``superop.families``), on top of these analyses.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Optional, Sequence

from sqlglot import exp

from .generate import translate_columns
from .nodes import Field, Node, Project, Rename, Select, resolve_field
from .render import symbol

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
    counts = Counter(f.name for f in fields)
    # unqualified when the name is unique at the bottom (always true for scans)
    exprs: list[exp.Expr] = [exp.column(f.name) if counts[f.name] == 1 else f.column() for f in fields]
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

