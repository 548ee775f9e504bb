"""Unbounded proofs of the self-exists template (``Family.proof_shape == SELF_EXISTS``): an
outer row ``l`` kept by a semi / anti join of an input with itself, against the program
that decides ``l`` from its key's partition state.

Fix one arbitrary outer row ``l`` (its key κ, NULL allowed). Induction over the input rows,
in any order:

* plan state — ``E``: some row so far matches ``l`` (its inner path row and ``l``'s outer
  path row satisfy the ON clause), ``errP``: the plan raised (the inner path on a row, the
  ON clause on a pair of equal keys);
* program state — the partition of κ folded over the rows so far (:class:`ProgramEncoder`);
* invariant — the plan's output for ``l`` (``l`` once when ``E`` — semi — or ``¬E`` — anti —
  given ``l`` passes its path) and the program's row emit at ``l`` over the state have the
  same outcome (errors as outcomes: the program may not raise where the plan does not).

``fold.base`` (no row) and ``fold.step`` (one more arbitrary row, of any key) prove the
invariant for the whole input; with the whole input folded the state is κ's final state —
what the program's row emit at ``l`` reads. Nothing else is assumed (no locality
obligation: a row of another key that would match ``l`` makes ``fold.step`` fail).
"""
from __future__ import annotations

import z3

from ..families import Match
from ..families.kit.family import ProofInstance
from ..ir.nodes import Join, Scan
from ..dsl import Program
from .plan_encoder import PlanEncoder
from .program_encoder import PartitionState, ProgramEncoder
from .proof_engine import Obligation
from .relations import Rel, Table
from .result import Unsupported
from .values import FALSE, TRUE, or_all, rows_not_distinct

Formula = tuple[str, str, z3.BoolRef]


class ExistsProof:
    """The proof of one self-exists instance (the shape ``SELF_EXISTS``), built as every
    proof shape is (:func:`superop.verify.proof_shapes.shape_of`)."""

    def __init__(self, inst: ProofInstance, d: Match, program: Program, emit_outputs: str):
        self.d, self.p, self.emit_outputs = d, program, emit_outputs

    def obligations(self) -> list[Obligation]:
        return [Obligation(n, t, f) for n, t, f in exists_obligations(self.d, self.p, self.emit_outputs)]


def exists_obligations(m: Match, program: Program, emit_outputs: str) -> list[Formula]:
    """(name, text, formula) of each obligation (proved when valid)."""
    j, src = m.root, m.source
    if not isinstance(j, Join) or j.kind not in ("semi", "anti") or not isinstance(src, Scan):
        raise Unsupported("a self-exists instance is a semi / anti join over one scanned table")
    pe = ProgramEncoder(program, src.columns, emit_outputs=emit_outputs)
    tl, tr = Table(src.table, src.columns, 1, tag="l!"), Table(src.table, src.columns, 1, tag="r!")
    (pl, vl), = tl.rows
    (pr, vr), = tr.rows
    kappa = pe.key_of(vl)
    L, R = PlanEncoder(tl).encode(j.left), PlanEncoder(tr).encode(j.right)
    if len(L.rows) != 1 or len(R.rows) != 1:
        raise Unsupported("a join input is not one row per input row")
    (lp, lv), (rp, rv) = L.rows[0], R.rows[0]
    match, eq, rerr = PlanEncoder(tr).join_match(j, lv, rv)
    matches = z3.And(lp, rp, match)
    step_err = or_all([R.err, z3.And(rp, PlanEncoder(tr).join_key_err(j, "right", rv)),
                       z3.And(lp, rp, eq if j.equi else TRUE, rerr)])
    l_err = or_all([L.err, z3.And(lp, PlanEncoder(tl).join_key_err(j, "left", lv))])
    contribution = pe.contribution(vr)
    member = z3.And(pr, rows_not_distinct(pe.key_of(vr), kappa))
    kinds = pe.arg_kinds([contribution, pe.contribution(vl)])

    def plan(e: z3.BoolRef, err: z3.BoolRef) -> Rel:
        kept = e if j.kind == "semi" else z3.Not(e)
        return Rel([(z3.And(lp, kept), list(lv))], z3.Or(err, l_err))

    def prog(s: PartitionState) -> Rel:
        accs, flags, ferr = pe.final_values(s)
        em = pe.emit_row(pl, vl, accs, flags)
        if len(em.rows) != 1:
            raise Unsupported("a self-exists program has one row emit")
        return Rel(em.rows, or_all([em.err, s.err, z3.And(s.seen, ferr)]))

    def inv(e: z3.BoolRef, err: z3.BoolRef, s: PartitionState) -> z3.BoolRef:
        """The outcomes for l agree: the plan raises, or the program does not and both keep
        l or neither, with the same values (at most one row each side: no bag witness, which
        could not be negated in a hypothesis)."""
        p, q = plan(e, err), prog(s)
        (kp, xp), (kq, xq) = p.rows[0], q.rows[0]
        same = z3.And(kp == kq, z3.Implies(kp, rows_not_distinct(xp, xq)))
        return z3.Or(p.err, z3.And(z3.Not(q.err), same))

    E, errP = z3.Bool("E"), z3.Bool("errP")
    S = pe.symbolic_state(kinds, "S")
    base = z3.Implies(pl, inv(FALSE, FALSE, pe.initial(kinds)))
    after = pe.step(S, member, contribution)
    step = z3.Implies(z3.And(pl, inv(E, errP, S)), inv(z3.Or(E, matches), z3.Or(errP, z3.And(pr, step_err)), after))
    return [("fold.base", "no row yet: the plan keeps l iff the join is an anti join, the program's emit at l over "
                          "the initial state agrees", base),
            ("fold.step", "one more arbitrary row r (of any key): if the plan's and the program's outcomes for l "
                          "agree before r, they agree after it (r matches l on the ON clause / r is folded into "
                          "l's partition under the accumulators' guards)", step)]
