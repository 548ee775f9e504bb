"""Unbounded proofs for the parametric super-operators of Fig. 10 (DU, DJ per join kind,
MJ per join kind and side), for every table size and every σ/π/ρ instantiation.

Method. Edge parameters are uninterpreted: a lower edge's summary predicate φ_i (Row →
Bool, TRUE-ness in 3VL), its projection (Row → aggregate argument), the aggregate as an
arbitrary fold (init_i, upd_i : S_i × A_i → S_i, fin_i : S_i → F_i), the upper edge's
summary predicate ψ_i and projection π_i (Key × F_i → ·), and the join's ON condition θ
(TRUE-ness of the whole ON clause over the two projected join inputs). Keys are an
uninterpreted sort with plain equality, so NULL keys are one partition, as in GROUP BY.

Each proof is a list of obligations; each obligation is a formula Z3 must find VALID
(its negation unsat). ``unknown`` from the solver leaves the proof ``unknown``.

* Accumulators (DU/DJ): induction over the rows of the input in arrival order. The state
  of the plan (per key: the GROUP BY fold G_i[k] and "group non-empty" N_i[k]) and of the
  program (per partition: acc_i[k], flag out_i[k], partition seen[k]) are arrays over
  keys. Base: the empty input. Step: one arbitrary row. Invariant:
  G_i = acc_i ∧ N_i = out_i ∧ N_i ⊆ seen.
* MJ's running MIN/MAX: induction over the sorted rows of one partition (ascending for
  MIN, descending for MAX, NULLs last): after every non-empty prefix the running value
  equals the first row's value, hence the final value.
* Emission: for every key k (and every row r for MJ) the rows the plan outputs that
  stem from k (from r) equal the program's emits for partition k (row r), component by
  component (pair / left-extended / right-extended / semi rows), using the invariant.
* Locality (DJ/MJ): from the premise "θ ⇒ keys equal" — established per instance by
  :func:`superop.verify.streamability.check_streamability` with Z3 — a join row can only
  match the other side's row of its own partition, and matches at most one.

Assumptions (written into every certificate):
A1 GROUP BY aggregates are folds whose result does not depend on the order of the rows
   (true for count/sum/min/max/avg/count distinct; sums over reals are exact here).
A2 The output bag of the plan and of the program is the disjoint union over keys (DU/DJ)
   or over rows and keys (MJ) of the per-key (per-row) contributions: every plan output
   row stems from exactly one group / input row, every emit from one partition / row.
A3 The streamability premises hold for the instance: every path's grouping key traced
   down the lower edge is the partition key (Algorithm 1), and the ON condition implies
   equality of the grouping keys (Algorithms 2-3); for MJ the lower edge has no σ.
A4 Edge parameters are deterministic functions of their inputs (Algorithm 5 captures σ/π/ρ
   chains exactly as such functions).
What is NOT covered: that a concrete program from ``superop.synth.templates`` is exactly
this template instantiated (the bounded check of each instance covers that), overflow,
ANSI errors, non-deterministic expressions.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

import z3

from .result import REFUTED, UNKNOWN, VERIFIED, Result

ASSUMPTIONS = [
    "A1 aggregates are order-independent folds (init, update, finalize)",
    "A2 output bags decompose into per-key (DU/DJ) or per-row and per-key (MJ) contributions",
    "A3 streamability premises: grouping keys traced down each lower edge are the partition key; "
    "the ON condition implies grouping-key equality; MJ: no Select on the edge into MIN/MAX",
    "A4 edge parameters are deterministic functions captured by Algorithm 5",
]
JOIN_KINDS = ("inner", "left", "right", "full", "semi", "anti")


@dataclass
class Obligation:
    name: str
    text: str
    formula: z3.BoolRef
    status: str = "pending"
    seconds: float = 0.0
    model: Optional[str] = None

    def to_json(self) -> dict:
        out = {"name": self.name, "text": self.text, "status": self.status,
               "seconds": round(self.seconds, 4)}
        if self.model:
            out["counterexample"] = self.model
        return out


def _prove(obs: list[Obligation], timeout_ms: int) -> None:
    for ob in obs:
        t0 = time.perf_counter()
        s = z3.Solver()
        s.set("timeout", timeout_ms)
        s.add(z3.Not(ob.formula))
        r = s.check()
        ob.seconds = time.perf_counter() - t0
        if r == z3.unsat:
            ob.status = "proved"
        elif r == z3.sat:
            ob.status = "failed"
            ob.model = str(s.model())[:2000]
        else:
            ob.status = "unknown"
            ob.model = s.reason_unknown()


# ---------------------------------------------------------------------------
# Shared vocabulary: rows, keys, folds
# ---------------------------------------------------------------------------
class _Branch:
    """One aggregate path i: lower edge (φ_i, arg_i), fold (init, upd, fin), upper edge
    (ψ_i, π_i) over (key, finalized value)."""

    def __init__(self, i: int, Row, Key, Out):
        S = z3.DeclareSort(f"S{i}")
        Aa = z3.DeclareSort(f"Arg{i}")
        F = z3.DeclareSort(f"F{i}")
        self.i = i
        self.phi = z3.Function(f"phi{i}", Row, z3.BoolSort())
        self.gkey = z3.Function(f"gkey{i}", Row, Key)
        self.arg = z3.Function(f"arg{i}", Row, Aa)
        self.init = z3.Const(f"init{i}", S)
        self.upd = z3.Function(f"upd{i}", S, Aa, S)
        self.fin = z3.Function(f"fin{i}", S, F)
        self.psi = z3.Function(f"psi{i}", Key, F, z3.BoolSort())
        self.proj = z3.Function(f"proj{i}", Key, F, Out)
        self.S, self.Key = S, Key
        # plan state (G, N) and program state (acc, out)
        self.G = z3.Array(f"G{i}", Key, S)
        self.N = z3.Array(f"N{i}", Key, z3.BoolSort())
        self.acc = z3.Array(f"acc{i}", Key, S)
        self.out = z3.Array(f"out{i}", Key, z3.BoolSort())

    def inv(self, seen) -> z3.BoolRef:
        return z3.And(self.G == self.acc, self.N == self.out, z3.IsSubset(self.N, seen))

    def plan_step(self, r):
        k = self.gkey(r)
        G2 = z3.If(self.phi(r), z3.Store(self.G, k, self.upd(self.G[k], self.arg(r))), self.G)
        N2 = z3.If(self.phi(r), z3.Store(self.N, k, True), self.N)
        return G2, N2

    def prog_step(self, r, part):
        p = part(r)
        a2 = z3.If(self.phi(r), z3.Store(self.acc, p, self.upd(self.acc[p], self.arg(r))), self.acc)
        o2 = z3.If(self.phi(r), z3.Store(self.out, p, True), self.out)
        return a2, o2

    def present_plan(self, k):
        """The group's row reaches the core parent: group non-empty and ψ_i TRUE."""
        return z3.And(self.N[k], self.psi(k, self.fin(self.G[k])))

    def present_prog(self, k, seen):
        return z3.And(seen[k], self.out[k], self.psi(k, self.fin(self.acc[k])))

    def val_plan(self, k):
        return self.proj(k, self.fin(self.G[k]))

    def val_prog(self, k):
        return self.proj(k, self.fin(self.acc[k]))


