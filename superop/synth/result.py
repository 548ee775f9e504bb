"""What synthesis returns: the statuses and :class:`SynthResult` (the program, how it was
checked, the counterexample that killed the last candidate, the search's size and time).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..dsl import Program

VERIFIED, REFUTED, NO_PROGRAM, UNSUPPORTED, UNKNOWN = (
    "verified", "refuted", "no_program", "unsupported", "unknown")


@dataclass
class SynthResult:
    status: str
    program: Optional[Program] = None
    streaming: bool = False
    counterexample: Optional[dict] = None
    reason: str = ""
    candidates_tried: int = 0
    seconds: float = 0.0
    checked_by: str = ""                 # "z3" | "testing" | ""
    family: str = ""                     # DU | DJ | MJ
    tests: int = 0                       # size of the final test set
    search_space: int = 0
    z3_counterexamples: int = 0          # CEGIS rounds driven by the verifier
    streaming_counterexample: Optional[dict] = None  # why no streaming program (if buffering)
    verifier: dict = field(default_factory=dict)
    sub_plan_sql: Optional[str] = None   # set when the CLI picked a sub-query of the input

    def to_json(self) -> dict:
        return {"status": self.status,
                "program": self.program.to_json() if self.program is not None else None,
                "pseudo_code": self.program.pretty() if self.program is not None else None,
                "streaming": self.streaming, "counterexample": self.counterexample,
                "streaming_counterexample": self.streaming_counterexample,
                "reason": self.reason, "family": self.family, "checked_by": self.checked_by,
                "candidates_tried": self.candidates_tried, "search_space": self.search_space,
                "z3_counterexamples": self.z3_counterexamples,
                "tests": self.tests, "seconds": round(self.seconds, 4), "verifier": self.verifier,
                "sub_plan_sql": self.sub_plan_sql}
