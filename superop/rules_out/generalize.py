"""Generalization: verified concrete patterns -> a few abstract rules (paper §3.1, §4.2).

A pattern is one candidate sub-query that was synthesized and verified. Patterns are
grouped by their *core skeleton* — family, the join kind (DJ/MJ) or number of UNION ALL
inputs (DU), and for MJ the side the aggregate is on. Each group becomes one abstract rule
whose abstract edges carry the optional operators (σ π ρ) that may occur on that edge in
any number and order. A rule carries the unbounded proof of its parametric template when
one exists (``proof = "unbounded"``): that proof holds for every σ/π/ρ instantiation, so its
edges admit all three (but no σ into a Min & Join's aggregate, Fig. 13). Otherwise it carries
the bounded certificates of its members (``proof = "bounded"``) and its edges admit only
the operators seen on that edge in some member. What was seen is kept in the template
parameters (``edges_seen``, ``aggregates_seen``).

Only streaming programs become rules: a Min & Join whose verified program buffers the
partition (a filter below the min, count/sum joined back) is reported, not admitted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from ..ir.analysis import Decomposition, Edge
from ..ir.nodes import Rename
from .catalog import OPTIONAL_OPS, make_rule

STREAMING_AGGS = ("count_star", "count", "sum", "min", "max", "avg")
MJ_AGGS = ("min", "max")
FAMILY_NAMES = {"DU": "diamond-union-all", "DJ": "diamond-join", "MJ": "min-join"}


@dataclass
class Pattern:
    """One verified concrete pattern (a mined candidate + its program)."""
    candidate_id: str
    family: str
    shape: str
    sql: str
    edges: list[list[str]]                 # optional ops per abstract edge, make_rule order
    join_kind: Optional[str] = None
    branches: int = 2
    agg_side: Optional[int] = None         # MJ: 0 = aggregate on the left
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

    @property
    def skeleton(self) -> tuple:
        if self.family == "DU":
            return ("DU", self.branches)
        if self.family == "DJ":
            return ("DJ", self.join_kind)
        return ("MJ", self.join_kind, self.agg_side)


def _ops(edge: Optional[Edge]) -> list[str]:
    if edge is None:
        return []
    out = []
    for o in edge.ops:
        if isinstance(o, Rename) and o.is_identity():
            continue  # a FROM alias is not an operator
        n = type(o).__name__
        if n not in out:
            out.append(n)
    return [o for o in OPTIONAL_OPS if o in out]


def edges_of(d: Decomposition) -> list[list[str]]:
    """Optional operators per abstract edge in the catalog's edge order
    (DU: spool→γ_i then γ_i→∪; DJ: e1 spool→γ1, e2 spool→γ2, e3 γ1→⋈, e4 γ2→⋈;
    MJ: e1 spool→γ, e2 γ→⋈, e3 spool→⋈)."""
    if d.family == "DU":
        return [_ops(b.lower) for b in d.branches] + [_ops(b.upper) for b in d.branches]
    if d.family == "DJ":
        l, r = d.branches
        return [_ops(l.lower), _ops(r.lower), _ops(l.upper), _ops(r.upper)]
    a = d.branches[d.agg_side]
    row = d.branches[1 - d.agg_side]
    return [_ops(a.lower), _ops(a.upper), _ops(row.upper)]


_SYM2OP = {"σ": "Select", "π": "Project", "ρ": "Rename"}


def edges_from_shape(shape: str, family: str) -> Optional[list[list[str]]]:
    """Optional operators per abstract edge read off a mined shape string (the query as
    written, before SQL generation folded any σ/π/ρ), in the catalog's edge order; None
    if the string is not a plain diamond shape."""
    if not shape.startswith("(") or ")" not in shape:
        return None
    inner = shape[1:shape.rindex(")")]
    if "(" in inner:
        return None
    branches = []
    for b in inner.split(", "):
        segs = b.split("|") if b else []
        if "γ" in segs:
            i = segs.index("γ")
            if segs.count("γ") != 1 or i > 1 or len(segs) - i > 2:
                return None
            lower = segs[0] if i == 1 else ""
            upper = segs[i + 1] if i + 1 < len(segs) else ""
            branches.append((True, lower, upper))
        elif len(segs) <= 1:
            branches.append((False, "", segs[0] if segs else ""))
        else:
            return None
    ops = lambda t: [o for o in OPTIONAL_OPS if o in {_SYM2OP.get(ch) for ch in t}]  # noqa: E731
    if any(any(ch not in _SYM2OP for ch in lo + up) for _, lo, up in branches):
        return None
    if family == "DU" and all(g for g, _, _ in branches):
        return [ops(lo) for _, lo, _ in branches] + [ops(up) for _, _, up in branches]
    if family == "DJ" and len(branches) == 2 and all(g for g, _, _ in branches):
        (_, l1, u1), (_, l2, u2) = branches
        return [ops(l1), ops(l2), ops(u1), ops(u2)]
    if family == "MJ" and len(branches) == 2 and sum(g for g, _, _ in branches) == 1:
        agg = next(b for b in branches if b[0])
        row = next(b for b in branches if not b[0])
        return [ops(agg[1]), ops(agg[2]), ops(row[2])]
    return None


def merge_edges(a: list[list[str]], b: Optional[list[list[str]]]) -> list[list[str]]:
    if b is None or len(a) != len(b):
        return a
    return [[o for o in OPTIONAL_OPS if o in set(x) | set(y)] for x, y in zip(a, b)]


def rule_id(skeleton: tuple) -> str:
    fam = skeleton[0]
    if fam == "DU":
        return f"{FAMILY_NAMES['DU']}-{skeleton[1]}way"
    if fam == "DJ":
        return f"{FAMILY_NAMES['DJ']}-{skeleton[1]}"
    side = "" if skeleton[2] in (1, None) else "-aggregate-first"
    return f"{FAMILY_NAMES['MJ']}-{skeleton[1]}{side}"


@dataclass
class Rejected:
    pattern: Pattern
    reason: str


def generalize(patterns: Sequence[Pattern],
               template_proof: Optional[Callable[[tuple, list], list]] = None,
               ) -> tuple[list[dict], list[Rejected]]:
    """Group patterns into abstract rules. ``template_proof(skeleton, members)`` returns
    the certificates of the unbounded proofs of the parametric template instances the
    members need (empty if there are none). Returns (rules sorted by id, rejected)."""
    groups: dict[tuple, list[Pattern]] = {}
    rejected: list[Rejected] = []
    for p in patterns:
        cert_ok = p.certificate is not None and p.certificate.get("status") == "verified"
        if not cert_ok:
            rejected.append(Rejected(p, "no verified certificate"))
            continue
        if p.memory != "streaming":
            rejected.append(Rejected(p, "verified program buffers the partition (not streaming)"))
            continue
        groups.setdefault(p.skeleton, []).append(p)
    rules = []
    for sk, members in groups.items():
        members = sorted(members, key=lambda m: m.candidate_id)
        n_edges = len(members[0].edges)
        edges = [sorted({op for m in members for op in m.edges[i]}, key=OPTIONAL_OPS.index)
                 for i in range(n_edges)]
        proofs = list(template_proof(sk, members) or []) if template_proof else []
        if any(c.get("status") != "verified" for c in proofs):
            proofs = []  # an unproven template falls back to the members' bounded certificates
        member_certs = [dict(m.certificate, candidate=m.candidate_id) for m in members]
        certs = proofs + member_certs
        seen_edges, seen_aggs = edges, sorted({a for m in members for a in m.aggregates})
        if proofs:
            # The inductive proof holds for every σ/π/ρ instantiation of the edges and every
            # fold, so the rule admits all of them, not just those seen in the log — except
            # a σ into a Min & Join's aggregate (Fig. 13: not streaming) and folds that
            # need more than constant state (COUNT(DISTINCT)).
            edges = [list(OPTIONAL_OPS) for _ in edges]
            if sk[0] == "MJ":
                edges[0] = ["Project", "Rename"]
            aggs = list(MJ_AGGS if sk[0] == "MJ" else STREAMING_AGGS)
        else:
            aggs = seen_aggs
        tids = {t for m in members for t in m.template_ids}
        support = {
            "patterns": len(members),
            "distinct_queries": len(tids) if tids else sum(m.distinct_queries for m in members),
            "executions": sum(m.executions for m in members),
            "cost_share": round(sum(m.cost_share for m in members), 6),
        }
        firsts = [m.first_seen for m in members if m.first_seen]
        lasts = [m.last_seen for m in members if m.last_seen]
        params = {"edges_seen": seen_edges, "aggregates_seen": seen_aggs,
                  "examples": [{"candidate": m.candidate_id, "shape": m.shape, "sql": m.sql,
                                "program": m.program, "pseudo_code": m.pseudo_code}
                               for m in members[:3]],
                  "shapes": sorted({m.shape for m in members})}
        if sk[0] == "MJ":
            params["agg_side"] = "left" if sk[2] == 0 else "right"
        kwargs = dict(rule_id=rule_id(sk), edges=edges, aggregates=aggs or None,
                      certificates=certs,
                      proof="unbounded" if proofs else "bounded", support=support,
                      first_seen=min(firsts) if firsts else None,
                      last_seen=max(lasts) if lasts else None, parameters=params,
                      description=_describe(sk, len(members)))
        if sk[0] == "DU":
            rule = make_rule("DU", branches=sk[1], **kwargs)
        else:
            rule = make_rule(sk[0], join_kinds=(sk[1],), **kwargs)
        rules.append(rule)
    rules.sort(key=lambda r: r["id"])
    return rules, rejected


def _describe(sk: tuple, n: int) -> str:
    if sk[0] == "DU":
        what = f"{sk[1]} aggregates of one input on the same key glued by UNION ALL"
    elif sk[0] == "DJ":
        what = f"two aggregates of one input on the same key joined ({sk[1]}) on that key"
    else:
        what = f"a min/max aggregate joined back ({sk[1]}) to its own input on the grouping key"
    return f"{what}; generalizes {n} verified pattern{'s' if n != 1 else ''}"
