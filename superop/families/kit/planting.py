"""What the log generator needs from a family to plant examples of it (and of its
near-misses) in a query log, with the ground truth mining must find.

A family declares its planted variants (:class:`ExampleSpec`, each with its position
``seq`` in the generator's order, so that adding a family never reshuffles the others'
examples), writes the SQL of one template of a variant with the generator's SQL kit
(:class:`ExampleKit`, implemented by ``superop.workloads.loggen``; families never import
it) and says what mining must report for it (:class:`ExpectedFinding`, built from the
spec's own decoration lists, never from the IR).
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Optional, Protocol

from .records import ReasonCode


@dataclass(frozen=True)
class ExampleSpec:
    """One planted variant. ``branches``: per input path (σ/π/ρ symbols below γ, above γ)
    in bottom-up order (the paper's post-order); a path without an aggregate (a row path)
    uses only the second string."""
    seq: int
    family: str
    branches: tuple[tuple[str, str], ...]
    join_kind: str = ""
    table: str = "ops"
    keys: tuple[str, ...] = ("a",)
    table2: Optional[int] = None        # row of the paper's Table 2 this reproduces
    agg: str = ""                       # a one-aggregate family: its function (MIN / MAX)
    agg_first: bool = True              # ... and whether the aggregate is the left input
    extra_eq: bool = False              # ... and whether the join also equates the aggregate
    cte_filter: bool = False            # the shared input is a filtered CTE
    subquery: bool = False              # the aggregate is a correlated scalar sub-query (WinMagic)
    note: str = ""
    # a dashboard: ONE template run many times with fresh literals. Only selection by
    # recurring cost finds it (it is never seen in k >= 2 distinct templates).
    dashboard: bool = False


# how a planted query spells each join kind
JOIN_SQL = {"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN", "full": "FULL OUTER JOIN",
            "semi": "LEFT SEMI JOIN", "anti": "LEFT ANTI JOIN"}


@dataclass(frozen=True)
class ExpectedFinding:
    """What mining must report for a planted variant: a candidate (join kind, shape,
    number of inputs) or a near-miss (reason)."""
    status: str                          # "candidate" | "near_miss"
    join_kind: str = ""
    shape: str = ""
    n_inputs: int = 0
    reason: Optional[ReasonCode] = None

    @classmethod
    def candidate(cls, join_kind: str, shape: str, n_inputs: int) -> "ExpectedFinding":
        return cls("candidate", join_kind, shape, n_inputs)

    @classmethod
    def near_miss(cls, reason: ReasonCode) -> "ExpectedFinding":
        return cls("near_miss", reason=reason)


class Relation(Protocol):
    """A relation of the generator's SQL kit: its SQL (None for a base table or CTE), the
    FROM item name, its columns (name -> type) and the current names of its keys."""
    src: str
    sql: Optional[str]
    cols: dict[str, str]
    keys: list[str]
    table: str


class ExampleKit(Protocol):
    """The log generator's SQL kit, handed to ``Family.plant`` for one template."""
    rng: random.Random
    base: Relation                       # the spec's shared input
    prefix: str                          # a WITH clause in front of the query, or ""

    def lit(self, kind: str) -> str: ...                      # a literal slot
    def predicate(self, rel: Relation) -> str: ...           # a filter on rel's non-key columns
    def table(self, name: str, keys: list[str]) -> Relation: ...
    def agg_choices(self, rel: Relation, n: int) -> list[str]: ...
    def measure_names(self, n: int) -> list[str]: ...
    def numeric_cols(self, rel: Relation) -> list[str]: ...
    def branch(self, rel: Relation, below: str, above: str, agg: str, measure: str,
               key_filter: bool = False, tag: str = "") -> Relation: ...
    def decorate(self, rel: Relation, ops: str, tag: str = "") -> Relation: ...
