"""SuperOpSession: rewrite Spark SQL with a verified rule catalog, behind a benefit gate.

    from superop.runtime import SuperOpSession
    so = SuperOpSession(spark, "catalog.json")     # or a dict, or models:/superop-catalog@production
    df = so.sql(query)                              # the rewritten query (or the original)
    so.rewrite(query)                               # RewriteResult(sql, applied, changed, explanation, ...)
    print(so.explain(query))                        # exchanges before/after from Spark's physical plans

Benefit gate: a rewrite is used only if Spark's physical plan of the rewritten query has
FEWER shuffle exchanges than the original's (plan.py says how they are counted) and the
same output columns and types. Competing rewrites (all matches together; each alone)
are ranked by (exchanges, CBO-style cost of what the shuffles move).

Fail-safe: any error while rewriting (lowering, matching, generating, planning) is
logged and the original query runs unchanged. Thread-safe: the session keeps no mutable
state; the Rewriter is immutable after construction.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Optional, Union


from ..ir.generate import to_sql
from ..ir.lower import lower
from ..ir.schema import SparkCatalogSchema
from ..rules_out.catalog import load_catalog, validate
from .plan import PlanInfo, analyze_plan
from .rewriter import RewriteResult, Rewriter, candidates_for, prepare, unchanged

log = logging.getLogger("superop.runtime")


def _load(catalog, require_verified: bool) -> dict:
    if isinstance(catalog, dict):
        return validate(catalog, require_verified)
    return load_catalog(catalog, require_verified)


class SuperOpSession:
    def __init__(self, spark, catalog: Union[str, dict], *, gate: bool = True,
                 schema: Optional[dict] = None, max_alternatives: int = 4,
                 analyze_tables: bool = False):
        """``analyze_tables``: run ``ANALYZE TABLE .. COMPUTE STATISTICS FOR ALL COLUMNS``
        once per catalog table a query reads, so the cost ranking uses real row counts
        (with ``spark.sql.cbo.enabled``); temp views have no table statistics and are skipped."""
        self.spark = spark
        self.analyze_tables = analyze_tables
        self._analyzed: set[str] = set()
        self._lock = threading.Lock()
        self.catalog = _load(catalog, require_verified=True)
        self.rewriter = Rewriter(self.catalog)
        self.gate = gate
        self.schema = schema
        self.max_alternatives = max_alternatives

    # -- helpers ------------------------------------------------------------
    def _schema_for(self, sql: str):
        """Where lowering resolves the query's tables: the session's catalog, as Spark
        resolves names (temp views first, current catalog/database, case sensitivity
        from the conf). With ``analyze_tables``, each catalog table once."""
        if self.schema is not None:
            return self.schema
        hook = None
        if self.analyze_tables:
            def hook(t):
                if not t.temporary:
                    self._analyze(t.name.sql())
        return SparkCatalogSchema(self.spark, on_table=hook)

    def _analyze(self, table: str) -> None:
        with self._lock:
            if table in self._analyzed:
                return
            self._analyzed.add(table)
        try:
            if not self.spark.catalog.tableExists(table) or any(
                    t.name == table and t.isTemporary for t in self.spark.catalog.listTables()):
                return
            self.spark.sql(f"ANALYZE TABLE {table} COMPUTE STATISTICS FOR ALL COLUMNS")
        except Exception as e:  # statistics are an optimization, never a failure
            log.info("superop: ANALYZE TABLE %s failed: %s", table, str(e).splitlines()[0])

    def _types_of(self, node) -> list[str]:
        return [f.dataType.simpleString() for f in self.spark.sql(to_sql(node)).schema.fields]

    # -- API ------------------------------------------------------------------
    def rewrite(self, sql: str) -> RewriteResult:
        try:
            return self._rewrite(sql)
        except Exception as e:  # fail-safe: never break the user's query
            msg = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            log.warning("superop: rewrite failed, running the original query (%s)", msg)
            return unchanged(sql, f"rewrite failed, original kept: {msg}", error=msg)

    def _rewrite(self, sql: str) -> RewriteResult:
        t0 = time.perf_counter()
        schema = self._schema_for(sql)
        low = lower(sql, schema)
        t1 = time.perf_counter()
        trace: list[str] = []
        matches = self.rewriter.match(low.plan, trace)
        t2 = time.perf_counter()
        timings = {"parse_ms": (t1 - t0) * 1e3, "match_ms": (t2 - t1) * 1e3}
        if not matches:
            return unchanged(sql, "no rule matches" + (": " + " | ".join(trace) if trace else ""), timings)
        matches = prepare(matches, trace)
        if not matches:
            timings["generate_ms"] = (time.perf_counter() - t2) * 1e3
            return unchanged(sql, "no rule matches: " + " | ".join(trace), timings)
        before = analyze_plan(self.spark, sql)
        t2b = time.perf_counter()
        timings["plan_original_ms"] = (t2b - t2) * 1e3
        cands = candidates_for(self.rewriter, low.plan, matches, names=before.columns,
                               types_of=self._types_of, limit=self.max_alternatives)
        t3 = time.perf_counter()
        timings["generate_ms"] = (t3 - t2b) * 1e3   # incl. Spark analysis for output types
        ranked = []
        for c in cands:
            try:
                c.plan = analyze_plan(self.spark, c.sql)
            except Exception as e:
                log.warning("superop: candidate %s does not plan: %s", c.label, str(e).splitlines()[0])
                ranked.append({"label": c.label, "error": str(e).splitlines()[0]})
                continue
            same_schema = c.plan.columns == before.columns and c.plan.types == before.types
            ranked.append({"label": c.label, "rules": [m.rule_id for m in c.matches],
                           "exchanges": c.plan.exchanges, "reused_exchanges": c.plan.reused,
                           "cost": c.plan.cost, "same_schema": same_schema})
            if not same_schema:
                c.plan = None
        timings["gate_ms"] = (time.perf_counter() - t3) * 1e3
        ok = [c for c in cands if c.plan is not None and (not self.gate or c.plan.exchanges < before.exchanges)]
        common = dict(timings=timings, exchanges_before=before.exchanges, cost_before=before.cost,
                      candidates=ranked)
        if not ok:
            why = "; ".join(f"{r['label']}: " + (r["error"] if "error" in r else
                            f"{r['exchanges']} exchanges" + ("" if r["same_schema"] else ", different output schema"))
                            for r in ranked)
            return unchanged(sql, f"benefit gate: no rewrite has fewer than {before.exchanges} exchanges ({why})",
                             **common)
        best = min(ok, key=lambda c: (c.plan.exchanges, c.plan.cost, -len(c.matches)))
        expl = (f"applied {', '.join(m.describe() for m in best.matches)}; shuffle exchanges "
                f"{before.exchanges} -> {best.plan.exchanges} (reused {before.reused} -> {best.plan.reused}); "
                f"cost {before.cost:.4g} -> {best.plan.cost:.4g}")
        if len(ranked) > 1:
            expl += "; ranked: " + ", ".join(f"{r['label']}={r.get('exchanges', 'n/a')}x/{r.get('cost', 0):.3g}"
                                             for r in ranked)
        return RewriteResult(sql=best.sql, applied=[m.rule_id for m in best.matches], changed=True,
                             explanation=expl, original_sql=sql, timings_ms=timings,
                             exchanges_before=before.exchanges, exchanges_after=best.plan.exchanges,
                             cost_before=before.cost, cost_after=best.plan.cost, candidates=ranked)

    def sql(self, query: str):
        """The query as a DataFrame, rewritten when a verified rule pays off."""
        r = self.rewrite(query)
        if r.changed:
            try:
                return self.spark.sql(r.sql)
            except Exception as e:  # fail-safe
                log.warning("superop: rewritten query failed (%s); running the original",
                            str(e).splitlines()[0])
        return self.spark.sql(query)

    def explain(self, sql: str) -> str:
        """Applied rules and Spark's physical plans before and after, with exchange counts."""
        r = self.rewrite(sql)
        b = analyze_plan(self.spark, sql)
        lines = [f"superop: {'rewritten' if r.changed else 'unchanged'} — {r.explanation}",
                 f"exchanges before: {b.exchanges} shuffle, {b.reused} reused, {b.broadcasts} broadcast; "
                 f"cost {b.cost:.4g}; PushedFilters {b.pushed_filters}"]
        a: Optional[PlanInfo] = analyze_plan(self.spark, r.sql) if r.changed else None
        if a is not None:
            lines.append(f"exchanges after:  {a.exchanges} shuffle, {a.reused} reused, {a.broadcasts} broadcast; "
                         f"cost {a.cost:.4g}; PushedFilters {a.pushed_filters}")
        lines += ["", "== physical plan before ==", b.tree]
        if a is not None:
            lines += ["== physical plan after ==", a.tree, "== rewritten SQL ==", r.sql]
        return "\n".join(lines)
