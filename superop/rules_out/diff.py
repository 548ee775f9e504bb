"""`superop catalog diff`: added, removed and changed rules between two catalogs.

Rules are compared by id, ignoring volatile fields (timings and timestamps), so that two
runs of the nightly job on the same log compare equal."""
from __future__ import annotations

from typing import Any

VOLATILE = {"seconds", "checked_at", "created_at", "timings", "elapsed"}


def stable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: stable(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [stable(v) for v in obj]
    return obj


def _changed_keys(a: dict, b: dict) -> list[str]:
    keys = sorted(set(a) | set(b))
    return [k for k in keys if stable(a.get(k)) != stable(b.get(k))]


def diff(old: dict, new: dict) -> dict:
    ra = {r["id"]: r for r in old.get("rules", [])}
    rb = {r["id"]: r for r in new.get("rules", [])}
    changed = {}
    for rid in sorted(set(ra) & set(rb)):
        ks = _changed_keys(ra[rid], rb[rid])
        if ks:
            changed[rid] = ks
    return {"added": sorted(set(rb) - set(ra)), "removed": sorted(set(ra) - set(rb)),
            "changed": changed, "unchanged": sorted((set(ra) & set(rb)) - set(changed))}


def format_diff(d: dict) -> str:
    lines = []
    for rid in d["added"]:
        lines.append(f"+ {rid}")
    for rid in d["removed"]:
        lines.append(f"- {rid}")
    for rid, ks in d["changed"].items():
        lines.append(f"~ {rid}: {', '.join(ks)}")
    if not lines:
        lines.append(f"no rule changes ({len(d['unchanged'])} rules identical)")
    return "\n".join(lines)
