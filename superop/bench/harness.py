"""Measuring one query on Spark: physical-plan exchanges, wall time, Spark's own shuffle
metrics, and a bag-equality check that scales to millions of rows.

Design choices (why):
* Timed runs write to the ``noop`` data source: the whole plan executes (every row is
  produced) but nothing is shipped to Python, so a 10 M-row MJ output measures Spark,
  not py4j/Arrow transfer.
* Shuffle bytes come from Spark's AppStatusStore (the data behind the Spark UI, kept even
  with the UI off): each run gets its own job group, and we sum the stage metrics of the
  jobs of that group after draining the listener bus.
* Exchanges are counted in Spark's physical plan (``EXPLAIN COST``, as the runtime reads
  it), i.e. the plan Spark would run; with AQE that is the initial adaptive plan.
* Equality: a bag fingerprint computed by Spark — row count plus the sums of two
  independent 64/32-bit hashes over every row (NULL flags hashed too, doubles rounded) —
  so equal bags always agree and unequal bags disagree with overwhelming probability.
  Small results (≤ ``exact_limit`` rows, default 20k) are also compared exactly in Python with
  ``superop.sparkutil.bag``.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import asdict, dataclass, field
from typing import Optional

from ..errors import SuperopError
from ..explain import explain_text, parse_explain
from ..sparkutil import bag, get_spark

_group_ids = itertools.count()


# ---------------------------------------------------------------------------
# physical plan
# ---------------------------------------------------------------------------
@dataclass
class PlanInfo:
    shuffle_exchanges: int
    broadcast_exchanges: int
    reused_exchanges: int
    plan: str

    @property
    def exchanges(self) -> int:
        return self.shuffle_exchanges + self.broadcast_exchanges


def plan_info(spark, sql: str) -> PlanInfo:
    """Exchanges in the physical plan Spark chooses for ``sql`` (counted as the runtime's
    benefit gate counts them: superop.runtime.plan)."""
    p = parse_explain(explain_text(spark, sql))
    return PlanInfo(p.exchanges, p.broadcasts, p.reused, p.tree)


def plan_info_from_text(text: str) -> PlanInfo:
    """The same counts for a physical plan's tree text."""
    p = parse_explain("== Physical Plan ==\n" + text)
    return PlanInfo(p.exchanges, p.broadcasts, p.reused, text)


# ---------------------------------------------------------------------------
# timed runs with Spark's own metrics
# ---------------------------------------------------------------------------
@dataclass
class RunMetrics:
    seconds: float
    shuffle_read_bytes: int = 0
    shuffle_write_bytes: int = 0
    input_bytes: int = 0
    executor_run_ms: int = 0
    stages: int = 0
    jobs: int = 0
    # per completed stage: [tasks, executor run ms, input MB, shuffle read MB, shuffle write MB]
    # (where the time goes, for profiling a family that misses its goal)
    stage_detail: list = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def _stage_metrics(spark, group: str) -> dict:
    sc = spark.sparkContext._jsc.sc()
    try:
        sc.listenerBus().waitUntilEmpty()   # stage metrics arrive through the listener bus
    except Exception:  # pragma: no cover - older/other Spark: best effort
        time.sleep(0.2)
    store = sc.statusStore()
    out = dict(shuffle_read_bytes=0, shuffle_write_bytes=0, input_bytes=0,
               executor_run_ms=0, stages=0, jobs=0, stage_detail=[])
    seen = set()
    it = store.jobsList(None).iterator()
    while it.hasNext():
        j = it.next()
        g = j.jobGroup()
        if not (g.isDefined() and g.get() == group):
            continue
        out["jobs"] += 1
        sit = j.stageIds().iterator()
        while sit.hasNext():
            sid = sit.next()
            if sid in seen:
                continue
            seen.add(sid)
            try:
                sd = store.lastStageAttempt(sid)
            except Exception:
                continue
            if sd.status().toString() != "COMPLETE":   # SKIPPED stages reuse earlier output
                continue
            out["stages"] += 1
            out["shuffle_read_bytes"] += int(sd.shuffleReadBytes())
            out["shuffle_write_bytes"] += int(sd.shuffleWriteBytes())
            out["input_bytes"] += int(sd.inputBytes())
            out["executor_run_ms"] += int(sd.executorRunTime())
            out["stage_detail"].append([int(sd.numTasks()), int(sd.executorRunTime()),
                                        round(sd.inputBytes() / 1e6, 2),
                                        round(sd.shuffleReadBytes() / 1e6, 2),
                                        round(sd.shuffleWriteBytes() / 1e6, 2)])
    return out


def timed_run(spark, sql: str, label: str = "q") -> RunMetrics:
    """Run ``sql`` to completion (noop sink) and return wall time + shuffle metrics."""
    return timed_df(spark, lambda: spark.sql(sql), label)


def timed_df(spark, make_df, label: str = "q") -> RunMetrics:
    """Run the DataFrame ``make_df()`` returns to completion (noop sink): wall time of the
    run (not of building the DataFrame) + shuffle metrics."""
    sc = spark.sparkContext
    group = f"superop-bench-{label}-{next(_group_ids)}"
    sc.setJobGroup(group, f"superop bench {label}")
    try:
        df = make_df()
        t0 = time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        secs = time.perf_counter() - t0
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    return RunMetrics(seconds=secs, **_stage_metrics(spark, group))


