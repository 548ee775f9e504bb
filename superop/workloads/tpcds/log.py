"""A TPC-DS query log: the 103 statements with fresh literals and a warehouse-like mix.

Same format as the bundled log (:mod:`superop.workloads.loggen`): JSON Lines with Databricks
``system.query.history`` column names (statement_id, statement_text, start_time, end_time,
total_duration_ms, executed_by, execution_status, read_bytes, shuffle_bytes), read by
``superop mine --log`` like any query history.

Execution mix (per simulated day; the classes are a choice, documented in the README):

* **dashboard** (:data:`DASHBOARD`, 16 queries): refreshed all day, 24-48 runs/day each with
  new literals (a dashboard's filters) — the single-template recurrence the mining job must
  see;
* **daily reports** (:data:`DAILY`, 22 queries): 1-3 runs/day;
* **ad hoc** (the other 65 statements): run on a day with probability 0.15; every statement
  runs at least once in the log.

Costs are synthetic (there is no SF-1 run to copy them from): duration ~ log-normal around
``1.5 s + 3.5 s x (fact-table references)``, bytes read ~ 250 MB per fact-table reference,
shuffle bytes 10-50 % of that; ~1 % of executions fail (counted, not mined). A real event log
or query history carries real costs; this only has to rank queries plausibly.
"""
from __future__ import annotations

import gzip
import json
import math
import random
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Optional

from ...errors import SuperopError
from .params import substitute
from .queries import queries
from .schema import FACT_TABLES

DASHBOARD = ("q3", "q7", "q19", "q27", "q28", "q31", "q42", "q43", "q47", "q52", "q55", "q57",
             "q59", "q88", "q96", "q98")
DAILY = ("q2", "q4", "q5", "q11", "q12", "q17", "q20", "q25", "q29", "q36", "q39a", "q39b",
         "q50", "q53", "q62", "q63", "q64", "q65", "q74", "q75", "q89", "q99")
RUNS_PER_DAY = {"dashboard": (24, 48), "daily": (1, 3)}
ADHOC_P = 0.15
FAILED_FRACTION = 0.01
USERS = ("bi-dashboards", "finance@example.com", "merch@example.com", "ana@example.com",
         "etl-bot", "ops@example.com")
_FACT = re.compile(r"\b(" + "|".join(FACT_TABLES) + r")\b", re.I)


def query_class(name: str) -> str:
    return "dashboard" if name in DASHBOARD else "daily" if name in DAILY else "adhoc"


def fact_refs(sql: str) -> int:
    return max(1, len(_FACT.findall(sql)))


@dataclass
class TpcdsLog:
    lines: int
    executions: dict[str, int]          # per statement, successful runs
    failed: int
    by_class: dict[str, int]


def generate(days: int = 14, seed: int = 7, start: Optional[datetime] = None,
             sink: Optional[Callable[[str], None]] = None) -> TpcdsLog:
    """Emit the log lines (JSON) to ``sink`` in time order; returns what was emitted."""
    if days < 1:
        raise SuperopError(f"days must be >= 1, got {days}")
    rng = random.Random(seed)
    start = start or datetime(2026, 11, 1, tzinfo=timezone.utc)
    qs = queries()
    rate = {n: rng.randint(*RUNS_PER_DAY[query_class(n)]) for n in qs
            if query_class(n) != "adhoc"}
    runs: list[tuple[datetime, str]] = []
    for day in range(days):
        d0 = start + timedelta(days=day)
        for n in qs:
            c = query_class(n)
            k = rate[n] if c != "adhoc" else int(rng.random() < ADHOC_P)
            for _ in range(k):
                # business hours are busier: hour ~ N(13, 4) clipped to the day
                h = min(23.99, max(0.0, rng.gauss(13, 4)))
                runs.append((d0 + timedelta(hours=h, seconds=rng.random()), n))
    seen = {n for _, n in runs}
    for n in qs:                                    # every statement at least once
        if n not in seen:
            runs.append((start + timedelta(days=rng.randrange(days), hours=rng.uniform(8, 18)), n))
    runs.sort()
    execs: dict[str, int] = {n: 0 for n in qs}
    by_class = {"dashboard": 0, "daily": 0, "adhoc": 0}
    failed = 0
    out = []
    emit = sink or out.append
    for t, n in runs:
        sql = substitute(qs[n], rng)
        refs = fact_refs(qs[n])
        dur = int(math.exp(rng.gauss(math.log(1500 + 3500 * refs), 0.35)))
        read = int(math.exp(rng.gauss(math.log(2.5e8 * refs), 0.3)))
        status = "FAILED" if rng.random() < FAILED_FRACTION else "FINISHED"
        if status == "FINISHED":
            execs[n] += 1
            by_class[query_class(n)] += 1
        else:
            failed += 1
        emit(json.dumps({
            "statement_id": str(uuid.UUID(int=rng.getrandbits(128))),
            "statement_text": sql,
            "start_time": t.isoformat(),
            "end_time": (t + timedelta(milliseconds=dur)).isoformat(),
            "total_duration_ms": dur,
            "executed_by": USERS[0] if query_class(n) == "dashboard" else rng.choice(USERS[1:]),
            "execution_status": status,
            "read_bytes": read,
            "shuffle_bytes": int(read * rng.uniform(0.1, 0.5)),
        }))
    return TpcdsLog(len(runs), execs, failed, by_class)


def write_tpcds_log(path, days: int = 14, seed: int = 7) -> TpcdsLog:
    """Write the log (``.gz`` -> gzip) atomically: a temp file renamed into place."""
    import os
    import tempfile
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        opener = (lambda p: gzip.GzipFile(p, "wb", mtime=0)) if str(path).endswith(".gz") \
            else (lambda p: open(p, "wb"))
        with opener(tmp) as f:
            res = generate(days, seed, sink=lambda line: f.write(line.encode() + b"\n"))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return res
