"""Sharing opportunities in a query log: the batches where sharing would have paid.

    from superop.share import sharing_opportunities
    opps = sharing_opportunities([(sql, ts), ...], window_seconds=300, spark=spark)

The log is cut into windows (a window starts at a query and holds every later query
less than ``window_seconds`` after it); every window of at least ``min_queries`` queries
is planned as a batch (``plan_batch``: similar sub-expressions, covering expressions,
proofs, and with a SparkSession the estimated value and the knapsack choice). Nothing
runs. A window "would have paid" when the chosen CEs have a positive estimated value
(without Spark: when it has a proved CE; the value is then unknown).
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Optional, Sequence

from ..mining.readers import SUCCESS, read_log
from .planner import plan_batch
from .sharing_plan import BatchQuery


@dataclass
class OpportunityCE:
    id: str
    kind: str
    template: str
    tables: list[str]
    consumers: list[str]                    # query names
    chosen: Optional[bool] = None
    value: Optional[float] = None           # estimated bytes of work saved
    weight: Optional[float] = None          # estimated bytes of cache


@dataclass
class SharingOpportunity:
    start: float                            # epoch seconds of the window's first query
    end: float                              # of its last query
    queries: list[str]
    similar_subexpressions: int
    covering_expressions: list[OpportunityCE] = field(default_factory=list)
    estimated_value: Optional[float] = None
    would_pay: bool = False

    def to_json(self) -> dict:
        from dataclasses import asdict
        return asdict(self)


def _epoch(ts) -> Optional[float]:
    if ts is None:
        return None
    if isinstance(ts, (int, float)):
        return float(ts) / (1000.0 if ts > 1e11 else 1.0)
    if isinstance(ts, _dt.datetime):
        return ts.replace(tzinfo=ts.tzinfo or _dt.timezone.utc).timestamp()
    try:
        return float(ts) / (1000.0 if float(ts) > 1e11 else 1.0)
    except (TypeError, ValueError):
        pass
    try:
        d = _dt.datetime.fromisoformat(str(ts).replace("Z", "+00:00"))
        return d.replace(tzinfo=d.tzinfo or _dt.timezone.utc).timestamp()
    except ValueError:
        return None


def windows(queries: Sequence[BatchQuery], window_seconds: float) -> list[list[BatchQuery]]:
    """Consecutive windows over the queries sorted by time (module doc); queries without
    a readable timestamp are left out."""
    timed = sorted((q for q in queries if q.timestamp is not None), key=lambda q: q.timestamp)
    out, cur = [], []
    for q in timed:
        if cur and q.timestamp - cur[0].timestamp >= window_seconds:
            out.append(cur)
            cur = []
        cur.append(q)
    if cur:
        out.append(cur)
    return out


def _as_timed(queries_with_timestamps: Sequence) -> list[BatchQuery]:
    batch = []
    for i, q in enumerate(queries_with_timestamps):
        if isinstance(q, BatchQuery):
            batch.append(BatchQuery(q.name, q.sql, _epoch(q.timestamp)))
        else:
            sql, ts = q[0], q[1]
            batch.append(BatchQuery(f"q{i + 1}", sql, _epoch(ts)))
    return batch


def candidate_windows(batch: Sequence[BatchQuery], window_seconds: float, min_queries: int = 2,
                      max_windows: Optional[int] = None) -> tuple[list[list[BatchQuery]], int]:
    """(the windows to plan, how many windows of ``min_queries`` or more there were).
    ``max_windows`` keeps the largest windows (most queries; earlier first on ties) —
    a bound on the proof work of a nightly run — returned in time order."""
    big = [w for w in windows(batch, window_seconds) if len(w) >= min_queries]
    if max_windows is None or len(big) <= max_windows:
        return big, len(big)
    keep = sorted(range(len(big)), key=lambda i: (-len(big[i]), i))[:max_windows]
    return [big[i] for i in sorted(keep)], len(big)


def sharing_opportunities(queries_with_timestamps: Sequence, window_seconds: float = 300.0, *,
                          spark=None, schema: Optional[dict] = None, k: int = 2, min_queries: int = 2,
                          budget: Optional[int] = None, K: int = 3, timeout_ms: int = 20000,
                          max_windows: Optional[int] = None) -> list[SharingOpportunity]:
    """Typed records of the windows with sharing opportunities (module doc).
    ``queries_with_timestamps``: ``(sql, timestamp)`` pairs or :class:`BatchQuery`;
    timestamps are epoch seconds/milliseconds, datetimes or ISO strings."""
    wins, _ = candidate_windows(_as_timed(queries_with_timestamps), window_seconds, min_queries, max_windows)
    return [o for o in (_opportunity(w, spark, schema, k, budget, K, timeout_ms) for w in wins) if o is not None]


def _opportunity(win: list[BatchQuery], spark, schema, k, budget, K, timeout_ms) -> Optional[SharingOpportunity]:
    plan = plan_batch(win, spark, schema=schema, budget=budget, k=k, K=K, timeout_ms=timeout_ms)
    if not plan.ces:
        return None
    names = [q.name for q in win]
    opp = SharingOpportunity(win[0].timestamp, win[-1].timestamp, names, len(plan.ses))
    chosen = set(plan.selection.chosen) if plan.selection is not None else set()
    for ce in plan.ces:
        est = plan.estimates.get(ce.id)
        opp.covering_expressions.append(OpportunityCE(
            ce.id, ce.kind, ce.template, list(ce.se.tables), [names[c.query] for c in ce.consumers],
            (ce.id in chosen) if plan.selection is not None else None,
            est.value if est else None, est.weight if est else None))
    if plan.selection is not None:
        opp.estimated_value = plan.selection.total_value
        opp.would_pay = plan.selection.total_value > 0
    else:
        opp.would_pay = True
    return opp


def read_log_window(spark, path: str, start=None, end=None, fmt: str = "auto",
                    column_map: Optional[dict] = None) -> list[BatchQuery]:
    """The successful statements of a query log (any format ``superop mine`` reads)
    whose start time is in [start, end) — a batch for ``plan_batch``/``run_batch``."""
    df = read_log(spark, path, fmt, column_map).where("error IS NULL")
    lo, hi = _epoch(start), _epoch(end)
    out = []
    for r in df.select("statement_id", "statement_text", "start_time", "execution_status").toLocalIterator():
        if (r.execution_status or "").lower() not in SUCCESS:
            continue
        ts = _epoch(r.start_time)
        if (lo is not None or hi is not None) and ts is None:
            continue
        if (lo is not None and ts < lo) or (hi is not None and ts >= hi):
            continue
        out.append(BatchQuery(r.statement_id or f"q{len(out) + 1}", r.statement_text, ts))
    out.sort(key=lambda q: (q.timestamp is None, q.timestamp or 0.0))   # batch order = time order
    return out


@dataclass
class SharingReport:
    """The "sharing opportunities" section of the nightly report and catalog: which log
    windows would have paid for sharing, and how much of the log was examined."""
    window_seconds: float
    queries: int                            # successful statements read from the log
    windows: int                            # windows of two or more queries
    examined: int                           # windows planned (at most ``max_windows``)
    estimated: bool                         # values from Spark's statistics (else: proved CEs only)
    truncated: int = 0                      # examined windows cut to their first ``max_queries``
    out_of_time: int = 0                    # windows left unplanned when ``time_budget_s`` ran out
    opportunities: list[SharingOpportunity] = field(default_factory=list)
    error: str = ""                         # why the section is empty ("" = it ran)

    @property
    def paying(self) -> list[SharingOpportunity]:
        return [o for o in self.opportunities if o.would_pay]

    def to_json(self) -> dict:
        from dataclasses import asdict
        return asdict(self)


def log_sharing_report(spark, log_path: str, *, window_seconds: float = 300.0, fmt: str = "auto",
                       column_map: Optional[dict] = None, schema=None, k: int = 2, K: int = 3,
                       timeout_ms: int = 20000, max_windows: Optional[int] = 20, max_queries: int = 40,
                       time_budget_s: Optional[float] = 60.0) -> SharingReport:
    """The nightly job's sharing section for a query log. ``schema`` "spark" (or None)
    plans against the session's catalog and estimates values with its statistics; a
    ``{table: {column: type}}`` dict (tables that need not exist in Spark) plans against
    it and reports proved covering expressions without values. The work is bounded: a
    window is cut to its first ``max_queries`` queries, and no new window is planned once
    ``time_budget_s`` is spent (both counted in the report). Never raises: a failure is
    the report's ``error``."""
    import time
    t0 = time.perf_counter()
    rep = SharingReport(window_seconds, 0, 0, 0, estimated=not isinstance(schema, dict))
    try:
        batch = read_log_window(spark, str(log_path), fmt=fmt, column_map=column_map)
        rep.queries = len(batch)
        wins, rep.windows = candidate_windows(batch, window_seconds, 2, max_windows)
        rep.examined = len(wins)
        planner_spark, planner_schema = (None, schema) if isinstance(schema, dict) else (spark, None)
        for n, w in enumerate(wins):
            if time_budget_s is not None and time.perf_counter() - t0 > time_budget_s:
                rep.out_of_time = len(wins) - n
                break
            if len(w) > max_queries:
                w = w[:max_queries]
                rep.truncated += 1
            o = _opportunity(w, planner_spark, planner_schema, k, None, K, timeout_ms)
            if o is not None:
                rep.opportunities.append(o)
    except Exception as e:   # an advisory section must not fail the nightly run
        rep.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return rep
