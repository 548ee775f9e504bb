"""Which proof covers a match the runtime would apply — no Spark, no Z3.

A rule admitting a match (its ``admits`` records contain the instance's point) is not
enough: the runtime applies a match only when a proof of THAT instance exists among the
rule's certificates:

* an **unbounded** template proof (``method: inductive``) whose claim contains it — its
  symbolic instance's covers record contains the match's point (every part of a record
  proved in parts present and verified), or
* a **bounded** certificate of exactly this instance — the certificate's ``instance``
  key (:mod:`superop.families.identity`: the match's sub-plan alone, canonical) equals the
  match's, its program is the program the runtime builds for the match, and it holds for
  at least :func:`superop.families.coverage.cover_bound` rows (default 4).

The catalog's certificates were checked on load (``superop.rules_out.trust``: hashes,
covers, instance keys re-derived from their inputs, bounds); this module only looks them
up. A match no proof covers is left out, with the reason, and its instance is recorded
(:attr:`ProofIndex.uncovered` of the rewriter) for the next nightly job to certify — or,
with a first-sight certifier (``superop.runtime`` when Z3 is installed), certified now.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional

from .. import families
from ..families import Covers
from ..families.coverage import cover_bound, missing_parts
from ..dsl.identity import program_sha256
from ..families.identity import Instance, instance_of


@dataclass(frozen=True)
class Proof:
    """What covers an applied match: ``kind`` template (``name``: the symbolic instance)
    or instance (``name``: the instance key, with the certificate's bound and the column
    types its emitted SQL was compiled with)."""
    kind: str
    name: str
    K: Optional[int] = None
    output_types: Optional[tuple[Optional[str], ...]] = None
    input_types: Optional[tuple[tuple[str, str], ...]] = None

    def describe(self) -> str:
        if self.kind == "template":
            return f"unbounded proof {self.name}"
        return f"bounded certificate K={self.K} of instance {self.name.split(':', 1)[-1][:12]}"


def _template(cert: dict[str, Any]) -> Optional[str]:
    inputs = cert.get("inputs")
    if isinstance(inputs, dict) and inputs.get("kind") == "template-proof":
        return str(inputs.get("template"))
    return None


def instance_proof(cert: dict[str, Any]) -> Optional[Proof]:
    """The instance proof a verified bounded certificate is (None below the cover bound,
    for any other program than the runtime's, or without an instance key)."""
    inputs = cert.get("inputs")
    if cert.get("status") != "verified" or cert.get("method") != "bounded" or not isinstance(inputs, dict):
        return None
    if cert.get("program_source") != "runtime-template" or not cert.get("instance"):
        return None
    K = inputs.get("K")
    if not isinstance(K, int) or K < cover_bound() or cert.get("K") != K:
        return None
    out = inputs.get("output_types")
    inp = inputs.get("input_types")
    return Proof("instance", str(cert["instance"]), K,
                 tuple(out) if isinstance(out, list) else None,
                 tuple(sorted(inp.items())) if isinstance(inp, dict) else None)


class ProofIndex:
    """The proofs among one rule's certificates, indexed: template covers records and
    instance keys (with the program hash each is about)."""

    def __init__(self, certificates: list[dict[str, Any]]):
        ok = [c for c in certificates if isinstance(c, dict) and c.get("status") == "verified"]
        proved = {t for c in ok if (t := _template(c)) is not None}
        self.templates: list[tuple[Covers, str]] = []
        self.instances: dict[str, tuple[Proof, str]] = {}
        for c in ok:
            t = _template(c)
            if t is not None:
                try:
                    cov = Covers.from_json(c.get("covers"))
                except ValueError:
                    continue
                if not missing_parts(cov, t, proved):
                    self.templates.append((cov, t))
                continue
            p = instance_proof(c)
            if p is not None:
                self.instances[p.name] = (p, str(c.get("program_sha256")))

    def add(self, cert: dict[str, Any]) -> Optional[Proof]:
        """Index one more (first-sight) bounded certificate; its proof or None."""
        p = instance_proof(cert)
        if p is not None:
            self.instances[p.name] = (p, str(cert.get("program_sha256")))
        return p

    def covering(self, m: families.Match, form: str = "", program=None) -> tuple[Optional[Proof], Optional[Instance]]:
        """(the proof covering ``m`` in ``form``, the instance looked up — None when a
        template proof covers it or the instance cannot be canonicalized)."""
        fam = families.get(m.family)
        point = fam.point(m)
        if form:    # how the family writes a form in its covers (self-exists: "ne/grouped")
            point = replace(point, variant=fam.form_variant(point.variant, form))
        for cov, name in self.templates:
            if cov.contains(point):
                return Proof("template", name), None
        inst = instance_of(m, form)
        if inst is None:
            return None, None
        hit = self.instances.get(inst.key)
        prog = program if program is not None else m.program
        if hit is not None and prog is not None and hit[1] == program_sha256(prog):
            return hit[0], inst
        return None, inst
