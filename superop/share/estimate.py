"""Value and weight of a CE from Spark's own statistics (the paper's Eq. 1-3).

    C(ω)  = Σ_j C_E(τ_j)                            every consumer computes its sub-plan
    C(Ω)  = C_E(τ*) + W·|τ*| + m·R·|τ*|               compute once, write, m reads
    value = C(ω) − C(Ω)         weight = M·|τ*|   (bytes in the storage memory)

C_E(τ) = bytes scanned (each table's size for the columns τ reads, as Spark estimates a
column-pruned scan) + bytes shuffled (the estimated input of every shuffle exchange in
Spark's physical plan of τ, read by :func:`superop.runtime.plan.analyze_df`). |τ*| is
Spark's size estimate of the CE's optimized logical plan. With ``spark.sql.cbo.enabled``
and table statistics (``ANALYZE TABLE .. FOR ALL COLUMNS``; ``run_batch(...,
analyze_tables=True)``) those estimates use row counts and filter/join selectivities.
Without statistics Spark ignores filters and multiplies the inputs of a join; we then
cap every size by the bytes the plan scans (a join over foreign keys does not grow its
largest input), and say so (``Estimate.source``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Optional

from ..ir.generate import to_sql
from ..ir.nodes import Node, Scan, walk


UNKNOWN_SIZE = "unknown"
# Spark's size of a relation it knows nothing about (an RDD): spark.sql.defaultSizeInBytes
# (Long.MaxValue by default); sums and products of it are no estimate either.
NO_ESTIMATE_BYTES = 2.0 ** 62


@dataclass(frozen=True)
class CostModel:
    write_factor: float = 1.0        # W: cost of caching one byte, relative to scanning it
    read_factor: float = 0.1         # R: cost of reading one cached byte
    memory_factor: float = 1.5       # M: in-memory bytes per estimated byte


@dataclass
class Estimate:
    """Why a CE is worth caching (or not), in bytes of work."""
    ce: str
    consumers: int
    consumer_cost: float             # C(ω)
    ce_cost: float                   # C_E(τ*)
    size: float                      # |τ*|
    value: float
    weight: float
    source: str                      # "statistics" | "size-only (capped by scanned bytes)" | "unknown"

    @property
    def known(self) -> bool:
        return self.source != UNKNOWN_SIZE

    def to_json(self) -> dict:
        return asdict(self)


def plan_stats(spark, sql: str) -> tuple[Optional[float], float]:
    """(rows or None, bytes) of Spark's optimized logical plan for ``sql``."""
    st = spark.sql(sql)._jdf.queryExecution().optimizedPlan().stats()
    rc = st.rowCount()
    rows = float(str(rc.get())) if rc.isDefined() else None
    return rows, float(str(st.sizeInBytes()))


class Estimator:
    def __init__(self, spark, model: CostModel = CostModel()):
        self.spark = spark
        self.model = model
        self._scan: dict[tuple, float] = {}
        self._cost: dict[str, tuple[float, float, bool]] = {}

    def scan_bytes(self, plan: Node) -> float:
        """Σ over the plan's scans of Spark's estimate for the columns it reads."""
        from .blocks import columns_outside_queries, node_expressions
        used: dict[str, set] = {}
        names = {}
        for n in walk(plan):
            if isinstance(n, Scan):
                used.setdefault(n.table, set())
                names[n.table] = [c for c, _ in n.columns]
        for n in walk(plan):
            for e in node_expressions(n):
                for c in columns_outside_queries(e):
                    for t, cols in names.items():
                        if c.name in cols:
                            used[t].add(c.name)
        total = 0.0
        for t, cols in used.items():
            cols = sorted(cols) or names[t][:1]
            key = (t, tuple(cols))
            if key not in self._scan:
                sel = ", ".join(f"`{c}`" for c in cols)
                self._scan[key] = plan_stats(self.spark, f"SELECT {sel} FROM {t}")[1]
            total += self._scan[key]
        return total

    def cost(self, plan: Node) -> tuple[float, float, bool]:
        """(C_E, output bytes, has statistics) of a sub-plan."""
        from ..runtime.plan import analyze_df
        sql = to_sql(plan)
        if sql not in self._cost:
            scan = self.scan_bytes(plan)
            df = self.spark.sql(sql)
            rows, size = plan_stats(self.spark, sql)
            info = analyze_df(self.spark, df)
            shuffle = info.shuffled_bytes
            stats = rows is not None
            if not stats:               # Spark ignored filters / multiplied joins: cap
                size = min(size, scan)
                shuffle = min(shuffle, info.exchanges * scan)
            self._cost[sql] = (scan + shuffle, size, stats)
        return self._cost[sql]

    def estimate(self, ce, consumers) -> Estimate:
        """Eq. 1-3 for ``ce`` served to ``consumers`` (those with a proof)."""
        m = self.model
        consumer_cost = sum(self.cost(c.original)[0] for c in consumers)
        ce_cost, size, stats = self.cost(ce.plan)
        k = len(consumers)
        if max(consumer_cost, ce_cost, size) >= NO_ESTIMATE_BYTES:
            return Estimate(ce.id, k, consumer_cost, ce_cost, size, 0.0, float("inf"), UNKNOWN_SIZE)
        value = consumer_cost - (ce_cost + m.write_factor * size + k * m.read_factor * size)
        return Estimate(ce.id, k, consumer_cost, ce_cost, size, value, m.memory_factor * size,
                        "statistics" if stats else "size-only (capped by scanned bytes)")


def storage_budget(spark) -> tuple[int, str]:
    """(bytes, how) the cache may use: the storage memory Spark reports free on its
    executors (the block managers' remaining memory for caching) times
    ``spark.memory.storageFraction`` (the part execution cannot evict). Without a
    JVM status tracker, the same from the configuration."""
    frac = float(spark.conf.get("spark.memory.storageFraction", "0.5"))
    try:
        status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().toList()
        free = sum(int(status.apply(i)._2()._2()) for i in range(status.size()))
        return int(free * frac), f"{free} bytes of free storage memory x storageFraction {frac}"
    except Exception:
        mem = spark.conf.get("spark.executor.memory", spark.conf.get("spark.driver.memory", "1g"))
        heap = _bytes(mem)
        usable = max(0, heap - 300 * 2 ** 20) * float(spark.conf.get("spark.memory.fraction", "0.6"))
        return int(usable * frac), f"({mem} - 300m) x memory.fraction x storageFraction {frac}"


def _bytes(s: str) -> int:
    s = str(s).strip().lower()
    mult = {"k": 2 ** 10, "m": 2 ** 20, "g": 2 ** 30, "t": 2 ** 40}
    if s and s[-1] == "b":
        s = s[:-1]
    if s and s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(float(s))


def parse_budget(s: str) -> int:
    """'512m', '2g', '1.5g', '1000000' -> bytes."""
    try:
        v = _bytes(s)
    except ValueError:
        from ..errors import SuperopError
        raise SuperopError(f"bad budget {s!r} (e.g. 512m, 2g or a number of bytes)") from None
    if v < 0:
        from ..errors import SuperopError
        raise SuperopError("the budget must be >= 0")
    return v
