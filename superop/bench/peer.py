"""The peer a user would pick first: Spark with its own merge settings on.

``superop bench tpcds`` times, next to Spark's defaults and superop's form of a statement,
the statement as Spark runs it with ``MergeSubplans``' filter propagation on (symmetric and
through joins: :data:`superop.runtime.merge_flags.MERGE_FLAGS`), in a clone of the bench
session (the settings never reach the other sides). The peer side is timed for every
statement superop changes and for every statement whose plan the settings change (so a
statement where superop stays behind the peer shows up too)."""
from __future__ import annotations

from typing import Optional

from ..runtime.merge_flags import MERGE_FLAGS, canonical_plan, session_with
from .harness import median, plan_info

PEER = "peer"          # the side label: Spark with its merge settings


def peer_session(spark):
    """A clone of ``spark`` with Spark's merge settings on."""
    return session_with(spark, MERGE_FLAGS)


def plans_differ(spark, peer, sql: str) -> bool:
    """Do the merge settings change Spark's physical plan of ``sql``?"""
    return canonical_plan(plan_info(spark, sql).plan) != canonical_plan(plan_info(peer, sql).plan)


def peer_ratios(t: dict) -> dict:
    """Ratios of the median times: Spark / superop, Spark+flags / superop, Spark / Spark+flags."""
    def r(a: str, b: str) -> Optional[float]:
        x, y = (t.get(a) or {}).get("median_s"), (t.get(b) or {}).get("median_s")
        return x / y if x is not None and y else None
    return {"original_over_rewritten": r("original", "rewritten"),
            "peer_over_rewritten": r(PEER, "rewritten"),
            "original_over_peer": r("original", PEER)}


def peer_summary(results: list[dict]) -> dict:
    """Over the statements superop changes: median Spark+flags / superop, and the statements
    where superop is slower than the peer (below 0.95x of it)."""
    changed = [r for r in results if r["rewrite"]["changed"] and r.get("ratios")]
    vs = [(r["query"], r["ratios"].get("peer_over_rewritten")) for r in changed]
    peer_only = [r for r in results if not r["rewrite"]["changed"] and PEER in (r.get("timing") or {})]
    return {"median_peer_over_rewritten_changed": median([v for _, v in vs]),
            "behind_peer": [q for q, v in vs if v is not None and v < 0.95],
            "peer_only": [r["query"] for r in peer_only],
            "peer_only_faster": [r["query"] for r in peer_only
                                 if (r["ratios"].get("original_over_peer") or 0) > 1.05]}