def _fold_obligations(branches, Row, Key, part, premise: bool = True) -> list[Obligation]:
    seen = z3.Array("seen", Key, z3.BoolSort())
    r = z3.Const("r", Row)
    obs = []
    base = z3.And(*[z3.substitute(b.inv(seen),
                                  (b.G, z3.K(Key, b.init)), (b.acc, z3.K(Key, b.init)),
                                  (b.N, z3.K(Key, z3.BoolVal(False))), (b.out, z3.K(Key, z3.BoolVal(False))),
                                  (seen, z3.K(Key, z3.BoolVal(False))))
                    for b in branches])
    obs.append(Obligation("fold.base", "empty input: every group fold is init, no group, "
                          "no partition; the invariant G=acc ∧ N=out ∧ N⊆seen holds", base))
    hyp = [b.inv(seen) for b in branches]
    if premise:
        hyp += [b.gkey(r) == part(r) for b in branches]
    seen2 = z3.Store(seen, part(r), True)
    concl = []
    for b in branches:
        G2, N2 = b.plan_step(r)
        a2, o2 = b.prog_step(r, part)
        concl.append(z3.And(G2 == a2, N2 == o2, z3.IsSubset(N2, seen2)))
    obs.append(Obligation("fold.step", "one more row r: GROUP BY folds r into group gkey_i(r) iff φ_i(r); "
                          "the program folds r into partition part(r) under guard φ_i(r) and sets out_i; "
                          "the invariant is preserved" + (" (premise gkey_i(r) = part(r))" if premise else ""),
                          z3.Implies(z3.And(*hyp), z3.And(*concl))))
    return obs, seen


