"""Running a batch with its chosen CEs cached.

    result = run_batch(spark, sqls, budget="2g")        # plan + execute
    result.runs[i].rows                                  # query i's rows (consume="collect")

Each chosen CE is stored the way the plan's cost model priced it (``store.py``; by
default a local checkpoint of its rows in memory, spilling to disk rather than failing,
or Spark's columnar cache, ``persist(MEMORY_AND_DISK)``) and registered as a temp view;
the consumers read the view through their extraction SQL; a CE is released as soon as its
last reader in batch order has run. The store is filled eagerly,
two CEs at a time (``FILL_THREADS``), before the first query (``materialize=True``, timed apart in
``BatchResult.materialize_seconds``): filled lazily, the first consumer would pay for
computing and writing the whole CE and run slower than alone (q7 at 1.58x in the first
TPC-DS run), which the never-slower gate forbids; the batch pays it once instead. The
queries that read no CE run first, before the cache is filled (they need none of it, and
then run as they would alone, not next to the memory the cache holds); then the others,
one after the other in batch order. ``BatchResult.runs`` is in batch order. Every view is dropped and every stored CE
released at the end, also when a query fails. A rewritten query that fails at run time
(e.g. a checkpoint block lost with its executor) is run again as written
(and counted), never lost.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Union

from ..ir.generate import to_sql
from ..ir.lower import parse
from .estimate import DEFAULT_COST, CostModel, parse_budget
from .planner import as_batch, batch_tables, plan_batch
from .sharing_plan import SharingPlan
from .store import StoredCE, store

COLLECT, NOOP, COUNT = "collect", "noop", "count"


@dataclass
class QueryRun:
    index: int
    name: str
    seconds: float
    rewritten: bool
    ces: list[str] = field(default_factory=list)
    rows: Optional[list] = None
    row_count: Optional[int] = None
    fallback: str = ""                # why the rewritten query was replaced by the original

    def to_json(self) -> dict:
        return {"index": self.index, "name": self.name, "seconds": round(self.seconds, 4),
                "rewritten": self.rewritten, "ces": self.ces, "row_count": self.row_count,
                "fallback": self.fallback}


@dataclass
class BatchResult:
    plan: SharingPlan
    runs: list[QueryRun] = field(default_factory=list)
    seconds: float = 0.0              # filling the cache + the queries (planning is in plan.seconds)
    materialize_seconds: float = 0.0  # filling the cache (part of ``seconds``)
    materialized: dict = field(default_factory=dict)   # CE id -> seconds to fill it
    cache_bytes: int = 0              # memory + disk of the cached CEs, measured once all are filled
    # CE id -> memory + disk bytes its rows take once filled (-1: not measurable), next to
    # the weight the plan gave it (``plan.estimates[id].weight``): the budget's accuracy
    stored_bytes: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"runs": [r.to_json() for r in self.runs], "seconds": round(self.seconds, 4),
                "materialize_seconds": round(self.materialize_seconds, 4),
                "materialized": {k: round(v, 4) for k, v in self.materialized.items()},
                "cache_bytes": self.cache_bytes, "stored_bytes": self.stored_bytes, "plan": self.plan.to_json()}


def _consume(df, how: Union[str, Callable], name: str):
    if callable(how):
        import inspect
        try:
            two = len(inspect.signature(how).parameters) >= 2
        except (TypeError, ValueError):
            two = False
        return (how(df, name) if two else how(df)), None
    if how == COLLECT:
        rows = df.collect()
        return rows, len(rows)
    if how == COUNT:
        return None, df.count()
    if how == NOOP:
        df.write.format("noop").mode("overwrite").save()
        return None, None
    raise ValueError(f"unknown consume mode {how!r}")


def _fill(spark, plan: SharingPlan, fill: bool, threads: int, seconds: dict) -> list[StoredCE]:
    """Store every cached CE of ``plan`` (``threads`` at once); ``seconds``: CE id -> its
    fill time. Every store that succeeded is returned even when another failed — the
    caller releases them — and the first failure is raised after."""
    def one(ce) -> tuple[str, StoredCE, float]:
        t = time.perf_counter()
        s = store(spark, to_sql(ce.plan, names=ce.columns), ce.view, plan.storage, fill=fill)
        return ce.id, s, time.perf_counter() - t

    if not plan.cached:
        return []
    def dearest(ce) -> float:            # longest fills first: the threads end together
        e = plan.estimates.get(ce.id)
        return -(e.fill if e is not None else 0.0)

    with ThreadPoolExecutor(max(1, min(threads, len(plan.cached)))) as pool:
        futures = [pool.submit(one, ce) for ce in sorted(plan.cached, key=dearest)]
    out: list[StoredCE] = []
    failed: Optional[BaseException] = None
    for f in futures:                    # all done: the pool waited for them
        try:
            ce_id, s, sec = f.result()
        except BaseException as e:
            failed = failed or e
            continue
        out.append(s)
        if fill:                         # filled now (module doc)
            seconds[ce_id] = sec
    if failed is not None:
        for s in out:
            s.release(spark)
        raise failed
    return out


def _why(e: BaseException) -> str:
    """One line on why a query failed; a JVM error by its Java message (py4j's own first
    line only names the call)."""
    java = getattr(e, "java_exception", None)
    text = str(java) if java is not None else str(e)
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"[:500]


def cached_bytes(spark) -> int:
    """Memory + disk bytes of every cached RDD/DataFrame of the session's context."""
    try:
        infos = spark.sparkContext._jsc.sc().getRDDStorageInfo()
        return int(sum(int(i.memSize()) + int(i.diskSize()) for i in infos))
    except Exception:   # no JVM status (e.g. Spark Connect): not measured
        return -1


