"""The shapes of template proofs: what the plan outputs for one key after the GROUP BYs,
against the program's emits — the obligations :class:`~superop.verify.proof_engine.
TemplateProof` leaves to its shape — and which family's template has which shape
(:func:`shape_of`: the shape each family declares, ``Family.proof_shape``).

* :class:`GroupsProof` — the union (DU) or join (DJ) of one key's groups through the
  upper edges: ``locality`` (joins: a group can only be matched by the other side's group
  of its own key, so the join decomposes per key) and ``emit`` (for every key, given the
  invariant, the plan's rows stemming from κ and the program's partition emits have the
  same outcome; errors as outcomes: the program may not raise where the plan does not).
* :class:`RowJoinProof` — one aggregate's groups joined back to the input rows (MJ, WM): the
  plan state also tracks "the group was matched by some row"; ``locality`` (the group of
  κ and row r match only if r's key is κ), ``emit.partition`` (the aggregate-side rows of
  κ), ``running.step`` where streaming row emits read state, and ``emit.row`` (for every
  row r of key κ, the plan's rows stemming from r and the program's row emits of r agree).
* :class:`~superop.verify.exists_proofs.ExistsProof` — an outer row of a semi / anti
  self-join against its key's partition state (EX).
* :class:`GlobalProductProof` — aggregates without a key combined by a product (GA): one
  partition that exists over no row; ``emit`` as above.
* ``NeighbourProof`` (:mod:`superop.verify.proof_neighbours`) — a ranked view joined to
  itself at offsets of its rank (NB): no fold; ``locality.<i>`` and ``emit.row``.
"""
from __future__ import annotations

from typing import Optional

import z3

from .. import families
from ..dsl import STREAMING, Program
from ..families import Match
from ..families.kit.family import GLOBAL_PRODUCT, JOIN, JOIN_BACK, NEIGHBOURS, SELF_EXISTS, UNION, ProofInstance
from ..ir.nodes import Join
from .bags import outcomes_differ
from .exists_proofs import ExistsProof
from .plan_encoder import PlanEncoder, pair_rows, side_rows
from .program_encoder import PartitionState
from .proof_engine import FinalMatch, Induction, Models, Obligation, PlanState, RowView, TemplateProof
from .proof_neighbours import NeighbourProof
from .relations import Rel, Table
from .values import TRUE, or_all, rows_not_distinct


class GroupsProof(TemplateProof):
    """The union of one key's groups (``joined`` False) or their join."""
    joined = False

    def shape_obligations(self, ind: Induction) -> list[Obligation]:
        obs = [self.locality()] if self.joined else []
        plan = self.seeded(ind.sp, self.kappa, ind.t).encode(self.d.root)
        plan = Rel(plan.rows, z3.Or(plan.err, ind.sp.err))
        prog = self.prog_partition(ind.sq, self.kappa)
        obs.append(Obligation(
            "emit", "every key κ: the rows the plan outputs for κ's groups (through the upper edges and "
            f"the {'union' if not self.joined else self.d.join_kind + ' join'}) and the program's "
            "partition emits have the same outcome, given the invariant",
            z3.Implies(ind.inv, z3.Not(outcomes_differ(plan, prog)))))
        return obs

    def locality(self) -> Obligation:
        """At EVERY join of the tree (the joins below the root too): a left row built from
        groups of key κ1 and a right row built from groups of key κ2 satisfy the ON
        condition only if κ1 and κ2 are the same key — so each join, and the tree, is a
        union over keys (inductively: the rows a join's inputs carry are of one key)."""
        t = Table(self.scan.table, self.scan.columns, 1, tag="loc!")
        k1 = [self._key_var(k, v.kind, v.width, "kappa1") for k, v in zip(self.p.keys, self.kappa)]
        k2 = [self._key_var(k, v.kind, v.width, "kappa2") for k, v in zip(self.p.keys, self.kappa)]
        s1, s2 = self.plan_symbolic("L"), self.plan_symbolic("R")
        claims = []
        for j in self.tree_joins():
            left = self.seeded(s1, k1, t).encode(j.left)
            right = self.seeded(s2, k2, t).encode(j.right)
            enc = PlanEncoder(t)
            for pl, vl in left.rows:
                for pr, vr in right.rows:
                    m, _, _ = enc.join_match(j, vl, vr)
                    claims.append(z3.Implies(z3.And(pl, pr, m), rows_not_distinct(k1, k2)))
        return Obligation("locality", "at every join of the tree, a left row of key κ1's groups and a right "
                          "row of key κ2's groups satisfy the ON condition only if κ1 and κ2 are the same key "
                          "(so the join is a union over keys)", z3.And(*claims))

    def tree_joins(self) -> list[Join]:
        """The joins between the root and the branches' tops."""
        tops = {id(t) for t in self.tops}
        out, stack = [], [self.d.root]
        while stack:
            n = stack.pop()
            if id(n) in tops or not isinstance(n, Join):
                continue
            out.append(n)
            stack += [n.left, n.right]
        return out



