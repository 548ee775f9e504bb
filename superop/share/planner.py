"""A sharing plan for a batch of queries: detect, build, prove, estimate, choose, rewrite.

    plan = plan_batch(sqls, spark=spark, budget=None)     # nothing runs yet
    print(plan.report())

1. every query is lowered to the plan IR (a query that does not parse, or whose table
   names the IR does not carry as written, takes no part and runs unchanged);
2. similar sub-expressions by Algorithm 1 (``similar.py``), covering expressions per SE
   (``covering.py``);
3. every consumer's proof obligations (``proofs.py``); a consumer without a full proof
   is dropped; an SE left with fewer than ``k`` proved consumers, or without a sound
   covering expression, is marked not shared and the lookup runs again below it;
4. value and weight per CE from Spark's statistics (``estimate.py``), groups of
   mutually exclusive options and the MCKP under the budget (``select.py``);
5. the consumers of the chosen CEs are rewritten (``covering.rewrite_query``); blocks
   where several chosen CEs meet are proved again as combined; each rewritten query must
   have the original's output names and types (Spark plans both), else it runs as is.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

from sqlglot import exp

from ..errors import SqlError, SuperopError
from ..ir.generate import to_sql
from ..ir.lower import lower, parse
from ..ir.nodes import Node, Scan, walk
from ..ir.schema import SparkCatalogSchema
from ..verify.result import UNKNOWN
from .covering import Builder, Consumer, CoveringExpression, group_consumers, rewrite_query
from .estimate import DEFAULT_COST, CostModel, Estimator, storage_budget
from .plancache import DEFAULT_MAX_BYTES, PlanningCache
from .proofs import Prover
from .select import CEDecision, Verdict, choose
from .sharing_plan import BatchQuery, QueryInfo, RewrittenQuery, SharingPlan, fresh_prefix
from .similar import SimilarSubexpression, identify, narrower, restricted, served_by, units_of_plan

DEFAULT_PROOF_BUDGET_S = 300.0     # solver seconds per planning run (module doc)


# ---------------------------------------------------------------------------
def as_batch(sqls: Sequence) -> list[BatchQuery]:
    out = []
    for i, s in enumerate(sqls):
        out.append(s if isinstance(s, BatchQuery) else BatchQuery(f"q{i + 1}", str(s)))
    return out


def batch_tables(sqls: Sequence) -> list[str]:
    """The tables (``db.t`` as written) the batch's queries read, CTE names left out,
    in order of first mention; a query that does not parse adds none."""
    tables: list[str] = []
    for q in as_batch(sqls):
        try:
            tree = parse(q.sql)
        except Exception:
            continue
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        for t in tree.find_all(exp.Table):
            full = ".".join(p for p in (t.catalog, t.db, t.name) if p)
            if t.name and t.name.lower() not in ctes and full not in tables:
                tables.append(full)
    return tables


def unqualified_tables(sql: str, plan: Node) -> list[str]:
    """Tables the query names with a database (``db.t``) that no scan of the plan IR
    carries as such: sharing them could confuse ``db1.t`` with ``db2.t``, so such a
    query takes no part until the IR resolves qualified names."""
    tree = parse(sql)
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    scans = {n.table.lower() for n in walk(plan) if isinstance(n, Scan)}
    out = []
    for t in tree.find_all(exp.Table):
        if not t.name or t.name.lower() in ctes or not (t.db or t.catalog):
            continue
        full = ".".join(p for p in (t.catalog, t.db, t.name) if p).lower()
        if not any(s == full or full.endswith("." + s) and "." in s for s in scans):
            out.append(full)
    return out


def _lower_all(batch: list[BatchQuery], spark, schema) -> list[QueryInfo]:
    out = []
    if schema is None and spark is not None:
        # one catalog source for the batch: each table resolved by Spark once, not once per
        # query that reads it (a fresh source per query was a third of the lowering time)
        schema = SparkCatalogSchema(spark)
    for i, q in enumerate(batch):
        info = QueryInfo(i, q.name, q.sql)
        try:
            low = lower(q.sql, schema if schema is not None else spark)
            info.plan = low.plan
            bad = unqualified_tables(q.sql, low.plan)
            if bad:
                info.excluded = f"table name(s) {', '.join(bad)} not carried qualified by the plan IR"
        except SqlError as e:
            info.excluded = str(e)
        except Exception as e:   # never let one query stop the batch
            info.excluded = f"cannot analyse: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        out.append(info)
    return out


def _leaf_types(spark):
    if spark is None:
        return None

    memo: dict[str, list[str]] = {}

    def types(node: Node) -> list[str]:
        sql = to_sql(node)
        if sql not in memo:      # each leaf analysed by Spark once per planning run
            memo[sql] = [f.dataType.simpleString() for f in spark.sql(sql).schema.fields]
        return memo[sql]
    return types


def plan_batch(sqls: Sequence, spark=None, *, schema: Optional[dict] = None, budget: Optional[int] = None,
               k: int = 2, K: int = 3, timeout_ms: int = 20000, cost: CostModel = DEFAULT_COST,
               view_prefix: Optional[str] = None,
               proof_budget_s: Optional[float] = DEFAULT_PROOF_BUDGET_S, narrow: bool = True,
               restrict: bool = True, cache_dir=None,
               cache_max_bytes: Optional[int] = DEFAULT_MAX_BYTES,
               grouping_sets: bool = True) -> SharingPlan:
    """The sharing plan of a batch (module doc). ``spark`` plans and estimates (without
    it, given ``schema``, the plan stops after the proofs: no values, nothing chosen).
    ``timeout_ms`` bounds each proof, ``proof_budget_s`` all of them (None: no bound);
    an obligation that times out or comes after the budget is ``unknown``: not used.
    ``narrow``: also offer the narrower SEs of each SE over a join (``similar.narrower``);
    ``restrict``: also offer each CE cut down to the queries no chosen CE serves
    (``similar.restricted``), so the knapsack can take it next to the chosen ones.
    ``cache_dir``: the on-disk planning cache (``plancache.py``): a batch planned before
    with the same inputs is returned from it, proofs and Spark's estimates are reused;
    ``cache_max_bytes`` bounds it (oldest records evicted first; None = unbounded).
    ``grouping_sets``: let queries with GROUP BY ROLLUP / CUBE / GROUPING SETS take part
    (default; ``blocks.GROUPING_SETS_OFF`` is the reason given when it is off)."""
    if spark is None and schema is None:
        raise SuperopError("plan_batch needs a SparkSession or a schema")
    if k < 2:
        raise SuperopError("k (consumers per shared sub-expression) must be at least 2")
    t = {"start": time.perf_counter()}
    batch = as_batch(sqls)
    store, key = None, ""
    if cache_dir is not None:
        store = PlanningCache(cache_dir, spark, max_bytes=cache_max_bytes)
        params = {"budget": budget, "k": k, "K": K, "timeout_ms": timeout_ms, "cost": dataclasses.asdict(cost),
                  "view_prefix": view_prefix, "proof_budget_s": proof_budget_s, "narrow": narrow,
                  "restrict": restrict, "schema": schema, "grouping_sets": grouping_sets}
        key = store.plan_key([(q.name, q.sql) for q in batch], batch_tables(batch), params)
        hit = _cached_plan(store, key, spark, budget)
        if hit is not None:
            if hit.fresh_views:
                hit.rename_views(fresh_prefix())
            hit.seconds = {"cache": time.perf_counter() - t["start"]}
            return hit
    plan = SharingPlan(_lower_all(batch, spark, schema), storage=cost.storage)
    t["lower"] = time.perf_counter()
    forests = [units_of_plan(q.plan, q.index, grouping_sets) if q.plan is not None and not q.excluded else []
               for q in plan.queries]
    prefix = view_prefix or fresh_prefix()
    plan.view_prefix, plan.fresh_views = prefix, view_prefix is None
    prover = Prover(K=K, timeout_ms=timeout_ms, leaf_types=_leaf_types(spark), budget_s=proof_budget_s,
                    store=store)
    est = Estimator(spark, cost, store=store) if spark is not None else None
    if spark is not None:
        plan.budget, plan.budget_source = (int(budget), "given") if budget is not None else storage_budget(spark)
    search = _Search(plan, Builder(prefix), prover, est, k, narrow, restrict)
    search.run(forests)
    plan.ses = search.ses
    plan.ces = [b.ce for b in search.cands if len(b.ce.consumers) >= k]
    plan.proofs = [p for b in search.built.values() for p in (b.proofs or [])]   # every proof that ran
    t["prove"] = time.perf_counter()
    if est is not None:
        _choose(plan, est, plan.ces, k, final=True)
    plan.decisions = search.notes + plan.decisions
    t["choose"] = time.perf_counter()
    _rewrite(plan, spark, prover)
    t["rewrite"] = time.perf_counter()
    _finish(plan, t, prover, est, store, key)
    return plan


@dataclass
class _Search:
    """The covering expressions of a batch, to a fixpoint: each round identifies the SEs
    outside ``blocked`` (with their narrower and restricted forms), builds their CEs (kept
    in ``built``), proves the consumers of those that may be cached and blocks what has no
    cover or too few proved consumers (``notes`` say why); it ends when a round changes
    nothing, after at most 10 rounds. ``ses`` and ``cands`` are the last round's."""
    plan: SharingPlan
    builder: Builder
    prover: Prover
    est: Optional[Estimator]
    k: int
    narrow: bool
    restrict: bool
    blocked: set = field(default_factory=set)
    notes: list[CEDecision] = field(default_factory=list)
    built: dict[tuple, _Built] = field(default_factory=dict)
    cands: list[_Built] = field(default_factory=list)
    extra: dict[tuple, SimilarSubexpression] = field(default_factory=dict)    # restricted SEs offered so far
    ses: list[SimilarSubexpression] = field(default_factory=list)

    def run(self, forests: list) -> None:
        for _ in range(10):
            ses = identify(forests, self.k, frozenset(self.blocked))
            if self.narrow:
                ses += [n for se in ses for n in narrower(se, self.k, blocked=frozenset(self.blocked))]
            ses += [se for key, se in self.extra.items() if key not in self.blocked]
            self.ses = ses
            if self._build(ses):
                continue
            self._prove_what_may_be_cached()
            changed = self._block_unproved()
            if not changed and self.est is not None and self.restrict:
                changed = _restrict(self.plan, self.cands, ses, self.extra, self.k, frozenset(self.blocked))
            if not changed:
                break

    def _build(self, ses: list[SimilarSubexpression]) -> bool:
        """This round's candidates: the CE of every SE; True when an SE has none (blocked)."""
        self.cands, changed = [], False
        for se in ses:
            bkey = (se.members[0].key, tuple(id(m) for m in se.members))
            if bkey not in self.built:
                ce, why = self.builder.build(se, len(self.built) + 1)
                self.built[bkey] = _Built(se.narrow_key or se.members[0].key, ce, why,
                                          list(ce.consumers) if ce else [])
            b = self.built[bkey]
            if b.ce is None:
                self.notes.append(CEDecision(se.id, Verdict.NO_COVER, b.why))
                self.blocked.add(b.key)
                changed = True
            else:
                self.cands.append(b)
        return changed

    def _prove(self, b: _Built) -> None:
        b.proofs = [self.prover.prove_consumer(c) for c in b.everyone]
        b.ce.consumers = [c for c, p in zip(b.everyone, b.proofs) if p.verified]
        b.ce.proved = True

    def _prove_what_may_be_cached(self) -> None:
        if self.est is None:                     # no estimates: prove every consumer
            for b in self.cands:
                if b.proofs is None:
                    self._prove(b)
            return
        # Choose on optimistic values (unproved consumers counted), prove what was
        # chosen, choose again: only CEs that may be cached are ever proved.
        for _round in range(12):
            _choose(self.plan, self.est, [b.ce for b in self.cands if len(b.ce.consumers) >= self.k], self.k)
            todo = [b for b in self.cands if b.ce.id in self.plan.selection.chosen and b.proofs is None]
            if not todo:
                break
            for b in todo:
                self._prove(b)

    def _block_unproved(self) -> bool:
        """Block every proved CE with fewer than k proved consumers (True if any)."""
        changed = False
        for b in self.cands:
            if b.proofs is not None and len(b.ce.consumers) < self.k:
                bad = "; ".join(f"{self.plan.queries[p.query].name}: {p.why()}" for p in b.proofs if not p.verified)
                self.notes.append(CEDecision(b.ce.id, Verdict.NOT_PROVED, f"{len(b.ce.consumers)} proved "
                                             f"consumer(s) of {len(b.proofs)} ({bad})"))
                self.blocked.add(b.key)
                changed = True
        return changed


