"""Spark's own plan of a query, priced: :func:`analyze_plan` plans it (nothing runs), reads
the ``EXPLAIN COST`` text with :mod:`superop.explain` and prices it with the cost model.

The DataFrame the gate planned is the one that runs (:class:`PlannedResult`): a classic
session's ``QueryExecution`` keeps its optimized and physical plans, so the statement is
not parsed, analyzed, optimized and planned a second time after the decision."""
from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any, Optional

from ..explain import PlanInfo, explain_text, parse_explain
from ..rewrite.rewriter import RewriteResult
from .plan_cost import estimate


def analyze_plan(spark, sql: str, stats=None, constants=None, df=None) -> PlanInfo:
    """Plan ``sql`` with Spark (analysis, optimization, physical planning; nothing runs),
    with the cost model's estimate. ``stats``: a :class:`superop.runtime.plan_cost.TableStats`
    source of row counts and grouping-key NDVs (ANALYZE TABLE results); None = Spark's
    plan only. ``constants``: the :class:`superop.runtime.calibration.CostConstants` that price
    it (None = the shipped, calibrated ones). ``df``: the caller's ``spark.sql(sql)`` (or a
    DataFrame program's), whose ``QueryExecution`` gives the ``EXPLAIN COST`` text: one
    planning, and the caller can run that DataFrame without planning it again."""
    if df is None:
        df = spark.sql(sql)
    text = explain_cost(spark, df)
    st = df.schema
    info = parse_explain(text if text is not None else explain_text(spark, sql))
    info.columns = [f.name for f in st.fields]
    info.types = [f.dataType.simpleString() for f in st.fields]
    info.estimate = estimate(info, stats=stats, constants=constants)
    info.cost = info.estimate.total
    info.shuffled_bytes = info.estimate.features.get("shuffle_bytes", 0.0)
    return info


def explain_cost(spark, df) -> Optional[str]:
    """``EXPLAIN COST`` of ``df``'s own plan (classic: its ``QueryExecution``, which keeps
    the plans it computes; Connect: the server explains the DataFrame); None when the
    client has no such call (the caller explains the SQL text instead)."""
    try:
        mode = spark._jvm.org.apache.spark.sql.execution.ExplainMode.fromString("cost")
        return df._jdf.queryExecution().explainString(mode)
    except Exception:        # Spark Connect: no JVM in this process
        return _connect_explain(df)


def _connect_explain(df) -> str | None:
    """``EXPLAIN COST`` of a Spark Connect DataFrame (its plan may bind DataFrames that
    no SQL text names); None when the client has no such call."""
    try:
        return df._explain_string(mode="cost")
    except Exception:  # noqa: BLE001 - another client: plan it again, by SQL
        return None


@dataclass
class PlannedResult(RewriteResult):
    """A decision with the DataFrame the gate planned for the form it chose (the original
    when it kept the query): ``SuperOpSession.sql`` runs that DataFrame. Never cached or
    serialized (``to_json`` and the decision cache read the decision's fields only)."""
    planned: Any = field(default=None, repr=False, compare=False)


def with_plan(res: RewriteResult, df) -> RewriteResult:
    """``res`` carrying ``df``, the DataFrame that runs it (None: ``res`` as it is)."""
    if df is None:
        return res
    return PlannedResult(**{f.name: getattr(res, f.name) for f in fields(res)}, planned=df)


def planned_frame(res: RewriteResult):
    """The DataFrame the gate planned for ``res`` (None: plan ``res.sql`` to run it)."""
    return getattr(res, "planned", None)


def planning_ms(spark, sql: str) -> float:
    """Spark's own analysis + optimization + physical planning time for ``sql``."""
    t = time.perf_counter()
    explain_text(spark, sql)
    return (time.perf_counter() - t) * 1e3