class JoinedGroupsProof(GroupsProof):
    joined = True


class GlobalProductProof(GroupsProof):
    """Aggregates without a key combined by a product (GA): one partition, every input row
    in it; each aggregate has its one row also over no row (a HAVING above it may drop it),
    and the program's one partition emits also over an empty input. The product of one row
    per branch is the ``emit`` obligation's plan, through the upper edges and cross joins."""
    models = Models(keyless=True)
    global_groups = True


class RowJoinProof(TemplateProof):
    """One aggregate's groups joined back to the input rows, the aggregate on side
    ``agg_pos`` (0: left) of the join."""
    tracks_matches = True

    @classmethod
    def models_for(cls, program: Program) -> Models:
        # a global aggregate cross-joined to the rows (WM/cross): the one partition, present
        # over an empty input
        return Models(keyless=True) if not program.keys else cls.models

    def __init__(self, inst: ProofInstance, d: Match, program: Program, emit_outputs: str) -> None:
        # keyless: the global aggregate's one row exists over no row
        self.global_groups = not program.keys
        super().__init__(inst, d, program, emit_outputs)

    @property
    def agg_pos(self) -> Optional[int]:
        return self.d.agg_side.pos if self.d.agg_side is not None else None

    def row_errors(self, enc: PlanEncoder) -> list:
        # the rows' own path to the join is evaluated on every row too
        j = self.d.root
        r_node, side = (j.right, "right") if self.agg_pos == 0 else (j.left, "left")
        rel = enc.encode(r_node)
        (p_r, v_r), = rel.rows
        return [rel.err, z3.And(p_r, enc.join_key_err(j, side, v_r))]

    def final_match(self, t: Table) -> Optional[FinalMatch]:
        # row r against the aggregate row of its key with its FINAL values: matched?
        # the residual evaluated (both rows present, equal keys) and raising?
        final_plan = self.plan_symbolic("final")
        m, pa, pr, eq, rerr, aerr = self.match(final_plan, self.kappa, t)
        # the plan raises for κ if the residual raises on a pair it forms, or if κ's
        # aggregate row raises (its upper edge: the program may evaluate a key-only σ
        # above γ per row, see Min & Join's "some row matched")
        by_row = (m, z3.Or(z3.And(pa, pr, eq if self.d.root.equi else TRUE, rerr), aerr))
        # "κ's aggregate row exists" (final): flags may pair only there
        return FinalMatch(final_plan, by_row, m, [pa])

    def shape_obligations(self, ind: Induction) -> list[Obligation]:
        assert ind.final is not None
        sp, sq, t = ind.sp, ind.sq, ind.t
        obs = [self.locality()]
        hyp_final = z3.And(ind.inv, self._same_final(ind.final.state, sp))
        obs.append(Obligation(
            "emit.partition", "every key κ: the aggregate-side rows the plan outputs for κ (null-extended, "
            "semi or anti, decided by 'some row matched') and the program's partition emits agree",
            z3.Implies(hyp_final, z3.Not(outcomes_differ(self.key_rows(sp, t),
                                                         self.prog_partition(sq, self.kappa))))))
        used = self.pe.state_read_by_row_emits()
        if self.p.memory == STREAMING and used:
            obs.append(self.running_step(used))
        obs.append(self.row_obligation(sp, sq, hyp_final, t, ind.r, ind.final.by_row))
        return obs

    def match(self, s: PlanState, kappa, t: Table):
        """(the join matches the aggregate row of κ with row r's join-side row, error of
        evaluating the residual on that pair) for the symbolic row of ``t``."""
        j = self.d.root
        a_node = j.left if self.agg_pos == 0 else j.right
        r_node = j.right if self.agg_pos == 0 else j.left
        (pa, va), aerr = self._side_row(self.seeded(s, kappa, t), a_node)
        (pr, vr), _ = self._side_row(PlanEncoder(t), r_node)
        lv, rv = (va, vr) if self.agg_pos == 0 else (vr, va)
        m, eq, rerr = PlanEncoder(t).join_match(j, lv, rv)
        return z3.And(pr, m), pa, pr, eq, rerr, aerr

    def locality(self) -> Obligation:
        t = Table(self.scan.table, self.scan.columns, 1, tag="loc!")
        (p, vals), = t.rows
        s = self.plan_symbolic("A")
        m, pa, pr, _, _, _ = self.match(s, self.kappa, t)
        return Obligation("locality", "the aggregate row of key κ and the join-side row of input row r "
                          "satisfy the ON condition only if r's partition key is κ",
                          z3.Implies(z3.And(p, pa, m), rows_not_distinct(self.pe.key_of(vals), self.kappa)))

    def key_rows(self, s: PlanState, t: Table) -> Rel:
        j = self.d.root
        a_node = j.left if self.agg_pos == 0 else j.right
        enc = self.seeded(s, self.kappa, t)
        (pa, va), aerr = self._side_row(enc, a_node)
        side = "left" if self.agg_pos == 0 else "right"
        other = len((j.right if self.agg_pos == 0 else j.left).fields)
        rows = side_rows(j.kind, side, [(pa, va)], [z3.And(pa, s.matched)], other)
        kerr = z3.And(pa, enc.join_key_err(j, side, va))
        return Rel(rows, or_all([aerr, kerr, s.err, s.pair_err]))

    def row_obligation(self, sp: PlanState, sq: PartitionState, inv, t: Table, r: RowView,
                          by_row: tuple) -> Obligation:
        j = self.d.root
        side = "left" if self.agg_pos == 0 else "right"
        row_side = "right" if side == "left" else "left"
        a_node = j.left if self.agg_pos == 0 else j.right
        r_node = j.right if self.agg_pos == 0 else j.left
        enc = self.seeded(sp, self.kappa, t)
        (pa, va), aerr = self._side_row(enc, a_node)
        renc = PlanEncoder(t)
        (pr, vr), rerr_rel = self._side_row(renc, r_node)
        lrow, rrow = ((pa, va), (pr, vr)) if side == "left" else ((pr, vr), (pa, va))
        m, eq, res_err = renc.join_match(j, lrow[1], rrow[1])
        M = z3.And(lrow[0], rrow[0], m)
        rows = pair_rows(j.kind, [lrow], [rrow], [[M]])
        rows += side_rows(j.kind, row_side, [(pr, vr)], [M], len(a_node.fields))
        errs = [aerr, rerr_rel, sp.err, sp.pair_err, z3.And(pa, enc.join_key_err(j, side, va)),
                z3.And(pr, renc.join_key_err(j, row_side, vr)),
                z3.And(lrow[0], rrow[0], eq if j.equi else TRUE, res_err)]
        plan = Rel(rows, or_all(errs))
        accs, flags, ferr = self.pe.final_values(sq)
        em = self.pe.emit_row(r.present, r.vals, accs, flags)
        prog = Rel(em.rows, or_all([em.err, sq.err, z3.And(sq.seen, ferr)]))
        # the final state of κ includes row r: every "some row ..." component r satisfies is TRUE
        facts = [z3.Implies(r.plan_member[i], sp.groups[i]) for i in sp.groups]
        facts += [z3.Implies(z3.And(r.in_key, g), f) for g, f in zip(r.prog.flag_guard, sq.flags)]
        facts += [z3.Implies(z3.And(r.in_key, by_row[0]), sp.matched),
                  z3.Implies(z3.And(r.in_key, by_row[1]), sp.pair_err)]
        facts += [z3.Implies(r.in_key, sq.seen), z3.Implies(z3.And(r.in_key, r.plan_err), sp.err),
                  z3.Implies(z3.And(r.in_key, r.prog.err), sq.err)]
        return Obligation(
            "emit.row", "every input row r of key κ: the rows the plan outputs for r (the pair with κ's "
            "aggregate row, or r null-extended / semi / anti) and the program's row emits at r, which see "
            "the final values (running.step), agree",
            z3.Implies(z3.And(inv, r.in_key, *facts), z3.Not(outcomes_differ(plan, prog))))


# The proof of each shape a family may declare (``Family.proof_shape``; families/README.md).
SHAPES: dict[str, type] = {UNION: GroupsProof, JOIN: JoinedGroupsProof, JOIN_BACK: RowJoinProof,
                           GLOBAL_PRODUCT: GlobalProductProof, NEIGHBOURS: NeighbourProof,
                           SELF_EXISTS: ExistsProof}


def shape_of(family: str) -> type:
    """The proof of ``family``'s template, by the shape the family declares (the generic
    engine when it declares none: its proofs are refused after the induction is set up)."""
    return SHAPES.get(families.get(family).proof_shape, TemplateProof)


def models_of(shape: type, program: Program) -> Models:
    """What the proof of ``shape`` models for ``program`` (a shape may model a keyless
    program too: :meth:`TemplateProof.models_for`)."""
    if issubclass(shape, TemplateProof):
        return shape.models_for(program)
    return getattr(shape, "models", Models())
