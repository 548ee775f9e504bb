"""What a sharing plan is: the batch's queries (:class:`BatchQuery`, :class:`QueryInfo`),
the rewritten queries, and :class:`SharingPlan` — the SEs, CEs, proofs, estimates, the
choice and its decisions, with its report and JSON — as :mod:`superop.share.planner`
builds it and :mod:`superop.share.run` runs it.
"""
from __future__ import annotations

import dataclasses
import re
import uuid
from dataclasses import dataclass, field
from typing import Optional

from ..ir.generate import to_sql
from ..ir.nodes import Node
from .covering import Consumer, CoveringExpression
from .estimate import ConsumerValue, Estimate
from .proofs import ConsumerProof
from .select import CEDecision, Selection
from .similar import SimilarSubexpression
from .store import CHECKPOINT


def fresh_prefix() -> str:
    """A view-name prefix no other run uses."""
    return f"_superop_ce_{uuid.uuid4().hex[:8]}_"


@dataclass
class BatchQuery:
    name: str
    sql: str
    timestamp: Optional[float] = None      # epoch seconds (log windows)


@dataclass
class QueryInfo:
    index: int
    name: str
    sql: str
    plan: Optional[Node] = None
    excluded: str = ""                     # why the query takes no part ("" = it does)


@dataclass
class RewrittenQuery:
    index: int
    name: str
    sql: str                               # what runs
    changed: bool
    ces: list[str] = field(default_factory=list)
    reason: str = ""


