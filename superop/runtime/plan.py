"""What Spark itself plans for a query: exchanges, scans' PushedFilters and a CBO-style
cost, read from the physical plan through the JVM (py4j).

Counting exchanges
------------------
We walk ``queryExecution().executedPlan()``. With adaptive execution on, that is an
``AdaptiveSparkPlanExec`` whose ``initialPlan`` already holds the exchanges that
EnsureRequirements inserted; we walk it (and the plans of subqueries) before any stage
runs. ``ShuffleExchangeExec`` counts as a shuffle. ``ReusedExchangeExec`` is counted
separately and NOT as a new shuffle: Spark reads the output of an exchange it already
runs, so it adds no shuffle write (this is Spark's own form of the paper's Spool).
``BroadcastExchangeExec`` is reported but is not a shuffle.

Cost
----
Spark's CBO weighs cardinality against size (``spark.sql.cbo.joinReorder.card.weight``,
0.7 by default): ``cost = w * rows + (1 - w) * bytes``. We apply it to what every shuffle
moves — the estimated statistics of each exchange's input (from ANALYZE TABLE column
statistics when ``spark.sql.cbo.enabled`` and present, else Spark's size estimates; rows
fall back to bytes / 64 when Spark has no row count). The sum ranks rewrites that have the
same number of exchanges.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

SHUFFLE = "ShuffleExchangeExec"
REUSED = ("ReusedExchangeExec",)
BROADCAST = "BroadcastExchangeExec"


@dataclass
class PlanInfo:
    exchanges: int = 0
    reused: int = 0
    broadcasts: int = 0
    cost: float = 0.0
    shuffled_bytes: float = 0.0
    pushed_filters: list = field(default_factory=list)   # one string per file scan
    tree: str = ""
    columns: list = field(default_factory=list)
    types: list = field(default_factory=list)

    def to_json(self) -> dict:
        return {"exchanges": self.exchanges, "reused_exchanges": self.reused,
                "broadcast_exchanges": self.broadcasts, "cost": self.cost,
                "shuffled_bytes": self.shuffled_bytes, "pushed_filters": list(self.pushed_filters)}


def _seq(s) -> list:
    return [s.apply(i) for i in range(s.size())]


def _opt(o):
    return o.get() if o is not None and o.isDefined() else None


def _stats(node) -> tuple[Optional[float], Optional[float]]:
    """(rows, bytes) of the logical plan behind a physical node (walking down to the
    first node that has a logical link)."""
    n = node
    for _ in range(8):
        try:
            link = _opt(n.logicalLink())
        except Exception:
            link = None
        if link is not None:
            st = link.stats()
            size = float(str(st.sizeInBytes()))
            rc = _opt(st.rowCount())
            return (float(str(rc)) if rc is not None else None), size
        kids = _seq(n.children())
        if not kids:
            break
        n = kids[0]
    return None, None


def analyze_plan(spark, sql: str, weight: Optional[float] = None) -> PlanInfo:
    """Plan ``sql`` with Spark (analysis, optimization, physical planning; nothing runs)."""
    df = spark.sql(sql)
    return analyze_df(spark, df, weight)


def analyze_df(spark, df, weight: Optional[float] = None) -> PlanInfo:
    if weight is None:
        weight = float(spark.conf.get("spark.sql.cbo.joinReorder.card.weight", "0.7"))
    qe = df._jdf.queryExecution()
    root = qe.executedPlan()
    info = PlanInfo(columns=list(df.columns), types=[f.dataType.simpleString() for f in df.schema.fields])
    stack = [root]
    while stack:
        n = stack.pop()
        name = n.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            stack.append(n.initialPlan())
            continue
        if name == SHUFFLE:
            info.exchanges += 1
            rows, size = _stats(_seq(n.children())[0])
            if size is not None:
                r = rows if rows is not None else size / 64.0
                info.cost += weight * r + (1 - weight) * size
                info.shuffled_bytes += size
        elif name in REUSED:
            info.reused += 1
        elif name == BROADCAST:
            info.broadcasts += 1
        if name in ("FileSourceScanExec", "BatchScanExec"):
            try:
                pf = _opt(n.metadata().get("PushedFilters"))
            except Exception:
                pf = None
            if pf is not None:
                info.pushed_filters.append(str(pf))
        stack.extend(_seq(n.children()))
        try:
            stack.extend(_seq(n.subqueries()))
        except Exception:
            pass
    try:
        info.tree = root.treeString()
    except Exception:  # pragma: no cover
        info.tree = ""
    return info


def planning_ms(spark, sql: str) -> float:
    """Spark's own analysis + optimization + physical planning time for ``sql``."""
    import time
    t = time.perf_counter()
    spark.sql(sql)._jdf.queryExecution().executedPlan()
    return (time.perf_counter() - t) * 1e3
