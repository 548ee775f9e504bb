"""The report's sharing section: the log windows in which sharing work across queries
would have paid (what ``superop.share.opportunities.SharingReport.to_json`` stored in the
catalog)."""
from __future__ import annotations

from typing import Optional

from . import labels as L
from .blocks import Block, Heading, Para, Table


def _covering(c: dict) -> str:
    tables = ", ".join(f"`{t}`" for t in c.get("tables") or [])
    chosen = ", chosen" if c.get("chosen") else ""
    return (f"{c.get('id')}: {c.get('kind')} {c.get('template')} over {tables} "
            f"({len(c.get('consumers') or [])} consumers{chosen})")


def section_blocks(section: Optional[dict]) -> list[Block]:
    """The blocks of the sharing opportunities a catalog carries; none when it has none."""
    if not section:
        return []
    out: list[Block] = [Heading(2, "Sharing opportunities", "sharing")]
    if section.get("error"):
        return out + [Para(f"Not computed: {section['error']}")]
    opps = section.get("opportunities") or []
    paying = [o for o in opps if o.get("would_pay")]
    how = "estimated from Spark's statistics" if section.get("estimated") else \
        "proved covering expressions; value not estimated (tables not in the Spark catalog)"
    out.append(Para(f"{len(paying)} of {L.count(section.get('examined'))} examined log windows "
                    f"({L.count(section.get('windows'))} windows of two or more queries, "
                    f"{L.value(section.get('window_seconds')) or 'unknown'} s each, "
                    f"{L.count(section.get('queries'))} queries) would have paid for sharing ({how})."))
    if section.get("truncated") or section.get("out_of_time"):
        out.append(Para(f"Bounded: {section.get('truncated')} window(s) cut to their first queries, "
                        f"{section.get('out_of_time')} window(s) not planned (time budget)."))
    if not opps:
        return out
    rows = []
    for o in opps:
        ces = "; ".join(_covering(c) for c in o.get("covering_expressions") or []) or "none"
        val = "unknown" if o.get("estimated_value") is None else f"{o['estimated_value']:.3g}"
        rows.append([f"{L.when(o.get('start'))} … {L.when(o.get('end'))}", L.count(len(o.get("queries") or [])),
                     L.count(o.get("similar_subexpressions")), ces, val, "yes" if o.get("would_pay") else "no"])
    out.append(Table(["Window (UTC)", "Queries", "Similar sub-expressions", "Covering expressions",
                      "Value (bytes)", "Pays"], rows, numeric=(1, 2, 4)))
    return out
