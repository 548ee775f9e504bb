"""Typed records that cross the nightly job's stage boundaries: a mined candidate (a row
of ``candidates.parquet``) and the outcome of synthesizing + verifying it (an entry of
``synthesis.json``). On disk they stay JSON / parquet; in memory they are these."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Optional


class OutcomeStatus(str, Enum):
    """What synthesis + verification said about one candidate (``crashed``: the stage
    failed on it; the run goes on)."""
    VERIFIED = "verified"
    REFUTED = "refuted"
    UNKNOWN = "unknown"
    NO_PROGRAM = "no_program"
    UNSUPPORTED = "unsupported"
    CRASHED = "crashed"

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class MinedCandidate:
    """One row of the mining job's ``candidates.parquet``."""
    candidate_id: str
    family: str
    join_kind: str
    shape: str
    example_sql: str
    templates: int
    executions: int
    cost_share: float
    template_ids: tuple[str, ...] = ()
    instances: tuple[str, ...] = ()     # the candidate's instance in each template (JSON sql + schema)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "MinedCandidate":
        tids = row.get("template_ids")
        insts = row.get("instances")
        return cls(str(row["candidate_id"]), str(row["family"]), str(row.get("join_kind") or ""),
                   str(row["shape"]), str(row["example_sql"]), int(row["templates"]),
                   int(row["executions"]), float(row["cost_share"]),
                   tuple(str(t) for t in (tids if tids is not None else ())),
                   tuple(str(i) for i in (insts if insts is not None else ())))


@dataclass(frozen=True)
class Support:
    templates: int
    executions: int
    cost_share: float
    join_kind_mined: str


@dataclass
class Outcome:
    """Synthesis + verification of one mined candidate, and the instance it is about
    (``edges`` ... ``agg_side``: the family's point of the certified SQL)."""
    candidate: str
    family: str
    shape: str
    sql: str                             # the matched sub-query (what synthesis is about)
    example_sql: Optional[str] = None    # the mined example the runtime rewrites (certified)
    join_kind: Optional[str] = None
    status: OutcomeStatus = OutcomeStatus.CRASHED
    reason: str = ""
    seconds: float = 0.0
    streaming: bool = False
    checked_by: str = ""
    candidates_tried: int = 0
    verifier: dict[str, Any] = field(default_factory=dict)
    counterexample: Optional[dict[str, Any]] = None
    program: Optional[dict[str, Any]] = None
    pseudo_code: str = ""
    memory: Optional[str] = None
    edges: Optional[list[list[str]]] = None
    edges_written: Optional[list[list[str]]] = None
    aggregates: list[str] = field(default_factory=list)
    branches: int = 2
    agg_side: Optional[str] = None
    variant: str = ""                    # the point's Covers.variant (e.g. NB's rank offsets)
    premises: list[str] = field(default_factory=list)   # the point's declared-key premises
    traceback: Optional[str] = None
    support: Optional[Support] = None
    template_ids: list[str] = field(default_factory=list)
    schema: Optional[dict[str, dict[str, str]]] = None     # of ``sql`` when it reads a source as one table
    instances: list[str] = field(default_factory=list)     # every template's instance (JSON): certified too

    @property
    def verified(self) -> bool:
        return self.status is OutcomeStatus.VERIFIED

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = self.status.value
        return {k: v for k, v in d.items() if v is not None}
