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

This module is the runtime's one optional Z3 boundary: the verifier is imported only when
a certificate is needed and Z3 is importable; the runtime itself imports no Z3.
"""
from __future__ import annotations

import importlib.util
import logging
import threading
from typing import Callable, Optional

from ..families import Match
from ..families.identity import Instance
from ..families.parametric import parametric_of
from ..ir.nodes import Node

log = logging.getLogger("superop.runtime")

K_FIRST_SIGHT = 4
TIMEOUT_MS = 10000


def z3_available() -> bool:
    return importlib.util.find_spec("z3") is not None


class FirstSight:
    """A certifier for ``Rewriter(certify=...)``. ``types_of(node)``: Spark's types of a
    plan node's output columns (the session's)."""

    def __init__(self, types_of: Callable[[Node], list[str]], K: int = K_FIRST_SIGHT,
                 timeout_ms: int = TIMEOUT_MS):
        self.types_of = types_of
        self.K = K
        self.timeout_ms = timeout_ms
        self._verdicts: dict[str, Optional[dict]] = {}
        self._lock = threading.Lock()

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
        ``inst`` itself, else None."""
        par = parametric_of(inst) if parametric else None
        for target in ([par.instance] if par is not None else []) + [inst]:
            cert = self._certified(target, m, form)
            if cert is not None:
                return cert
        return None

    def _certified(self, inst: Instance, m: Match, form: str) -> Optional[dict]:
        with self._lock:
            if inst.key in self._verdicts:
                return self._verdicts[inst.key]
        cert = None
        try:
            from ..verify.certify import check_and_certify   # the optional Z3 boundary
            out, inp = self._types(m)
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
    """The session's certifier: ``enabled`` "auto" (when Z3 is installed), True, or False."""
    if enabled is False or enabled == "off" or (enabled == "auto" and not z3_available()):
        return None
    return FirstSight(types_of)
