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
  at least :func:`superop.families.coverage.cover_bound` rows (default 4), or
* a bounded certificate of the instance's **parametric form**
  (:mod:`superop.families.parametric`: its literals in value positions as typed
  parameters, every value of which the check covers) — used only when binding the
  parameters to the instance's literals gives back exactly the program the runtime builds
  for the instance and the SQL it compiles from it with the certificate's column types.

The catalog's certificates were checked on load (``superop.rules_out.trust``: hashes,
covers, instance keys re-derived from their inputs, bounds); this module only looks them
up. A match no proof covers is left out, with the reason, and its instance is recorded
(:attr:`ProofIndex.uncovered` of the rewriter) for the next nightly job to certify — or,
with a first-sight certifier (``superop.runtime`` when Z3 is installed), certified now.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional

import json

from .. import families
from ..dsl import Program
from ..families import Covers
from ..families.coverage import cover_bound, match_of, match_program, missing_parts, runtime_program
from ..dsl.identity import program_sha256
from ..families.identity import Instance, instance_of
from ..families.parametric import Parametric, parametric_of
from ..ir.dialect import DIALECT
from .compile import NoNativeForm, compile_program


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
    bindings: tuple[tuple[str, str], ...] = ()     # a parametric certificate's parameters, bound
    first_sight: bool = False      # made in this session, not read from the catalog

    def describe(self) -> str:
        if self.kind == "template":
            return f"unbounded proof {self.name}"
        short = self.name.split(':', 1)[-1][:12]
        # the on-call person must tell a certificate the nightly signed from one made here
        where = ", made on first sight in this session (not in the catalog)" if self.first_sight else ""
        if self.bindings:
            bound = ", ".join(f"{n.split('_', 1)[0]}={v}" for n, v in self.bindings)
            return f"bounded certificate K={self.K} of parametric instance {short} ({bound}){where}"
        return f"bounded certificate K={self.K} of instance {short}{where}"


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
        # (instance key, form) -> its parametric proof or None: binding checks cost a lowering
        self._parametric: dict[tuple[str, str], Optional[Proof]] = {}
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
        """Index one more bounded certificate, made on first sight; its proof or None."""
        p = instance_proof(cert)
        if p is not None:
            p = replace(p, first_sight=True)
            self.instances[p.name] = (p, str(cert.get("program_sha256")))
            self._parametric = {k: v for k, v in self._parametric.items() if v is not None}
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
        if prog is None:
            return None, inst
        if hit is not None and hit[1] == program_sha256(prog):
            return hit[0], inst
        memo = (inst.key, form)
        if memo not in self._parametric:
            self._parametric[memo] = self._parametric_proof(inst, prog)
        return self._parametric[memo], inst

    def _parametric_proof(self, inst: Instance, prog: Program) -> Optional[Proof]:
        """The proof of ``inst``'s parametric form, when one is indexed and binding its
        parameters gives back ``prog`` and the SQL compiled from it (None otherwise)."""
        par = parametric_of(inst)
        hit = self.instances.get(par.instance.key) if par is not None else None
        if par is None or hit is None:
            return None
        return replace(hit[0], bindings=par.bindings) if binds(par, inst, prog, hit[0], hit[1]) else None


def _canonical_json(p: Program) -> str:
    return json.dumps(p.to_json(), sort_keys=True)


def _built(inst: Instance) -> tuple[Program, Optional[str]]:
    """The program the runtime builds for a canonical instance and its source prefilter's SQL."""
    m = match_of(inst.sql, inst.schema)
    prog = match_program(m, inst.form)
    pf = families.get(m.family).prefilter(m, prog)
    return prog, (pf.sql(dialect=DIALECT) if pf is not None else None)


def binds(par: Parametric, inst: Instance, prog: Program, proof: Proof, program_hash: str) -> bool:
    """Binding ``par``'s parameters gives back what the runtime runs for ``inst``: the
    certified program (hash ``program_hash``) bound is ``prog`` (the match's program in the
    query) and the program built for ``inst`` alone, its source prefilter bound is
    ``inst``'s, and the SQL compiled from it (with the certificate's column types) bound is
    the SQL compiled from ``prog``; and the certificate's premise holds for the bound
    literals (integer arithmetic of parameters alone does not overflow). Nothing the runtime
    runs then depends on a literal's value other than through the parameter the certificate
    quantifies over."""
    if not par.arithmetic_in_range():      # the certificate's premise on its parameters
        return False
    try:
        general, general_pf = _built(par.instance)
        own, own_pf = _built(inst)
    except Exception:  # the parametric form no longer builds a program: not covered
        return False
    if program_sha256(general) != program_hash:
        return False
    if par.bind(_canonical_json(general)) != _canonical_json(own):
        return False
    if (par.bind(general_pf) if general_pf is not None else None) != own_pf:
        return False
    return bound_equal(par, general, prog, proof)


def bound_equal(par: Parametric, general: Program, prog: Program, proof: Proof) -> bool:
    """Binding ``par``'s parameters in the certified program ``general`` gives ``prog``, and
    in the SQL compiled from ``general`` (with the certificate's column types) the SQL
    compiled from ``prog``."""
    if par.bind(_canonical_json(general)) != _canonical_json(prog):
        return False
    out = list(proof.output_types) if proof.output_types is not None else None
    inp = dict(proof.input_types) if proof.input_types is not None else None
    return _compiled(general, out, inp, par) == _compiled(prog, out, inp, None)


def _compiled(prog: Program, out, inp, par: Optional[Parametric]) -> Optional[str]:
    """The SQL compiled from ``prog`` over a stand-in source (bound by ``par``), or None
    when it has no native form (the runtime then keeps the sub-plan)."""
    try:
        sql = compile_program(prog, "__so_src", out, inp)
    except NoNativeForm:
        return None
    return par.bind(sql) if par is not None else sql


def parametric_covers(cert: dict[str, Any], inst: Instance) -> bool:
    """Whether ``cert``, a certificate of ``inst``'s parametric form, covers ``inst`` as the
    runtime will check it (:meth:`ProofIndex.covering`)."""
    proof, par = instance_proof(cert), parametric_of(inst)
    if proof is None or par is None or par.instance.key != proof.name:
        return False
    try:
        prog = runtime_program(inst.sql, inst.schema, inst.form)
    except Exception:  # a form that builds no program covers nothing
        return False
    return binds(par, inst, prog, proof, str(cert.get("program_sha256")))