# ---------------------------------------------------------------------------
# Diamond UnionAll
# ---------------------------------------------------------------------------
def _du(n: int, premise: bool = True) -> list[Obligation]:
    Row, Key, Out = z3.DeclareSort("Row"), z3.DeclareSort("Key"), z3.DeclareSort("Out")
    part = z3.Function("part", Row, Key)
    brs = [_Branch(i + 1, Row, Key, Out) for i in range(n)]
    obs, seen = _fold_obligations(brs, Row, Key, part, premise)
    k = z3.Const("k", Key)
    inv = z3.And(*[b.inv(seen) for b in brs])
    emit = z3.And(*[z3.And(b.present_plan(k) == b.present_prog(k, seen),
                           z3.Implies(b.present_plan(k), b.val_plan(k) == b.val_prog(k)))
                    for b in brs])
    obs.append(Obligation("emit", f"for every key k and branch i of {n}: the plan's ∪ input row "
                          "π_i(k, fin(G_i[k])) exists iff N_i[k] ∧ ψ_i; the program emits "
                          "π_i(k, fin(acc_i[k])) for partition k iff out_i[k] ∧ ψ_i — equal under the invariant",
                          z3.ForAll([k], z3.Implies(inv, emit))))
    return obs


# ---------------------------------------------------------------------------
# Diamond Join
# ---------------------------------------------------------------------------
def _dj(kind: str, premise: bool = True, paper_literal: bool = False) -> list[Obligation]:
    Row, Key = z3.DeclareSort("Row"), z3.DeclareSort("Key")
    OutL, OutR = z3.DeclareSort("OutL"), z3.DeclareSort("OutR")
    part = z3.Function("part", Row, Key)
    L, R = _Branch(1, Row, Key, OutL), _Branch(2, Row, Key, OutR)
    obs, seen = _fold_obligations([L, R], Row, Key, part, premise)
    theta = z3.Function("theta", OutL, OutR, z3.BoolSort())   # the whole ON condition is TRUE
    k, k1, k2 = z3.Consts("k k1 k2", Key)
    inv = z3.And(L.inv(seen), R.inv(seen))
    # premise (Algorithm 2, decided per instance by Z3): ON ⇒ grouping keys equal
    loc = z3.ForAll([k1, k2], z3.Implies(
        z3.And(L.present_plan(k1), R.present_plan(k2), theta(L.val_plan(k1), R.val_plan(k2))), k1 == k2))
    # plan (global) semantics of the join, for the rows stemming from key k
    some_r = z3.Exists([k2], z3.And(R.present_plan(k2), theta(L.val_plan(k), R.val_plan(k2))))
    some_l = z3.Exists([k1], z3.And(L.present_plan(k1), theta(L.val_plan(k1), R.val_plan(k))))
    obs.append(Obligation("locality", "with ON ⇒ key equality, the left row of key k matches some right "
                          "row iff it matches the right row of key k (and symmetrically); so every key "
                          "contributes at most one matched pair",
                          z3.ForAll([k], z3.Implies(loc, z3.And(
                              z3.And(L.present_plan(k), some_r) == z3.And(
                                  L.present_plan(k), R.present_plan(k), theta(L.val_plan(k), R.val_plan(k))),
                              z3.And(R.present_plan(k), some_l) == z3.And(
                                  L.present_plan(k), R.present_plan(k), theta(L.val_plan(k), R.val_plan(k))))))))
    pl, pr = L.present_plan(k), R.present_plan(k)
    matched_plan = z3.And(pl, pr, theta(L.val_plan(k), R.val_plan(k)))
    ql, qr = L.present_prog(k, seen), R.present_prog(k, seen)
    psi = theta(L.val_prog(k), R.val_prog(k))
    matched_prog = z3.And(ql, qr, psi)
    # plan's contributions of key k (after locality): (guard, values) per component
    comps_plan, comps_prog = [], []
    if kind in ("inner", "left", "right", "full"):
        comps_plan.append(("pair", matched_plan, [L.val_plan(k), R.val_plan(k)]))
        comps_prog.append(("pair", matched_prog, [L.val_prog(k), R.val_prog(k)]))
    if kind in ("left", "full"):
        comps_plan.append(("left-extended", z3.And(pl, z3.Not(matched_plan)), [L.val_plan(k)]))
        g = z3.And(ql, z3.Not(z3.And(qr)), psi) if paper_literal else z3.And(ql, z3.Not(matched_prog))
        comps_prog.append(("left-extended", g, [L.val_prog(k)]))
    if kind in ("right", "full"):
        comps_plan.append(("right-extended", z3.And(pr, z3.Not(matched_plan)), [R.val_plan(k)]))
        g = z3.And(qr, z3.Not(z3.And(ql)), psi) if paper_literal else z3.And(qr, z3.Not(matched_prog))
        comps_prog.append(("right-extended", g, [R.val_prog(k)]))
    if kind == "semi":
        comps_plan.append(("semi", matched_plan, [L.val_plan(k)]))
        comps_prog.append(("semi", matched_prog, [L.val_prog(k)]))
    if kind == "anti":
        comps_plan.append(("anti", z3.And(pl, z3.Not(matched_plan)), [L.val_plan(k)]))
        comps_prog.append(("anti", z3.And(ql, z3.Not(matched_prog)), [L.val_prog(k)]))
    eqs = []
    for (_, g1, v1), (_, g2, v2) in zip(comps_plan, comps_prog):
        eqs.append(z3.And(g1 == g2, z3.Implies(g1, z3.And(*[a == b for a, b in zip(v1, v2)]))))
    obs.append(Obligation("emit", f"{kind} join, every key k: the plan's rows stemming from k "
                          f"({', '.join(c[0] for c in comps_plan)}) equal the program's partition emits "
                          "guarded by out_1 ∧ ψ_3, out_2 ∧ ψ_4 and θ at (k, fin(acc))",
                          z3.ForAll([k], z3.Implies(inv, z3.And(*eqs)))))
    return obs


