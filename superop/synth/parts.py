"""The parts of a sub-plan a candidate program of the synthesizer is built from (from the
sub-plan, not from a table of known shapes):

* the root edge (σ/π/ρ above the root core operator) and the root core operator
  (UNION ALL of n inputs, a join, or a product — cross joins — of n global aggregates);
* per input path of the core operator, its edges captured with Algorithm 5
  (``superop.ir.analysis.capture_parameters``): for an aggregate path the upper edge
  (core input → γ), the γ and the lower edge (γ → source); for the row side of a
  join-back only one edge (core input → source). Edges go down to the base Scan, so a
  CTE/derived table that filters or projects the shared input simply folds into the
  path's summary predicate and projection map.

Which programs are tried over them is :mod:`superop.synth.space`'s job.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from sqlglot import exp

from .. import families
from ..dsl import ref
from ..families.kit.diamond import PlanContext
from ..ir.analysis import Edge, capture_parameters, walk_edge
from ..ir.generate import translate_columns
from ..ir.nodes import Aggregate, Field, Join, Node, Opaque, Scan, Sort, UnionAll, walk


class NotSupported(Exception):
    """The sub-plan is outside every search space (the reason is user-facing)."""


# ---------------------------------------------------------------------------
# expression helpers
# ---------------------------------------------------------------------------
def tr(e: exp.Expression, fields: Sequence[Field], repl: Sequence[exp.Expression]) -> exp.Expression:
    """Columns of ``e`` (resolved against ``fields``) -> ``repl`` (parenthesized)."""
    return translate_columns(e, fields, repl)


def unparen(e: exp.Expression) -> exp.Expression:
    while isinstance(e, exp.Paren):
        e = e.this
    return e


def to_row(e: Optional[exp.Expression]) -> Optional[exp.Expression]:
    """Source columns (unqualified, as Algorithm 5 leaves them) -> ``row.col``."""
    if e is None:
        return None
    e = e.copy()
    if isinstance(e, exp.Column):
        return ref("row", e.name)
    for c in list(e.find_all(exp.Column)):
        c.replace(ref("row", c.name))
    return e


# ---------------------------------------------------------------------------
# the parts of a sub-plan
# ---------------------------------------------------------------------------
@dataclass
class AggPath:
    index: int
    top_fields: tuple[Field, ...]       # what the core operator reads
    agg: Aggregate
    up_map: list[exp.Expression]        # per top field, over agg.fields
    up_pred: Optional[exp.Expression]   # over agg.fields
    items: list[exp.Expression]         # agg items over source columns (AggFuncs kept)
    keys: list[exp.Expression]          # agg keys over source columns
    low_pred: Optional[exp.Expression]  # row.* (None = TRUE)
    source: Node

    def key_columns(self) -> Optional[list[str]]:
        out = []
        for k in self.keys:
            k = unparen(k)
            if not isinstance(k, exp.Column):
                return None
            out.append(k.name)
        return out


@dataclass
class RowPath:
    index: int
    top_fields: tuple[Field, ...]
    out: list[exp.Expression]           # per top field, row.*
    pred: Optional[exp.Expression]      # row.*
    source: Node


@dataclass
class Parts:
    family: str                         # the registry's family at the core ("" if none)
    core: Node                          # UnionAll | Join
    root_map: list[exp.Expression]      # per root field, over core.fields
    root_pred: Optional[exp.Expression]
    paths: list                         # AggPath | RowPath, in core input order
    sources: list[Node]                 # distinct bottoms (1 = one shared source)
    root_names: tuple[str, ...]
    product: bool = False               # the core is a product of global aggregates (one row each)

    @property
    def shared(self) -> bool:
        return len(self.sources) == 1

    @property
    def source(self) -> Node:
        return self.sources[0]

    @property
    def agg_paths(self) -> list[AggPath]:
        return [p for p in self.paths if isinstance(p, AggPath)]

    @property
    def is_union(self) -> bool:
        """The core glues its inputs (partition emits per path)."""
        return isinstance(self.core, UnionAll)

    @property
    def row_side(self) -> Optional[str]:
        """The join input that is a row path (row emits), if any."""
        for p in self.paths:
            if isinstance(p, RowPath):
                return "left" if p.index == 0 else "right"
        return None


def _edge_to_source(start: Node) -> Edge:
    # No stop at shared nodes: a shared CTE that filters/projects folds into the path.
    return walk_edge(start)


def strip_order(plan: Node) -> Node:
    while isinstance(plan, Sort):
        plan = plan.child       # output is compared as a bag: ORDER BY is irrelevant
    return plan


def analyze(plan: Node) -> Parts:
    plan = strip_order(plan)
    for n in walk(plan):
        if isinstance(n, Opaque):
            raise NotSupported(f"the sub-plan has an unmodeled part ({n.reason or 'opaque SQL'})")
    root_edge = walk_edge(plan)
    core = root_edge.bottom
    rp = capture_parameters(root_edge)
    root_map = [e for _, e in rp.projection]
    product = False
    if isinstance(core, UnionAll):
        tops = list(core.inputs)
    elif isinstance(core, Join) and core.is_product:
        # a product (cross / unconditioned inner joins, flattened): only of global
        # aggregates, one row each, is it a one-partition program
        tops, product = _product_leaves(core), True
    elif isinstance(core, Join):
        if core.kind == "cross":
            raise NotSupported("a cross join has no partition key")
        tops = [core.left, core.right]
    else:
        raise NotSupported(f"the root core operator is {core.op}; a super-operator needs a UNION ALL "
                           "or a join of paths over one input")
    paths: list = []
    for i, top in enumerate(tops):
        up = _edge_to_source(top)
        if isinstance(up.bottom, Aggregate):
            agg = up.bottom
            low = _edge_to_source(agg.child)
            if not isinstance(low.bottom, Scan):
                raise NotSupported(f"path {i + 1} reads {low.bottom.op}, not a base table through σ/π/ρ")
            lp = capture_parameters(low)
            lfields = low.top.fields
            items = [tr(e, lfields, [x for _, x in lp.projection]) for e, _ in agg.items]
            keys = [tr(k, lfields, [x for _, x in lp.projection]) for k in agg.keys]
            upp = capture_parameters(up)
            paths.append(AggPath(i, up.top.fields, agg, [e for _, e in upp.projection], upp.predicate,
                                 items, keys, to_row(lp.predicate), low.bottom))
        elif isinstance(up.bottom, Scan):
            if isinstance(core, UnionAll):
                raise NotSupported(f"UNION ALL input {i + 1} is not an aggregate")
            upp = capture_parameters(up)
            paths.append(RowPath(i, up.top.fields, [to_row(e) for _, e in upp.projection],
                                 to_row(upp.predicate), up.bottom))
        else:
            raise NotSupported(f"path {i + 1} reaches {up.bottom.op}, not an aggregate or the input")
    if isinstance(core, Join) and not any(isinstance(p, AggPath) for p in paths):
        raise NotSupported("a join without an aggregate on either side (a self-join) is not a "
                           "super-operator shape")
    if product and not all(isinstance(p, AggPath) and not p.agg.keys for p in paths):
        raise NotSupported("a cross join has no partition key (only a product of global aggregates, "
                           "one row each, is one partition)")
    found = families.recognize_at(core, PlanContext(plan))
    family = found.family if found is not None else ""
    sources: list[Node] = []
    for p in paths:
        if not any(p.source is s for s in sources):
            sources.append(p.source)
    return Parts(family, core, root_map, rp.predicate, paths, sources, plan.names, product)


def _product_leaves(j: Join) -> list[Node]:
    """The inputs of a tree of product joins, left to right (the root's field order)."""
    out: list[Node] = []
    for c in (j.left, j.right):
        out += _product_leaves(c) if isinstance(c, Join) and c.is_product else [c]
    return out
