"""Value and weight of a CE from Spark's own statistics (the paper's Eq. 1-3), priced with
constants measured on the machine (``CostModel``, ``benchmarks/share_calibration.py``).

    C(ω)  = Σ_j C_E(τ_j)                                  every consumer computes its sub-plan
    C(Ω)  = C_E(τ*) + W·|τ*| + F + Σ_j R_j·|τ*|_j           compute once, write, m reads
    value = C(ω) − C(Ω)         weight = M·|τ*|   (bytes in the storage memory)

Everything is in *decoded bytes*: rows x the width of the columns (Spark's default size
per type: int 4, bigint 8, string 20, ...), the unit of both an in-memory columnar
cache and of the values a scan decodes. C_E(τ) = the bytes τ's scans decode (each
table's row count x the width of the columns τ reads — parquet reads only those) + the
bytes its shuffles move (the estimated input of every shuffle exchange in Spark's
physical plan, read by :func:`superop.runtime.plan.analyze_plan`) + K x its other work
(join probes, broadcasts, stages, aggregation: the runtime cost model's features of the
same physical plan, priced relative to its scan price, :func:`work_bytes`). |τ*| = the CE's
estimated rows x its width; |τ*|_j = its rows x the width of the CE columns consumer j's
extraction reads (the cache is columnar).

Row counts come from Spark's optimized logical plan. With ``spark.sql.cbo.enabled`` and
table statistics (``ANALYZE TABLE``; ``run_batch(..., analyze_tables=True)``) they
account for filters and joins. Without statistics Spark knows sizes, not rows: rows are
then size / width, a filter keeps every row and a join's output is capped by its largest
input (joins over foreign keys do not grow), which ``Estimate.source`` says.

The batch-level test: a CE is cached only when what its consumers save,
``C(ω) − Σ_j R_j·|τ*|_j``, is more than filling it, ``C_E(τ*) + W·|τ*| + F`` — filling is
paid once before the batch's queries run (``run.execute`` fills the cache eagerly), so it
is charged to the batch, never to one consumer. ``Estimate.reason`` gives the numbers.

The per-consumer test (never slower): consumer j reads τ* only when
``v_j = C_E(τ_j) − R_j·|τ*|_j > 0``, R_j = R for a plain read and R_σ = R·``filter_read_ratio``
when its extraction filters the CE. A consumer with v_j <= 0 does not read the CE
(:class:`ConsumerValue` says why); a CE with fewer than k gaining consumers is not cached.

Every constant belongs to one way of storing a CE (``CostModel.storage``, ``store.py``).
Defaults (``CostModel``: a local checkpoint; measured by ``benchmarks/share_calibration.py
--data-dir <TPC-DS SF 1> --repeat 3 --storage checkpoint`` on the project's 2-core
machine, TPC-DS SF 1 ``store_sales``, 3/9/19 columns; see ``CALIBRATION``): filling costs
the CE's plan plus W = 0.32 per decoded byte (copying rows) plus F = 6e6 scan bytes (a
tiny table's fill, 0.04 s: a job's start-up); reading costs R = 0.50 of a parquet scan
per decoded byte the consumer reads, R_σ = 0.37 (ratio 0.73) when it filters (fewer
rows go on); the rows hold M = 2.7 bytes of storage memory per decoded byte (binary
rows, deserialized). ``CACHE_COST`` holds session 7's constants of the in-memory columnar
cache: R = 0.425, R_σ = 1.02 (parquet pushes a filter down, the cache only prunes batches
by their min/max), W = 2.93 (building compressed column batches: a fill took ~4x the scan
of the same columns), F = 7.5e7; with it an unfiltered whole-table projection whose
consumers each filter differently is refused: every consumer still reads all the rows,
at about the price of its own scan.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Optional, Sequence

from sqlglot import exp

from ..errors import SuperopError
from ..explain import explain_text, parse_explain
from ..ir.generate import to_sql
from ..ir.nodes import Node, Rename, Scan, Select, expressions_of, walk
from ..runtime.calibration import FEATURES
from ..runtime.plan import analyze_plan
from ..runtime.tablestats import CatalogStats, is_connect
from .blocks import columns_outside_queries, node_expressions
from .store import CACHE, CHECKPOINT, STORAGES

UNKNOWN_SIZE = "unknown"
# Spark's size of a relation it knows nothing about (an RDD): spark.sql.defaultSizeInBytes
# (Long.MaxValue by default); sums and products of it are no estimate either.
NO_ESTIMATE_BYTES = 2.0 ** 62


@dataclass(frozen=True)
class CostModel:
    """The constants of Eq. 1-3, in units of one decoded byte of a parquet scan. The
    defaults are measured on the project's 2-core machine (``CALIBRATION``); measure yours
    with ``benchmarks/share_calibration.py`` and load its result with :meth:`from_json`."""
    write_factor: float = 0.319      # W: cost of storing one byte, relative to decoding it in a scan
    read_factor: float = 0.501       # R: cost of reading one stored byte (no filter)
    memory_factor: float = 2.692     # M: storage-memory bytes per estimated byte
    filter_read_ratio: float = 0.729  # R_σ / R: a read that filters the CE, relative to a plain one
    fill_fixed: float = 6.0e6        # F: fixed cost of filling one CE (a job's start-up), in scan bytes
    work_factor: float = 1.0         # K: weight of a sub-plan's other work (joins, broadcasts, stages,
                                     # aggregates) priced by the runtime cost model; 0 = scans and shuffles only
    storage: str = CHECKPOINT        # how chosen CEs are stored (store.py); the constants are measured for it

    @classmethod
    def from_json(cls, path) -> "CostModel":
        """The ``cost_model`` of a ``share_calibration.json`` (or a plain JSON object of
        these fields); unknown keys are an error, missing ones keep their default."""
        import dataclasses
        import json
        from pathlib import Path

        try:
            doc = json.loads(Path(path).read_text())
        except (OSError, ValueError) as e:
            raise SuperopError(f"cannot read the cost model {path}: {e}") from None
        fields = doc.get("cost_model", doc) if isinstance(doc, dict) else None
        if not isinstance(fields, dict):
            raise SuperopError(f"{path}: expected a JSON object with the cost model's fields")
        known = {f.name for f in dataclasses.fields(cls)}
        bad = sorted(set(fields) - known)
        if bad:
            raise SuperopError(f"{path}: unknown cost model field(s) {', '.join(bad)} "
                               f"(known: {', '.join(sorted(known))})")
        if fields.get("storage", CHECKPOINT) not in STORAGES:
            raise SuperopError(f"{path}: unknown storage {fields['storage']!r} (known: {', '.join(STORAGES)})")
        return cls(**{k: (str(v) if k == "storage" else float(v)) for k, v in fields.items()})


DEFAULT_COST = CostModel()
# Where the defaults come from (benchmarks/share_calibration.py; the JSON is under
# benchmarks/results/share_calibration_checkpoint.json).
CALIBRATION = ("python benchmarks/share_calibration.py --data-dir /tmp/sharegate-sf1 --repeat 3 --storage checkpoint "
               "(2026-11-24, load 0.9-2.6)")
# The columnar cache's constants (session 7: same command with the cache, load 4-16; F
# from a second run at load 18; M not measured then, 1.0).
CACHE_COST = CostModel(write_factor=2.93, read_factor=0.425, memory_factor=1.0, filter_read_ratio=2.4,
                       fill_fixed=7.5e7, storage=CACHE)


def cost_model(path=None, storage: Optional[str] = None) -> CostModel:
    """The cost model of a run: the JSON at ``path`` (``CostModel.from_json``) or the
    shipped constants of ``storage`` (default: a checkpoint); both given, they must
    name the same store."""
    if path is None:
        return CACHE_COST if storage == CACHE else DEFAULT_COST
    m = CostModel.from_json(path)
    if storage is not None and m.storage != storage:
        raise SuperopError(f"{path} is measured for storage {m.storage!r}, not {storage!r}")
    return m


@dataclass
class Estimate:
    """Why a CE is worth caching (or not), in decoded bytes of work."""
    ce: str
    consumers: int
    consumer_cost: float             # C(ω)
    ce_cost: float                   # C_E(τ*)
    size: float                      # |τ*|
    value: float
    weight: float
    source: str                      # "statistics" | "sizes only" | "unknown"
    reads: float = 0.0               # Σ_j R·|τ*|_j: the consumers reading the cache
    fill: float = 0.0                # C_E(τ*) + W·|τ*| + F: filling the cache once

    @property
    def known(self) -> bool:
        return self.source != UNKNOWN_SIZE

    @property
    def saving(self) -> float:
        """What the consumers save by reading instead of computing: C(ω) − Σ R·|τ*|_j."""
        return self.consumer_cost - self.reads

    def reason(self) -> str:
        """Why the value is what it is (the numbers of the batch-level test)."""
        rel = ">" if self.value > 0 else "<="
        return (f"its {self.consumers} consumer(s) save {self.saving:.3g} (own sub-plans {self.consumer_cost:.3g} "
                f"- reading the cache {self.reads:.3g}) {rel} filling it {self.fill:.3g} (CE plan "
                f"{self.ce_cost:.3g} + writing {self.size:.3g} bytes + fixed); value {self.value:.3g}")

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class ConsumerValue:
    """What one consumer gains from reading a CE instead of computing its sub-plan."""
    ce: str
    query: int
    unit: str
    own_cost: float                  # C_E(τ_j): its sub-plan's scans + shuffles
    read_cost: float                 # R · the CE bytes it reads
    known: bool = True

    @property
    def value(self) -> float:
        return self.own_cost - self.read_cost

    @property
    def gains(self) -> bool:
        return self.known and self.value > 0

    def reason(self) -> str:
        if not self.known:
            return "no size estimate"
        rel = ">" if self.gains else "<="
        return (f"own sub-plan {self.own_cost:.3g} {rel} reading the cache {self.read_cost:.3g} "
                f"(value {self.value:.3g})")

    def to_json(self) -> dict:
        return {"ce": self.ce, "query": self.query, "unit": self.unit, "own_cost": self.own_cost,
                "read_cost": self.read_cost, "value": self.value, "gains": self.gains}


def type_width(t: str) -> int:
    """Spark's default size of a value of type ``t`` (DataType.defaultSize)."""
    t = t.lower()
    if t in ("int", "integer", "date", "float"):
        return 4
    if t in ("smallint", "short"):
        return 2
    if t in ("tinyint", "byte", "boolean"):
        return 1
    if t.startswith("decimal"):
        try:
            p = int(t[t.index("(") + 1:t.index(",")])
        except ValueError:
            p = 38
        return 8 if p <= 18 else 16
    if is_string_type(t):
        return 20
    return 8