# ---------------------------------------------------------------------------
# Min & Join
# ---------------------------------------------------------------------------
def _running_extreme(func: str, guarded: bool = False) -> list[Obligation]:
    """Running MIN (MAX) over one partition sorted ascending (descending), NULLs last,
    equals the first row's value after every prefix — hence the final value. With a guard
    (Fig. 13) the induction fails."""
    better = (lambda x, y: x < y) if func == "min" else (lambda x, y: x > y)
    b0, bn, run = z3.Ints("b_first b_next run")
    n0, nn, rn = z3.Bools("null_first null_next run_null")
    g0, gn = z3.Bools("guard_first guard_next")

    def step(run, rn, b, nb, g):
        take = z3.And(z3.Not(nb), g, z3.Or(rn, better(b, run)))
        return z3.If(take, b, run), z3.And(rn, z3.Or(nb, z3.Not(g)))
    g_first = g0 if guarded else z3.BoolVal(True)
    g_next = gn if guarded else z3.BoolVal(True)
    r1, rn1 = step(z3.IntVal(0), z3.BoolVal(True), b0, n0, g_first)
    if guarded:
        # Fig. 13: the claim "the running value after the first row is final" on a
        # partition of two sorted rows; a refutation needs only one such partition.
        sorted2 = z3.And(z3.Implies(n0, nn), z3.Implies(z3.And(z3.Not(n0), z3.Not(nn)), z3.Not(better(bn, b0))))
        fin, fin_n = step(r1, rn1, bn, nn, g_next)
        base = Obligation("running.first_is_final", f"guarded running {func.upper()} (Fig. 13): after the "
                          "first row of a sorted partition the running value equals the final one",
                          z3.Implies(sorted2, z3.And(rn1 == fin_n, z3.Implies(z3.Not(rn1), r1 == fin))))
        return [base]
    base = Obligation("running.base", f"after the first row of the sorted partition the running "
                      f"{func.upper()} is that row's value (NULL iff it is NULL)",
                      z3.And(rn1 == n0, z3.Implies(z3.Not(rn1), r1 == b0)))
    sorted_ = z3.And(z3.Implies(n0, nn),       # NULLs last: after a NULL only NULLs
                     z3.Implies(z3.And(z3.Not(n0), z3.Not(nn)), z3.Not(better(bn, b0))))
    hyp = z3.And(sorted_, rn == n0, z3.Implies(z3.Not(rn), run == b0))
    r2, rn2 = step(run, rn, bn, nn, g_next)
    stepo = Obligation("running.step", f"sorted {'ascending' if func == 'min' else 'descending'} NULLs last: "
                       f"if the running {func.upper()} equals the first row's value, it still does after "
                       "the next row", z3.Implies(hyp, z3.And(rn2 == n0, z3.Implies(z3.Not(rn2), r2 == b0))))
    first_is_extreme = Obligation(
        "running.final", f"the first row's value is the {func.upper()} of the partition: no later row "
        "is better (the sort order)", z3.Implies(sorted_, z3.Not(z3.And(z3.Not(nn), z3.Not(n0), better(bn, b0)))))
    return [base, stepo, first_is_extreme]