def _finish(plan: SharingPlan, t: dict, prover: Prover, est: Optional[Estimator], store, key: str) -> None:
    """The planning statistics and seconds per step; the plan stored in the planning cache
    unless a proof is unknown (it may be decided with more time)."""
    plan.prover_stats = dict(prover.stats, solver_s=round(prover.stats["solver_s"], 3))
    if est is not None:
        plan.estimator_stats = dict(est.stats)
    keys = list(t)
    plan.seconds = {keys[i]: t[keys[i]] - t[keys[i - 1]] for i in range(1, len(keys))}
    if store is not None:
        if any(p.status == UNKNOWN for p in plan.proofs):
            plan.cache = "not stored (a proof is unknown: it may be decided with more time)"
        else:
            plan.cache = f"stored {key[:16]}"
            store.put_plan(key, plan)
        store.prune()


def _cached_plan(store, key: str, spark, budget: Optional[int]) -> Optional[SharingPlan]:
    """The stored plan for ``key``, if what it caches fits this run's budget (a budget
    derived from Spark's free storage memory is not part of the key)."""
    hit = store.get_plan(key)
    if not isinstance(hit, SharingPlan):
        return None
    if budget is None and spark is not None:
        now, how = storage_budget(spark)
        if hit.selection is not None and hit.selection.total_weight > now:
            return None
        hit.budget, hit.budget_source = now, f"{how}; plan chosen under {hit.budget} bytes"
    hit.cache = f"hit {key[:16]}"
    return hit


