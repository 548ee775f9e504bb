"""Generalization: verified concrete patterns -> a few abstract rules (paper §3.1, §4.2).

A pattern is one candidate sub-query that was synthesized and verified. Patterns are
grouped by their family's *core skeleton* (``Family.skeleton``: the family, its branch
count, join kind and aggregate side). Each group becomes one abstract rule.

**A rule admits exactly what its certificates cover.** Every certificate carries a
``covers`` record (:class:`superop.families.Covers`): a member's bounded certificate covers
its pattern (join kind, side, branch count, folds, the σ/π/ρ seen on each edge); a template
proof covers its symbolic instance's record (``Family.proof_instances``). The rule's
``admits`` is the union of its certificates' covers (the records no other record
contains); its ``abstract_edges``, ``join_kinds``, ``agg_sides`` and ``aggregates`` are the
hull of ``admits``, for reading. The runtime admits an instance only inside some ``admits``
record; ``superop verify`` checks ``admits`` ⊆ the certificates' covers.

Only streaming programs become rules: a Min & Join whose verified program buffers the
partition (a filter below the min, count/sum joined back), or a program whose COUNT(DISTINCT)s
no single sort order serves (two distinct columns), is reported with the reason, not
admitted. A COUNT(DISTINCT) over the one column the partition is sorted on is the
constant-state ``count_distinct_sorted`` fold; its rules rest on bounded certificates (the
template proofs cover the other folds, ``STREAMING_FOLDS``). So do ``max_by``/``min_by``
(ARGMAX, the paper's Fig. 15): constant state, proved for every resolution of ties by the
bounded proof only, and ``stddev_samp``/``var_samp`` (a constant state of
moments; the statistic stays uninterpreted, see ``superop.verify.folds``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from .. import families
from ..dsl import Program, distinct_sort_obstacle
from ..families import Covers, Match, Side
from .catalog import OPTIONAL_OPS, make_rule

Skeleton = tuple[Any, ...]
TemplateProof = Callable[[Skeleton, list["Pattern"]], list[dict]]


@dataclass
class Pattern:
    """One verified concrete pattern (a mined candidate + its program)."""
    candidate_id: str
    family: str
    shape: str
    sql: str
    edges: list[list[str]]                 # optional ops per abstract edge, family edge order
    edges_written: Optional[list[list[str]]] = None   # as written in the log (report only)
    join_kind: Optional[str] = None
    branches: int = 2
    agg_side: Optional[Side] = None        # families with an aggregate side
    aggregates: list[str] = field(default_factory=list)
    memory: str = "streaming"
    program: Optional[dict] = None         # DSL program JSON
    pseudo_code: str = ""
    certificate: Optional[dict] = None     # the bounded verification certificate
    distinct_queries: int = 0
    executions: int = 0
    cost_share: float = 0.0
    first_seen: Optional[str] = None
    last_seen: Optional[str] = None
    template_ids: list[str] = field(default_factory=list)
    join_kinds: Optional[list[str]] = None       # several join kinds (a tree); default [join_kind]
    variant: str = ""                      # Covers.variant of the pattern (e.g. rank offsets)
    premises: list[str] = field(default_factory=list)   # Covers.premises (declared keys)

    @property
    def point(self) -> Covers:
        """The pattern as a covers record (what its bounded certificate covers)."""
        kinds = self.join_kinds if self.join_kinds is not None else ([self.join_kind] if self.join_kind else [])
        return Covers.make(self.family, join_kinds=kinds,
                           branches=self.branches, agg_side=self.agg_side.value if self.agg_side else None,
                           aggregates=self.aggregates, edges=self.edges, variant=self.variant,
                           premises=self.premises)

    @property
    def skeleton(self) -> Skeleton:
        return families.get(self.family).skeleton(self.point)


def edges_of(m: Match) -> list[list[str]]:
    """Optional operators per abstract edge of a match, in its family's edge order."""
    return families.get(m.family).edge_ops(m)


def edges_from_shape(shape: str, family: str) -> Optional[list[list[str]]]:
    """Optional operators per abstract edge read off a mined shape string (the query as
    written, before SQL generation folded any σ/π/ρ), in the family's edge order; None
    if the string is not a plain instance shape."""
    return families.get(family).edges_from_shape(shape)


def merge_edges(a: list[list[str]], b: Optional[list[list[str]]]) -> list[list[str]]:
    if b is None or len(a) != len(b):
        return a
    return [[o for o in OPTIONAL_OPS if o in set(x) | set(y)] for x, y in zip(a, b)]