def _mj(kind: str, agg_left: bool = True) -> list[Obligation]:
    """Rows r (partition part(r)) via edge e3 (φ3, π3); the aggregate row of key k via
    e2 (ψ2, π2) over M(k), the final MIN/MAX, which by the running lemma every row of
    partition k sees. θ = ON condition over (aggregate tuple, row tuple)."""
    Row, Key, OutA, OutR, F = (z3.DeclareSort(s) for s in ("Row", "Key", "OutA", "OutR", "F"))
    part = z3.Function("part", Row, Key)
    inR = z3.Function("inR", Row, z3.BoolSort())           # row belongs to the input
    seen = z3.Function("seen", Key, z3.BoolSort())        # partition non-empty
    M = z3.Function("M", Key, F)                           # final MIN/MAX of the partition
    run = z3.Function("run", Row, F)                       # running value at row r
    phi3 = z3.Function("phi3", Row, z3.BoolSort())
    proj3 = z3.Function("proj3", Row, OutR)
    psi2 = z3.Function("psi2", Key, F, z3.BoolSort())
    proj2 = z3.Function("proj2", Key, F, OutA)
    theta = z3.Function("theta", OutA, OutR, z3.BoolSort())
    r, r2 = z3.Consts("r r2", Row)
    k, k2 = z3.Consts("k k2", Key)
    # facts: partitions are exactly the keys of input rows (no σ on the edge into the
    # aggregate: every non-empty partition has a group); the running lemma: run(r) = M(part(r))
    facts = [z3.ForAll([k], seen(k) == z3.Exists([r2], z3.And(inR(r2), part(r2) == k))),
             z3.ForAll([r], z3.Implies(inR(r), run(r) == M(part(r))))]
    premise = z3.ForAll([r, k], z3.Implies(theta(proj2(k, M(k)), proj3(r)), part(r) == k))
    A = lambda k: z3.And(seen(k), psi2(k, M(k)))                               # noqa: E731
    match_g = lambda r, k: z3.And(inR(r), phi3(r), A(k), theta(proj2(k, M(k)), proj3(r)))  # noqa: E731
    # program (streaming): at row r of partition part(r) it knows run(r)
    pk = lambda r: part(r)                                                    # noqa: E731
    match_p = lambda r: z3.And(inR(r), phi3(r), seen(pk(r)), psi2(pk(r), run(r)),  # noqa: E731
                               theta(proj2(pk(r), run(r)), proj3(r)))
    flag_p = lambda k: z3.Exists([r2], z3.And(part(r2) == k, match_p(r2)))   # noqa: E731
    hyp = z3.And(*facts, premise)
    obs = [Obligation("locality", "a row matches at most one aggregate row, and only its own "
                      "partition's (premise θ ⇒ keys equal)",
                      z3.ForAll([r, k, k2], z3.Implies(z3.And(hyp, match_g(r, k), match_g(r, k2)),
                                                       z3.And(k == k2, k == part(r)))))]
    row_preserved = kind == "full" or (kind == "left" and not agg_left) or (kind == "right" and agg_left)
    agg_preserved = kind == "full" or (kind == "left" and agg_left) or (kind == "right" and not agg_left)
    some_k = lambda r: z3.Exists([k2], match_g(r, k2))                          # noqa: E731
    some_r = lambda k: z3.Exists([r2], match_g(r2, k))                          # noqa: E731
    per_row, per_key = [], []
    if kind in ("inner", "left", "right", "full"):
        per_row.append(("pair", match_g(r, part(r)), match_p(r),
                        [proj2(part(r), M(part(r))) == proj2(part(r), run(r))]))
    if row_preserved:
        per_row.append(("row-extended", z3.And(inR(r), phi3(r), z3.Not(some_k(r))),
                        z3.And(inR(r), phi3(r), z3.Not(match_p(r))), []))
    if kind in ("semi", "anti") and not agg_left:
        g = some_k(r) if kind == "semi" else z3.And(inR(r), phi3(r), z3.Not(some_k(r)))
        gp = match_p(r) if kind == "semi" else z3.And(inR(r), phi3(r), z3.Not(match_p(r)))
        per_row.append((kind, g, gp, []))
    if agg_preserved:
        per_key.append(("aggregate-extended", z3.And(A(k), z3.Not(some_r(k))),
                        z3.And(seen(k), psi2(k, M(k)), z3.Not(flag_p(k)))))
    if kind in ("semi", "anti") and agg_left:
        g = z3.And(A(k), some_r(k)) if kind == "semi" else z3.And(A(k), z3.Not(some_r(k)))
        gp = z3.And(seen(k), psi2(k, M(k)), flag_p(k) if kind == "semi" else z3.Not(flag_p(k)))
        per_key.append((kind, g, gp))
    if per_row:
        body = z3.And(*[z3.And(g1 == g2, *[z3.Implies(g1, e) for e in eqs]) for _, g1, g2, eqs in per_row])
        obs.append(Obligation("emit.row", f"{kind} join ({'aggregate' if agg_left else 'rows'} on the left), "
                              f"every input row r: the plan's rows stemming from r "
                              f"({', '.join(c[0] for c in per_row)}) equal the program's row emits, which "
                              "read the running value (= the final MIN/MAX)",
                              z3.ForAll([r], z3.Implies(hyp, body))))
    if per_key:
        body = z3.And(*[g1 == g2 for _, g1, g2 in per_key])
        obs.append(Obligation("emit.partition", f"{kind} join, every key k: the plan's aggregate-side rows "
                              f"({', '.join(c[0] for c in per_key)}) equal the program's partition emit "
                              "guarded by the flag 'some row of k matched'",
                              z3.ForAll([k], z3.Implies(hyp, body))))
    return obs


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------
def template_id(family: str, join_kind: Optional[str] = None, agg_left: bool = True,
                branches: int = 2, func: str = "min") -> str:
    if family == "DU":
        return f"DU/{branches}"
    if family == "DJ":
        return f"DJ/{join_kind}"
    return f"MJ/{join_kind}/{'agg-left' if agg_left else 'agg-right'}/{func}"


