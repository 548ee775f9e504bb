"""Unbounded template proofs of the extraction templates (once per template).

Each template is proved for every input size and every filter, projection and
aggregate, with those as uninterpreted functions in Z3:

* rows ``r`` of an uninterpreted sort Row (the common input J of the CE and of the
  consumer: same tables, same join conditions); predicates map rows to SQL truth values
  (a 3-valued datatype: TRUE, FALSE, UNKNOWN; σ keeps TRUE; OR is Kleene's);
* a projection to the columns Y is a function Row -> RowY; "X ⊆ Y" is
  ``π_X(π_Y(r)) = π_X(r)``; "p reads only Y" is ``p(r) = p_Y(π_Y(r))``;
* grouping keys are a function Row -> Key with plain equality (NULL keys form one
  group, as GROUP BY); "k reads only grouping keys" is ``k(r) = k_K(key(r))``.

A select-project plan over a bag is the filter-map ``{map(r) | r ∈ J, keep(r)}``, so the
claim "extraction = consumer" reduces to, for an arbitrary row r (and group g):
keep_E(r) = keep_O(r) and keep_O(r) ⇒ map_E(r) = map_O(r). For the covering aggregate:
per group g retained by the extraction, the member rows of g are the same on both
sides, and a group the extraction drops has no member row in the consumer's aggregate.
Each obligation is valid iff its negation at a fresh (Skolem) row/group is unsat; the
axioms are asserted at that row/group (universal axioms instantiated where needed).

Assumptions (in every certificate): T1 a σ/π plan is a filter-map over its input bag;
T2 the CE and the consumer read the same input J (same tables, join conditions equal as
text, checked when the SE is formed); T3 aggregates are functions of the bag of member
rows of a group and its key (count/sum/min/max/avg/count distinct); T4 filters are
deterministic (nondeterministic and time-dependent expressions are never shared).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import lru_cache

import z3

from ..verify.result import REFUTED, UNKNOWN, VERIFIED

ASSUMPTIONS = [
    "T1 a select-project plan outputs the filter-map {map(r) | r in J, keep(r)} of its input bag J",
    "T2 the covering expression and the consumer read the same input J (same tables, same join "
    "conditions as text; checked when the similar sub-expression is formed)",
    "T3 an aggregate's output for a group is a function of the group's key and the bag of its rows",
    "T4 filters are deterministic functions of the row (nondeterministic and time-dependent "
    "expressions are never shared)",
]

CLAIMS = {
    "filter-project": "σ_p over π_Y(σ_{(p ∨ q) ∧ d}(J)) then π_X equals π_X(σ_p(J)) when X ⊆ Y, "
                      "p reads only Y, and p implies d (d: per-table ORs of the filters)",
    "project": "π_X over π_Y(σ_p(J)) equals π_X(σ_p(J)) when X ⊆ Y",
    "covering-aggregate": "π_I(σ_k(γ_{K; I ∪ I'}(σ_{c ∧ (k ∨ k')}(J)))) equals π_I(γ_{K; I}(σ_{c ∧ k}(J))) "
                          "when k and k' read only grouping keys",
    "same-aggregate": "π_I(γ_{K; I ∪ I'}(σ_c(J))) equals γ_{K; I}(σ_c(J))",
}


@dataclass
class TemplateProof:
    template: str
    status: str
    seconds: float
    obligations: list = field(default_factory=list)   # (name, status)

    @property
    def verified(self) -> bool:
        return self.status == VERIFIED

    def certificate(self) -> dict:
        return {"status": self.status, "method": "template", "K": None, "template": self.template,
                "claim": CLAIMS[self.template], "assumptions": ASSUMPTIONS,
                "obligations": [{"name": n, "status": s} for n, s in self.obligations],
                "seconds": round(self.seconds, 4), "z3_version": z3.get_version_string()}


def _tri():
    Tri = z3.Datatype("Tri")
    for c in ("T", "F", "U"):
        Tri.declare(c)
    return Tri.create()


def _or3(Tri, a, b):
    return z3.If(z3.Or(a == Tri.T, b == Tri.T), Tri.T,
                 z3.If(z3.And(a == Tri.F, b == Tri.F), Tri.F, Tri.U))


def _and3(Tri, a, b):
    return z3.If(z3.Or(a == Tri.F, b == Tri.F), Tri.F,
                 z3.If(z3.And(a == Tri.T, b == Tri.T), Tri.T, Tri.U))


def _valid(name: str, axioms: list, claim) -> tuple[str, str]:
    s = z3.Solver()
    s.set("timeout", 10000)
    s.add(*axioms)
    s.add(z3.Not(claim))
    r = s.check()
    return name, VERIFIED if r == z3.unsat else (REFUTED if r == z3.sat else UNKNOWN)


def filter_project_obligations(with_filter: bool = True, p_reads_only_y: bool = True,
                               p_implies_d: bool = True) -> list[tuple[str, str]]:
    """The σ/π template's obligations; dropping a side condition must make it fail
    (tests use this to show the proof can fail)."""
    return _filter_project(with_filter, p_reads_only_y, p_implies_d)


def _filter_project(with_filter: bool, p_reads_only_y: bool = True, p_implies_d: bool = True):
    Tri = _tri()
    Row, RowY, RowX = z3.DeclareSort("Row"), z3.DeclareSort("RowY"), z3.DeclareSort("RowX")
    piY = z3.Function("piY", Row, RowY)
    piX = z3.Function("piX", Row, RowX)
    piXY = z3.Function("piXY", RowY, RowX)
    p, q, d = (z3.Function(n, Row, Tri) for n in ("p", "q", "d"))
    pY = z3.Function("pY", RowY, Tri)
    r = z3.Const("r", Row)
    axioms = [piXY(piY(r)) == piX(r)]                      # X ⊆ Y
    if p_reads_only_y:
        axioms.append(p(r) == pY(piY(r)))
    if p_implies_d:
        axioms.append(z3.Implies(p(r) == Tri.T, d(r) == Tri.T))
    if with_filter:
        ce_keep = _and3(Tri, _or3(Tri, p(r), q(r)), d(r)) == Tri.T
        keep_e = z3.And(ce_keep, pY(piY(r)) == Tri.T)
    else:        # every consumer has the filter p: the CE applies it, extraction projects
        keep_e = p(r) == Tri.T
    keep_o = p(r) == Tri.T
    return [_valid("keep", axioms, keep_e == keep_o),
            _valid("map", axioms, z3.Implies(keep_o, piXY(piY(r)) == piX(r)))]


def _covering_aggregate(with_filter: bool):
    Tri = _tri()
    Row, Key = z3.DeclareSort("Row"), z3.DeclareSort("Key")
    key = z3.Function("key", Row, Key)
    c = z3.Function("c", Row, Tri)
    k, k2 = z3.Function("k", Key, Tri), z3.Function("k2", Key, Tri)
    r, g = z3.Const("r", Row), z3.Const("g", Key)
    kr = k(key(r))                                          # k reads only grouping keys
    if with_filter:
        ce_in = z3.And(c(r) == Tri.T, _or3(Tri, kr, k2(key(r))) == Tri.T)
        retained = k(g) == Tri.T
        orig = z3.And(key(r) == g, c(r) == Tri.T, kr == Tri.T)
    else:
        ce_in = c(r) == Tri.T
        retained = z3.BoolVal(True)
        orig = z3.And(key(r) == g, c(r) == Tri.T)
    ext = z3.And(key(r) == g, ce_in)
    return [_valid("members of a retained group", [], z3.Implies(retained, ext == orig)),
            _valid("dropped groups are empty", [], z3.Implies(z3.Not(retained), z3.Not(orig)))]


@lru_cache(maxsize=None)
def prove_template(template: str) -> TemplateProof:
    """Prove one extraction template (cached: once per process)."""
    t0 = time.perf_counter()
    if template == "filter-project":
        obs = _filter_project(True)
    elif template == "project":
        obs = _filter_project(False)
    elif template == "covering-aggregate":
        obs = _covering_aggregate(True)
    elif template == "same-aggregate":
        obs = _covering_aggregate(False)
    else:
        raise KeyError(f"unknown extraction template {template!r}")
    statuses = {s for _, s in obs}
    status = VERIFIED if statuses == {VERIFIED} else (REFUTED if REFUTED in statuses else UNKNOWN)
    return TemplateProof(template, status, time.perf_counter() - t0, obs)
