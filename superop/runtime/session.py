"""SuperOpSession: rewrite Spark SQL with a verified rule catalog, behind a benefit gate.

    from superop.runtime import SuperOpSession
    so = SuperOpSession(spark, "catalog.json")     # or a dict, or models:/superop-catalog@production
    df = so.sql(query)                              # the rewritten query (or the original)
    so.rewrite(query)                               # RewriteResult(sql, applied, changed, explanation, ...)
    print(so.explain(query))                        # plans, costs and the gate's reason

Benefit gate (``gate="cost"``, the default): Spark plans the original and every candidate
rewrite (``EXPLAIN COST``, plan.py); :mod:`superop.runtime.plan_cost` estimates what each plan
costs from Spark's statistics — bytes every shuffle and broadcast moves, rows every scan
reads, rows every sort/aggregate/join/window consumes — and a candidate is applied only if
it has the same output columns and types and its predicted speed-up
``cost(original) / cost(candidate)`` is at least ``min_speedup``. The best-predicted
candidate wins; any number of candidates per query can be ranked (all matches together,
each alone, and alternative forms of one match). A refusal says why in the explanation.
Spark's own merge settings (``MergeSubplans`` with filter propagation, symmetric and
through joins) are one more candidate form — the original query, or the best rewrite, run
with them for that query only in a clone of the session (:mod:`.merge_flags`); the result's
``conf`` names the settings and ``sql()`` runs it in the clone.
``gate="exchanges"`` is the old rule (fewer shuffle exchanges); ``gate="ungated"`` (or
``False``) applies any candidate that plans with the same schema (for tests of the rewriting
itself). ``"off"`` is refused: it reads like a kill switch, which is
``spark.superop.enabled=false`` or :func:`superop.runtime.disable`.

Catalogs: signed only (:func:`superop.rules_out.catalog.accept`: a trusted Ed25519 signature
for this superop build; milliseconds, no Z3), from a path, an MLflow URI or a dict. An
unsigned catalog — e.g. one a test or a benchmark just built from the verifier's
certificates — is signed where it is checked: ``superop verify --catalog X --record``, or
``superop.rules_out.trust.recheck_locally(catalog)`` in the process that built it (Z3
re-checks every certificate, the local key signs).

Operations (:mod:`~superop.runtime.decisions`, :mod:`~superop.runtime.shadow`,
:mod:`~superop.runtime.confs`): every ``sql``/``rewrite`` call reads the ``spark.superop.*``
settings (kill switch, excluded rules, decision log, shadow fraction), produces one decision
record (counted in ``counters``, written to the decision log when one is set) and, in shadow
mode, compares a sample of rewrites with their originals off the caller's path.

Decision cache: decisions are cached per query template, catalog checksum, table versions
and plan-relevant settings (cache.py), so a repeated dashboard query pays only parsing
and a lookup; new literals are rendered into the same rewrite.

Works on classic and Spark Connect sessions (no ``df._jdf``; see plan.py, tablestats.py).

Fail-safe: any error while rewriting (lowering, matching, generating, planning) is
logged and the original query runs unchanged. Thread-safe: the Rewriter is immutable, the
cache is locked.
"""
from __future__ import annotations

import copy
import logging
import threading
import time
from typing import Iterable, Optional, Union

from .. import families
from ..explain import PlanInfo
from ..ir.generate import to_sql
from ..ir.keys import keys_fingerprint
from ..ir.lower import lower
from ..ir.schema import SparkCatalogSchema, session_keys
from ..rewrite.rewriter import Rewriter, RewriteResult, candidates_for, instance_bound, prepare, unchanged
from ..rules_out.catalog import load_catalog
from ..rules_out.signing import trusted_keys as read_trusted_keys
from . import confs
from .cache import PLAN_CONF, Decision, DecisionCache, ExactEntry, make_render, template_of, with_sentinels
from .calibration import CONSTANTS, CostConstants
from .cost import judge
from .decisions import DecisionRecord, Operations
from .first_sight import first_sight
from .merge_flags import FORM, FlagCandidate, base_label, describe, flag_candidates, may_merge, session_with
from .forms import FormJob, plan_forms
from .plan import planned_frame, with_plan
from . import dataframe, explaining
from .reentry import working
from .shadow import Shadow
from .store import DecisionStore
from .tablestats import CatalogStats, SessionProbe