def obligations(family: str, join_kind: Optional[str] = None, agg_left: bool = True,
                branches: int = 2, func: str = "min", variant: str = "template") -> list[Obligation]:
    """``variant``: ``template`` (the corrected Fig. 10 template), ``no-premise`` (DU/DJ
    without the streamability premise), ``paper-literal`` (DJ outer joins exactly as
    printed in Fig. 10: ψ inside the null-extending branch), ``fig13`` (MJ running MIN/MAX
    under a guard)."""
    if family == "DU":
        return _du(branches, premise=variant != "no-premise")
    if family == "DJ":
        if join_kind not in JOIN_KINDS:
            raise ValueError(f"join kind {join_kind!r}")
        return _dj(join_kind, premise=variant != "no-premise", paper_literal=variant == "paper-literal")
    if family == "MJ":
        if join_kind not in JOIN_KINDS:
            raise ValueError(f"join kind {join_kind!r}")
        return _running_extreme(func, guarded=variant == "fig13") + _mj(join_kind, agg_left)
    raise ValueError(f"unknown family {family!r}")


def prove_template(family: str, join_kind: Optional[str] = None, agg_left: bool = True,
                   branches: int = 2, func: str = "min", variant: str = "template",
                   timeout_ms: int = 20000) -> Result:
    """Prove a Fig. 10 template for every table size; ``verified`` only if every
    obligation is proved (method ``inductive``, K = None)."""
    t0 = time.perf_counter()
    obs = obligations(family, join_kind, agg_left, branches, func, variant)
    _prove(obs, timeout_ms)
    statuses = {o.status for o in obs}
    status = VERIFIED if statuses == {"proved"} else (REFUTED if "failed" in statuses else UNKNOWN)
    tid = template_id(family, join_kind, agg_left, branches, func)
    failed = [o.name for o in obs if o.status != "proved"]
    reason = (f"all {len(obs)} obligations proved for every table size" if status == VERIFIED
              else f"obligations not proved: {', '.join(failed)}")
    return Result(status, method="inductive", K=None, seconds=time.perf_counter() - t0, reason=reason,
                  details={"template": tid, "variant": variant,
                           "obligations": [o.to_json() for o in obs],
                           "assumptions": ASSUMPTIONS,
                           "covers": proof_text(family, join_kind, agg_left, branches, func)})


