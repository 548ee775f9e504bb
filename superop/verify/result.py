"""Result types of the verifier. Pure data, no z3 import, so every stage can use them.

Statuses:
* ``verified``    – no counterexample exists among input tables of at most ``K`` rows
                    (``method="bounded"``) or a proof for every table size
                    (``method="inductive"``).
* ``refuted``     – a concrete counterexample (input rows + both outputs).
* ``unknown``     – the solver gave up (timeout / incomplete theory). Never "verified".
* ``unsupported`` – the sub-plan or program uses something the encodings do not model.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Optional

VERIFIED, REFUTED, UNKNOWN, UNSUPPORTED = "verified", "refuted", "unknown", "unsupported"
STATUSES = (VERIFIED, REFUTED, UNKNOWN, UNSUPPORTED)


class Unsupported(Exception):
    """An expression, operator or aggregate the Z3 encodings cannot model faithfully.
    Callers turn it into status ``unsupported`` — never ``verified``."""


def _jsonable(v: Any) -> Any:
    if isinstance(v, (_dt.date, _dt.datetime)):
        return v.isoformat()
    return v


@dataclass
class Counterexample:
    """A concrete input table on which the sub-plan and the program differ."""
    table: str
    columns: list[str]
    types: list[str]                       # Spark type strings, for createDataFrame
    rows: list[tuple]                      # input rows (bag: duplicates are meaningful)
    plan_output: list[tuple]               # what the SQL sub-plan returns (as the model claims)
    program_output: list[tuple]            # what the program returns (as the model claims)
    plan_error: bool = False               # the sub-plan raises (ANSI) on these rows
    program_error: bool = False            # the program raises on these rows

    def to_json(self) -> dict:
        out = {"table": self.table, "columns": list(self.columns), "types": list(self.types),
               "rows": [[_jsonable(v) for v in r] for r in self.rows],
               "plan_output": [[_jsonable(v) for v in r] for r in self.plan_output],
               "program_output": [[_jsonable(v) for v in r] for r in self.program_output]}
        if self.plan_error or self.program_error:
            out.update(plan_error=self.plan_error, program_error=self.program_error)
        return out

    def ddl(self) -> str:
        """A Spark DDL schema string for ``spark.createDataFrame(rows, ddl)``."""
        return ", ".join(f"`{c}` {t}" for c, t in zip(self.columns, self.types))


@dataclass
class Result:
    status: str
    method: str = "bounded"                # bounded | inductive
    K: Optional[int] = None
    seconds: float = 0.0
    reason: str = ""
    counterexample: Optional[Counterexample] = None
    certificate: Optional[dict] = None
    details: dict = field(default_factory=dict)

    @property
    def verified(self) -> bool:
        return self.status == VERIFIED

    def to_json(self) -> dict:
        out = {"status": self.status, "method": self.method, "K": self.K,
               "seconds": round(self.seconds, 4), "reason": self.reason}
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample.to_json()
        if self.certificate is not None:
            out["certificate"] = self.certificate
        if self.details:
            out["details"] = self.details
        return out