@dataclass
class SharingPlan:
    queries: list[QueryInfo]
    ses: list[SimilarSubexpression] = field(default_factory=list)
    ces: list[CoveringExpression] = field(default_factory=list)
    proofs: list[ConsumerProof] = field(default_factory=list)
    estimates: dict[str, Estimate] = field(default_factory=dict)
    selection: Optional[Selection] = None
    decisions: list[CEDecision] = field(default_factory=list)
    rewrites: list[RewrittenQuery] = field(default_factory=list)
    budget: Optional[int] = None
    budget_source: str = ""
    seconds: dict = field(default_factory=dict)
    used: dict[str, list[Consumer]] = field(default_factory=dict)   # CE id -> consumers rewritten
    consumer_values: dict[str, list[ConsumerValue]] = field(default_factory=dict)   # the gate, per CE
    accepted: dict[str, list[Consumer]] = field(default_factory=dict)  # CE id -> consumers that gain
    prover_stats: dict = field(default_factory=dict)
    estimator_stats: dict = field(default_factory=dict)   # Spark plannings, cost look-ups
    cache: str = ""                     # the planning cache: "" (none), "hit KEY" or "stored KEY"
    view_prefix: str = ""               # the CEs' temp views are view_prefix + their number
    fresh_views: bool = False           # the prefix was generated (not given): renamed per load
    storage: str = CHECKPOINT           # how the chosen CEs are stored (the cost model's, store.py)

    @property
    def cached(self) -> list[CoveringExpression]:
        """The CEs that are persisted: chosen, and read by at least one rewritten query."""
        return [c for c in self.ces if self.used.get(c.id)]

    def rename_views(self, prefix: str) -> None:
        """Name the CEs' temp views ``prefix`` + their number, in the CEs and in the SQL that
        runs. A plan loaded from the planning cache gets a fresh prefix, so two runs of one
        stored plan in one Spark session (each loads its own copy) never share a view.
        Views are no part of any proof (obligations inline the CE plan), so this changes
        nothing proved. ``view_scan`` and the extractions (the IR the proofs read) keep
        the planning-time name."""
        old = self.view_prefix
        if not old or prefix == old:
            return
        pat = re.compile(r"(?<![\w$])" + re.escape(old) + r"(?=\d+(?![\w$]))")
        for ce in self.ces:
            ce.view = pat.sub(prefix, ce.view)
        for r in self.rewrites:
            if r.changed:
                r.sql = pat.sub(prefix, r.sql)
        self.view_prefix = prefix

    def for_run(self) -> "SharingPlan":
        """The plan as one execution runs it: with generated view names (``fresh_views``),
        a copy whose CE views get a fresh prefix, so two executions of one plan object at
        once (two threads of one Spark session) never drop each other's views. Only the CE
        and rewrite records are copied; the IR, proofs and estimates are shared, read-only.
        Names the caller gave (``view_prefix=``) are kept."""
        if not self.fresh_views:
            return self
        out = dataclasses.replace(self, ces=[dataclasses.replace(c) for c in self.ces],
                                  rewrites=[dataclasses.replace(r) for r in self.rewrites])
        out.rename_views(fresh_prefix())
        return out

    def decision(self, ce_id: str) -> Optional[CEDecision]:
        return next((d for d in self.decisions if d.ce == ce_id), None)

    def report(self) -> str:
        lines = [f"batch: {len(self.queries)} queries, {sum(1 for q in self.queries if not q.excluded)} analysed; "
                 f"{len(self.ses)} similar sub-expressions, {len(self.ces)} covering expressions, "
                 f"{len(self.cached)} cached; budget {self.budget} bytes ({self.budget_source})"
                 + (f"; planning cache: {self.cache}" if self.cache else "")]
        for q in self.queries:
            if q.excluded:
                lines.append(f"  {q.name}: runs unchanged ({q.excluded})")
        for se in self.ses:
            lines.append(f"  {se.describe()}")
        for d in self.decisions:
            ce = next((c for c in self.ces if c.id == d.ce), None)
            what = f"{ce.kind} {ce.template} over {', '.join(ce.se.tables)}" if ce else ""
            lines.append(f"  {d.ce} {what}: {d.verdict.value} — {d.reason}")
        chosen = set(self.selection.chosen) if self.selection is not None else set()
        for ce_id, vals in self.consumer_values.items():
            for v in vals:
                if not v.gains and ce_id in chosen:
                    lines.append(f"  {ce_id} not read by {self.queries[v.query].name} {v.unit} "
                                 f"(never slower): {v.reason()}")
        for p in self.proofs:
            if not p.verified:
                lines.append(f"  proof {p.ce} {self.queries[p.query].name}: {p.status} — {p.why()}")
        for r in self.rewrites:
            if r.changed:
                lines.append(f"  {r.name}: reads {', '.join(r.ces)}")
            elif r.reason:
                lines.append(f"  {r.name}: unchanged ({r.reason})")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {
            "queries": [{"index": q.index, "name": q.name, "excluded": q.excluded} for q in self.queries],
            "similar_subexpressions": [{"id": s.id, "kind": s.kind, "fingerprint": s.fingerprint,
                                        "tables": list(s.tables), "members": [m.describe() for m in s.members]}
                                       for s in self.ses],
            "covering_expressions": [{"id": c.id, "se": c.se.id, "kind": c.kind, "template": c.template,
                                      "view": c.view, "sql": to_sql(c.plan), "columns": c.columns,
                                      "consumers": [{"query": x.query, "unit": x.unit.describe(),
                                                     "extraction_sql": to_sql(x.extraction)} for x in c.consumers]}
                                     for c in self.ces],
            "proofs": [p.to_json() for p in self.proofs],
            "estimates": {k: v.to_json() for k, v in self.estimates.items()},
            "decisions": [d.to_json() for d in self.decisions],
            "consumer_values": {ce: [v.to_json() for v in vals] for ce, vals in self.consumer_values.items()},
            "prover": self.prover_stats, "estimator": self.estimator_stats,
            "rewrites": [{"index": r.index, "name": r.name, "changed": r.changed, "ces": r.ces,
                          "reason": r.reason, "sql": r.sql} for r in self.rewrites],
            "budget": self.budget, "budget_source": self.budget_source,
            "seconds": {k: round(v, 4) for k, v in self.seconds.items()}, "cache": self.cache,
            "storage": self.storage,
        }
