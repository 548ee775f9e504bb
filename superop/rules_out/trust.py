"""Re-checking a catalog's certificates with Z3 — what a signature attests.

A catalog reaches the runtime signed (:mod:`superop.rules_out.signing`); it is signed only
by a step that checked it: the nightly job (fresh proofs, :func:`structural_problems`
before signing), ``superop verify --catalog X --record`` and ``superop catalog promote``
(:func:`recheck_and_sign`: every certificate re-run with Z3). A re-check

1. runs the structural check of every certificate without Z3
   (``superop.verify.certificate.structural_check``: produced by superop.verify, its inputs
   hash, it is about the program the runtime builds *now* — same template program hash —
   and it covers what its pattern / instance covers) and the per-rule check,
   ``superop.rules_out.coverage.coverage_problems`` (the rule has certificates and admits
   exactly what they cover); a forged certificate is refused here;
2. re-runs every certificate with Z3 (:func:`recheck`, cached per checksum in-process).

A catalog built in a process of its own (a test, a benchmark) is unsigned:
:func:`recheck_locally` re-checks it and signs it with the local signing key, which the
runtime trusts by default.

This module imports Z3 (through :mod:`superop.verify.certify`); nothing the runtime imports
imports it.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field

from ..errors import CatalogError
from ..verify.certificate import structural_check
from ..verify.certify import recheck_detail
from .canonical import checksum
from .catalog import sign, validate
from .coverage import coverage_problems
from .signing import Signer, signing_key


class UntrustedCatalog(CatalogError):
    """The catalog's certificates could not be re-checked, or do not hold."""


@dataclass
class Verdict:
    ok: bool
    how: str                                   # re-checked | refused
    checksum: str
    problems: list = field(default_factory=list)
    certificates: int = 0

    def line(self, where: str) -> str:
        if self.ok:
            return f"{where}: {self.certificates} certificates {self.how} (checksum {self.checksum})"
        more = f" (+{len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        return f"{where} refused: {self.problems[0]}{more}"


_RECHECKED: dict[str, Verdict] = {}         # checksum -> verdict of a re-check in this process


def z3_available() -> bool:
    return importlib.util.find_spec("z3") is not None


def _certs(catalog: dict):
    for r in catalog.get("rules", []):
        for i, c in enumerate(r.get("certificates") or []):
            yield r, i, c


def _rule_problems(rule: dict) -> list[str]:
    return [f"rule {rule.get('id')}: {p}" for p in coverage_problems(rule)]


def structural_problems(catalog: dict) -> list[str]:
    """Everything wrong that can be seen without running Z3."""
    out = []
    for r, i, c in _certs(catalog):
        ok, why = structural_check(c, require_runtime=True)
        if not ok:
            out.append(f"rule {r.get('id')} certificate #{i}: {why}")
    for r in catalog.get("rules", []):
        out += _rule_problems(r)
    return out


def recheck(catalog: dict) -> Verdict:
    """Re-check every certificate with Z3 (the structural check first). Cached by checksum."""
    cs = catalog.get("checksum") or checksum(catalog.get("rules", []))
    if cs in _RECHECKED:
        return _RECHECKED[cs]
    problems = []
    n = 0
    for r, i, c in _certs(catalog):
        n += 1
        ok, why = recheck_detail(c, require_runtime=True)
        if not ok:
            problems.append(f"rule {r.get('id')} certificate #{i}: {why}")
    problems += [p for r in catalog.get("rules", []) for p in _rule_problems(r)]
    v = Verdict(not problems, "re-checked" if not problems else "refused", cs, problems, n)
    _RECHECKED[cs] = v
    return v


def rechecked(catalog: dict, origin: str) -> Verdict:
    """Validate as the runtime would (signature aside), run the structural check and
    re-check every certificate with Z3; :class:`UntrustedCatalog` with a one-line reason
    if anything fails or Z3 is not installed."""
    where = f"catalog {origin}"
    validate(catalog, require_verified=True, where=where)
    if not z3_available():
        raise UntrustedCatalog(f"{where}: cannot re-check without z3 (pip install 'superop[mine]'), "
                               "and it is not signed")
    cs = catalog.get("checksum") or checksum(catalog.get("rules", []))
    problems = structural_problems(catalog)
    if problems:
        raise UntrustedCatalog(Verdict(False, "refused", cs, problems).line(where))
    v = recheck(catalog)
    if not v.ok:
        raise UntrustedCatalog(v.line(where))
    return v


def recheck_and_sign(catalog: dict, origin: str, signer: Signer, signed_by: str) -> tuple[dict, Verdict]:
    """:func:`rechecked` (always: an existing signature does not count), then the catalog
    signed by ``signer`` for this build (``superop verify --record``, ``superop catalog
    promote``)."""
    v = rechecked(catalog, origin)
    return sign(catalog, signer, signed_by), v


def sign_fresh(catalog: dict, signer: Signer, signed_by: str = "superop mine") -> dict:
    """Sign a catalog whose certificates were just produced by the verifier (the nightly
    job): the structural and coverage checks run (no Z3 re-run of proofs made minutes
    ago); a problem is a bug and raises :class:`UntrustedCatalog`."""
    problems = structural_problems(catalog)
    if problems:
        cs = catalog.get("checksum") or checksum(catalog.get("rules", []))
        raise UntrustedCatalog(Verdict(False, "refused", cs, problems).line("new catalog"))
    return sign(catalog, signer, signed_by)


def recheck_locally(catalog: dict, origin: str = "(in-memory)") -> dict:
    """An unsigned catalog built in this process (tests, benchmarks), re-checked with Z3
    (:func:`rechecked`, cached per checksum) and signed with the local signing key
    (``$SUPEROP_SIGNING_KEY`` or the key store's), which the runtime trusts unless told
    otherwise: ``SuperOpSession(spark, recheck_locally(catalog))``."""
    rechecked(catalog, origin)
    return sign(catalog, signing_key(), "re-checked in process")