def rule_id(skeleton: Skeleton) -> str:
    return families.get(skeleton[0]).rule_id(skeleton)


def maximal(records: Sequence[Covers]) -> list[Covers]:
    """The records no other record contains (first of equal ones kept), in order."""
    out: list[Covers] = []
    for i, c in enumerate(records):
        if any(o.contains(c) and (not c.contains(o) or j < i) for j, o in enumerate(records) if j != i):
            continue
        out.append(c)
    return out


def _buffering_detail(program: Optional[dict]) -> str:
    """Why a buffering program's COUNT(DISTINCT)s keep a set (empty when that is not why)."""
    if not program:
        return ""
    p = Program.from_json(program)
    why = distinct_sort_obstacle(p.accumulators, p.sort, bool(p.row_emits))
    return f": {why}" if why else ""


@dataclass
class Rejected:
    pattern: Pattern
    reason: str


def generalize(patterns: Sequence[Pattern], template_proof: Optional[TemplateProof] = None,
               ) -> tuple[list[dict], list[Rejected]]:
    """Group patterns into abstract rules. ``template_proof(skeleton, members)`` returns
    the certificates (each with its ``covers``) of the template proofs the members need
    (empty if there are none). Returns (rules sorted by id, rejected)."""
    groups: dict[Skeleton, list[Pattern]] = {}
    rejected: list[Rejected] = []
    for p in patterns:
        cert_ok = p.certificate is not None and p.certificate.get("status") == "verified"
        if not cert_ok:
            rejected.append(Rejected(p, "no verified certificate"))
            continue
        if p.memory != "streaming":
            rejected.append(Rejected(p, "verified program buffers the partition (not streaming)"
                                     + _buffering_detail(p.program)))
            continue
        groups.setdefault(p.skeleton, []).append(p)
    rules = []
    for sk, members in groups.items():
        fam = families.get(sk[0])
        members = sorted(members, key=lambda m: m.candidate_id)
        proofs = list(template_proof(sk, members) or []) if template_proof else []
        if any(c.get("status") != "verified" or not c.get("covers") for c in proofs):
            proofs = []  # an unproven template falls back to the members' bounded certificates
        member_certs = [dict(m.certificate or {}, candidate=m.candidate_id, covers=m.point.to_json())
                        for m in members]
        certs = proofs + member_certs
        admits = maximal([Covers.from_json(c["covers"]) for c in certs])
        n_edges = len(admits[0].edges)
        hull_edges = [[o for o in OPTIONAL_OPS if any(o in a.edges[i] for a in admits)] for i in range(n_edges)]
        hull_aggs = sorted({x for a in admits for x in a.aggregates})
        seen_edges = [sorted({op for m in members for op in (m.edges_written or m.edges)[i]},
                             key=OPTIONAL_OPS.index) for i in range(n_edges)]
        seen_aggs = sorted({a for m in members for a in m.aggregates})
        tids = {t for m in members for t in m.template_ids}
        support = {
            "patterns": len(members),
            "distinct_queries": len(tids) if tids else sum(m.distinct_queries for m in members),
            "executions": sum(m.executions for m in members),
            "cost_share": round(sum(m.cost_share for m in members), 6),
        }
        firsts = [m.first_seen for m in members if m.first_seen]
        lasts = [m.last_seen for m in members if m.last_seen]
        params: dict[str, Any] = {
            "edges_seen": seen_edges, "aggregates_seen": seen_aggs,
            "examples": [{"candidate": m.candidate_id, "shape": m.shape, "sql": m.sql,
                          "program": m.program, "pseudo_code": m.pseudo_code} for m in members[:3]],
            "shapes": sorted({m.shape for m in members})}
        point = members[0].point
        if point.agg_side:
            params["agg_side"] = point.agg_side
        rules.append(make_rule(
            fam.name, rule_id=fam.rule_id(sk), join_kinds=point.join_kinds, branches=point.branches,
            agg_sides=[point.agg_side] if point.agg_side else None, edges=hull_edges,
            aggregates=hull_aggs or None, admits=admits, certificates=certs,
            proof="unbounded" if proofs else "bounded", support=support,
            first_seen=min(firsts) if firsts else None, last_seen=max(lasts) if lasts else None,
            parameters=params, description=fam.describe(sk, len(members))))
    rules.sort(key=lambda r: r["id"])
    return rules, rejected
