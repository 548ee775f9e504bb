"""The recurring near-misses of a mining run, as the catalog carries them for the report.

``near_misses.parquet`` holds every near-miss variant mining found (family, reason code,
shape, support, an example). Query authors act on the ones whose cost recurs: the same
rule that selects candidates (:class:`superop.mining.selection.Selection`) selects them,
and the catalog keeps the costliest few with their example sub-query.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .selection import Selection

# the catalog keeps at most this many near-misses, costliest first
MAX_NEAR_MISSES = 25
# an example longer than this is cut (the whole text stays in near_misses.parquet)
MAX_EXAMPLE_CHARS = 4000


@dataclass(frozen=True)
class RecurringNearMiss:
    """One near-miss variant: what the family ``family`` refused (``reason``, a reason code
    of ``superop.families.reason_codes()``) in sub-plans of shape ``shape``, with the
    support of the queries that contain it and one example sub-query."""
    family: str
    reason: str
    shape: str
    join_kind: str
    templates: int
    executions: int
    cost_share: float
    example_sql: str
    input_tables: list[str]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def example_text(sql: str) -> str:
    """The example as the catalog keeps it: whole, or cut with a note saying so."""
    if len(sql) <= MAX_EXAMPLE_CHARS:
        return sql
    return sql[:MAX_EXAMPLE_CHARS] + f"\n-- (cut: {len(sql) - MAX_EXAMPLE_CHARS} more characters)"


def recurring_near_misses(near, sel: Selection, limit: int = MAX_NEAR_MISSES) -> dict[str, Any]:
    """The catalog's ``near_misses`` section from mining's near-miss table (a pandas
    DataFrame with the columns of ``near_misses.parquet``): how many variants were found,
    the selection rule, and the recurring ones (``sel.keeps``), costliest first."""
    rows = near.to_dict("records") if near is not None else []
    kept = [r for r in rows if sel.keeps(int(r["templates"]), int(r["executions"]), float(r["cost_share"]))]
    kept.sort(key=lambda r: (-float(r["cost_share"]), -int(r["executions"]), str(r["shape"])))
    items = [RecurringNearMiss(
        family=str(r["family"]), reason=str(r["reason"]), shape=str(r["shape"]),
        join_kind=str(r.get("join_kind") or ""), templates=int(r["templates"]),
        executions=int(r["executions"]), cost_share=float(r["cost_share"]),
        example_sql=example_text(str(r.get("example_sql") or "")),
        input_tables=[t for t in str(r.get("input_tables") or "").split(",") if t])
        for r in kept[:limit]]
    return {"selection": sel.describe(), "found": len(rows), "recurring": len(kept),
            "items": [i.to_json() for i in items]}