@dataclass
class _Built:
    key: tuple
    ce: Optional[CoveringExpression]
    why: str
    everyone: list                       # every consumer, before proofs
    proofs: Optional[list] = None        # None: not proved (never chosen so far)


def _choose(plan: SharingPlan, est: Estimator, ces: list, k: int = 2, final: bool = False) -> None:
    """Estimates and the knapsack choice over ``ces``. A CE not proved yet counts all its
    consumers (optimistic); in the ``final`` choice it cannot be chosen. The never-slower
    gate: a consumer that does not gain from reading the CE (``ConsumerValue``) does not
    read it, and a CE with fewer than ``k`` gaining consumers is not cached."""
    prior = plan.selection.decisions if final and plan.selection is not None else {}
    plan.estimates = {}
    refused: dict[str, str] = {}
    for ce in ces:
        vals = [est.consumer_value(ce, c) for c in ce.consumers]
        plan.consumer_values[ce.id] = vals
        gaining = [c for c, v in zip(ce.consumers, vals) if v.gains]
        plan.accepted[ce.id] = gaining
        plan.estimates[ce.id] = est.estimate(ce, gaining)
        e = plan.estimates[ce.id]
        if len(gaining) < k:
            losers = "; ".join(f"{plan.queries[v.query].name} {v.unit}: {v.reason()}" for v in vals if not v.gains)
            refused[ce.id] = (f"only {len(gaining)} of {len(vals)} consumer(s) gain from reading it "
                              f"(never slower: {losers})")
        elif e.known and e.value <= 0:      # the batch-level test: saving minus filling
            refused[ce.id] = f"filling it costs more than it saves the batch: {e.reason()}"
    conflicts = set()
    for a in ces:
        for b in ces:
            if a.id < b.id and _conflict(a, b):
                conflicts.add(frozenset((a.id, b.id)))
    value = {c.id: plan.estimates[c.id].value for c in ces}
    weight = {c.id: plan.estimates[c.id].weight for c in ces}
    unknown = frozenset(c.id for c in ces if not plan.estimates[c.id].known)
    unproved = frozenset(c.id for c in ces if not c.proved) if final else frozenset()
    plan.selection = choose([c.id for c in ces], conflicts, value, weight, plan.budget,
                            unknown=unknown, never=unproved, refused=refused)
    for c in ces:   # never proved because the optimistic choice passed it over: say why
        was = prior.get(c.id)
        if not c.proved and was is not None and not was.chosen:
            plan.selection.decisions[c.id] = dataclasses.replace(
                was, reason=f"{was.reason} (not chosen, so never proved)")
    for c in ces:   # a chosen CE says why it pays, with the numbers
        d = plan.selection.decisions[c.id]
        if d.chosen:
            plan.selection.decisions[c.id] = dataclasses.replace(d, reason=f"{d.reason}: "
                                                                 f"{plan.estimates[c.id].reason()}")
    plan.decisions = [plan.selection.decisions[c.id] for c in ces]


