"""Proof obligations of a sharing plan: no consumer reads a CE without a proof.

Per consumer (:func:`prove_consumer`):
* ``extraction`` — bounded (Z3, K rows per table, NULLs and bags): the extraction plan
  with the CE inlined (exactly the plan that runs, the temp view replaced by the SQL it
  names) equals the consumer's own sub-plan: for an aggregate consumer the aggregate as
  the query wrote it; for a select-project-join consumer its tables joined and filtered
  by the conjuncts that read only them (the pushed-down form of its sub-plan).
  When the unit joins several tables, the K^n rows of their product make this check
  slow (measured: 10-45 s per consumer for 3-5 TPC-DS tables), so the bounded check then
  takes the unit's join J — the same tables and join conditions in the CE and in the
  consumer — as ONE symbolic table of K rows and checks the σ/π (or γ) on top of it;
  that the CE and the consumer really read J is proved without bound: by ``placement``
  for select-project-join consumers, by ``input`` for aggregates.
* ``input`` (aggregate consumers over several tables) — unbounded, row-wise: the columns
  the consumer's aggregate reads, computed by its block as written, equal the same
  expressions over σ_F(J) (F: the consumer's filters, J: the CE's join). The aggregate on
  top is the same on both sides by construction (its expressions with the block's
  outputs substituted).
* ``template`` — unbounded, once per template (:mod:`superop.share.templates`).
* ``placement`` (select-project-join consumers) — unbounded, per instance
  (:func:`superop.verify.plans.prove_spj_equivalent`): the consumer's block regenerated
  over the extraction (CE inlined) equals the block as the query wrote it. This covers the
  pushdown of its filters and the re-placement of the rest of the block. It is proved for
  each consumer alone before selection, and again for every block in which several
  chosen consumers are combined (:func:`prove_placement`).

A refuted, unknown or unsupported obligation means the consumer is never rewritten.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from sqlglot import exp

from ..ir.generate import to_sql
from ..ir.nodes import Node, Project, Scan, Select, walk
from ..verify.plans import certificate, check_plans_equivalent, prove_spj_equivalent
from ..verify.result import REFUTED, UNKNOWN, UNSUPPORTED, VERIFIED, Result
from .blocks import Block, and_all
from .canonical import canonical_leaf, join_tree, to_canon
from .covering import Consumer, CoveringExpression, rewrite_block
from .templates import prove_template

DEFAULT_K = 3
DEFAULT_TIMEOUT_MS = 20000


@dataclass
class Obligation:
    name: str                       # extraction | template | placement
    status: str
    method: str                     # bounded | template | rowwise
    seconds: float
    reason: str = ""
    certificate: dict = field(default_factory=dict)

    @property
    def verified(self) -> bool:
        return self.status == VERIFIED

    def to_json(self) -> dict:
        return {"name": self.name, "status": self.status, "method": self.method,
                "seconds": round(self.seconds, 4), "reason": self.reason, "certificate": self.certificate}


@dataclass
class ConsumerProof:
    ce: str
    query: int
    unit: str
    obligations: list[Obligation] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return bool(self.obligations) and all(o.verified for o in self.obligations)

    @property
    def status(self) -> str:
        bad = [o for o in self.obligations if not o.verified]
        return VERIFIED if not bad else bad[0].status

    def why(self) -> str:
        bad = [o for o in self.obligations if not o.verified]
        return "; ".join(f"{o.name} {o.status}: {o.reason}" for o in bad)

    def to_json(self) -> dict:
        return {"ce": self.ce, "query": self.query, "unit": self.unit, "status": self.status,
                "obligations": [o.to_json() for o in self.obligations]}


def _sql(node: Node) -> str:
    try:
        return to_sql(node)
    except Exception as e:  # a certificate without SQL text is still a certificate
        return f"<not renderable: {type(e).__name__}>"


def _obligation(name: str, r: Result, sqls: tuple[str, str], what_a: str, what_b: str) -> Obligation:
    cert = certificate(r, {"a": what_a, "b": what_b, "a_sql": sqls[0], "b_sql": sqls[1]})
    return Obligation(name, r.status, r.method, r.seconds, r.reason, cert)


# Proof results shared by every planning run of the process (the nightly job plans many
# log windows of the same queries): key = a fingerprint of the normalized plan pair.
_SHARED_CACHE: dict[str, Obligation] = {}
_SHARED_CACHE_MAX = 4096


def _share(key: str, ob: Obligation) -> None:
    """Keep a decided obligation for the process's later planning runs (bounded: oldest out)."""
    if key not in _SHARED_CACHE and len(_SHARED_CACHE) >= _SHARED_CACHE_MAX:
        _SHARED_CACHE.pop(next(iter(_SHARED_CACHE)))
    _SHARED_CACHE[key] = ob


