"""Spark's own plan of a query, priced: :func:`analyze_plan` plans it (nothing runs), reads
the ``EXPLAIN COST`` text with :mod:`superop.explain` and prices it with the cost model."""
from __future__ import annotations

import time

from ..explain import PlanInfo, explain_text, parse_explain
from .plan_cost import estimate


def analyze_plan(spark, sql: str, stats=None, constants=None, df=None) -> PlanInfo:
    """Plan ``sql`` with Spark (analysis, optimization, physical planning; nothing runs),
    with the cost model's estimate. ``stats``: a :class:`superop.runtime.plan_cost.TableStats`
    source of row counts and grouping-key NDVs (ANALYZE TABLE results); None = Spark's
    plan only. ``constants``: the :class:`superop.runtime.calibration.CostConstants` that price
    it (None = the shipped, calibrated ones). ``df``: the caller's ``spark.sql(sql)``, whose
    ``QueryExecution`` then gives the ``EXPLAIN COST`` text too (one planning, not two)."""
    text = None
    if df is None:
        df = spark.sql(sql)
    else:
        try:
            mode = spark._jvm.org.apache.spark.sql.execution.ExplainMode.fromString("cost")
            text = df._jdf.queryExecution().explainString(mode)
        except Exception:        # Spark Connect: the server explains the DataFrame's own plan
            text = _connect_explain(df)
    st = df.schema
    info = parse_explain(text if text is not None else explain_text(spark, sql))
    info.columns = [f.name for f in st.fields]
    info.types = [f.dataType.simpleString() for f in st.fields]
    info.estimate = estimate(info, stats=stats, constants=constants)
    info.cost = info.estimate.total
    info.shuffled_bytes = info.estimate.features.get("shuffle_bytes", 0.0)
    return info


def _connect_explain(df) -> str | None:
    """``EXPLAIN COST`` of a Spark Connect DataFrame (its plan may bind DataFrames that
    no SQL text names); None when the client has no such call."""
    try:
        return df._explain_string(mode="cost")
    except Exception:  # noqa: BLE001 - another client: plan it again, by SQL
        return None


def planning_ms(spark, sql: str) -> float:
    """Spark's own analysis + optimization + physical planning time for ``sql``."""
    t = time.perf_counter()
    explain_text(spark, sql)
    return (time.perf_counter() - t) * 1e3
