"""Candidate detection on one lowered plan (super-operator paper §3.2-3.3, §4.2-4.3).

Mining reports what the family registry's ONE matching code path says
(:func:`superop.families.scan`): a **candidate** is a sub-plan some family matches — the
same match the runtime applies — and a **near-miss** is one a family recognizes by shape
but refuses, with the family's typed reason (``superop.families`` declares every family,
its supported join kinds and its reasons; :data:`REASONS` lists them all).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from ..families import Match, NearMiss, get, reason_codes, scan
from ..ir import Node, Scan, shape, walk


class Status(str, Enum):
    CANDIDATE = "candidate"
    NEAR_MISS = "near_miss"

    def __str__(self) -> str:
        return str(self.value)


# every near-miss reason (the matching path's, superop.ir.safety's, each family's): code -> one line
REASONS: dict[str, str] = {code: r.text for code, r in reason_codes().items()}


@dataclass
class Finding:
    """One candidate or near-miss of a plan, as mining writes it."""
    status: Status
    family: str                    # attempted family for near-misses
    join_kind: str
    root: Node
    n_inputs: int
    reason: str = ""               # a reason code of REASONS ("" for a candidate)
    agg: str = ""                  # MJ: MIN/MAX
    inputs: list[str] = field(default_factory=list)   # tables under the shared input
    premises: str = ""             # a candidate's declared-key premises (superop.ir.keys), "; "-joined

    @property
    def shape(self) -> str:
        return shape(self.root)

    @property
    def shape_counts(self) -> str:
        return shape(self.root, counts=True)


def _tables(n: Node | None) -> list[str]:
    return [] if n is None else sorted({m.identity_sql for m in walk(n) if isinstance(m, Scan)})


def finding(f: Match | NearMiss) -> Finding:
    if isinstance(f, Match):
        return Finding(Status.CANDIDATE, f.family, f.join_kind or "", f.root, len(f.branches),
                       agg=get(f.family).summary_agg(f), inputs=_tables(f.source),
                       premises="; ".join(p.text() for p in f.premises))
    return Finding(Status.NEAR_MISS, f.family, f.join_kind, f.root, f.n_inputs, reason=f.code,
                   inputs=_tables(f.source))


def detect(plan: Node) -> list[Finding]:
    return [finding(f) for f in scan(plan)]


def detect_with_matches(plan: Node) -> list[tuple[Finding, Match | NearMiss]]:
    """:func:`detect` with each finding's match (or near-miss) from the matching path."""
    return [(finding(f), f) for f in scan(plan)]


def skeleton(shape_str: str) -> str:
    """A shape without its optional operators (σ π ρ): the core operators and their nesting.
    ``to_sql`` merges optional operators into SELECT blocks, so the example SQL of a candidate
    re-lowers to the same skeleton but possibly fewer σ/π/ρ."""
    s = re.sub("[σπρ]", "", shape_str)
    s = re.sub(r"\|+", "|", s)
    s = re.sub(r"\(\|", "(", s)
    s = re.sub(r"\|([,)])", r"\1", s)
    s = re.sub(r", \|", ", ", s)
    return s.strip("|")
