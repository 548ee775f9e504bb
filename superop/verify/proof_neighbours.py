"""The unbounded proof of a neighbour template (proof shape "neighbours"): a view joined to
itself at offsets of its rank, run as LAG / LEAD over one window of the view.

The program reads, for each row r of the view, the rows at offsets d of r in its
partition's sort order (``nb.*``), under the precondition the match established
(``RowNumber``: the rank numbers each partition's rows 1..n). Then the row at offset d of
r is the one row of r's partition whose rank is rank(r) + d, when there is one — call it
r's candidate n_d. The proof is per row r of the view, for every table of view rows:

* ``locality.<i>`` — for the join that brings in use i: a row s of the view that meets
  the join's left side (the centre r and the earlier uses' candidates) under its ON
  condition is in r's partition with rank rank(r) + d_i. By the precondition that row is
  n_{d_i}: the plan's rows stemming from r pair r only with its candidates (and rows of
  other partitions or ranks never join: a NULL partition key never equals);
* ``emit.row`` — the plan's rows stemming from r (its join with its candidates, each
  present or not, through the uses' edges; null-extended where a left-joined use does not
  match) and the program's row emits at r, whose neighbours are the candidates, have the
  same outcome: the same rows, and no error where the plan raises none. The program's
  errors at r — its emit, its neighbours' arguments on r and on the candidates (a window
  evaluates them on every row) — are among the plan's at r: the join evaluated on r and
  its candidates and every use's edge on r (each use reads every view row).

The plan's output is the union over its centre rows of the rows stemming from each; the
program's is the union of each row's emits; errors are the union over rows of both. So the
two obligations for an arbitrary r prove the program for every view, at any size. An
obligation is proved when its negation is unsat.
"""
from __future__ import annotations

from typing import Optional, Sequence

import z3

from ..dsl import Program
from ..families import Match, get
from ..families.kit.diamond import field_type, inferred_types
from ..families.kit.family import ProofInstance
from ..ir.nodes import Join, Node
from .bags import outcomes_differ
from .exprs import ev
from .plan_encoder import PlanEncoder
from .program_encoder import ProgramEncoder
from .proof_engine import Models, Obligation, ProofSetupError
from .relations import Rel, Table, clean
from .values import NULL, V, ite, or_all, rows_not_distinct


def _view_columns(view: Node) -> list[tuple[str, str]]:
    names = list(view.names)
    if len({n.lower() for n in names}) != len(names):
        raise ProofSetupError("the view's column names repeat")
    types: list[Optional[str]] = [field_type(view, i) for i in range(len(names))]
    if None in types:
        inferred = inferred_types(view)
        types = [t if t is not None else inferred[i] for i, t in enumerate(types)]
    if None in types:
        raise ProofSetupError("a view column's type is unknown")
    return [(n, str(t)) for n, t in zip(names, types)]