def _restrict(plan: SharingPlan, cands: list[_Built], ses: list[SimilarSubexpression],
              extra: dict[tuple, SimilarSubexpression], k: int, blocked: frozenset) -> bool:
    """Add to ``extra`` the restriction (``similar.restricted``) of every CE the current
    choice passed over to the members that the chosen CEs of other SEs leave unserved
    (``similar.served_by``); True when one is new (the planner then builds, proves and
    chooses again)."""
    chosen = set(plan.selection.chosen) if plan.selection is not None else set()
    uses = [(b.ce.se, [c.unit for c in b.ce.consumers]) for b in cands if b.ce is not None and b.ce.id in chosen]
    if not uses:
        return False
    have = {frozenset(id(m) for m in se.members) for se in ses}
    new = False
    for b in cands:
        if b.ce is None or b.ce.id in chosen:
            continue
        r = restricted(b.ce.se, served_by(uses, b.ce.se), k, blocked)
        if r is None or r.narrow_key in extra or frozenset(id(m) for m in r.members) in have:
            continue
        extra[r.narrow_key] = r
        have.add(frozenset(id(m) for m in r.members))
        new = True
    return new


def _conflict(a: CoveringExpression, b: CoveringExpression) -> bool:
    for x in a.consumers:
        for y in b.consumers:
            if x.query == y.query and x.unit.footprint() & y.unit.footprint():
                return True
    return False


