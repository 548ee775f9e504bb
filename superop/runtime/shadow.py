"""Shadow mode: for a fraction of the rewritten queries, run the original too and compare.

Off the caller's path: the caller gets the rewritten query's DataFrame at once; a single
background thread then runs the original and the rewritten query (each collected, at most
``max_rows`` rows; a larger result is skipped, not compared), compares the rows as bags
(floats to 6 digits, as the test suite compares them) and records both wall times. A
mismatch is the worst thing the runtime can do — a "verified" rewrite with other rows — so
it is logged at ERROR level, counted (``shadow_mismatch``), written to the decision log
with both row counts, and every rule of that rewrite is disabled in the session at once:
later queries of the session never apply it (until a new session).

The queue is bounded (``max_pending``): a shadow run that would wait behind others is
skipped and counted (``shadow_skipped``), so shadow mode never builds up work.
"""
from __future__ import annotations

import logging
import random
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Optional

from ..sparkutil import bag
from .decisions import DecisionRecord
from .reentry import working

log = logging.getLogger("superop.runtime")


class Shadow:
    """The shadow runner of one session (see the module doc)."""

    def __init__(self, run_sql: Callable, on_result: Callable[[DecisionRecord, set], None],
                 max_rows: int = 100_000, max_pending: int = 2, seed: Optional[int] = None):
        """``run_sql(sql)``: a DataFrame of ``sql``, never rewritten (the session's
        original ``spark.sql``). ``on_result(record, rules_to_disable)``: called from the
        shadow thread with each comparison's record."""
        self.run_sql = run_sql
        self.on_result = on_result
        self.max_rows = max_rows
        self.max_pending = max_pending
        self._rng = random.Random(seed)
        self._pool: Optional[ThreadPoolExecutor] = None
        self._pending: list[Future] = []
        self._lock = threading.Lock()

    def sampled(self, fraction: float) -> bool:
        return fraction >= 1.0 or (fraction > 0.0 and self._rng.random() < fraction)

    def submit(self, base: DecisionRecord, original: str, rewritten: str, rules: list) -> bool:
        """Compare ``original`` and ``rewritten`` in the background; False if skipped (busy)."""
        with self._lock:
            self._pending = [f for f in self._pending if not f.done()]
            if len(self._pending) >= self.max_pending:
                return False
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="superop-shadow")
            self._pending.append(self._pool.submit(self._compare, base, original, rewritten, list(rules)))
        return True

    def wait(self, timeout: Optional[float] = None) -> None:
        """Wait for every submitted comparison (tests, a clean shutdown)."""
        with self._lock:
            pending = list(self._pending)
        for f in pending:
            f.result(timeout=timeout)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _rows(self, sql: str) -> tuple[Optional[list], float]:
        t = time.perf_counter()
        rows = self.run_sql(sql).limit(self.max_rows + 1).collect()
        ms = (time.perf_counter() - t) * 1e3
        return (rows if len(rows) <= self.max_rows else None), ms

    def _compare(self, base: DecisionRecord, original: str, rewritten: str, rules: list) -> None:
        with working():       # the shadow thread's spark.sql calls are never rewritten
            self._compare_rows(base, original, rewritten, rules)

    def _compare_rows(self, base: DecisionRecord, original: str, rewritten: str, rules: list) -> None:
        try:
            got, ms_new = self._rows(rewritten)
            want, ms_old = self._rows(original)
        except Exception as e:   # noqa: BLE001 - a failing shadow run is recorded, never raised
            base.outcome, base.shadow = "shadow_skipped", {"error": str(e).splitlines()[0][:300] if str(e) else ""}
            self.on_result(base, set())
            return
        info = {"original_ms": round(ms_old, 1), "rewritten_ms": round(ms_new, 1)}
        if got is None or want is None:
            base.outcome = "shadow_skipped"
            base.shadow = dict(info, why=f"more than {self.max_rows} rows: not compared")
            self.on_result(base, set())
            return
        equal = bag(got) == bag(want)
        base.outcome = "shadow_equal" if equal else "shadow_mismatch"
        base.shadow = dict(info, rows_original=len(want), rows_rewritten=len(got), equal=equal)
        if not equal:
            log.error("superop: SHADOW MISMATCH: the rewrite by %s returned other rows than the original "
                      "(%d vs %d rows; query %s); %s disabled in this session",
                      ", ".join(rules), len(got), len(want), base.query_hash,
                      "rule" if len(rules) == 1 else "rules")
        self.on_result(base, set() if equal else set(rules))