# CEs filled at once, the dearest first: one fill's driver work and job start-up overlap
# another's tasks — the five SF 1 dashboard CEs filled in 2.1-2.2 s against 2.4-2.6 s one
# after the other on 2 cores (session 8, /tmp/lead8/exp/parfill.py, load 2.4-3.7)
FILL_THREADS = 2


def execute(spark, plan: SharingPlan, consume: Union[str, Callable] = COLLECT,
            materialize: bool = True, fill_threads: int = FILL_THREADS) -> BatchResult:
    """Run the plan's (rewritten) queries with its CEs stored (module doc) the way its
    cost model priced them (``plan.storage``, ``store.py``), ``fill_threads`` CEs filled
    at once. ``consume``: "collect" (rows kept in ``QueryRun.rows``), "count", "noop", or
    a callable ``f(df)`` / ``f(df, query_name)`` whose return value is kept in
    ``QueryRun.rows``. Each call stores its CEs under views of its own
    (``SharingPlan.for_run``): one plan may run in two threads at once."""
    plan = plan.for_run()
    result = BatchResult(plan)
    stored: list[StoredCE] = []
    runs: dict[int, QueryRun] = {}

    def run(r) -> None:
        t = time.perf_counter()
        fallback = ""
        try:
            rows, n = _consume(spark.sql(r.sql), consume, r.name)
        except Exception as e:
            if not r.changed:
                raise
            fallback = _why(e)
            rows, n = _consume(spark.sql(plan.queries[r.index].sql), consume, r.name)
        runs[r.index] = QueryRun(r.index, r.name, time.perf_counter() - t, r.changed and not fallback,
                                 r.ces if not fallback else [], rows, n, fallback)

    # the queries that read no CE run first, before the cache is filled: they need none
    # of it, and run as they would alone instead of next to the memory it holds
    first = [r for r in plan.rewrites if not r.changed]
    rest = [r for r in plan.rewrites if r.changed]
    t0 = time.perf_counter()
    try:
        for r in first:
            run(r)
        before = cached_bytes(spark)
        t1 = time.perf_counter()
        stored += _fill(spark, plan, materialize, fill_threads, result.materialized)
        result.materialize_seconds = time.perf_counter() - t1
        after = cached_bytes(spark)
        result.cache_bytes = max(0, after - before) if after >= 0 and before >= 0 else -1
        if materialize:
            ids = {ce.view: ce.id for ce in plan.cached}
            result.stored_bytes = {ids[s.view]: s.stored_bytes(spark) for s in stored if s.view in ids}
        # a CE is held only until its last reader has run: the memory goes back to the
        # queries after it (their execution memory, less GC)
        last = {ce_id: i for i, r in enumerate(rest) for ce_id in r.ces}
        release_after: dict[int, set[str]] = {}
        for ce in plan.cached:
            if ce.id in last:
                release_after.setdefault(last[ce.id], set()).add(ce.view)
        for i, r in enumerate(rest):
            run(r)
            done = release_after.get(i, set())
            for s in [s for s in stored if s.view in done]:
                stored.remove(s)
                s.release(spark)
        result.seconds = time.perf_counter() - t0
    finally:
        for s in stored:
            s.release(spark)
    result.runs = [runs[r.index] for r in plan.rewrites]     # batch order
    return result


def run_batch(spark, sqls: Sequence, budget: Union[None, int, str] = None, *,
              consume: Union[str, Callable] = COLLECT, k: int = 2, K: int = 3, timeout_ms: int = 20000,
              cost: CostModel = DEFAULT_COST, analyze_tables: bool = False,
              grouping_sets: bool = True) -> BatchResult:
    """Plan and run a batch of SQL strings with work sharing. ``budget``: bytes for the
    cache (an int or '512m', '2g'); default: derived from Spark's storage memory.
    ``analyze_tables``: compute table and column statistics first (catalog tables only)
    so the estimates use row counts and selectivities. ``grouping_sets``: see
    :func:`~superop.share.planner.plan_batch`."""
    if isinstance(budget, str):
        budget = parse_budget(budget)
    if analyze_tables:
        analyze(spark, sqls)
    plan = plan_batch(sqls, spark, budget=budget, k=k, K=K, timeout_ms=timeout_ms, cost=cost,
                      grouping_sets=grouping_sets)
    return execute(spark, plan, consume)


def analyze(spark, sqls: Sequence) -> list[str]:
    """``ANALYZE TABLE .. COMPUTE STATISTICS FOR COLUMNS ..`` (row count + the columns
    the batch mentions) for every catalog table the batch reads; temp views have no
    statistics and are skipped. Returns the tables analysed."""
    from sqlglot import exp

    names = set()
    for q in as_batch(sqls):
        try:
            names |= {c.name.lower() for c in parse(q.sql).find_all(exp.Column)}
        except Exception:
            continue
    tables = batch_tables(sqls)
    done = []
    temp = {x.name for x in spark.catalog.listTables() if x.isTemporary}
    for full in tables:
        try:
            if full in temp or not spark.catalog.tableExists(full):
                continue
            cols = [f.name for f in spark.table(full).schema.fields if f.name.lower() in names]
            spark.sql(f"ANALYZE TABLE {full} COMPUTE STATISTICS"
                      + (" FOR COLUMNS " + ", ".join(f"`{c}`" for c in cols) if cols else ""))
            done.append(full)
        except Exception:   # statistics are an optimization, never a failure
            pass
    return done
