"""What a certificate covers and what a rule admits, in one record.

JSON shape (the certificate's ``covers`` and each entry of a rule's ``admits``)::

    {"family": "DJ", "join_kinds": ["left"], "branches": 2, "agg_side": null,
     "aggregates": ["sum", ...], "edges": [["Select", "Project", "Rename"], ...]}

``edges`` lists, per abstract edge in the family's edge order, the optional operators that
may occur on it. A record stands for every instance *at or below* it: an instance (its
:meth:`Covers.point`: one join kind, its branch count and aggregate side, the aggregate
functions it folds, the operators on each of its edges) is covered when its family,
branch count and side are equal and its join kind, functions and edge operators are
subsets. ``variant`` (omitted when empty) is a family-specific parameter of the program
the proof is about that must be EQUAL (the neighbour self-join: the rank offset of each
use — a proof about LAG(x, 1) says nothing about LAG(x, 2)). ``premises`` (omitted when
empty) are the declared-key premises the proof assumed (``Determines.text()`` over the
shared source's columns, :mod:`superop.ir.keys`); they must be EQUAL too: a proof under a
premise says nothing about an instance without it, and a proof without one is about
instances whose joins equate every key.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

EDGE_OPS = ("Select", "Project", "Rename")   # the optional operators σ, π, ρ (catalog names)
# the folds the DU/DJ template proofs prove (constant-state folds, assumption A1 of the
# proofs in superop.verify.template_proofs); COUNT(DISTINCT) keeps a set per partition, not
# a constant state, and its sorted fold (count_distinct_sorted) has no unbounded proof yet
# (the plan side's COUNT(DISTINCT) is no fold to induct on): only bounded certificates
# cover either. max_by/min_by keep a constant state, but their ties are modelled over the
# K rows of a bounded proof only (superop.verify.folds.extremum_by): bounded certificates
# cover them too. stddev_samp/var_samp are constant-state folds, but the symbolic proof
# instances do not fold them: bounded certificates only (TPC-DS q39a/q39b)
STREAMING_FOLDS = ("count_star", "count", "sum", "min", "max", "avg")


def _ordered(items: Iterable[str], order: Sequence[str]) -> tuple[str, ...]:
    s = set(items)
    known = [x for x in order if x in s]
    return tuple(known + sorted(s - set(order)))


@dataclass(frozen=True)
class Covers:
    family: str
    join_kinds: tuple[str, ...]
    branches: int
    agg_side: Optional[str]
    aggregates: tuple[str, ...]
    edges: tuple[tuple[str, ...], ...]
    variant: str = ""
    premises: tuple[str, ...] = ()

    @classmethod
    def make(cls, family: str, *, join_kinds: Iterable[str] = (), branches: int = 2,
             agg_side: Optional[str] = None, aggregates: Iterable[str] = (),
             edges: Iterable[Iterable[str]] = (), variant: str = "",
             premises: Iterable[str] = ()) -> "Covers":
        return cls(family, tuple(sorted(set(join_kinds))), int(branches), agg_side,
                   tuple(sorted(set(aggregates))), tuple(_ordered(e, EDGE_OPS) for e in edges),
                   str(variant or ""), tuple(sorted(set(premises))))

    # -- JSON ---------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        out = {"family": self.family, "join_kinds": list(self.join_kinds), "branches": self.branches,
               "agg_side": self.agg_side, "aggregates": list(self.aggregates),
               "edges": [list(e) for e in self.edges]}
        if self.variant:
            out["variant"] = self.variant
        if self.premises:
            out["premises"] = list(self.premises)
        return out

    @classmethod
    def from_json(cls, d: Any) -> "Covers":
        if not isinstance(d, dict):
            raise ValueError("covers must be an object")
        try:
            return cls.make(str(d["family"]), join_kinds=[str(k) for k in d.get("join_kinds") or ()],
                            branches=int(d.get("branches", 2)), agg_side=d.get("agg_side"),
                            aggregates=[str(a) for a in d.get("aggregates") or ()],
                            edges=[[str(o) for o in e] for e in d.get("edges") or ()],
                            variant=str(d.get("variant") or ""),
                            premises=[str(p) for p in d.get("premises") or ()])
        except (KeyError, TypeError) as e:
            raise ValueError(f"malformed covers record: {e}") from None

    # -- order --------------------------------------------------------------------
    def contains(self, other: "Covers") -> bool:
        """Every instance ``other`` stands for is one this record stands for."""
        return (self.family == other.family and self.branches == other.branches
                and self.agg_side == other.agg_side and self.variant == other.variant
                and self.premises == other.premises
                and set(other.join_kinds) <= set(self.join_kinds)
                and set(other.aggregates) <= set(self.aggregates)
                and len(self.edges) == len(other.edges)
                and all(set(o) <= set(s) for s, o in zip(self.edges, other.edges)))

    def why_not(self, point: "Covers", edge_names: Optional[Sequence[str]] = None) -> Optional[str]:
        """None if this record contains ``point``, else the first dimension that differs
        (what the runtime's trace says when a rule does not admit an instance)."""
        if self.family != point.family:
            return f"family {point.family}"
        if self.branches != point.branches:
            return f"{point.branches} branches"
        if not set(point.join_kinds) <= set(self.join_kinds):
            return f"join kind {', '.join(point.join_kinds)}"
        if self.agg_side != point.agg_side:
            return f"aggregate on the {point.agg_side}"
        if self.variant != point.variant:
            return f"variant {point.variant or '(none)'} (the rule's: {self.variant or '(none)'})"
        if self.premises != point.premises:
            return (f"declared-key premises {list(point.premises) or '(none)'} "
                    f"(the rule's: {list(self.premises) or '(none)'})")
        extra = sorted(set(point.aggregates) - set(self.aggregates))
        if extra:
            return f"aggregates {extra} outside {sorted(self.aggregates)}"
        if len(self.edges) != len(point.edges):
            return f"{len(point.edges)} edges"
        for i, (allowed, ops) in enumerate(zip(self.edges, point.edges)):
            for op in ops:
                if op not in allowed:
                    name = edge_names[i] if edge_names else f"e{i + 1}"
                    return f"{op} on an edge ({name}) that admits only {sorted(allowed)}"
        return None

    def describe(self) -> str:
        kinds = "/".join(self.join_kinds) or f"{self.branches}-way"
        side = f", aggregate {self.agg_side}" if self.agg_side else ""
        var = f", variant {self.variant}" if self.variant else ""
        var += f", premises {'; '.join(self.premises)}" if self.premises else ""
        return (f"{self.family} {kinds}{side}{var}, aggregates {{{', '.join(self.aggregates)}}}, edges "
                + " ".join(f"e{i + 1}[{','.join(e)}]" for i, e in enumerate(self.edges)))


def covered_by(point: Covers, records: Iterable[Covers]) -> bool:
    return any(r.contains(point) for r in records)
