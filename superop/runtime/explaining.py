"""``SuperOpSession.explain``: a query's decision and why, with Spark's physical plans and
the cost model's estimate before and after (a DataFrame's: :func:`.dataframe.explain`)."""
from __future__ import annotations

from typing import Any, Optional

from ..explain import PlanInfo
from .cost import plan_line
from .merge_flags import session_with
from .plan import analyze_plan
from .reentry import working
from .tablestats import CatalogStats


def explain_sql(so: Any, sql: str) -> str:
    """See :meth:`superop.runtime.SuperOpSession.explain`."""
    r = so.rewrite(sql)
    with working():
        stats = CatalogStats(so.spark) if so.analyze_tables else None   # as the decision saw it
        b = analyze_plan(so.spark, sql, stats, so.constants)
        lines = [f"superop: {'rewritten' if r.changed else 'unchanged'} — {r.explanation}",
                 plan_line("before:", b)]
        a: Optional[PlanInfo] = (analyze_plan(session_with(so.spark, r.conf), r.sql, stats, so.constants)
                                 if r.changed else None)
        if a is not None:
            lines.append(plan_line("after: ", a))
        for c in r.candidates or []:
            if "error" not in c:
                lines.append(f"candidate {c['label']}: {c['verdict']}")
        lines += ["", "== physical plan before ==", b.tree]
        if a is not None:
            lines += ["== physical plan after ==", a.tree, "== rewritten SQL ==", r.sql]
        return "\n".join(lines)
