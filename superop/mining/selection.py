"""Which sub-plans and candidate variants count as recurring (the mining job's selection).

The default selects by recurring COST, not by the number of distinct query templates: the
query a dashboard runs 50 times a day with new literals is one template, and it is the most
common kind of recurring work in a warehouse.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

# Selection by recurring cost (the default). A sub-plan's cost is the summed duration of the
# queries that contain it; it recurs when those queries ran at least MIN_EXECUTIONS times and
# their summed duration is at least MIN_COST_SHARE of the whole log's. 0.5 %: a nightly job
# synthesizes and proves every candidate (seconds to a minute each), so it looks at the
# sub-plans worth a measurable slice of the warehouse's time — a dashboard query run 50 times
# a day among a few thousand statements is ~1-2 %, a query run once or twice is ~0.05 %.
MIN_COST_SHARE = 0.005
MIN_EXECUTIONS = 2

# how a candidate recurs (summary counts, the ``route`` column)
ROUTES = ("single_template", "multi_template", "both")


@dataclass(frozen=True)
class Selection:
    """Which variants and sub-plans count as recurring.

    ``k is None`` (default): by cost — executions >= ``min_executions`` and cost share >=
    ``min_cost_share``, whether the queries come from one template run many times (a
    dashboard with fresh literals) or from many templates. ``k`` set: the classic support
    rule, seen in >= k distinct templates (costs are still reported, not used)."""
    k: Optional[int] = None
    min_cost_share: float = MIN_COST_SHARE
    min_executions: int = MIN_EXECUTIONS

    @property
    def mode(self) -> str:
        return "templates" if self.k is not None else "cost"

    def keeps(self, templates: int, executions: int, cost_share: float) -> bool:
        """The rule on one variant's support (``recurs`` is the same rule as a Spark column)."""
        if self.k is not None:
            return templates >= self.k
        return executions >= self.min_executions and cost_share >= self.min_cost_share

    def route(self, templates: int, single_recurs: bool) -> str:
        """``single_recurs``: one of the templates alone passes the cost rule."""
        if templates <= 1:
            return "single_template"
        return "both" if single_recurs else "multi_template"

    def cost_rule(self, total_cost: float):
        """Spark predicate over columns (executions, cost_ms): the cost recurs."""
        from pyspark.sql import functions as F
        share = (F.coalesce(F.col("cost_ms"), F.lit(0.0)) / F.lit(total_cost)) if total_cost \
            else F.lit(0.0)
        return (F.col("executions") >= self.min_executions) & (share >= self.min_cost_share)

    def recurs(self, total_cost: float):
        """Spark predicate over columns (templates, executions, cost_ms) of a sub-plan."""
        from pyspark.sql import functions as F
        return F.col("templates") >= self.k if self.k is not None else self.cost_rule(total_cost)

    def describe(self) -> str:
        """One line for reports: the rule in words."""
        if self.k is not None:
            return f"templates: seen in >= {self.k} distinct templates"
        return (f"cost: >= {self.min_executions} executions and >= "
                f"{self.min_cost_share * 100:g}% of the log's summed duration")

    def as_dict(self) -> dict:
        return {"mode": self.mode, "k": self.k, "min_cost_share": self.min_cost_share,
                "min_executions": self.min_executions}
