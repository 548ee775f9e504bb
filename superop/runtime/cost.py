"""The benefit gate's decision: two cost estimates of one query
(:mod:`superop.runtime.plan_cost`) priced with the same constants
(:mod:`superop.runtime.calibration`) and compared. A candidate is applied only if
``cost(original) / cost(candidate) >= min_speedup``; the gate only compares two plans of
the same query, so what matters is the ratio. The verdict says why, feature by feature.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .calibration import CostConstants
from ..explain import PlanInfo
from .plan_cost import UNKNOWN_SIZE_TEXT, PlanCost, with_constants


@dataclass
class Verdict:
    """The gate's word on one candidate."""
    label: str
    accepted: bool
    speedup: Optional[float]       # predicted cost(original) / cost(candidate)
    reason: str


def compare(before: PlanCost, after: PlanCost, top: int = 3) -> str:
    """The largest differences in seconds by feature, e.g. ``window +0.82 s, scan −0.21 s``."""
    tb, ta = before.terms(), after.terms()
    diffs = sorted(((k, ta.get(k, 0.0) - tb.get(k, 0.0)) for k in ta), key=lambda kv: -abs(kv[1]))
    parts = [f"{k.replace('_bytes', '').replace('_rows', '')} {'+' if d >= 0 else '−'}{abs(d):.3g} s"
             for k, d in diffs[:top] if abs(d) > 0]
    return ", ".join(parts) if parts else "no difference"


def judge(label: str, before: PlanCost, after: PlanCost,
          constants: Optional[CostConstants] = None) -> Verdict:
    """Apply iff the predicted speed-up ``cost(before) / cost(after)`` is at least
    ``min_speedup``. Both plans are priced with ``constants`` (default: those of
    ``before``). What the estimate had to assume (a scan without statistics, ...) is part
    of the reason; a plan the model cannot price (cost <= 0) is refused."""
    c = constants or before.constants
    if before.constants is not c:
        before, after = with_constants(before, c), with_constants(after, c)
    assumed = sorted(set(before.notes) | set(after.notes))
    note = f"; estimate assumed: {'; '.join(assumed)}" if assumed else ""
    if before.total <= 0 or after.total <= 0:
        return Verdict(label, False, None, f"the cost model gives no positive estimate "
                                           f"({before.total:.3g} s -> {after.total:.3g} s){note}")
    speedup = before.total / after.total
    ok = speedup >= c.min_speedup
    missing = no_statistics(before, after)
    if missing:     # Spark's default size (8 EiB) in every term: no seconds worth printing
        why = (f"predicted {speedup:.2f}x {'>=' if ok else '<'} {c.min_speedup:g}x from the plans' "
               f"operators alone: {missing}")
    else:
        why = (f"cost {before.total:.3g} s -> {after.total:.3g} s, predicted {speedup:.2f}x "
               f"{'>=' if ok else '<'} {c.min_speedup:g}x ({compare(before, after)}){note}")
    return Verdict(label, ok, speedup, why)


def no_statistics(*costs: PlanCost) -> str:
    """"statistics are missing for t1, t2 (...)" when a plan read a relation Spark has no
    size for, else "" — its seconds would rest on Spark's default size of 8 EiB."""
    names = list(dict.fromkeys(t for c in costs for t in c.missing_stats))
    if not names:
        return ""
    return (f"statistics are missing for {', '.join(names)} (Spark assumes {UNKNOWN_SIZE_TEXT} for a "
            f"relation it has no size for, so the estimate is not in seconds; ANALYZE TABLE or "
            f"file-based tables give real sizes)")


def plan_line(which: str, p: PlanInfo) -> str:
    missing = no_statistics(p.estimate) if p.estimate else ""
    if missing:
        cost = f"predicted cost unknown in seconds: {missing}"
    else:
        terms = ", ".join(f"{k} {v:.3g}" for k, v in p.estimate.terms().items() if v) if p.estimate else ""
        cost = f"predicted cost {p.cost:.3g} s ({terms})"
    return (f"exchanges {which} {p.exchanges} shuffle, {p.reused} reused, {p.broadcasts} broadcast; "
            f"{cost}; PushedFilters {p.pushed_filters}")
