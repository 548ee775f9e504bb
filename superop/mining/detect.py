"""Candidate detection on one lowered plan (super-operator paper §3.2-3.3, §4.2-4.3).

A candidate is a single-input single-output sub-DAG rooted at a UnionAll or a Join whose
input paths run through optional operators (σ π ρ) and one Aggregate each, down to ONE shared
input (the Spool):

* **DU** — UnionAll of n ≥ 2 aggregate paths grouped on the same input columns.
* **DJ** — a (possibly n-way, nested) Join of n ≥ 2 aggregate paths grouped on the same input
  columns, every join equating all grouping keys (inner / left / right / full / semi).
* **MJ** — a Join of one aggregate path (a single MIN or MAX) with a plain path from the same
  input, equating the grouping keys; a σ below the MIN/MAX is allowed only when it filters on
  grouping keys alone (it drops whole groups; any other filter breaks streaming, Fig. 13).

Structures that look like these but fail a check are *near-misses* with a reason code.
Paths stop at a node consumed by two or more parents (the Spool), a Scan or an Opaque node;
an inner node with a consumer outside the sub-plan stops the path too, so the
single-output property holds by construction.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from sqlglot import exp

from ..ir import (Aggregate, Join, Node, Opaque, Project, Rename, Scan, Select, UnionAll,
                  parents, shape, walk)
from ..ir.safety import BlockReason, blocking_reason
from .fingerprint import column_side, strict_index

PATH_OPS = (Select, Project, Rename, Aggregate)
DJ_KINDS = ("inner", "left", "right", "full", "semi")
MJ_KINDS = ("inner", "left", "right", "semi")
MINMAX = (exp.Min, exp.Max)

REASONS = {
    "different_grouping_keys": "the aggregate paths group by different input columns",
    "join_not_on_grouping_keys": "the join does not equate the grouping keys",
    "join_on_subset_of_keys": "the join equates only some of the grouping keys",
    "different_inputs": "the paths do not read one shared input (no Spool)",
    "filter_below_min_max": "a filter on non-key columns below the MIN/MAX (not streamable)",
    "aggregate_not_min_max": "the joined-back aggregate is not a single MIN/MAX",
    "computed_grouping_key": "a grouping key is computed, not an input column",
    "global_aggregate": "an aggregate without grouping keys (nothing to partition on)",
    "stacked_aggregates": "a path holds two aggregates",
    "join_kind_unsupported": "the join kind has no streaming super-operator",
    "mixed_union_inputs": "some union inputs are not aggregate paths",
}
REASONS.update({r.value: r.description for r in BlockReason})   # superop.ir.safety


@dataclass
class Finding:
    status: str                    # "candidate" | "near_miss"
    family: str                    # DU | DJ | MJ (attempted family for near-misses)
    join_kind: str
    root: Node
    n_inputs: int
    reason: str = ""
    agg: str = ""                  # MJ: MIN/MAX
    inputs: list[str] = field(default_factory=list)   # tables under the shared input

    @property
    def shape(self) -> str:
        return shape(self.root)

    @property
    def shape_counts(self) -> str:
        return shape(self.root, counts=True)


@dataclass
class _Path:
    nodes: list[Node]              # top .. bottom (excluding the stop node)
    stop: Node

    @property
    def aggs(self) -> list[Aggregate]:
        return [n for n in self.nodes if isinstance(n, Aggregate)]


class Detector:
    def __init__(self, root: Node):
        self.root = root
        self.ps = parents(root)

    def shared(self, n: Node) -> bool:
        return len(self.ps.get(id(n), ())) >= 2

    def path(self, top: Node) -> _Path:
        nodes = []
        c = top
        while isinstance(c, PATH_OPS) and not self.shared(c):
            nodes.append(c)
            c = c.children[0]
        return _Path(nodes, c)

    # -- tracing output columns down to the shared input ---------------------------------
    def trace(self, node: Node, idx: int, stop: Node) -> Optional[int]:
        """Index in ``stop.fields`` that output column ``idx`` of ``node`` passes through
        unchanged (via renames, plain projections, group keys, join sides), else None."""
        for _ in range(10_000):
            if node is stop:
                return idx
            if isinstance(node, (Select,)) or node.op in ("Sort", "Limit"):
                node = node.children[0]
                continue
            if isinstance(node, Rename):
                src = node.mapping[idx][0]
                kids = node.child.fields
                idx = kids.index(src) if src in kids else -1
                if idx < 0:
                    return None
                node = node.child
                continue
            if isinstance(node, (Project, Aggregate)):
                e = node.items[idx][0]
                if not isinstance(e, exp.Column):
                    return None
                j = strict_index(node.child.fields, e)
                if j is None:
                    return None
                if isinstance(node, Aggregate) and not any(
                        isinstance(k, exp.Column) and strict_index(node.child.fields, k) == j
                        for k in node.keys):
                    return None
                idx, node = j, node.child
                continue
            if isinstance(node, Join):
                nl = len(node.left.fields)
                if idx < nl:
                    node = node.left
                else:
                    idx, node = idx - nl, node.right
                continue
            return None
        return None

    def key_set(self, agg: Aggregate, stop: Node) -> Optional[frozenset]:
        out = set()
        for k in agg.keys:
            if not isinstance(k, exp.Column):
                return None
            j = strict_index(agg.child.fields, k)
            if j is None:
                return None
            t = self.trace(agg.child, j, stop)
            if t is None:
                return None
            out.add(t)
        return frozenset(out)

    # -- joins --------------------------------------------------------------------------
    @staticmethod
    def equi_pairs(j: Join) -> list[tuple[int, int]]:
        """(left field index, right field index) for every column = column conjunct of the
        ON clause — taken from ``equi`` and, defensively, from ``residual`` too."""
        conj = [exp.EQ(this=a, expression=b) for a, b in j.equi]
        stack = [j.residual] if j.residual is not None else []
        while stack:
            e = stack.pop()
            if isinstance(e, exp.Paren):
                stack.append(e.this)
            elif isinstance(e, exp.And):
                stack += [e.this, e.expression]
            else:
                conj.append(e)
        out = []
        lf, rf = j.left.fields, j.right.fields
        for c in conj:
            if not (isinstance(c, exp.EQ) and isinstance(c.this, exp.Column)
                    and isinstance(c.expression, exp.Column)):
                continue
            a, b = c.this, c.expression
            sa, sb = column_side(a, lf, rf), column_side(b, lf, rf)
            if (sa, sb) == ("L", "R"):
                out.append((strict_index(lf, a), strict_index(rf, b)))
            elif (sa, sb) == ("R", "L"):
                out.append((strict_index(lf, b), strict_index(rf, a)))
        return out

    def covered(self, j: Join, stop: Node) -> set:
        cov = set()
        for li, ri in self.equi_pairs(j):
            tl = self.trace(j.left, li, stop)
            tr = self.trace(j.right, ri, stop)
            if tl is not None and tl == tr:
                cov.add(tl)
        return cov

    def join_leaves(self, j: Join) -> tuple[list[Node], list[Join]]:
        leaves, joins = [], []

        def go(n: Node):
            if isinstance(n, Join) and (n is j or not self.shared(n)):
                joins.append(n)
                go(n.left)
                go(n.right)
            else:
                leaves.append(n)
        go(j)
        return leaves, joins

    # -- detection ----------------------------------------------------------------------
    def findings(self) -> list[Finding]:
        out: list[Finding] = []
        consumed: set[int] = set()
        order = list(walk(self.root))[::-1]          # parents before children
        for n in order:
            if id(n) in consumed:
                continue
            f = None
            if isinstance(n, UnionAll):
                f = self._union(n)
            elif isinstance(n, Join):
                f = self._join(n)
            if f is None:
                continue
            out.append(f)
            if f.status == "candidate":
                for m in walk(n):
                    consumed.add(id(m))
            elif isinstance(n, Join):
                for m in self.join_leaves(n)[1]:
                    consumed.add(id(m))
        return out

    def _tables(self, stop: Node) -> list[str]:
        return sorted({m.table for m in walk(stop) if isinstance(m, Scan)})

    def _agg_paths_check(self, paths: list[_Path]) -> tuple[str, Optional[frozenset]]:
        """Common DU/DJ checks; returns (reason or '', key set)."""
        if any(len(p.aggs) > 1 for p in paths):
            return "stacked_aggregates", None
        if len({id(p.stop) for p in paths}) > 1:
            return "different_inputs", None
        keys = [self.key_set(p.aggs[0], p.stop) for p in paths]
        if any(k is None for k in keys):
            return "computed_grouping_key", None
        if len(set(keys)) > 1:
            return "different_grouping_keys", None
        if not keys[0]:
            return "global_aggregate", None
        return "", keys[0]

    def _union(self, u: UnionAll) -> Optional[Finding]:
        paths = [self.path(c) for c in u.inputs]
        with_agg = [p for p in paths if p.aggs]
        if len(with_agg) < 2:
            return None
        f = Finding("near_miss", "DU", "", u, len(paths), inputs=self._tables(paths[0].stop))
        if len(with_agg) < len(paths):
            f.reason = "mixed_union_inputs"
            return f
        reason, _ = self._agg_paths_check(paths)
        reason = reason or self._blocked([u], paths)
        if reason:
            f.reason = reason
            return f
        f.status = "candidate"
        return f

    def _join(self, j: Join) -> Optional[Finding]:
        leaves, joins = self.join_leaves(j)
        paths = [self.path(x) for x in leaves]
        n_agg = sum(1 for p in paths if p.aggs)
        kinds = sorted({x.kind for x in joins})
        kind = kinds[0] if len(kinds) == 1 else "mixed:" + ",".join(kinds)
        if n_agg >= 2 and n_agg == len(paths):
            f = Finding("near_miss", "DJ", kind, j, len(paths), inputs=self._tables(paths[0].stop))
            reason, keys = self._agg_paths_check(paths)
            if not reason and any(k not in DJ_KINDS for k in kinds):
                reason = "join_kind_unsupported"
            if not reason:
                for x in joins:
                    cov = self.covered(x, paths[0].stop)
                    if not keys <= cov:
                        reason = "join_on_subset_of_keys" if cov & keys else \
                            "join_not_on_grouping_keys"
                        break
            f.reason = reason or self._blocked(list(joins), paths)
            f.status = "near_miss" if f.reason else "candidate"
            return f
        if n_agg == 1 and len(paths) == 2:
            ap = next(p for p in paths if p.aggs)
            f = Finding("near_miss", "MJ", kind, j, 2, inputs=self._tables(ap.stop))
            f.reason = self._mj_reason(j, paths, ap) or self._blocked([j], paths)
            if not f.reason:
                f.status = "candidate"
                f.agg = self._minmax(ap.aggs[0])[0]
            return f
        return None

    @staticmethod
    def _blocked(roots: list[Node], paths: list[_Path]) -> str:
        """superop.ir.safety's reason code when the structure must not be rewritten."""
        interior = list(roots) + [n for p in paths for n in p.nodes]
        b = blocking_reason(interior, paths[0].stop)
        return b.reason.value if b is not None else ""

    @staticmethod
    def _minmax(agg: Aggregate) -> tuple[str, Optional[exp.Expression]]:
        funcs = [a for e, _ in agg.items for a in e.find_all(exp.AggFunc)]
        if len(funcs) != 1 or not isinstance(funcs[0], MINMAX):
            return "", None
        return ("MIN" if isinstance(funcs[0], exp.Min) else "MAX"), funcs[0].this

    def _mj_reason(self, j: Join, paths: list[_Path], ap: _Path) -> str:
        if len(ap.aggs) > 1:
            return "stacked_aggregates"
        if paths[0].stop is not paths[1].stop:
            return "different_inputs"
        if j.kind not in MJ_KINDS:
            return "join_kind_unsupported"
        agg = ap.aggs[0]
        stop = ap.stop
        keys = self.key_set(agg, stop)
        if keys is None:
            return "computed_grouping_key"
        if not keys:
            return "global_aggregate"
        name, _ = self._minmax(agg)
        if not name:
            return "aggregate_not_min_max"
        below = ap.nodes[ap.nodes.index(agg) + 1:]
        for s in below:
            if isinstance(s, Select):
                for c in s.predicate.find_all(exp.Column):
                    i = strict_index(s.child.fields, c)
                    if i is None or self.trace(s.child, i, stop) not in keys:
                        return "filter_below_min_max"
        cov = self.covered(j, stop)
        if not keys <= cov:
            return "join_on_subset_of_keys" if cov & keys else "join_not_on_grouping_keys"
        return ""


def skeleton(shape_str: str) -> str:
    """A shape without its optional operators (σ π ρ): the core operators and their nesting.
    ``to_sql`` merges optional operators into SELECT blocks, so the example SQL of a candidate
    re-lowers to the same skeleton but possibly fewer σ/π/ρ."""
    import re
    s = re.sub("[σπρ]", "", shape_str)
    s = re.sub(r"\|+", "|", s)
    s = re.sub(r"\(\|", "(", s)
    s = re.sub(r"\|([,)])", r"\1", s)
    s = re.sub(r", \|", ", ", s)
    return s.strip("|")


def detect(plan: Node) -> list[Finding]:
    return Detector(plan).findings()
