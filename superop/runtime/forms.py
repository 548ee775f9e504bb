"""The forms one decision prices — the original query, each candidate rewrite, Spark's
merge-settings forms — planned by Spark side by side.

Planning is driver work (analysis, optimization, physical planning in the JVM, the
``EXPLAIN COST`` text read back) while the cluster and the driver's other cores idle, so
the forms are planned in a few threads at once. Spark serializes part of one session's
analysis (its catalog), so this is less than "the slowest form instead of the sum": six
TPC-DS statements planned together took 2.8 s in one thread, 2.3 s in two, 1.9 s in four
on 2 cores. Each form keeps the DataFrame it was planned through (the one
that runs when the gate picks it, :class:`superop.runtime.plan.PlannedResult`)."""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from ..explain import PlanInfo
from .plan import analyze_plan
from .reentry import working

# threads planning one decision's forms: a TPC-DS decision has 2-5 forms; more threads
# than the driver's cores only interleave the same work
MAX_PLANNERS = max(1, min(4, os.cpu_count() or 1))


@dataclass
class FormJob:
    """One form to plan: its SQL, the session it runs in, and how to build its DataFrame
    (``spark.sql``, or a DataFrame program's own ``run``)."""
    session: Any
    sql: str
    make_df: Callable[[], Any]


@dataclass
class PlannedForm:
    """A form as Spark planned it: its DataFrame and priced plan, or why it does not plan."""
    df: Any = None
    plan: Optional[PlanInfo] = None
    error: Optional[str] = None
    ms: float = 0.0


def plan_forms(jobs: Sequence[FormJob], stats=None, constants=None,
               workers: int = MAX_PLANNERS) -> list[PlannedForm]:
    """Every job planned and priced (``analyze_plan``), in the jobs' order; a job that
    fails is a :class:`PlannedForm` with its error's first line, never an exception."""
    def one(job: FormJob) -> PlannedForm:
        t = time.perf_counter()
        try:
            with working():     # a planning thread's spark.sql is superop's own: never decided on
                df = job.make_df()
                info = analyze_plan(job.session, job.sql, stats, constants, df=df)
            return PlannedForm(df, info, None, (time.perf_counter() - t) * 1e3)
        except Exception as e:  # noqa: BLE001 - the gate reports it and keeps the others
            return PlannedForm(None, None, (str(e).splitlines() or [type(e).__name__])[0],
                               (time.perf_counter() - t) * 1e3)
    if workers <= 1 or len(jobs) <= 1:
        return [one(j) for j in jobs]
    with ThreadPoolExecutor(min(workers, len(jobs)), thread_name_prefix="superop-plan") as ex:
        return list(ex.map(one, jobs))