BUDGET_EXHAUSTED = "the planning run's proof time budget is spent (not proved, so not used)"


def pair_fingerprint(method: str, K: int, a: Node, b: Node, sqls: Optional[tuple[str, str]] = None) -> str:
    """The cache key of an obligation: sha256 of the method, the two plans' SQL as the
    IR generates it (a normal form: canonical aliases ``_c{j}``, no view names) and the
    typed columns of their base tables, so the
    same extraction shape is proved once whichever CE, query or planning run asks.
    ``sqls``: ``(_sql(a), _sql(b))`` when the caller has them (generating is ~50 ms each)."""
    import hashlib
    # the SQL does not carry the base tables' column types, which the encodings read
    scans = sorted({repr((n.table, tuple(n.columns))) for p in (a, b) for n in walk(p) if isinstance(n, Scan)})
    sa, sb = sqls if sqls is not None else (_sql(a), _sql(b))
    text = "\x00".join((method, str(K) if method == "bounded" else "", sa, sb, *scans))
    return hashlib.sha256(text.encode()).hexdigest()


class Prover:
    """Runs and caches the obligations of one planning run (module doc).

    ``budget_s``: wall-clock seconds the run may spend in solvers; an obligation asked
    for after that is ``unknown`` (never used). Every obligation also has its own
    ``timeout_ms``; a timeout is ``unknown``. ``stats`` counts solver calls and cache hits."""

    def __init__(self, K: int = DEFAULT_K, timeout_ms: int = DEFAULT_TIMEOUT_MS,
                 leaf_types: Optional[Callable[[Node], Sequence[str]]] = None,
                 budget_s: Optional[float] = None, store=None):
        if K < 1:
            raise ValueError("K must be at least 1")
        self.K = K
        self.timeout_ms = timeout_ms
        self.leaf_types = leaf_types
        self.budget_s = budget_s
        self.cache: dict[str, Obligation] = {}
        self.store = store          # a plancache.PlanningCache: decided obligations across processes
        self.stats = {"solved": 0, "cached": 0, "solver_s": 0.0, "over_budget": 0}

    def _check(self, method: str, name, a: Node, b: Node, what_a: str, what_b: str) -> Obligation:
        sqls = (_sql(a), _sql(b))           # the key's SQL is also the certificate's
        key = pair_fingerprint(method, self.K, a, b, sqls)
        hit = self.cache.get(key) or _SHARED_CACHE.get(key) or self._stored(key)
        if hit is not None:
            self.stats["cached"] += 1
            self.cache[key] = hit
            return dataclasses.replace(hit, name=name)
        if self.budget_s is not None and self.stats["solver_s"] >= self.budget_s:
            self.stats["over_budget"] += 1
            return Obligation(name, UNKNOWN, method, 0.0, BUDGET_EXHAUSTED)
        timeout = self.timeout_ms
        if self.budget_s is not None:      # never run past the budget
            timeout = max(1, min(timeout, int((self.budget_s - self.stats["solver_s"]) * 1000)))
        r = check_plans_equivalent(a, b, K=self.K, timeout_ms=timeout) if method == "bounded" else \
            prove_spj_equivalent(a, b, timeout_ms=timeout, leaf_types=self.leaf_types)
        self.stats["solved"] += 1
        self.stats["solver_s"] += r.seconds
        ob = _obligation(name, r, sqls, what_a, what_b)
        self.cache[key] = ob
        if ob.status != UNKNOWN:          # an unknown may be decided with more time later
            _share(key, ob)
            if self.store is not None:
                self.store.put_json("proofs", self.store.proof_key(key), ob.to_json())
        return ob

    def _stored(self, key: str) -> Optional[Obligation]:
        """A decided obligation another planning run stored for the same problem."""
        if self.store is None:
            return None
        doc = self.store.get_json("proofs", self.store.proof_key(key))
        try:
            ob = Obligation(doc["name"], doc["status"], doc["method"], float(doc["seconds"]),
                            doc.get("reason", ""), dict(doc.get("certificate") or {})) if doc else None
        except (KeyError, TypeError, ValueError):
            return None
        if ob is None or ob.status == UNKNOWN:
            return None
        _share(key, ob)
        return ob

    def _bounded(self, *args) -> Obligation:
        return self._check("bounded", *args)

    def _rowwise(self, *args) -> Obligation:
        return self._check("rowwise", *args)

    def _extraction(self, c: "Consumer", a: Node, b: Node, what_a: str, what_b: str) -> Obligation:
        """A select-project extraction is proved without bound first (the σ/π template
        instantiated: row-wise over the one input); the bounded check runs only where
        that proof does not apply (aggregates, or row-wise unknown/unsupported)."""
        if c.unit.kind == "spj":
            ob = self._rowwise("extraction", a, b, what_a, what_b)
            if ob.status in (VERIFIED, REFUTED):
                return ob
        return self._bounded("extraction", a, b, what_a, what_b)

    def prove_consumer(self, c: Consumer) -> ConsumerProof:
        out = ConsumerProof(c.ce.id, c.query, c.unit.describe())
        if len(c.unit.S) == 1:
            out.obligations.append(self._extraction(
                c, c.ce.inline(c.extraction), c.original,
                "the extraction over the covering expression (inlined)", "the consumer's own sub-plan"))
        else:
            e_j, o_j = over_join(c)
            out.obligations.append(self._extraction(
                c, e_j, o_j, "the extraction over the covering expression, over the unit's "
                "join J as one table", "the consumer's own filter and projection/aggregate over J"))
            if c.unit.kind == "agg":
                a, b = aggregate_input(c)
                out.obligations.append(self._rowwise(
                    "input", a, b, "the columns the consumer's aggregate reads, from its block as written",
                    "the same expressions over the consumer's filters on the CE's join J"))
        tp = prove_template(c.ce.template)
        out.obligations.append(Obligation("template", tp.status, "template", tp.seconds,
                                          "" if tp.verified else "template proof failed",
                                          tp.certificate()))
        if c.unit.kind == "spj":
            out.obligations.append(self.prove_placement(c.unit.block, [c]))
        return out

    def prove_placement(self, block: Block, consumers: list[Consumer]) -> Obligation:
        """The block regenerated over these consumers' extractions (CEs inlined) equals
        the block as written."""
        t0 = time.perf_counter()
        try:
            rw = rewrite_block(block, consumers, expand=lambda c: c.ce.inline(c.extraction))
        except (ValueError, KeyError) as e:
            return Obligation("placement", UNSUPPORTED, "rowwise", time.perf_counter() - t0,
                              f"cannot regenerate the block: {e}")
        return self._rowwise("placement", rw.proof_rewritten, rw.proof_original,
                             "the block over the extraction(s) (covering expressions inlined)",
                             "the block as the query wrote it")