def is_string_type(t: str) -> bool:
    t = t.lower()
    return t == "string" or t.startswith(("varchar", "char"))


def width(types: Sequence[str]) -> int:
    return max(1, sum(type_width(t) for t in types))


@dataclass
class PlanStats:
    rows: float
    bytes: float
    width: int
    has_rows: bool


def plan_stats(spark, sql: str) -> PlanStats:
    """Rows, decoded bytes and row width of Spark's optimized logical plan for ``sql``."""
    df = spark.sql(sql)
    if is_connect(spark):
        return _stats_of(df, parse_explain(explain_text(spark, sql)))
    return _stats_of(df)


def _stats_of(df, info=None) -> PlanStats:
    """The statistics of ``df``'s optimized plan: through the JVM on a classic session
    (exact), or from the root of the ``EXPLAIN COST`` text (``info``, a parsed
    :class:`superop.runtime.plan.PlanInfo`) where there is none, e.g. Spark Connect —
    the text prints sizes to 2-3 significant digits and row counts to 3."""
    w = width(info.types if info is not None and info.types else
              [f.dataType.simpleString() for f in df.schema.fields])
    if info is not None:
        root = info.logical
        if root is None or root.size is None:
            raise ValueError("EXPLAIN COST printed no statistics for the optimized plan")
        if root.rows is not None:
            return PlanStats(root.rows, root.rows * w, w, True)
        return PlanStats(root.size / w, root.size, w, False)
    st = df._jdf.queryExecution().optimizedPlan().stats()
    size = float(str(st.sizeInBytes()))
    rc = st.rowCount()
    if rc.isDefined():
        rows = float(str(rc.get()))
        return PlanStats(rows, rows * w, w, True)
    return PlanStats(size / w, size, w, False)