log = logging.getLogger("superop.runtime")

class SuperOpSession:
    def __init__(self, spark, catalog: Union[str, dict], *, gate: Union[bool, str] = "cost",
                 schema: Optional[dict] = None, max_alternatives: int = 4,
                 analyze_tables: bool = False, cache: Union[bool, DecisionCache] = True,
                 cache_size: int = 1024, cost_constants: Optional[CostConstants] = None,
                 keys: Union[None, str, dict] = None,
                 trusted_keys: Optional[str] = None, decision_log: Optional[str] = None,
                 shadow: float = 0.0, exclude: Iterable[str] = (),
                 decision_store: Union[None, bool, str] = None, merge_flags: bool = True,
                 certify: Union[bool, str] = "auto"):
        """``keys``: the declared keys this session vouches for (:mod:`superop.ir.keys`,
        like Spark's RELY constraints: not checked against the data) — the ``"$keys"``
        mapping (``{"customer": "c_customer_sk; c_customer_id"}``) or the path of a
        schema file holding one (the ``--schema`` format). A rule whose certificates
        assume a key premise applies only where these declarations give it; the
        catalog's own constraints are not read. With ``schema``, its ``"$keys"`` entry.
        ``analyze_tables``: run ``ANALYZE TABLE .. COMPUTE STATISTICS FOR ALL COLUMNS``
        once per catalog table a query reads and give the cost model the stored row
        counts and column NDVs (temp views have no table statistics and are skipped).
        ``cache``: True (a private LRU of ``cache_size`` decisions), a shared
        :class:`DecisionCache`, or False. ``trusted_keys``: the public keys a signature may
        be by (default ``spark.superop.trustedKeys``, ``$SUPEROP_TRUSTED_KEYS``, the local
        key store). ``decision_log``: where decision records go when
        ``spark.superop.decisionLog`` is not set. ``shadow``: the fraction of rewritten
        queries compared with their originals when ``spark.superop.shadow`` is not set.
        ``exclude``: rule ids never applied (besides ``spark.superop.rules.exclude``).
        ``decision_store``: the directory of persisted decisions (store.py; default
        ``spark.superop.decisionStore``, else beside a catalog file); False: none. ``merge_flags``: also price the
        query with Spark's own merge settings on, for that query only
        (:mod:`superop.runtime.merge_flags`). ``certify``: a match no proof in the catalog
        covers is certified on first sight when Z3 is installed (``superop.runtime.first_sight``:
        bounded, a time limit; "auto" while the statement waits, "background" without
        waiting — it runs unchanged until the proof is done) or, with False, runs unchanged
        and is listed by :meth:`uncovered_instances` for the next nightly job."""
        self.spark = spark
        self.analyze_tables = analyze_tables
        self._analyzed: set[str] = set()
        self._lock = threading.Lock()
        trusted = read_trusted_keys(trusted_keys or confs.get(spark, confs.TRUSTED_KEYS))
        self.catalog = load_catalog(catalog, trusted=trusted)
        self.certifier = first_sight(self._types_of, certify)
        self.rewriter = Rewriter(self.catalog, certify=self.certifier)
        self.gate = confs.gate_mode(gate)
        self.keys = session_keys(keys)
        self.schema = schema
        # decisions depend on the declarations too (a shared cache must not mix them)
        self._checksum = self.catalog.get("checksum", "") + keys_fingerprint(self.keys, schema)
        self.max_alternatives = max_alternatives
        self.merge_flags = merge_flags
        self.constants = cost_constants or CONSTANTS
        self.cache: Optional[DecisionCache] = (cache if isinstance(cache, DecisionCache) else
                                               DecisionCache(cache_size) if cache else None)
        self._probe = SessionProbe(spark)     # settings and table versions, few JVM calls
        self.store = (DecisionStore.for_session(catalog, decision_store, confs.get(spark, confs.DECISION_STORE),
                                                trusted) if self.cache is not None else None)
        self.ops = Operations(spark, decision_log)
        self.shadow = shadow
        self.exclude = frozenset(exclude)
        self.disabled_rules: set[str] = set()     # by a shadow mismatch, for this session's life
        self._views: dict[frozenset, SuperOpSession] = {}
        self._shadow: Optional[Shadow] = None

    @property
    def counters(self) -> dict[str, int]:
        """Decisions so far by outcome, refusal reason and rule (decisions.Counters)."""
        return self.ops.counters.snapshot()

    # -- excluded rules: a view of the session with fewer rules --------------------------
    def _view(self, exclude: frozenset) -> "SuperOpSession":
        """This session without the rules in ``exclude`` (plus its own exclusions and the
        rules shadow mode disabled): same Spark, cache and operations; its own rewriter,
        and a checksum key of its own, so no decision crosses rule sets."""
        out = exclude | self.exclude | frozenset(self.disabled_rules)
        if not out:
            return self
        with self._lock:
            v = self._views.get(out)
            if v is None:
                v = copy.copy(self)
                v.rewriter = Rewriter(dict(self.catalog, rules=[r for r in self.catalog["rules"]
                                                                if r["id"] not in out]), certify=self.certifier)
                v._checksum = self._checksum + "|without:" + ",".join(sorted(out))
                self._views[out] = v
            return v

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
        return SparkCatalogSchema(self.spark, on_table=hook, keys=self.keys)

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

    def _snapshot(self, tables: tuple):
        """Settings and table versions, in one JVM call (tablestats.SessionProbe.snapshot)."""
        return self._probe.snapshot(PLAN_CONF, tables)

    def uncovered_instances(self) -> list:
        """The instances this session matched that no proof covers (and first-sight
        certification did not certify): what the next nightly job should certify."""
        return self.rewriter.uncovered_instances()

    # -- API ------------------------------------------------------------------
    def rewrite(self, sql: str) -> RewriteResult:
        """The decision for ``sql`` (recorded like every decision; nothing runs)."""
        conf = confs.read(self.spark)
        with working():
            res = self._decision(sql, conf)
            self.ops.record(DecisionRecord.of(sql, res, self.catalog,
                                              "disabled" if not conf.enabled else None), conf.decision_log)
        return res

    def _decision(self, sql: str, conf: confs.RuntimeConf) -> RewriteResult:
        if not conf.enabled:
            return unchanged(sql, f"superop is disabled ({confs.ENABLED}=false)")
        return self._view(conf.exclude)._safe_rewrite(sql)

    def _safe_rewrite(self, sql: str) -> RewriteResult:
        try:
            return self._rewrite(sql)
        except Exception as e:  # fail-safe: never break the user's query
            msg = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            log.warning("superop: rewrite failed, running the original query (%s)", msg)
            return unchanged(sql, f"rewrite failed, original kept: {msg}", error=msg)

    def _rewrite(self, sql: str) -> RewriteResult:
        t0 = time.perf_counter()
        if self.cache is not None and not self.analyze_tables:
            hit = self._exact_hit(sql, t0)
            if hit is not None:
                return hit
        return self._rewrite_templated(sql, t0)

    # -- the exact-text fast path (before any parsing) ------------------------------------
    def _exact_hit(self, sql: str, t0: float) -> Optional[RewriteResult]:
        """The result served for this exact text before, if the catalog, the settings and
        every table's version are unchanged: two dictionary lookups and ONE JVM call that
        reads the settings and the tables' versions together (no sqlglot, no planning)."""
        assert self.cache is not None
        tables = self.cache.exact_tables(sql)
        if tables is None:
            return None
        try:
            snap = self._snapshot(tables)
        except Exception:  # a table is gone: decide again (and fail safe there)
            return None
        e = self.cache.get_exact(sql, self._checksum, snap.conf)
        if e is None or e.versions != snap.versions:
            return None
        timings = {"cache_hit": 1.0, "exact_hit": 1.0, "total_ms": (time.perf_counter() - t0) * 1e3}
        return RewriteResult(sql=e.sql, applied=list(e.applied), changed=e.changed,
                             explanation="cached decision (exact text): " + e.explanation,
                             original_sql=sql, timings_ms=timings, **e.extra)

    def _exact_store(self, sql: str, tables: tuple, snap, res: RewriteResult) -> None:
        """Serve this text from the exact path next time, under the settings and versions
        the decision was looked up or made with (a change since then is a miss)."""
        assert self.cache is not None
        expl = res.explanation
        for p in ("cached decision (exact text): ", "cached decision: ", "persisted decision: "):
            expl = expl[len(p):] if expl.startswith(p) else expl
        extra = dict(exchanges_before=res.exchanges_before, exchanges_after=res.exchanges_after,
                     cost_before=res.cost_before, cost_after=res.cost_after, candidates=res.candidates,
                     conf=res.conf)
        self.cache.put_exact(sql, self._checksum, snap.conf,
                             ExactEntry(tables, snap.versions, res.sql, res.changed, tuple(res.applied),
                                        expl, extra))

    def _rewrite_templated(self, sql: str, t0: float) -> RewriteResult:
        if self.cache is None:
            res, _ = self._decide(sql, t0)
            res.timings_ms["cache_hit"] = 0.0
            return res
        tpl = template_of(sql)
        if self.analyze_tables:          # ANALYZE first, so the key sees the new statistics
            for t in tpl.tables:
                self._analyze(t)
        snap = self._snapshot(tpl.tables)
        key = DecisionCache.key(tpl, self._checksum, tuple(zip(tpl.tables, snap.versions)), snap.conf)
        d = self.cache.get(key, tpl.literals)
        persisted = False
        if d is None and self.store is not None:
            d = self.store.get(key, tpl.literals)
            if d is not None:
                persisted = True
                self.cache.put(key, d)
        settled = True
        if d is not None:
            res = self._from_cache(sql, tpl, d, t0, persisted)
        else:
            since = self.certifier.started if self.certifier is not None else 0
            res, decision = self._decide(sql, t0)
            # a background first-sight verdict still to come may change it: decide it again
            settled = self.certifier is None or self.certifier.settled(since)
            if decision is not None and settled:
                t1 = time.perf_counter()
                if decision.changed:
                    # a decision that holds for these literals only is served for them only
                    lits = () if decision.literal_sensitive else tpl.literals
                    decision.render = self._render(sql, decision.label, lits, res.sql)
                decision.literals = tpl.literals
                self.cache.put(key, decision)
                if self.store is not None:
                    self.store.put(key, decision)
                res.timings_ms["cache_store_ms"] = (time.perf_counter() - t1) * 1e3
            res.timings_ms["cache_hit"] = 0.0
        if not self.analyze_tables and res.error is None and settled:
            self._exact_store(sql, tpl.tables, snap, res)
        return res

    def _from_cache(self, sql: str, tpl, d: Decision, t0: float, persisted: bool = False) -> RewriteResult:
        timings = {"cache_hit": 1.0}
        prefix = "cached decision: "
        if persisted:
            timings["persisted_hit"] = 1.0
            prefix = "persisted decision: "
        if not d.changed:
            timings["total_ms"] = (time.perf_counter() - t0) * 1e3
            return unchanged(sql, prefix + d.explanation, timings, **d.extra)
        if d.render is not None:
            new = d.render.fill(tpl.literals)
        else:
            new = self._generate(sql, d.label)
            if new is None:
                return unchanged(sql, "cached decision could not be re-generated for these literals; "
                                      "original kept", timings)
        timings["total_ms"] = (time.perf_counter() - t0) * 1e3
        return RewriteResult(sql=new, applied=list(d.applied), changed=True,
                             explanation=prefix + d.explanation, original_sql=sql,
                             timings_ms=timings, **d.extra)

    def _generate(self, sql: str, label: str) -> Optional[str]:
        """The SQL of candidate ``label`` for ``sql`` (lowering, matching, generation; no
        planning) — how a cached decision is applied to new literals."""
        want = base_label(label)
        if want is None:           # the original query with Spark's merge settings
            return sql
        low = lower(sql, self._schema_for(sql))
        # the canonical plan, as when deciding: matches are nodes of it (applied to the plan
        # as lowered, a match of a canonical step's output replaces nothing)
        plan = families.regroup(low.plan)
        matches = prepare(self.rewriter.match(plan))
        if not matches:
            return None
        names = [f.name for f in self.spark.sql(sql).schema.fields]
        for c in candidates_for(self.rewriter, plan, matches, names=names, types_of=self._types_of,
                                limit=self.max_alternatives):
            if c.label == want:
                return c.sql
        return None

    def _render(self, sql: str, label: str, literals: tuple, expected: str):
        if not literals:
            return make_render(expected, [], expected, [], (), expected)
        try:
            s0, sent0 = with_sentinels(sql, 0)
            s1, sent1 = with_sentinels(sql, 1)
            g0, g1 = self._generate(s0, label), self._generate(s1, label)
            if g0 is None or g1 is None:
                return None
            return make_render(g0, sent0, g1, sent1, literals, expected)
        except Exception as e:   # the decision is still cached; hits re-generate
            log.info("superop: no literal template for the cached decision (%s)", str(e).splitlines()[0])
            return None

    def _decide(self, sql: str, t0: float, frame=None) -> tuple[RewriteResult, Optional[Decision]]:
        """``frame``: a DataFrame's lowered plan (:class:`superop.runtime.dataframe.Frame`):
        decided on the same path, planned through the DataFrame and its bound leaves."""
        low = lower(sql, self._schema_for(sql)) if frame is None else None
        low_plan = low.plan if low is not None else frame.plan
        types_of = self._types_of if frame is None else frame.types_of
        t1 = time.perf_counter()
        trace: list[str] = []
        plan = families.regroup(low_plan)     # the plan matches are nodes of
        matches = self.rewriter.match(plan, trace)
        t2 = time.perf_counter()
        timings = {"parse_ms": (t1 - t0) * 1e3, "match_ms": (t2 - t1) * 1e3}
        # Spark's own merge settings: one more form, priced by the same gate (merge_flags.py)
        flags = (self.merge_flags and low is not None and self.gate in ("cost", "exchanges")
                 and may_merge(low.ast))
        if matches:
            matches = prepare(matches, trace)
            timings["generate_ms"] = (time.perf_counter() - t2) * 1e3
        if not matches and not flags:
            why = "no rule matches" + (": " + " | ".join(trace) if trace else "")
            return unchanged(sql, why, timings), Decision(False, explanation=why,
                                                          literal_sensitive=instance_bound([], trace))
        stats = CatalogStats(self.spark) if self.analyze_tables else None
        before_df = self.spark.sql(sql) if frame is None else frame.df      # analyzed, not planned
        cands: list = candidates_for(self.rewriter, plan, matches, names=before_df.columns,
                                     types_of=types_of, limit=self.max_alternatives) if matches else []
        if flags:
            cands += flag_candidates(self.spark, sql, None, cands)
        t3 = time.perf_counter()
        timings["generate_ms"] = (t3 - t2) * 1e3   # incl. Spark analysis for output types
        # the original and every form, planned side by side (forms.py)
        forms = plan_forms([FormJob(self.spark, sql, lambda: before_df)] + [self._job(c, frame) for c in cands],
                           stats, self.constants)
        if forms[0].plan is None:
            raise RuntimeError(f"the original query does not plan: {forms[0].error}")
        before = forms[0].plan
        timings["plan_original_ms"] = forms[0].ms
        ranked, ok = self._rank(cands, forms[1:], before)
        timings["gate_ms"] = (time.perf_counter() - t3) * 1e3
        sensitive = before.estimate.uses_cbo or any(
            c.plan is not None and c.plan.estimate.uses_cbo for c in cands) or \
            instance_bound([m for c in cands for m in c.matches], trace)
        common = dict(exchanges_before=before.exchanges, cost_before=before.cost, candidates=ranked)
        if not ok:
            rule = {"cost": f"no rewrite is predicted to be at least {self.constants.min_speedup:g}x faster",
                    "exchanges": f"no rewrite has fewer than {before.exchanges} shuffle exchanges",
                    "ungated": "no candidate plans with the same output"}[self.gate]
            why = f"benefit gate ({self.gate}): {rule} — " + "; ".join(
                f"{r['label']}: " + (r["error"] if "error" in r else
                                     f"{r['verdict']}; shuffle exchanges {before.exchanges} -> {r['exchanges']}")
                for r in ranked)
            if not matches and trace:     # only the merge-settings form was priced: say why no rule
                why += " — no rule matches: " + " | ".join(trace)
            return (with_plan(unchanged(sql, why, timings, **common), before_df),
                    Decision(False, explanation=why, literal_sensitive=sensitive, extra=common))
        # only the merge-settings form was priced: the explanation still says why no rule matched
        unmatched = trace if not matches else []
        return self._chosen(sql, before, ok, ranked, timings, common, sensitive, unmatched)

    def _job(self, c, frame) -> FormJob:
        """How to plan candidate ``c``: its SQL in its session (a flag form: a clone), or
        through the DataFrame program's bound leaves."""
        session = getattr(c, "session", self.spark)
        if frame is None:
            return FormJob(session, c.sql, lambda: session.sql(c.sql))
        return FormJob(session, c.sql, lambda: frame.run(c.sql))

    def _rank(self, cands: list, forms: list, before: PlanInfo) -> tuple[list, list]:
        """Price every planned candidate: the ranked records, and the (candidate, verdict,
        planned DataFrame) the gate accepts."""
        ranked, ok = [], []
        for c, f in zip(cands, forms):
            if isinstance(c, FlagCandidate):
                c.original = before
            if f.plan is None:
                log.warning("superop: candidate %s does not plan: %s", c.label, f.error)
                ranked.append({"label": c.label, "error": f.error})
                continue
            c.plan, df = f.plan, f.df
            same_schema = c.plan.columns == before.columns and c.plan.types == before.types
            v = judge(c.label, before.estimate, c.plan.estimate, self.constants)
            entry = {"label": c.label, "rules": [m.rule_id for m in c.matches],
                     "forms": [m.form or "default" for m in c.matches],
                     "exchanges": c.plan.exchanges, "reused_exchanges": c.plan.reused,
                     "cost": c.plan.cost, "predicted_speedup": v.speedup, "same_schema": same_schema,
                     "cost_terms": c.plan.estimate.terms(), "verdict": v.reason}
            if isinstance(c, FlagCandidate):
                entry["conf"] = dict(c.conf)
            if not same_schema:
                entry["verdict"] = "different output schema"
            elif isinstance(c, FlagCandidate) and c.unchanged_by_flags():
                entry["verdict"] = "Spark's merge settings leave this plan unchanged"
            elif self.gate == "ungated" or (self.gate == "exchanges" and c.plan.exchanges < before.exchanges) \
                    or (self.gate == "cost" and v.accepted):
                ok.append((c, v, df))
            ranked.append(entry)
        return ranked, ok

    def _chosen(self, sql: str, before: PlanInfo, ok: list, ranked: list, timings: dict, common: dict,
                sensitive: bool, unmatched: list) -> tuple[RewriteResult, Decision]:
        """The best accepted candidate as the result and the cached decision."""
        if self.gate == "exchanges":
            best, v, df = min(ok, key=lambda cv: (cv[0].plan.exchanges, cv[0].plan.cost, -len(cv[0].matches)))
        else:   # a tie (3 digits) goes to superop's own rewrite, then to the form without settings
            best, v, df = max(ok, key=lambda cv: (round(cv[1].speedup or 0.0, 3), len(cv[0].matches),
                                              -len(getattr(cv[0], "conf", ()))))
        conf = dict(getattr(best, "conf", {}))
        what = [m.describe() for m in best.matches] + ([describe(conf)] if conf else [])
        expl = (f"applied {', '.join(what)}; benefit gate ({self.gate}): "
                f"{v.reason}; shuffle exchanges {before.exchanges} -> {best.plan.exchanges} "
                f"(reused {before.reused} -> {best.plan.reused})")
        notes: list[str] = []
        for m in best.matches:     # why a form is not offered, whichever form won
            self.rewriter.alternatives(m, notes)
        if notes:
            expl += "; forms: " + "; ".join(notes)
        if len(ranked) > 1:
            expl += "; ranked: " + ", ".join(
                f"{r['label']}=" + (f"{r['predicted_speedup']:.2f}x" if r.get("predicted_speedup") else "n/a")
                for r in ranked)
        if unmatched:
            expl += "; no rule matches: " + " | ".join(unmatched)
        extra = dict(common, exchanges_after=best.plan.exchanges, cost_after=best.plan.cost, conf=conf)
        applied = [m.rule_id for m in best.matches] + ([FORM] if conf else [])
        res = with_plan(RewriteResult(sql=best.sql, applied=applied, changed=True, explanation=expl,
                                      original_sql=sql, timings_ms=timings, **extra), df)
        return res, Decision(True, label=best.label, applied=tuple(res.applied), explanation=expl,
                             literal_sensitive=sensitive, extra=extra)

    def sql(self, query: str):
        """The query as a DataFrame, rewritten when a verified rule pays off (see the
        module doc for the settings read on each call, the decision record and shadow mode)."""
        return self._run(query, collect=False)

    def collect(self, query: str) -> list:
        """The query's rows, like ``sql(query).collect()``; its decision record also has
        the wall time of running it (``run_ms``)."""
        return self._run(query, collect=True)

    def _run(self, query: str, collect: bool):
        conf = confs.read(self.spark)
        with working():
            if not conf.enabled:
                self.ops.counters.bump("disabled")
                df = self.spark.sql(query)
                return df.collect() if collect else df
            r = self._decision(query, conf)
            t0 = time.perf_counter()
            # the DataFrame the gate planned runs as it is (plan.PlannedResult); else plan it now
            df, ran, outcome = None if r.changed else planned_frame(r), "original", None
            if r.changed:
                try:
                    df = planned_frame(r)
                    if df is None:
                        df = session_with(self.spark, r.conf).sql(r.sql)   # a flag form: in a clone
                    ran = "rewritten"
                except Exception as e:  # fail-safe
                    log.warning("superop: rewritten query failed (%s); running the original",
                                str(e).splitlines()[0])
                    outcome = "failed_safe"
            if df is None:
                df = self.spark.sql(query)
            sql_ms = round((time.perf_counter() - t0) * 1e3, 3)
            run_ms = None
            if collect:
                t1 = time.perf_counter()
                df = df.collect()
                run_ms = round((time.perf_counter() - t1) * 1e3, 3)
            rec = DecisionRecord.of(query, r, self.catalog, outcome, sql_ms=sql_ms, run_ms=run_ms, ran=ran)
            self.ops.record(rec, conf.decision_log)
            fraction = self.shadow if conf.shadow is None else conf.shadow
            if ran == "rewritten" and fraction > 0:
                self._maybe_shadow(rec, query, r, fraction, conf.decision_log)
        return df

    # -- shadow mode ------------------------------------------------------------------------
    def _maybe_shadow(self, rec: DecisionRecord, query: str, r: RewriteResult, fraction: float,
                      target: Optional[str]) -> None:
        with self._lock:
            if self._shadow is None:
                self._shadow = Shadow(self.spark.sql, lambda rec, bad: self._shadowed(rec, bad, target))
            runner = self._shadow
        if not runner.sampled(fraction):
            return
        base = copy.copy(rec)
        base.sql_ms, base.run_ms, base.ran = None, None, ""
        if not runner.submit(base, query, r.sql, r.applied):
            self.ops.counters.bump("shadow_skipped")

    def _shadowed(self, rec: DecisionRecord, bad: set, target: Optional[str]) -> None:
        if bad:
            with self._lock:
                self.disabled_rules |= bad
                self._views.clear()
        self.ops.record(rec, target)

    def wait_shadow(self, timeout: Optional[float] = None) -> None:
        """Wait for the shadow comparisons submitted so far."""
        if self._shadow is not None:
            self._shadow.wait(timeout)

    def close(self) -> None:
        """Finish shadow comparisons, flush the decision logs, stop background proofs."""
        if self._shadow is not None:
            self._shadow.close()
        if self.certifier is not None:
            self.certifier.close()
        self.ops.flush()

    def explain(self, sql: str) -> str:
        """The gate's decision and reason, and Spark's physical plans and the cost model's
        estimate before and after (:func:`superop.runtime.explaining.explain_sql`)."""
        return explaining.explain_sql(self, sql)

    # -- DataFrames (superop/runtime/dataframe.py) ---------------------------------------
    def optimize(self, df):
        """``df`` with the catalog's rules applied behind the same benefit gate: a DataFrame
        with the same columns (names, types, order) and rows, or ``df`` itself when no
        rule pays off or anything fails. ``df.transform(so.optimize)`` works."""
        return dataframe.optimize(self, df)

    def explain_df(self, df) -> str:
        """The decision for ``df`` (or for what :meth:`optimize` returned for it) and why,
        with Spark's physical plans before and after."""
        return dataframe.explain(self, df)