def proof_text(family: str, join_kind: Optional[str] = None, agg_left: bool = True,
               branches: int = 2, func: str = "min") -> str:
    if family == "DU":
        return (f"SuperOp_DU with {branches} branches: for every input table (any size, any rows), every "
                "lower-edge predicate/projection, every aggregate fold and every upper-edge "
                "predicate/projection, the program (per partition: guarded folds, flags out_i, one emit "
                "per branch guarded by out_i ∧ ψ_i) outputs the same bag as ∪ of the GROUP BYs.")
    if family == "DJ":
        return (f"SuperOp_DJ for {join_kind.upper()} join: for every input table and every edge "
                "instantiation, given ON ⇒ equality of the grouping keys, the per-partition emits "
                "(matched = out_1 ∧ ψ_3 ∧ out_2 ∧ ψ_4 ∧ θ; null-extended = present ∧ ¬matched) output "
                "the same bag as the join of the two GROUP BYs.")
    return (f"SuperOp_MJ for {join_kind.upper()} join with the aggregate on the "
            f"{'left' if agg_left else 'right'}: for every input table and edge instantiation without a "
            f"σ into the aggregate, a partition sorted {'ascending' if func == 'min' else 'descending'} "
            f"(NULLs last) makes the running {func.upper()} final at every row, so the streaming row emits "
            "(and the partition emit for the preserved/semi aggregate side) output the same bag as the "
            "join of the rows with the GROUP BY.")


def all_templates() -> list[dict]:
    """Every template instance the paper's Fig. 10 covers (what the benchmark proves)."""
    out = [dict(family="DU", branches=2), dict(family="DU", branches=3)]
    out += [dict(family="DJ", join_kind=k) for k in JOIN_KINDS]
    out += [dict(family="MJ", join_kind=k, agg_left=s, func=f)
            for k in JOIN_KINDS for s in (True, False) for f in ("min", "max")]
    return out
