"""Where the rewritten side of each benchmark pair comes from.

A rewriter is a callable ``rewrite(sql) -> Rewrite``. The benchmarks use the real runtime
(:class:`superop.runtime.SuperOpSession`) — never hand-written SQL; ``identity`` exists
for harness tests (it rewrites nothing, so every ratio is ~1 by construction).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional, Union

from ..errors import SuperopError
from ..rules_out.builtin import builtin_rules
from ..rules_out.catalog import make_catalog
from ..rules_out.trust import recheck_locally
from ..runtime import SuperOpSession
from .mined import mined_catalog


@dataclass
class Rewrite:
    sql: str
    applied: list = field(default_factory=list)
    changed: bool = False
    explanation: str = ""
    seconds: float = 0.0          # wall time of the rewrite call (incl. the runtime's planning)
    error: Optional[str] = None
    timings_ms: dict = field(default_factory=dict)
    exchanges_before: Optional[int] = None
    exchanges_after: Optional[int] = None
    conf: dict = field(default_factory=dict)   # settings ``sql`` runs with (a session clone)

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Rewriter:
    name: str
    fn: Callable[[str], Rewrite]
    info: dict = field(default_factory=dict)

    def __call__(self, sql: str) -> Rewrite:
        return self.fn(sql)


def identity_rewriter() -> Rewriter:
    def fn(sql: str) -> Rewrite:
        return Rewrite(sql=sql, explanation="identity (harness test: nothing rewritten)")
    return Rewriter("identity", fn, {"note": "no rewriting; for harness tests only"})


def default_catalog(certificates: Optional[dict] = None) -> dict:
    """Every registered family as abstract rules (one per family and branch count), each
    admitting exactly what ``superop.verify``'s template proofs cover (``Family.proofs_for``
    over every join kind and aggregate side the family supports; Z3, 0.4-3 s each, run here),
    built with ``superop.rules_out.catalog.make_rule``.

    Only with ``--catalog bench-default`` (harness tests); without ``--catalog`` the bench
    times the catalog the nightly job mines (bench/mined.py). The bench also checks every
    pair it times for equal results on the data. ``certificates``: the template proofs
    already made (``superop.rules_out.builtin.template_certificates``)."""
    try:
        rules = builtin_rules(per="family", certificates=certificates)
    except ImportError as e:  # z3 missing
        raise SuperopError(f"the hand-built catalog (--catalog {HAND_BUILT}) cannot be proved here ({e})") from None
    return make_catalog(rules, version="bench-default",
                        source={"log": None, "window": None, "content_hash": None})


HAND_BUILT = "bench-default"     # --catalog value for the hand-built catalog (harness tests only)


def runtime_session(spark, catalog: Union[None, str, dict] = None, data_dir: str = ".superop/bench-data",
                    log: Optional[str] = None, mine_kw: Optional[dict] = None,
                    keys: Optional[str] = None, certify: str = "auto") -> tuple[SuperOpSession, dict]:
    """The production runtime (:class:`SuperOpSession`, a fresh decision cache) with
    ``catalog`` (file or MLflow URI); by default the catalog the nightly job mines from
    ``log`` (the bundled log), mined once and cached under ``data_dir`` (bench/mined.py).
    ``catalog="bench-default"`` is the hand-built :func:`default_catalog`, for harness tests
    only. ``keys``: a file of declared keys the session vouches for
    (``SuperOpSession(keys=...)``: a schema file with a ``"$keys"`` entry, or a bare keys
    mapping) — keyed rules apply only with it. ``certify``: the session's first-sight mode
    (``SuperOpSession(certify=...)``). Returns the session and what describes it."""
    if catalog == HAND_BUILT:
        cat, desc = default_catalog(), ("bench-default (hand-built DU/DJ/MJ rules, templates proved by "
                                        "superop.verify at start-up; harness tests only)")
    elif isinstance(catalog, dict):
        cat, desc = catalog, f"(in-memory catalog {catalog.get('version')})"
    elif catalog:
        cat, desc = catalog, catalog
    else:
        m = mined_catalog(data_dir, log, spark=spark, **(mine_kw or {}))
        cat, desc = str(m.path), m.describe()
    # the hand-built catalog is made here, unsigned: re-checked with z3 and signed in this process
    so = SuperOpSession(spark, recheck_locally(cat) if isinstance(cat, dict) and "signature" not in cat else cat,
                        keys=keys, certify=certify)
    info = {"catalog": desc, "catalog_version": so.catalog.get("version"), "certify": certify,
            "keys": keys, "declared_keys": {t: [k.text() for k in ks] for t, ks in so.keys.items()},
            "catalog_checksum": so.catalog.get("checksum"),
            "rules": [r["id"] for r in so.catalog.get("rules", [])]}
    return so, info


def runtime_rewriter(spark, catalog: Union[None, str, dict] = None, data_dir: str = ".superop/bench-data",
                     log: Optional[str] = None, mine_kw: Optional[dict] = None,
                     keys: Optional[str] = None, certify: str = "auto") -> Rewriter:
    """The production rewriter (``SuperOpSession.rewrite``) of :func:`runtime_session`."""
    so, info = runtime_session(spark, catalog, data_dir, log, mine_kw, keys, certify)

    def fn(sql: str) -> Rewrite:
        t0 = time.perf_counter()
        r = so.rewrite(sql)
        dt = time.perf_counter() - t0
        return Rewrite(sql=r.sql, applied=list(getattr(r, "applied", []) or []),
                       changed=bool(getattr(r, "changed", False)),
                       explanation=str(getattr(r, "explanation", "") or ""), seconds=dt,
                       error=getattr(r, "error", None),
                       timings_ms=dict(getattr(r, "timings_ms", None) or {}),
                       exchanges_before=getattr(r, "exchanges_before", None),
                       exchanges_after=getattr(r, "exchanges_after", None),
                       conf=dict(getattr(r, "conf", None) or {}))
    return Rewriter("superop.runtime.SuperOpSession", fn, info)


def make_rewriter(spark, kind: str = "runtime", catalog: Optional[str] = None,
                  data_dir: str = ".superop/bench-data", log: Optional[str] = None,
                  keys: Optional[str] = None, certify: str = "auto") -> Rewriter:
    if kind == "runtime":
        return runtime_rewriter(spark, catalog, data_dir, log, keys=keys, certify=certify)
    if kind == "identity":
        return identity_rewriter()
    raise SuperopError(f"unknown rewriter {kind!r} (runtime | identity)")