def _rewrite(plan: SharingPlan, spark, prover: Prover) -> None:
    chosen = set(plan.selection.chosen) if plan.selection is not None else set()
    by_query: dict[int, list[Consumer]] = {}
    for ce in plan.ces:
        if ce.id in chosen:
            for c in plan.accepted.get(ce.id, ce.consumers):
                by_query.setdefault(c.query, []).append(c)
    views = []
    try:
        if spark is not None:
            for ce in plan.ces:
                if ce.id in chosen:     # registered (not cached) so Spark can plan the consumers
                    spark.sql(to_sql(ce.plan, names=ce.columns)).createOrReplaceTempView(ce.view)
                    views.append(ce.view)
        for q in plan.queries:
            cons = by_query.get(q.index, [])
            if not cons:
                reason = q.excluded or ("" if q.plan is None else "no chosen covering expression reads it")
                plan.rewrites.append(RewrittenQuery(q.index, q.name, q.sql, False, reason=reason))
                continue
            r, used = _rewrite_one(q, cons, spark, prover)
            plan.rewrites.append(r)
            for c in used:
                plan.used.setdefault(c.ce.id, []).append(c)
    finally:
        for v in views:
            spark.catalog.dropTempView(v)


def _rewrite_one(q: QueryInfo, cons: list[Consumer], spark, prover: Prover) -> tuple[RewrittenQuery, list]:
    spj, agg = group_consumers(cons)
    for key, (block, cs) in list(spj.items()):
        if len(cs) > 1:
            ob = prover.prove_placement(block, cs)
            if not ob.verified:      # keep the one proved alone
                spj[key] = (block, cs[:1])
    used = [c for _, cs in spj.values() for c in cs] + list(agg.values())
    ces = sorted({c.ce.id for c in used})
    try:
        new = rewrite_query(q.plan, spj, agg)
        schema = spark.sql(q.sql).schema if spark is not None else None   # analysed once
        sql = to_sql(new, names=[f.name for f in schema.fields] if schema is not None else None)
        if schema is not None:
            want = [(f.name, f.dataType.simpleString()) for f in schema.fields]
            got = [(f.name, f.dataType.simpleString()) for f in spark.sql(sql).schema.fields]
            if want != got:
                return RewrittenQuery(q.index, q.name, q.sql, False,
                                      reason=f"rewritten output {got} differs from the original's {want}"), []
    except Exception as e:   # fail-safe: the query runs as written
        return RewrittenQuery(q.index, q.name, q.sql, False,
                              reason=f"rewrite failed: {type(e).__name__}: {first_line(e)}"), []
    return RewrittenQuery(q.index, q.name, sql, True, ces), used


def first_line(e: BaseException) -> str:
    """The first line of an exception's message (Spark's carry the whole plan after it)."""
    text = str(e)
    return text.splitlines()[0] if text else ""
