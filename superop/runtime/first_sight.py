"""First-sight certification of an instance no proof in the catalog covers.

The runtime applies a match only under a proof of that instance (``superop.rewrite.proofs``).
A new instance — a query the nightly job never saw — either runs unchanged and is recorded
for the next nightly job (``Rewriter.uncovered``), or, when Z3 is installed, is certified
right here: the bounded check of the instance alone (``superop.verify.certificate.
check_and_certify``, K rows, a time limit) with the column types this session's Spark gives
its output and its source, so that the SQL then run is the SQL certified. The instance's
parametric form (``superop.families.parametric``: its literals as typed parameters) is
certified first — one certificate then covers the template with any literal values — and
the instance itself only when that is not verified. The verdict is kept per instance key
for the session's life (a refutation or a timeout is not retried); a verified certificate
joins the rule's proofs (``Rewriter.certified`` lists them).

Two modes (``SuperOpSession(certify=...)``, ``spark.superop.certify``): ``"auto"`` checks
while the statement waits (up to the time limit per check: a cold pivot join can wait
10-45 s); ``"background"`` never makes a statement wait — the statement runs unchanged,
the check runs on one background thread, and the statements after it use its verdict.
Z3 runs only on that thread; the column types are read from Spark on the caller's.

This module is the runtime's one optional Z3 boundary: the verifier is imported only when
a certificate is needed and Z3 is importable; the runtime itself imports no Z3.
"""
from __future__ import annotations

import importlib.util
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional

from ..families import Match
from ..families.identity import Instance
from ..families.parametric import parametric_of, slow_parametric
from ..ir.nodes import Node
from .confs import certify_mode

log = logging.getLogger("superop.runtime")

K_FIRST_SIGHT = 4
TIMEOUT_MS = 10000


def z3_available() -> bool:
    return importlib.util.find_spec("z3") is not None


class FirstSight:
    """A certifier for ``Rewriter(certify=...)``. ``types_of(node)``: Spark's types of a
    plan node's output columns (the session's)."""

    def __init__(self, types_of: Callable[[Node], list[str]], K: int = K_FIRST_SIGHT,
                 timeout_ms: int = TIMEOUT_MS, background: bool = False):
        self.types_of = types_of
        self.K = K
        self.timeout_ms = timeout_ms
        self.background = background
        self._verdicts: dict[str, Optional[dict]] = {}
        self._pending: set[str] = set()      # instance keys a background job will decide
        self._submitted = 0                  # background jobs ever submitted
        self._lock = threading.Lock()
        self._pool: Optional[ThreadPoolExecutor] = None
        self._closed = False

    def _types(self, m: Match) -> tuple[Optional[list[str]], Optional[dict[str, str]]]:
        try:
            out = list(self.types_of(m.root))
            names = list(m.source.names)
            src = list(self.types_of(m.source))
        except Exception:  # types are what the certificate records; unknown: none
            return None, None
        ok = len(src) == len(names) and len({n.lower() for n in names}) == len(names)
        return out, (dict(zip(names, src)) if ok else None)

    def __call__(self, inst: Instance, m: Match, form: str, parametric: bool = True) -> Optional[dict]:
        """A verified certificate of ``inst``'s parametric form (when ``parametric``) or of
        ``inst`` itself, else None (in the background mode also while its check runs:
        :meth:`pending` says so)."""
        par = parametric_of(inst) if parametric and not slow_parametric(inst) else None
        targets = ([par.instance] if par is not None else []) + [inst]
        if self.background:
            return self._decided(targets, m, form)
        types = self._types(m)
        for target in targets:
            cert = self._certified(target, form, types)
            if cert is not None:
                return cert
        return None

    def pending(self, key: str) -> bool:
        """Is instance ``key`` being checked in the background?"""
        with self._lock:
            return key in self._pending

    def settled(self, since: int) -> bool:
        """No background check is running and none started since ``since`` (a
        :attr:`started` count): a decision made meanwhile may be cached — no verdict still
        to come can change it."""
        with self._lock:
            return not self._pending and self._submitted == since

    @property
    def started(self) -> int:
        """How many background checks were ever started."""
        with self._lock:
            return self._submitted

    def _decided(self, targets: list[Instance], m: Match, form: str) -> Optional[dict]:
        """The background mode: the first verified verdict among ``targets``; when one is
        not decided yet, its check is started (once) and None returned at once."""
        with self._lock:
            for t in targets:
                if t.key not in self._verdicts:
                    break
                if self._verdicts[t.key] is not None:
                    return self._verdicts[t.key]
            else:
                return None
            todo = [t for t in targets if t.key not in self._verdicts and t.key not in self._pending]
            if not todo or self._closed:
                return None
            self._pending.update(t.key for t in todo)
            self._submitted += 1
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="superop-first-sight")
            pool = self._pool
        types = self._types(m)        # Spark, on the caller's thread
        try:
            pool.submit(self._run, todo, form, types)
        except RuntimeError:          # closed meanwhile: the statement runs unchanged
            with self._lock:
                self._pending.difference_update(t.key for t in todo)
        return None

    def _run(self, todo: list[Instance], form: str, types) -> None:
        try:
            for t in todo:            # parametric form first; the instance only if it fails
                if self._certified(t, form, types) is not None:
                    break
        finally:
            with self._lock:
                self._pending.difference_update(t.key for t in todo)

    def close(self) -> None:
        """Stop taking background checks (a running one finishes on its thread; the
        statements after this run unchanged where no verdict covers them)."""
        with self._lock:
            self._closed = True
            self._pending.clear()     # queued checks are cancelled: nothing is pending now
            pool = self._pool
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _certified(self, inst: Instance, form: str, types) -> Optional[dict]:
        with self._lock:
            if inst.key in self._verdicts:
                return self._verdicts[inst.key]
        cert = None
        try:
            from ..verify.certify import check_and_certify   # the optional Z3 boundary
            out, inp = types
            c = check_and_certify(inst.sql, inst.schema, K=self.K, timeout_ms=self.timeout_ms, form=form,
                                  output_types=out, input_types=inp)
            if c.get("status") == "verified" and c.get("instance") == inst.key:
                cert = c
            else:
                log.info("superop: instance %s not certified on first sight: %s: %s", inst.short,
                         c.get("status"), str(c.get("reason") or "")[:200])
        except Exception as e:  # never break the query: it runs unchanged
            log.info("superop: first-sight certification of %s failed: %s", inst.short, e)
        with self._lock:
            self._verdicts[inst.key] = cert
        return cert

    @property
    def certified(self) -> list[dict]:
        with self._lock:
            return [c for c in self._verdicts.values() if c is not None]


def first_sight(types_of: Callable[[Node], list[str]], enabled: object = "auto") -> Optional[FirstSight]:
    """The session's certifier: ``enabled`` "auto" or True (checks while the statement
    waits), "background" (never waits) — both only when Z3 is installed — or False/"off"."""
    mode = certify_mode(enabled)
    if mode == "off" or not z3_available():
        return None
    return FirstSight(types_of, background=mode == "background")
