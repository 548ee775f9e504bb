"""Words and numbers as an engineer reads them: labels for the run summary's keys, family
names, percentages, counts, time stamps, and the legend of the shape symbols."""
from __future__ import annotations

import datetime as _dt
from typing import Any, Optional

from ... import families
from ...ir.render import JOIN_SYMBOL

# the run summary's keys (superop.pipeline.nightly), in words; another key is shown with
# its underscores as spaces
SUMMARY_LABELS = {
    "queries_read": "Queries read",
    "malformed": "Malformed log lines (skipped)",
    "templates": "Distinct query templates",
    "candidates": "Candidates selected",
    "selection": "Selection rule",
    "candidates_single_template": "Candidates recurring in one template",
    "candidates_multi_template": "Candidates recurring across templates",
    "candidates_both": "Candidates recurring both ways",
    "verified": "Verified",
    "refuted": "Refuted (counterexample found)",
    "unknown": "Unknown (solver gave up)",
    "no_program": "No program found",
    "crashed": "Crashed",
    "rules": "Rules in the catalog",
    "sharing_windows_paying": "Log windows where sharing would pay",
}

JOIN_WORDS = {"inner": "inner join", "left": "left outer join", "right": "right outer join",
              "full": "full outer join", "semi": "left semi join", "anti": "left anti join",
              "cross": "cross join"}

# what each symbol of a shape or a tree drawing means
LEGEND = ([("γ", "aggregate (GROUP BY)"), ("σ", "filter (WHERE)"), ("π", "projection (SELECT list)"),
           ("ρ", "rename (AS)"), ("∪", "UNION ALL")]
          + [(sym, JOIN_WORDS[kind]) for kind, sym in JOIN_SYMBOL.items()])


def label(key: str) -> str:
    """A summary key in words."""
    return SUMMARY_LABELS.get(key) or key.replace("_", " ").capitalize()


def family_name(name: str) -> str:
    """``DJ`` -> ``Diamond join (DJ)``; an unknown name as written."""
    try:
        long = families.get(name).catalog.long_name
    except KeyError:
        return name
    return f"{long.replace('-', ' ').capitalize()} ({name})"


def family_description(name: str) -> str:
    try:
        return families.get(name).catalog.description
    except KeyError:
        return ""


def pct(share: Optional[float]) -> str:
    """A share of the log's time as a percentage (``unknown`` when not known)."""
    if share is None:
        return "unknown"
    p = 100.0 * float(share)
    if p == 0:
        return "0 %"
    if p < 0.1:
        return "< 0.1 %"
    return f"{p:.1f} %" if p < 10 else f"{p:.0f} %"


def count(n: Any) -> str:
    """An integer with thousands separators; ``unknown`` for None."""
    if n is None:
        return "unknown"
    try:
        return f"{int(n):,}"
    except (TypeError, ValueError):
        return str(n)


def value(v: Any) -> Optional[str]:
    """A summary value as text; None when there is nothing to show."""
    if v is None or v == "":
        return None
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return count(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def when(ts: Optional[float]) -> str:
    """A UNIX time as ``YYYY-MM-DD HH:MM:SS`` UTC (``unknown`` for None)."""
    if ts is None:
        return "unknown"
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def iso_day(text: Optional[str]) -> Optional[str]:
    """An ISO-8601 time stamp as ``YYYY-MM-DD HH:MM`` UTC (None stays None)."""
    if not text:
        return None
    try:
        t = _dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return str(text)
    if t.tzinfo is not None:
        t = t.astimezone(_dt.timezone.utc)
    return t.strftime("%Y-%m-%d %H:%M") + (" UTC" if t.tzinfo is not None else "")


def span(first: Optional[str], last: Optional[str]) -> Optional[str]:
    """``first … last`` with the unknown end said so; None when both are unknown."""
    a, b = iso_day(first), iso_day(last)
    if a is None and b is None:
        return None
    return f"{a or 'unknown'} … {b or 'unknown'}"