# ---------------------------------------------------------------------------
# bag equality
# ---------------------------------------------------------------------------
@dataclass
class Equality:
    equal: Optional[bool]         # None: nothing was rewritten, nothing to compare
    method: str
    rows_left: int
    rows_right: int
    detail: str = ""
    schema_left: list = field(default_factory=list)
    schema_right: list = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def unchanged_equality() -> dict:
    """The equality record of a query the rewriter left unchanged: not applicable."""
    return Equality(None, "unchanged", 0, 0, "n/a (unchanged): the original query runs").to_json()


def _norm_expr(name: str, dtype: str) -> str:
    col = f"`{name}`"
    if dtype in ("double", "float"):
        # aggregation order may differ between plans: compare doubles to 6 decimals
        return f"ROUND({col}, 6)"
    if dtype.startswith("decimal"):
        return f"CAST(ROUND({col}, 6) AS DECIMAL(38,6))"
    return col


def fingerprint(spark, sql: str) -> tuple[int, str, str]:
    """(rows, Σ xxhash64, Σ murmur3) of the bag that ``sql`` returns, computed by Spark."""
    df = spark.sql(sql)
    types = [f.dataType.simpleString() for f in df.schema.fields]
    # positional names: results may repeat a column name (SELECT l.a, r.a ...)
    df = df.toDF(*[f"c{i}" for i in range(len(types))])
    cols = [_norm_expr(f"c{i}", t) for i, t in enumerate(types)]
    # NULL flags make (NULL, 1) and (1, NULL) hash differently (hash() skips NULLs).
    parts = ", ".join(f"{c}, {c} IS NULL" for c in cols) or "1"
    r = df.selectExpr(f"xxhash64({parts}) AS h1", f"hash({parts}) AS h2").selectExpr(
        "COUNT(*) AS n",
        "CAST(SUM(CAST(h1 AS DECIMAL(38,0))) AS STRING) AS h1",
        "CAST(SUM(CAST(h2 AS DECIMAL(38,0))) AS STRING) AS h2").collect()[0]
    return int(r["n"]), r["h1"] or "0", r["h2"] or "0"


def _schema(spark, sql: str) -> list:
    return [[f.name, f.dataType.simpleString()] for f in spark.sql(sql).schema.fields]


def check_equal(spark, sql_a: str, sql_b: str, exact_limit: int = 20_000, spark_b=None) -> Equality:
    """Are the results of ``sql_a`` and ``sql_b`` equal as bags of rows (column names and
    types included)? ``spark_b``: the session ``sql_b`` runs in (default ``spark``; e.g. a
    clone with other settings)."""
    spark_b = spark if spark_b is None else spark_b
    sa, sb = _schema(spark, sql_a), _schema(spark_b, sql_b)
    na, h1a, h2a = fingerprint(spark, sql_a)
    nb, h1b, h2b = fingerprint(spark_b, sql_b)
    if sa != sb:
        return Equality(False, "schema", na, nb, f"schemas differ: {sa} vs {sb}", sa, sb)
    if na != nb:
        return Equality(False, "fingerprint", na, nb, f"row counts differ: {na} vs {nb}", sa, sb)
    if (h1a, h2a) != (h1b, h2b):
        return Equality(False, "fingerprint", na, nb, "row hashes differ (same row count)", sa, sb)
    if na <= exact_limit:
        ba, bb = bag(spark.sql(sql_a).collect()), bag(spark_b.sql(sql_b).collect())
        if ba != bb:
            only_a = sum((ba - bb).values())
            only_b = sum((bb - ba).values())
            return Equality(False, "exact", na, nb,
                            f"{only_a} rows only in the first, {only_b} only in the second", sa, sb)
        return Equality(True, "exact+fingerprint", na, nb, "", sa, sb)
    return Equality(True, "fingerprint", na, nb, "", sa, sb)


# ---------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------
def median(xs) -> Optional[float]:
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def summarize(runs: list[RunMetrics]) -> dict:
    secs = [r.seconds for r in runs]
    med = median(secs)
    return {
        "runs": len(runs),
        "median_s": med,
        "min_s": min(secs) if secs else None,
        "max_s": max(secs) if secs else None,
        # spread: (max - min) / median, a scale-free range
        "spread": ((max(secs) - min(secs)) / med) if secs and med else None,
        "seconds": secs,
        "shuffle_read_bytes": int(median([r.shuffle_read_bytes for r in runs]) or 0),
        "shuffle_write_bytes": int(median([r.shuffle_write_bytes for r in runs]) or 0),
        "input_bytes": int(median([r.input_bytes for r in runs]) or 0),
        "executor_run_ms": int(median([r.executor_run_ms for r in runs]) or 0),
        "stages": int(median([r.stages for r in runs]) or 0),
        "stage_detail_last": runs[-1].stage_detail if runs else [],
    }


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None or b is None or b == 0:
        return None
    return a / b


def bench_spark(args):
    """The SparkSession of a `superop bench` command: --master, --conf and
    --shuffle-partitions applied (also to a session that already existed)."""
    conf = {}
    if args.shuffle_partitions:
        conf["spark.sql.shuffle.partitions"] = str(args.shuffle_partitions)
    for kv in args.conf:
        if "=" not in kv:
            raise SuperopError(f"--conf needs KEY=VALUE, got {kv!r}")
        k, v = kv.split("=", 1)
        conf[k.strip()] = v.strip()
    spark = get_spark("superop-bench", master=args.master, conf=conf)
    for k, v in conf.items():   # also on a session that already existed (getOrCreate)
        if k.startswith("spark.sql."):
            spark.conf.set(k, v)
    return spark
