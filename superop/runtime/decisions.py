"""What the runtime decided, one structured record per decision, and the session's counters.

Every query ``SuperOpSession.sql`` (and so ``spark.sql`` after :func:`superop.runtime.enable`)
or ``SuperOpSession.rewrite`` decides on produces one :class:`DecisionRecord`: when, which
query template (a hash of the text with its literals as ``?``), which catalog (checksum and
version), what happened (``outcome``: rewritten, unchanged, failed_safe, disabled), the rules
applied or why none was, the shuffle exchanges before and after, the predicted speed-up,
how long deciding took and where the decision came from (``cache``), and — for a query run
through the session — how long the ``spark.sql`` call took (``sql_ms``: Spark analyses the
query there; it runs when the caller collects) and, for ``SuperOpSession.collect``, how long
running it took (``run_ms``). A shadow comparison
(:mod:`superop.runtime.shadow`) adds a record of its own (``outcome`` shadow_equal /
shadow_mismatch) with both wall times.

Records go to the session's :class:`Counters` and, when a decision log is set
(``spark.superop.decisionLog`` or ``SuperOpSession(decision_log=...)``), to
:class:`DecisionLog`: a JSON Lines file (one line per record, appended and flushed per
record) or ``table:NAME`` (a Spark table, appended in batches by a background flush).
``superop runtime report --decision-log PATH`` summarizes a log (:mod:`superop.runtime.report`).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import os
import threading
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..rewrite.rewriter import RewriteResult
from .cache import template_of

log = logging.getLogger("superop.runtime")

OUTCOMES = ("rewritten", "unchanged", "failed_safe", "disabled", "shadow_equal", "shadow_mismatch",
            "shadow_skipped")
TABLE_PREFIX = "table:"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def template_hash(sql: str) -> str:
    """A hash of the query's template (its text with comparison literals as ``?``): the same
    dashboard query with other literals has the same hash. The text's own hash when it
    cannot be parsed."""
    try:
        return _hash(template_of(sql).key)
    except Exception:  # an unparsable text: its own identity
        return _hash(sql)


def reason_class(explanation: str) -> str:
    """A refusal's kind, for counters: the explanation up to its first ``:`` (``no rule
    matches``, ``benefit gate (cost)``, ``rewrite failed``, ...), without a cache prefix."""
    e = explanation
    for p in ("cached decision (exact text): ", "cached decision: ", "persisted decision: "):
        e = e[len(p):] if e.startswith(p) else e
    return e.split(":", 1)[0].split(" — ", 1)[0].strip()[:80] or "unknown"


def _cache_of(res: RewriteResult) -> str:
    t = res.timings_ms
    if t.get("persisted_hit"):
        return "persisted"
    if t.get("exact_hit"):
        return "exact"
    if t.get("cache_hit"):
        return "template"
    return "miss"


@dataclass
class DecisionRecord:
    """One decision (see the module doc); ``to_json`` is one line of the decision log."""
    time: str
    query_hash: str
    text_hash: str
    catalog_checksum: str
    catalog_version: str
    outcome: str
    rules: list = field(default_factory=list)
    reason: str = ""
    reason_class: str = ""
    exchanges_before: Optional[int] = None
    exchanges_after: Optional[int] = None
    predicted_speedup: Optional[float] = None
    decision_ms: Optional[float] = None
    cache: str = "miss"
    sql_ms: Optional[float] = None          # the spark.sql call (analysis) of the query that ran
    run_ms: Optional[float] = None          # running it (SuperOpSession.collect); None if the caller runs it
    ran: str = ""                           # rewritten | original | "" (not run: rewrite() only)
    shadow: Optional[dict] = None

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def of(cls, sql: str, res: RewriteResult, catalog: dict, outcome: Optional[str] = None,
           **extra: Any) -> "DecisionRecord":
        if outcome is None:
            outcome = "rewritten" if res.changed else ("failed_safe" if res.error else "unchanged")
        speedup = None
        if res.changed and res.cost_before and res.cost_after:
            speedup = round(res.cost_before / res.cost_after, 3)
        total = res.timings_ms.get("total_ms")
        if total is None:
            total = sum(v for k, v in res.timings_ms.items() if k.endswith("_ms"))
        return cls(time=_now(), query_hash=template_hash(sql), text_hash=_hash(sql),
                   catalog_checksum=str(catalog.get("checksum", "")), catalog_version=str(catalog.get("version", "")),
                   outcome=outcome, rules=list(res.applied),
                   reason="" if res.changed else res.explanation.splitlines()[0][:500] if res.explanation else "",
                   reason_class="" if res.changed else reason_class(res.explanation or ""),
                   exchanges_before=res.exchanges_before, exchanges_after=res.exchanges_after,
                   predicted_speedup=speedup, decision_ms=round(total, 3), cache=_cache_of(res), **extra)


class Counters:
    """Thread-safe counts of outcomes: ``rewritten``, ``unchanged``, ``failed_safe``,
    ``disabled``, ``refused: <reason class>``, ``rule: <id>``, ``shadow_*``."""

    def __init__(self) -> None:
        self._c: Counter = Counter()
        self._lock = threading.Lock()

    def add(self, rec: DecisionRecord) -> None:
        with self._lock:
            self._c[rec.outcome] += 1
            if rec.outcome in ("unchanged", "failed_safe") and rec.reason_class:
                self._c[f"refused: {rec.reason_class}"] += 1
            for r in rec.rules if rec.outcome == "rewritten" else ():
                self._c[f"rule: {r}"] += 1

    def bump(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._c[name] += n

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._c)

    def __getitem__(self, name: str) -> int:
        with self._lock:
            return self._c.get(name, 0)


class DecisionLog:
    """Appends records to a JSON Lines file or, for ``table:NAME``, a Spark table."""

    def __init__(self, target: str, spark=None, batch: int = 100):
        self.target = target
        self.spark = spark
        self.batch = batch
        self._lock = threading.Lock()
        self._buffer: list[dict] = []
        if not target.startswith(TABLE_PREFIX):
            Path(target).parent.mkdir(parents=True, exist_ok=True)

    @property
    def is_table(self) -> bool:
        return self.target.startswith(TABLE_PREFIX)

    def write(self, rec: DecisionRecord) -> None:
        row = rec.to_json()
        if self.is_table:
            with self._lock:
                self._buffer.append(row)
                full = len(self._buffer) >= self.batch
            if full:
                self.flush()
            return
        line = json.dumps(row, ensure_ascii=False, default=str) + "\n"
        with self._lock:           # one whole line per write: O_APPEND keeps lines of processes apart
            fd = os.open(self.target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)

    def flush(self) -> None:
        """Append the buffered rows to the table (nothing to do for a file)."""
        if not self.is_table:
            return
        with self._lock:
            rows, self._buffer = self._buffer, []
        if not rows or self.spark is None:
            return
        name = self.target[len(TABLE_PREFIX):]
        text = [json.dumps(r, ensure_ascii=False, default=str) for r in rows]
        try:
            df = self.spark.createDataFrame([(t,) for t in text], "record string")
            df.selectExpr("record").write.mode("append").saveAsTable(name)
        except Exception as e:   # the log never breaks a query
            log.warning("superop: decision log table %s not written (%d records): %s", name, len(rows),
                        str(e).splitlines()[0] if str(e) else type(e).__name__)


class Operations:
    """A session's counters and decision logs (one writer per target)."""

    def __init__(self, spark, default_log: Optional[str] = None):
        self.spark = spark
        self.default_log = default_log
        self.counters = Counters()
        self._logs: dict[str, DecisionLog] = {}
        self._lock = threading.Lock()

    def log_for(self, target: Optional[str]) -> Optional[DecisionLog]:
        target = target or self.default_log
        if not target:
            return None
        with self._lock:
            if target not in self._logs:
                self._logs[target] = DecisionLog(target, self.spark)
            return self._logs[target]

    def record(self, rec: DecisionRecord, target: Optional[str] = None) -> None:
        self.counters.add(rec)
        lg = self.log_for(target)
        if lg is None:
            return
        try:
            lg.write(rec)
        except OSError as e:   # the log never breaks a query
            log.warning("superop: decision log %s not written: %s", lg.target, e)

    def flush(self) -> None:
        with self._lock:
            logs = list(self._logs.values())
        for lg in logs:
            lg.flush()
