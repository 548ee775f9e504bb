"""Rule matching on the plan IR and SQL generation (no Spark here; see session.py for the
benefit gate).

Matching is the family registry's ONE matching code path (:func:`superop.families.scan`,
the same mining reports from): each family's pattern on the IR (AdvanceNext, §4.2), the
join premise of Algorithms 2-3 (union-find), single input / single output, the IR's
safety check, and the family's Fig. 10 template (CaptureParameters, Algorithm 5). A rule
then admits a match only if the instance (its family, join kind, aggregate side, branch
count, folds and the operators on each abstract edge — :meth:`Family.point`) lies inside
what the rule admits (:func:`superop.families.coverage.admitted`).

The matched sub-plan is replaced by an :class:`Opaque` node carrying the compiled
super-operator SQL (compile.py) and the query is regenerated with ``superop.ir.to_sql``.
Two independent diamonds are both rewritten; a diamond inside another's shared source is
rewritten first and the outer one reads the rewritten source.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field as dc_field, replace
from typing import Any, Callable, Optional, Protocol, Sequence

from sqlglot import exp

from .. import families
from ..families import Covers, NearMiss
from ..ir import nodes as N
from ..ir.dialect import DIALECT
from ..ir.generate import to_sql
from ..ir.lower import lower, lower_fixed
from ..families.coverage import admitted
from ..families.identity import Instance
from ..dsl import Program
from .compile import NoNativeForm, compile_program
from .proofs import Proof, ProofIndex

UNCOVERED = "no proof covers"
IN_BACKGROUND = "is being certified in the background"


class Certifier(Protocol):
    """First sight (``superop.runtime.first_sight``): (instance, match, form, try its
    parametric form first) -> a verified certificate or None; ``pending(key)``: its check
    of that instance is still running (the statement runs without it)."""

    def __call__(self, inst: Instance, m: families.Match, form: str, parametric: bool = True) -> Optional[dict]:
        ...

    def pending(self, key: str) -> bool:
        ...


def instance_bound(matches: Sequence["Match"], trace: Sequence[str]) -> bool:
    """Does a decision about these matches hold only for these literals? Yes when a match
    is covered by a bounded certificate of its instance (another literal is another
    instance) or an admitted instance was left uncovered (another may be covered)."""
    return any(m.proof is not None and m.proof.kind == "instance" for m in matches) or \
        any(UNCOVERED in t for t in trace)

log = logging.getLogger("superop.runtime")


@dataclass(frozen=True, eq=False)
class Opaque(N.Opaque):
    """The IR's Opaque node that also keeps the replaced sub-plan's *qualified* output
    fields, so parents that say ``x.a`` / ``y.a`` still resolve (the base Opaque exposes
    unqualified names only). Named ``Opaque`` so the IR generator treats it as one."""
    qfields: tuple = ()

    def _fields(self):
        return self.qfields or super()._fields()


@dataclass
class Match:
    """A family instance (:class:`superop.families.Match`) admitted by a catalog rule, in
    one of its family's forms (``form`` "" = the template's default program; another form
    is admitted only by a rule whose certificates cover that form: ``Covers.variant``)."""
    rule_id: str
    instance: families.Match
    prefilter: Optional[exp.Expression] = None
    form: str = ""
    form_program: Optional[Program] = None
    proof: Optional[Proof] = None        # what covers this instance (None: a verifier's own rewriter)
    # (output types, input types) the SQL is compiled with when fixed: those of the instance
    # certificate that covers it (the runtime runs exactly the SQL certified), or the caller's
    types: Optional[tuple[Optional[Sequence[Optional[str]]], Optional[dict[str, str]]]] = None

    def prepare(self) -> "Match":
        """The Spark-native specifics of the family (the source prefilter)."""
        if self.prefilter is None:
            self.prefilter = families.get(self.family).prefilter(self.instance, self.program)
        return self

    @property
    def family(self) -> str:
        return self.instance.family

    @property
    def program(self) -> Program:
        if self.form_program is not None:
            return self.form_program
        assert self.instance.program is not None  # matching built it
        return self.instance.program

    @property
    def label(self) -> str:
        return f"{self.rule_id}[{self.form}]" if self.form else self.rule_id

    @property
    def interior(self) -> frozenset[int]:
        return self.instance.interior

    @property
    def root(self) -> N.Node:
        return self.instance.root

    @property
    def source(self) -> N.Node:
        return self.instance.source

    def describe(self) -> str:
        core = self.instance.join_kind or families.get(self.family).core_name
        form = f" in its {self.form} form" if self.form else ""
        proof = f", covered by the {self.proof.describe()}" if self.proof is not None else ""
        return f"{self.rule_id} at {self.family} {core} over {self.source.op}{form}{proof}"


class _Rule:
    """A catalog rule, pre-digested for fast matching: what it admits as covers records."""

    def __init__(self, r: dict[str, Any]):
        self.raw = r
        self.id = r["id"]
        self.family = r["family"]
        self.admits: list[Covers] = admitted(r)
        self.edge_names = [e["name"] for e in r["abstract_edges"]]
        self.proofs = ProofIndex(r.get("certificates") or [])
        sup = r.get("support") or {}
        self.rank = (-float(sup.get("cost_share", 0) or 0), -int(sup.get("executions", 0) or 0), self.id)

    def why_not(self, point: Covers) -> Optional[str]:
        """None if the rule admits the instance ``point``, else why not."""
        if point.family != self.family:
            return "family"
        whys = [a.why_not(point, self.edge_names) for a in self.admits]
        if any(w is None for w in whys):
            return None
        # report the record the instance gets furthest into (family, branches, kind, side,
        # folds, edges — the order Covers.why_not checks them in)
        depth = ("family", "branches", "join kind", "aggregate on", "aggregates", "on an edge")
        return max((w for w in whys if w), default="the rule admits nothing",
                   key=lambda w: max((i for i, d in enumerate(depth) if d in w), default=-1))


@dataclass
class Candidate:
    """One way to rewrite the query: a set of non-conflicting matches and its SQL."""
    matches: list[Match]
    sql: str
    label: str
    plan: Optional[dict] = None          # filled by the benefit gate (exchanges, cost, ...)


class Rewriter:
    """Pure rewriting (IR + templates + SQL generation); thread-safe (the only mutable
    state, the instances no proof covers and first-sight certificates, is locked).

    ``require_proof`` (default): a match a rule admits is applied only when a proof of the
    instance covers it (:mod:`superop.rewrite.proofs`); else it is left out and its
    instance recorded in :attr:`uncovered` — or certified by ``certify`` (first sight)."""

    def __init__(self, catalog: dict[str, Any], require_proof: bool = True, certify: Optional[Certifier] = None):
        self.catalog = catalog
        self.rules = sorted((_Rule(r) for r in catalog["rules"]), key=lambda r: r.rank)
        self.families = frozenset(r.family for r in self.rules)
        self.require_proof = require_proof
        self.certify = certify
        self.uncovered: dict[str, Instance] = {}      # instance key -> instance (for the next nightly)
        self._lock = threading.Lock()

    def uncovered_instances(self) -> list[Instance]:
        """The instances matched and admitted that no proof covered (first seen first)."""
        with self._lock:
            return list(self.uncovered.values())

    @classmethod
    def admitting(cls, points: Sequence[Covers], rule_id: str = "instance") -> "Rewriter":
        """A rewriter whose one rule per family admits exactly ``points`` (what a
        certificate about an instance covers): the verifier uses it to make the SQL the
        runtime emits for the instance it certifies."""
        by_family: dict[str, list[Covers]] = {}
        for p in points:
            by_family.setdefault(p.family, []).append(p)
        rules = [{"id": rule_id, "family": fam, "admits": [p.to_json() for p in ps],
                  "abstract_edges": [{"name": d.name} for d in families.get(fam).edge_decls(ps[0].branches)]}
                 for fam, ps in by_family.items()]
        return cls({"rules": rules}, require_proof=False)

    # -- matching ------------------------------------------------------------
    def match(self, plan: N.Node, trace: Optional[list[str]] = None) -> list[Match]:
        """Every admissible match in the plan, bottom-up (children before parents)."""
        out: list[Match] = []
        if not self.rules:
            return out
        for f in reversed(families.scan(plan)):
            if f.family not in self.families:
                continue
            if isinstance(f, NearMiss):
                if trace is not None:
                    trace.append(f"{f.family} at {f.root.op}({f.join_kind or f.n_inputs}): "
                                 f"not an instance — {f.reason.value}: {f.why}")
                continue
            m = self._admit(f, trace)
            if m is not None:
                out.append(m)
        return out

    def _admit(self, inst: families.Match, trace: Optional[list[str]]) -> Optional[Match]:
        point = families.get(inst.family).point(inst)
        why = []
        for rule in self.rules:
            reason = rule.why_not(point)
            if reason is None:
                m = self._proved(rule, inst, "", None, why)
                if m is not None:
                    return m
                continue
            if reason != "family":
                why.append(f"{rule.id}: {reason}")
        if trace is not None and why:
            trace.append(f"{inst.family} at {inst.root.op}({inst.join_kind or len(inst.branches)}): no rule — "
                         + "; ".join(why))
        return None

    def _proved(self, rule: _Rule, inst: families.Match, form: str, program: Optional[Program],
                why: list[str]) -> Optional[Match]:
        """The match of ``rule`` when a proof covers the instance (in ``form``), else None
        with the reason in ``why``."""
        if not self.require_proof:
            return Match(rule.id, inst, form=form, form_program=program)
        proof, key = rule.proofs.covering(inst, form, program)
        if proof is None and key is not None and key.reads_subquery_values:
            why.append(f"{rule.id}: admits it, but {UNCOVERED} instance {key.short}: it compares with a "
                       f"sub-query's value, which only an unbounded proof covers")
            return None
        if proof is None and key is not None and self.certify is not None:
            proof = self._certified(rule, inst, form, program, key)
        if proof is None and key is not None and self.certify is not None and self.certify.pending(key.key):
            why.append(f"{rule.id}: admits it; instance {key.short} {IN_BACKGROUND} (first sight): unchanged "
                       f"until its proof is done")
            return None
        if proof is None:
            if key is not None:
                with self._lock:
                    self.uncovered.setdefault(key.key, key)
            where = f"instance {key.short}" if key is not None else "an instance that cannot be canonicalized"
            why.append(f"{rule.id}: admits it, but {UNCOVERED} {where} (no unbounded proof contains it, "
                       f"no bounded certificate of it; recorded for the next nightly job)")
            return None
        types = None
        if proof.kind == "instance":
            types = (proof.output_types, dict(proof.input_types) if proof.input_types is not None else None)
        return Match(rule.id, inst, form=form, form_program=program, proof=proof, types=types)

    def _certified(self, rule: _Rule, inst: families.Match, form: str, program: Optional[Program],
                   key: Instance) -> Optional[Proof]:
        """First sight: the proof of a certificate made now — of the instance's parametric
        form when its parameters bind back to this instance, else of the instance itself."""
        assert self.certify is not None
        for parametric in (True, False):
            cert = self.certify(key, inst, form, parametric)
            if cert is None:
                return None
            with self._lock:
                rule.proofs.add(cert)
            proof, _ = rule.proofs.covering(inst, form, program)
            if proof is not None or cert.get("instance") == key.key:
                return proof
        return None

    def alternatives(self, m: Match, notes: Optional[list[str]] = None) -> list[Match]:
        """``m`` in each other form of its family that the instance admits (the family's
        :meth:`~superop.families.Family.program_form`) and a rule admits (a certificate
        covers the form: the instance's point with ``variant`` = the form); why not in
        ``notes``."""
        fam = families.get(m.family)
        out: list[Match] = []
        for form in fam.forms:
            if not form:
                continue
            try:
                prog = fam.program_form(m.instance, m.instance.program, form)
            except families.TemplateError as e:
                if notes is not None:
                    code = getattr(e, "code", None)
                    notes.append(f"{m.rule_id}: no {form} form — {code.value if code else ''}: {e}")
                continue
            point = fam.point(m.instance)
            point = replace(point, variant=fam.form_variant(point.variant, form))
            why: list[str] = []
            alt = None
            for rule in (r for r in self.rules if r.why_not(point) is None):
                alt = self._proved(rule, m.instance, form, prog, why)
                if alt is not None:
                    break
            if alt is None:
                if notes is not None:
                    notes.append(f"{m.rule_id}: no rule admits its {form} form (no certificate covers it)"
                                 + (": " + "; ".join(why) if why else ""))
                continue
            out.append(alt)
        return out

    # -- generation ------------------------------------------------------------
    def apply(self, plan: N.Node, matches: Sequence[Match], names: Optional[Sequence[str]] = None,
              types_of: Optional[Callable[[N.Node], Optional[list[str]]]] = None) -> str:
        """The query with each match replaced by its super-operator (matches must not
        conflict; bottom-up order)."""
        memo: dict[int, N.Node] = {}
        for m in matches:
            m.prepare()
            src = N.replace(m.source, memo) if memo else m.source
            src_names = list(m.source.names)
            src_sql = to_sql(src, names=src_names)
            if m.prefilter is not None:
                src_sql = f"SELECT * FROM ({src_sql}) AS __so_pf WHERE {m.prefilter.sql(dialect=DIALECT)}"
            if m.types is not None:       # as certified (or as the caller fixed them)
                types, in_types = m.types
            else:
                types = types_of(m.root) if types_of is not None else None
                in_types = _input_types(src, src_names, types_of)
            try:
                sql = compile_program(m.program, src_sql, output_types=types, input_types=in_types)
            except NoNativeForm as e:
                # run_generic can execute it, but not inside a SQL string: keep the original
                log.info("superop: %s has no native form (%s); sub-plan kept", m.rule_id, e)
                continue
            memo[id(m.root)] = Opaque(sql=sql, output=tuple(m.root.names), reason=f"superop:{m.rule_id}",
                                      qfields=tuple(m.root.fields))
        new_plan = N.replace(plan, memo)
        return to_sql(new_plan, names=names)


def _input_types(src: N.Node, names: list[str], types_of) -> Optional[dict[str, str]]:
    """The source columns' Spark types by name (what lets a flag share an integral sum's
    buffer, compile._flag_sql), or None when unknown or ambiguous."""
    if types_of is None:
        return None
    try:
        types = types_of(src)
    except Exception:  # an optimization: without types the flag keeps its own count
        return None
    if not types or len(types) != len(names) or len({n.lower() for n in names}) != len(names):
        return None
    return dict(zip(names, types))


def prepare(matches: Sequence[Match], trace: Optional[list[str]] = None) -> list[Match]:
    """The family-specific code-generation parts of every match (matching already built
    each program from the family's template)."""
    return [m.prepare() for m in matches]


def select_non_conflicting(matches: Sequence[Match]) -> list[Match]:
    """Greedy bottom-up: a match whose interior overlaps an already chosen one is dropped
    (a chosen match inside another's *source* composes)."""
    chosen: list[Match] = []
    used: set[int] = set()
    for m in matches:
        if m.interior & used:
            continue
        chosen.append(m)
        used |= m.interior
    return chosen


@dataclass
class RewriteResult:
    sql: str
    applied: list[str]
    changed: bool
    explanation: str
    original_sql: str = ""
    timings_ms: dict = dc_field(default_factory=dict)
    exchanges_before: Optional[int] = None
    exchanges_after: Optional[int] = None
    cost_before: Optional[float] = None
    cost_after: Optional[float] = None
    candidates: list = dc_field(default_factory=list)
    error: Optional[str] = None
    # Spark settings ``sql`` runs with, for this query only (a clone of the session: the
    # runtime's flag form, superop.runtime.merge_flags); empty: the caller's session as it is
    conf: dict = dc_field(default_factory=dict)

    def to_json(self) -> dict:
        return {"sql": self.sql, "applied": list(self.applied), "changed": self.changed, "conf": dict(self.conf),
                "explanation": self.explanation, "exchanges_before": self.exchanges_before,
                "exchanges_after": self.exchanges_after, "cost_before": self.cost_before,
                "cost_after": self.cost_after, "timings_ms": self.timings_ms,
                "candidates": self.candidates, "error": self.error}


def unchanged(sql: str, why: str, timings=None, error=None, **kw) -> RewriteResult:
    return RewriteResult(sql=sql, applied=[], changed=False, explanation=why, original_sql=sql,
                         timings_ms=dict(timings or {}), error=error, **kw)


def candidates_for(rw: Rewriter, plan: N.Node, matches: list[Match], names=None, types_of=None,
                   limit: int = 4) -> list[Candidate]:
    """Competing rewrites: every non-conflicting match together (greedy bottom-up), and
    — when there is more than one match — each match alone (the benefit gate ranks them)."""
    out: list[Candidate] = []
    together = select_non_conflicting(matches)
    out.append(Candidate(together, rw.apply(plan, together, names, types_of),
                         "+".join(m.label for m in together)))
    # every other form of a chosen match (e.g. Min & Join's group-limit), the rest as chosen
    for i, m in enumerate(together):
        for alt in rw.alternatives(m):
            alt.prepare()
            swapped = together[:i] + [alt] + together[i + 1:]
            out.append(Candidate(swapped, rw.apply(plan, swapped, names, types_of),
                                 "+".join(x.label for x in swapped)))
    if len(matches) > 1:
        for m in matches[: max(0, limit - 1)]:
            out.append(Candidate([m], rw.apply(plan, [m], names, types_of), f"only {m.label}"))
    return out


def rewrite_structural(rw: Rewriter, sql: str, schema: dict, form: str = "",
                       output_types: Optional[Sequence[Optional[str]]] = None,
                       input_types: Optional[dict[str, str]] = None) -> RewriteResult:
    """Rewrite without Spark (no benefit gate, IR output names): what ``superop rewrite
    --no-gate`` prints. ``form``: each match in that form of its family where it admits
    it (the SQL a certificate about that form checks). A match an instance certificate
    covers is compiled with the column types it was certified with; otherwise with
    ``output_types`` / ``input_types`` when given (the verifier's: the types it records),
    else with none."""
    t0 = time.perf_counter()
    low = lower_fixed(sql, schema) if isinstance(schema, dict) else lower(sql, schema)
    t1 = time.perf_counter()
    trace: list[str] = []
    plan = families.regroup(low.plan)     # the plan matches are nodes of
    matches = rw.match(plan, trace)
    t2 = time.perf_counter()
    timings = {"parse_ms": (t1 - t0) * 1e3, "match_ms": (t2 - t1) * 1e3}
    if not matches:
        return unchanged(sql, "no rule matches" + (": " + " | ".join(trace) if trace else ""), timings)
    matches = prepare(matches, trace)
    chosen = select_non_conflicting(matches)
    if not chosen:
        return unchanged(sql, "no rule matches: " + " | ".join(trace), timings)
    if form:
        chosen = [next((a for a in rw.alternatives(m, trace) if a.form == form), m) for m in chosen]
        if not any(m.form == form for m in chosen):
            return unchanged(sql, f"no match in the {form} form: " + " | ".join(trace), timings)
    top = chosen[-1]             # bottom-up: the top-most match (the verifier's instance)
    if (output_types is not None or input_types is not None) and top.types is None \
            and len(top.root.fields) == len(output_types or top.root.fields):
        top.types = (output_types, input_types)
    new = rw.apply(plan, chosen)
    timings["generate_ms"] = (time.perf_counter() - t2) * 1e3
    return RewriteResult(sql=new, applied=[m.rule_id for m in chosen], changed=True,
                         explanation="structural rewrite (no benefit gate): " +
                         "; ".join(m.describe() for m in chosen),
                         original_sql=sql, timings_ms=timings)