# The runtime cost model's features the share model counts itself (its own scan bytes per
# column read; the shuffle bytes are taken as they are).
_COUNTED = ("scan_bytes", "shuffle_bytes")


@dataclass(frozen=True)
class SubPlanCost:
    """What one Spark planning of a sub-plan tells the estimator."""
    stats: PlanStats
    shuffle_bytes: float             # bytes its shuffle exchanges move
    exchanges: int
    work_bytes: float = 0.0          # its other work (joins, broadcasts, stages, aggregates), in scan bytes


def work_bytes(estimate) -> float:
    """The runtime cost model's estimate of a plan's work other than scans and shuffles
    (rows its joins probe, bytes it broadcasts, its stages, rows it aggregates or sorts),
    in units of one scanned byte: each feature priced by ``superop.runtime.calibration``'s fitted
    constant relative to its scan price. A consumer that reads a CE holding a join result
    skips that join's probes and its broadcast stage; scans alone miss it (session 5:
    the dashboard's consumers saved 2-2.7x what the scan-only model predicted)."""
    c = estimate.constants
    per = c.scan_byte_s
    return sum(estimate.features.get(f, 0.0) * getattr(c, k) / per
               for f, k in FEATURES.items() if f not in _COUNTED)


def plan_cost(spark, sql: str) -> SubPlanCost:
    """The optimized plan's statistics, the bytes its shuffle exchanges move, the number
    of exchanges and its other work, from ONE analysis, optimization and physical planning
    of ``sql`` by Spark: the statistics and the ``EXPLAIN COST`` text come from the same
    ``QueryExecution`` (planning each sub-plan once instead of three times was most of the
    planning time; measured in ``superop/share/README.md``, "Planning time")."""
    df = spark.sql(sql)
    info = analyze_plan(spark, sql, df=df)
    # classic: the exact statistics of the same QueryExecution; Connect: its EXPLAIN COST text
    st = _stats_of(df, info if is_connect(spark) else None)
    work = work_bytes(info.estimate) if info.estimate is not None else 0.0
    return SubPlanCost(st, float(info.shuffled_bytes), info.exchanges, work)