def prove(consumer: Consumer, K: int = 3, timeout_ms: int = 20000, leaf_types=None) -> ConsumerProof:
    """Every obligation of one consumer; use the consumer only if ``.verified``."""
    return Prover(K, timeout_ms, leaf_types).prove_consumer(consumer)


def join_table(ce: CoveringExpression) -> tuple[Scan, dict]:
    """The unit's join J as one symbolic table: every column of every table, named
    ``c{j}_{column}``."""
    cols, names = [], {}
    for j, (_, columns, _) in enumerate(ce.tables):
        for c, ty in columns:
            names[(j, c)] = f"c{j}_{c}"
            cols.append((names[(j, c)], ty))
    return Scan("_join", tuple(cols)), names


def over_join(c: Consumer) -> tuple[Node, Node]:
    """(extraction over the CE over J, the consumer's own σ/π or γ over J)."""
    scan, names = join_table(c.ce)
    col = lambda j, n: exp.column(names[(j, n)])  # noqa: E731
    return c.ce.inline(c.extraction, c.ce.top.over(scan, col)), c.own.over(scan, col)


def canonical_join(ce: CoveringExpression) -> Node:
    leaves = [canonical_leaf(t, cols, j, ident) for j, (t, cols, ident) in enumerate(ce.tables)]
    return join_tree(leaves, [frozenset([j]) for j in range(len(leaves))], list(ce.joins))


def aggregate_input(c: Consumer) -> tuple[Node, Node]:
    """(what the aggregate reads from its block as written, the same over σ_F(J))."""
    block = c.unit.block
    root, flat = block.root, block.flat
    items_b, items_j = [], []
    for k in block.used:
        f = root.fields[k]
        items_b.append((exp.column(f.name, f.qualifier) if f.qualifier else exp.column(f.name), f.name))
        items_j.append((to_canon(flat.outputs[k], c.unit.canon), f.name))
    j = canonical_join(c.ce)
    filters = c.own.filters
    source = Select(j, and_all(filters)) if filters else j
    return Project(root, tuple(items_b)), Project(source, tuple(items_j))