class NeighbourProof:
    """The proof of one symbolic instance of a neighbour template (see the module doc)."""
    models = Models(neighbours=True)

    def __init__(self, inst: ProofInstance, m: Match, program: Program, emit_outputs: str):
        if not program.sort or not program.row_emits:
            raise ProofSetupError("a neighbour program sorts and emits per row")
        self.inst, self.m, self.p = inst, m, program
        self.view = m.source
        self.cols = _view_columns(self.view)
        self.pe = ProgramEncoder(program, self.cols, emit_outputs=emit_outputs)
        self.tops = [b.upper.top for b in m.branches]
        self.offsets = list(get(m.family).sort_offsets(m))
        if len(self.offsets) != len(self.tops) or self.offsets[0] != 0:
            raise ProofSetupError("the branches' sort offsets do not start at the centre")
        self.rank = self.pe.col_index(program.sort[0].column)
        self.joins = self._joins()

    def _joins(self) -> list[Join]:
        """The left-deep join tree, bottom-up: joins[i-1] brings in use i."""
        out, n = [], self.m.root
        while isinstance(n, Join):
            out.append(n)
            n = n.left
        out.reverse()
        if len(out) != len(self.tops) - 1:
            raise ProofSetupError("the uses are not joined one by one (a left-deep tree)")
        return out

    # -- pieces ----------------------------------------------------------------------
    def _row(self, tag: str) -> tuple[z3.BoolRef, list[V]]:
        (p, vals), = Table(self.view.op, self.cols, 1, tag=f"{tag}!").rows
        return p, vals

    def _leaf(self, i: int, row) -> Rel:
        """Use i's relation (its edge over the view) when the view is the one row ``row``."""
        enc = PlanEncoder(Table(self.view.op, self.cols, 0))
        enc.memo[id(self.view)] = Rel([row])
        return enc.encode(self.tops[i])

    def _tree(self, node: Node, leaves: dict[int, Rel]) -> Rel:
        enc = PlanEncoder(Table(self.view.op, self.cols, 0))
        for i, rel in leaves.items():
            enc.memo[id(self.tops[i])] = rel
        return enc.encode(node)

    def _candidate_facts(self, r, cands: dict[int, tuple]) -> list[z3.BoolRef]:
        """Each present candidate n_d is in r's partition with rank rank(r) + d; ranks are
        never NULL (the precondition)."""
        rv = r[1]
        facts = [z3.Not(rv[self.rank].null)]
        for d, (p, vals) in cands.items():
            facts.append(z3.Not(vals[self.rank].null))
            facts.append(z3.Implies(p, z3.And(rows_not_distinct(self.pe.key_of(vals), self.pe.key_of(rv)),
                                              vals[self.rank].v == rv[self.rank].v + d)))
        return facts

    # -- obligations -----------------------------------------------------------------
    def locality(self, i: int) -> Obligation:
        r = self._row("centre")
        cands = {d: self._row(f"cand{d}") for d in sorted(set(self.offsets[1:i]))}
        s = self._row("other")
        leaves = {0: self._leaf(0, r)}
        leaves.update({j: self._leaf(j, cands[self.offsets[j]]) for j in range(1, i)})
        j = self.joins[i - 1]
        left = self._tree(j.left, leaves)
        right = self._leaf(i, s)
        enc = PlanEncoder(Table(self.view.op, self.cols, 0))
        meets = [z3.And(lp, rp, enc.join_match(j, lv, rv)[0]) for lp, lv in left.rows for rp, rv in right.rows]
        sv = s[1]
        there = z3.And(rows_not_distinct(self.pe.key_of(sv), self.pe.key_of(r[1])),
                       sv[self.rank].v == r[1][self.rank].v + self.offsets[i])
        return Obligation(
            f"locality.{i}", f"use {i}: a view row that meets the centre row (and the earlier uses' rows at "
            f"their offsets) under its ON condition is in the centre's partition with rank + "
            f"{self.offsets[i]} — by the precondition, the one row at that offset",
            z3.Implies(z3.And(*self._candidate_facts(r, cands), z3.Not(sv[self.rank].null), or_all(meets)), there))

    def emit_row(self) -> Obligation:
        r = self._row("centre")
        cands = {d: self._row(f"cand{d}") for d in sorted(set(self.offsets[1:]))}
        leaves = {0: self._leaf(0, r)}
        leaves.update({j: self._leaf(j, cands[d]) for j, d in enumerate(self.offsets) if j})
        plan = self._tree(self.m.root, leaves)
        # every use's edge reads every view row, r among them
        on_r = [self._leaf(j, r).err for j in range(1, len(self.tops))]
        plan = Rel(plan.rows, or_all([plan.err, *on_r]))
        nbs, errs = self._neighbours(r, cands)
        em = self.pe.emit_row(r[0], r[1], {}, {}, nbs)
        prog = Rel(em.rows, or_all([em.err, *errs]))
        return Obligation(
            "emit.row", "every view row r: the plan's rows stemming from r (its join with the rows at the uses' "
                        "offsets, present or not, through the uses' edges) and the program's row emits at r, whose "
                        "neighbours are those rows, have the same outcome",
            z3.Implies(z3.And(*self._candidate_facts(r, cands)), z3.Not(outcomes_differ(plan, prog))))

    def _neighbours(self, r, cands) -> tuple[dict[str, V], list[z3.BoolRef]]:
        """nb.* at r: each neighbour's argument on the candidate at its offset (NULL when
        absent), and the errors of evaluating the arguments on r and the candidates."""
        vals: dict[str, V] = {}
        errs: list[z3.BoolRef] = []
        for nb in self.p.neighbours:
            if nb.offset not in cands:
                raise ProofSetupError(f"neighbour nb.{nb.name} at offset {nb.offset} is no use's")
            p, row = cands[nb.offset]
            x = ev(nb.arg, self.pe.ctx(row, self.pe.key_of(row), {}, {}))
            own = ev(nb.arg, self.pe.ctx(r[1], self.pe.key_of(r[1]), {}, {}))
            errs += [z3.And(p, x.err), z3.And(r[0], own.err)]
            vals[nb.name] = ite(p, clean(x), NULL)
        return vals, errs

    def obligations(self) -> list[Obligation]:
        return [self.locality(i) for i in range(1, len(self.tops))] + [self.emit_row()]


def neighbour_obligations(inst: ProofInstance, m: Match, program: Program, emit_outputs: str,
                          ) -> Sequence[Obligation]:
    return NeighbourProof(inst, m, program, emit_outputs).obligations()