@dataclass(frozen=True)
class CostParts:
    """A sub-plan's cost before the model's constants: decoded bytes its scans read, bytes
    its shuffles move, its other work (``work_bytes``), its output bytes, and whether
    Spark had row statistics. C_E = scan + shuffle + K x work."""
    scan: float
    shuffle: float
    work: float
    size: float
    has_rows: bool


class Estimator:
    def __init__(self, spark, model: CostModel = DEFAULT_COST, store=None):
        self.spark = spark
        self.model = model
        self.store = store          # a plancache.PlanningCache: Spark's answers across processes
        self._table: dict[str, PlanStats] = {}
        self._cost: dict[str, tuple[float, float, bool]] = {}
        # per plan node (nodes hash by identity; the key keeps the node alive): the SQL
        # generator costs ~50 ms per sub-plan and every round of the choice asks again
        self._by_node: dict[Node, tuple[float, float, bool]] = {}
        self._read: dict[tuple[Node, Node], float] = {}
        self._own: dict[tuple, tuple] = {}
        self.stats = {"spark_plans": 0, "cost_calls": 0}
        self._catalog = None        # runtime.tablestats.CatalogStats, made on first use

    def table_rows(self, table: str) -> PlanStats:
        if table not in self._table:
            self._table[table] = plan_stats(self.spark, f"SELECT * FROM {table}")
        return self._table[table]

    def scan_bytes(self, plan: Node) -> tuple[float, float]:
        """(decoded bytes the plan's scans read, rows of its largest input). A column
        counts for a table when the plan mentions its name (an estimate)."""
        read: dict[str, dict[str, str]] = {}
        types: dict[str, dict[str, str]] = {}
        for n in walk(plan):
            if isinstance(n, Scan):
                read.setdefault(n.table, {})
                types[n.table] = dict(n.columns)
        # ρ lists every field it renames, reading none: only the columns used above a
        # rename (mapped back to the names below it) are read — parquet prunes the rest.
        names = {c.name for n in walk(plan) if not isinstance(n, Rename)
                 for e in node_expressions(n) for c in columns_outside_queries(e)}
        for n in walk(plan):
            if isinstance(n, Rename):
                names |= {f.name for f, new in n.mapping if new in names}
        total, biggest = 0.0, 0.0
        for t, cols in types.items():
            used = [(c, ty) for c, ty in cols.items() if c in names] or [next(iter(cols.items()))]
            st = self.table_rows(t)
            total += st.rows * sum(self.column_width(t, c, ty) for c, ty in used)
            biggest = max(biggest, st.rows)
        return total, biggest

    def column_width(self, table: str, column: str, ty: str) -> float:
        """Decoded bytes of one value: a string's average length where ANALYZE TABLE
        measured it (the width Spark's own size estimates use then: a one-letter
        ``cd_gender`` is not 20 bytes), else the type's default size."""
        default = type_width(ty)
        if self.spark is None or not is_string_type(ty):
            return default
        if self._catalog is None:
            self._catalog = CatalogStats(self.spark)
        n = self._catalog.avg_len(table, column)
        return default if n is None else max(1.0, n)

    def cost(self, plan: Node) -> tuple[float, float, bool]:
        """(C_E, output bytes, has row statistics) of a sub-plan; memoized per node and per
        SQL text, each distinct SQL planned by Spark once (:func:`plan_cost`)."""
        self.stats["cost_calls"] += 1
        hit = self._by_node.get(plan)
        if hit is not None:
            return hit
        sql = to_sql(plan)
        if sql not in self._cost:
            p = self.parts(plan, sql)
            self._cost[sql] = (p.scan + p.shuffle + self.model.work_factor * p.work, p.size, p.has_rows)
        self._by_node[plan] = self._cost[sql]
        return self._cost[sql]

    def parts(self, plan: Node, sql: Optional[str] = None) -> "CostParts":
        """The parts of a sub-plan's cost from one Spark planning of its SQL — or from the
        on-disk store, keyed by the SQL and its tables' fingerprints (the model's
        constants are applied after, so they are not part of the key)."""
        sql = to_sql(plan) if sql is None else sql
        key = None
        if self.store is not None:
            key = self.store.cost_key(sql, {n.table for n in walk(plan) if isinstance(n, Scan)})
            doc = self.store.get_json("costs", key)
            if doc is not None and len(doc.get("cost", ())) == 5:
                sc, sh, wk, sz, hr = doc["cost"]
                return CostParts(float(sc), float(sh), float(wk), float(sz), bool(hr))
        scan, biggest = self.scan_bytes(plan)
        pc = plan_cost(self.spark, sql)
        st, shuffle, work = pc.stats, pc.shuffle_bytes, pc.work_bytes
        self.stats["spark_plans"] += 1
        size = st.bytes
        if not st.has_rows:   # Spark ignored filters and multiplied joins: cap
            size = min(size, biggest * st.width)
            shuffle = min(shuffle, pc.exchanges * scan)
            work = min(work, scan)
        if key is not None and self.store is not None:
            self.store.put_json("costs", key, {"sql": sql, "cost": [scan, shuffle, work, size, st.has_rows]})
        return CostParts(scan, shuffle, work, size, st.has_rows)

    def read_bytes(self, ce, consumer) -> float:
        """Bytes of the cached CE ``consumer`` reads: the CE's rows x the width of the CE
        columns its extraction mentions (all of them when that cannot be told)."""
        key = (ce.plan, consumer.extraction)
        if key not in self._read:
            self._read[key] = self._read_bytes(ce, consumer)
        return self._read[key]

    def _read_bytes(self, ce, consumer) -> float:
        _, size, _ = self.cost(ce.plan)
        types = [t for _, t in ce.view_scan.columns]
        full = width(types)
        names = {c.name.lower() for n in walk(consumer.extraction) for e in _exprs(n)
                 for c in e.find_all(exp.Column)}
        used = [t for (n, t) in ce.view_scan.columns if n.lower() in names] or types
        return size * width(used) / full

    def read_cost(self, ce, consumer) -> float:
        """R·|τ*|_j: the consumer's read of the cache, at the calibrated price of a
        filtered read when its extraction filters the CE (a cached relation is read as
        slowly as a parquet scan that pushes the filter down) and of a plain read otherwise."""
        m = self.model
        filters = any(isinstance(n, Select) for n in walk(consumer.extraction))
        factor = m.read_factor * (m.filter_read_ratio if filters else 1.0)
        return factor * self.read_bytes(ce, consumer)

    def own_cost(self, consumer) -> float:
        """C_E(τ_j) of a consumer's own sub-plan. It depends on its unit (and the columns
        needed above it) only, not on the CE: one unit is a consumer of its SE's CE and
        of the narrower SEs' CEs, each with its own alias in the SQL — planned once."""
        if not consumer.colmap:
            return self.cost(consumer.original)[0]
        key = (id(consumer.unit), tuple(sorted(consumer.colmap)))
        hit = self._own.get(key)
        if hit is None:
            hit = (consumer.unit, self.cost(consumer.original)[0])   # the unit pins its id
            self._own[key] = hit
        return hit[1]

    def consumer_value(self, ce, consumer) -> ConsumerValue:
        own = self.own_cost(consumer)
        read = self.read_cost(ce, consumer)
        known = max(own, read) < NO_ESTIMATE_BYTES
        return ConsumerValue(ce.id, consumer.query, consumer.unit.describe(), own, read, known)

    def estimate(self, ce, consumers) -> Estimate:
        """Eq. 1-3 for ``ce`` served to ``consumers``; the m reads are each consumer's
        own (columnar) read of the CE."""
        m = self.model
        consumer_cost = sum(self.own_cost(c) for c in consumers)
        ce_cost, size, stats = self.cost(ce.plan)
        k = len(consumers)
        if max(consumer_cost, ce_cost, size) >= NO_ESTIMATE_BYTES:
            return Estimate(ce.id, k, consumer_cost, ce_cost, size, 0.0, float("inf"), UNKNOWN_SIZE)
        mem = m.memory_factor * size
        reads = sum(self.read_cost(ce, c) for c in consumers)
        fill = ce_cost + m.write_factor * size + m.fill_fixed   # W is per decoded byte, M per held byte
        value = consumer_cost - (fill + reads)
        return Estimate(ce.id, k, consumer_cost, ce_cost, size, value, mem,
                        "statistics" if stats else "sizes only", reads, fill)


def _exprs(n: Node) -> list:
    return list(expressions_of(n))


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
        raise SuperopError(f"bad budget {s!r} (e.g. 512m, 2g or a number of bytes)") from None
    if v < 0:
        raise SuperopError("the budget must be >= 0")
    return v
