"""Unbounded proofs of the template programs the runtime runs, for every table size.

The program side of a proof is the program the family's template
(``superop.families.build_program``) returns for a symbolic instance the family declares
(``Family.proof_instances()``: SQL whose edge predicates and projections are
uninterpreted functions; matched by ``superop.families.first_match``, see
:mod:`superop.verify.instances`), encoded by the SAME
:class:`~superop.verify.program_encoder.ProgramEncoder` the bounded verifier uses; the
plan side comes from the instance's IR through the SAME
:class:`~superop.verify.plan_encoder.PlanEncoder` (a GROUP BY's input edge over one
symbolic row, the group row of one key, the edges above it and the union / join of one
key's groups via seeded sub-plans). Folds are :mod:`superop.verify.folds` on both sides.

Induction over the input rows, per key κ (a nullable key value; NULL is its own
partition and never joins):
* state — the plan's per-group fold of every aggregate call, "group non-empty" per
  aggregate, for Min & Join "the group was matched by some row", and "some row of κ
  raised"; the program's accumulators, flags, "partition non-empty", "some row raised";
* invariant — equalities between plan components and program components, paired by
  function and checked on one row (a wrong pairing only makes the proof fail), guarded
  by "κ is not NULL" where only that holds; "an empty group / partition has initial
  state"; program errors imply plan errors;
* ``fold.base`` (empty input) and ``fold.step`` (one arbitrary row of any key);
* ``locality`` (joins): a group / row can only be matched by the other side's group of
  its own key (so the join decomposes per key);
* ``emit`` (DU, DJ) / ``emit.partition`` (MJ): for every key, given the invariant, the
  plan's rows stemming from κ and the program's partition emits have the same outcome
  (errors as outcomes: the program may not raise where the plan does not);
* ``running.step`` (streaming row emits that read state): in the program's sort order the
  running value after any prefix equals the value after the partition's first row
  (the sorted-prefix lemma), so every row sees the final value;
* ``emit.row`` (MJ): for every row r of key κ, the plan's rows stemming from r and the
  program's row emits of r agree.
An obligation is proved when its negation is unsat; ``unknown`` (timeout) never counts.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Optional

import z3
from sqlglot import exp

from .. import families
from ..families import Match
from ..families.kit.family import JOIN, JOIN_BACK, SELF_EXISTS, UNION
from ..families.kit.diamond import key_sources
from ..families.kit.family import ProofInstance
from ..ir.nodes import Aggregate, Scan, resolve_field
from ..synth.dsl import STREAMING, Program
from . import folds
from .bags import outcomes_differ
from .exists_proofs import exists_obligations
from .exprs import Ctx, encoding
from .instances import find_by, match_of, program_of
from .aggregates import agg_call_func, agg_calls
from .plan_encoder import PlanEncoder, pair_rows, side_rows
from .program_encoder import GUARDED, PartitionState, ProgramEncoder
from .relations import Rel, Table
from .result import REFUTED, UNKNOWN, UNSUPPORTED, VERIFIED, Result, Unsupported
from .values import FALSE, TRUE, V, fresh, not_distinct, or_all, rows_not_distinct


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


class Unmodelled(Exception):
    """The instance is of a shape the unbounded proof does not model (no claim either way)."""


class ProofSetupError(Exception):
    """The instance / program cannot be set up for a proof (reported as a failed proof)."""


def _valid(formula: z3.BoolRef, timeout_ms: int = 5000) -> bool:
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(z3.Not(formula))
    return s.check() == z3.unsat


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
# the states
# ---------------------------------------------------------------------------
@dataclass
class PlanState:
    calls: dict            # (aggregate index, call index) -> FoldState
    groups: dict           # aggregate index -> Bool: the group is non-empty
    matched: Optional[z3.BoolRef]   # MJ: the aggregate's group was matched by some row
    err: z3.BoolRef        # some row of the key raised
    pair_err: Optional[z3.BoolRef] = None   # MJ: the join's residual raised on (group, some row)


@dataclass
class _RowView:
    """One symbolic input row as both sides see it."""
    present: z3.BoolRef
    vals: list
    in_key: z3.BoolRef                       # present and the row's partition key is κ
    plan_member: dict                        # aggregate index -> Bool (after its input edge)
    plan_args: dict                          # (aggregate, call) -> V | None
    plan_err: z3.BoolRef                     # errors of the aggregates' input edges on the row
    prog: object                             # RowContribution


class _Proof:
    def __init__(self, inst: ProofInstance, d: Match, program: Program, emit_outputs: str):
        self.inst, self.d, self.p = inst, d, program
        why = unmodelled(program)
        if why:
            raise Unsupported(why)
        src = d.source
        if not isinstance(src, Scan):
            raise ProofSetupError("the instance's shared source must be a base-table scan")
        self.scan = src
        self.pe = ProgramEncoder(program, src.columns, emit_outputs=emit_outputs)
        self.aggs: list[Aggregate] = [b.agg for b in d.branches if b.agg is not None]
        self.lowers = [b.lower for b in d.branches if b.agg is not None]
        probe = Table(src.table, src.columns, 1, tag="probe!")
        kinds = dict(zip([c for c, _ in src.columns], zip(probe.kinds, probe.widths)))
        if not program.keys:
            raise ProofSetupError("the program has no partition key")
        self.kappa = [self._key_var(k, *kinds[k], "kappa") for k in program.keys]
        self.key_maps = []                    # per aggregate: its key positions -> κ positions
        for agg in self.aggs:
            pos = key_sources(agg, src)
            src_keys = None if pos is None else [src.names[i] for i in pos]
            if src_keys is None or any(k not in program.keys for k in src_keys):
                # e.g. the pivot join's fixed keys: grouped by, then selected by constants
                raise Unmodelled(f"the unbounded proof does not model a grouping key {src_keys} that "
                                 f"is not a partition key {list(program.keys)}")
            self.key_maps.append([program.keys.index(k) for k in src_keys])
        self.calls = [[agg_call_func(c)[0] for c in agg_calls(agg)] for agg in self.aggs]
        if any(f == "count_distinct" for fs in self.calls for f in fs):
            raise ProofSetupError("count(DISTINCT) is not a constant-state fold")
        if any(f in ("max_by", "min_by") for fs in self.calls for f in fs):
            # the tie order is modelled over K rows only (folds.extremum_by)
            raise ProofSetupError("max_by/min_by: ties are modelled by the bounded proof only")
        self.family = d.family
        # how the family's instances decompose per key (Family.proof_shape)
        self.shape = families.get(d.family).proof_shape
        if self.shape not in (UNION, JOIN, JOIN_BACK):
            raise Unmodelled(f"the unbounded proof does not model {d.family} instances")
        self.mj_agg = d.agg_side.pos if self.shape == JOIN_BACK and d.agg_side is not None else None
        self._probe_kinds(probe)

    @staticmethod
    def _key_var(name: str, kind: str, width, tag: str) -> V:
        return V(fresh(kind, f"{tag}!{name}"), z3.Bool(f"{tag}!{name}!null"), kind, FALSE, width)

    def _probe_kinds(self, probe: Table) -> None:
        view = self.row(probe, self.kappa)
        self.plan_kinds = {}
        for (i, c), x in view.plan_args.items():
            self.plan_kinds[(i, c)] = (None, None) if x is None else folds.arg_kind([(TRUE, x)])
        self.prog_kinds = self.pe.arg_kinds([view.prog])

    def kappa_of(self, i: int, kappa) -> list[V]:
        return [kappa[j] for j in self.key_maps[i]]

    # -- one row --------------------------------------------------------------
    def row(self, table: Table, kappa) -> _RowView:
        (present, vals), = table.rows
        enc = PlanEncoder(table)
        member, args, errs = {}, {}, []
        for i, agg in enumerate(self.aggs):
            rel = enc.encode(agg.child)
            (p_i, v_i), = rel.rows
            keys, cargs, e = enc.agg_inputs(agg, v_i)
            member[i] = z3.And(p_i, rows_not_distinct(keys, self.kappa_of(i, kappa)))
            for c, (_f, x) in enumerate(cargs):
                args[(i, c)] = x
            errs += [rel.err, z3.And(p_i, e)]
        if self.shape == JOIN_BACK:
            # the rows' own path to the join is evaluated on every row too
            j = self.d.root
            r_node, side = (j.right, "right") if self.mj_agg == 0 else (j.left, "left")
            rel = enc.encode(r_node)
            (p_r, v_r), = rel.rows
            errs += [rel.err, z3.And(p_r, enc.join_key_err(j, side, v_r))]
        in_key = z3.And(present, rows_not_distinct(self.pe.key_of(vals), kappa))
        return _RowView(present, vals, in_key, member, args, or_all(errs), self.pe.contribution(vals))

    # -- plan state -----------------------------------------------------------
    def plan_initial(self) -> PlanState:
        calls = {(i, c): folds.init(f, *self.plan_kinds[(i, c)])
                 for i, fs in enumerate(self.calls) for c, f in enumerate(fs)}
        mj = self.shape == JOIN_BACK
        return PlanState(calls, {i: FALSE for i in range(len(self.aggs))},
                         FALSE if mj else None, FALSE, FALSE if mj else None)

    def plan_symbolic(self, name: str) -> PlanState:
        calls = {(i, c): folds.symbolic(f, *self.plan_kinds[(i, c)], f"{name}!call!{i}!{c}")
                 for i, fs in enumerate(self.calls) for c, f in enumerate(fs)}
        mj = self.shape == JOIN_BACK
        return PlanState(calls, {i: z3.Bool(f"{name}!group!{i}") for i in range(len(self.aggs))},
                         z3.Bool(f"{name}!matched") if mj else None, z3.Bool(f"{name}!err"),
                         z3.Bool(f"{name}!pair_err") if mj else None)

    def plan_step(self, s: PlanState, r: _RowView, by_row: Optional[tuple]) -> PlanState:
        """One row; ``by_row`` (MJ): (the row matches the final aggregate row of its key,
        the residual raises on that pair)."""
        calls = {(i, c): folds.step(st, r.plan_member[i], r.plan_args[(i, c)]) for (i, c), st in s.calls.items()}
        groups = {i: z3.Or(g, r.plan_member[i]) for i, g in s.groups.items()}
        err = z3.Or(s.err, z3.And(r.in_key, r.plan_err))
        if s.matched is None:
            return PlanState(calls, groups, None, err)
        return PlanState(calls, groups, z3.Or(s.matched, z3.And(r.in_key, by_row[0])), err,
                         z3.Or(s.pair_err, z3.And(r.in_key, by_row[1])))

    # -- the plan above the GROUP BYs, for one key --------------------------------
    def group_seed(self, i: int, s: PlanState, kappa, enc: PlanEncoder) -> Rel:
        agg = self.aggs[i]
        finals = [folds.finalize(s.calls[(i, c)]) for c in range(len(self.calls[i]))]
        kv = self.kappa_of(i, kappa)
        in_fields = agg.child.fields
        key_idx = []
        for k in agg.keys:
            if not isinstance(k, exp.Column):
                raise ProofSetupError(f"computed grouping key {k.sql()}")
            key_idx.append(resolve_field(in_fields, k))

        def col(c: exp.Column) -> V:
            try:
                j = resolve_field(in_fields, c)
            except KeyError as err:
                raise Unsupported(str(err)) from None
            if j not in key_idx:
                raise Unsupported(f"column {c.sql()} is not a grouping key")
            return kv[key_idx.index(j)]
        vals, err = enc.group_row(agg, Ctx(col), finals)
        g = s.groups[i]
        return Rel([(g, vals)], z3.And(g, err))

    def seeded(self, s: PlanState, kappa, table: Table) -> PlanEncoder:
        enc = PlanEncoder(table)
        for i, agg in enumerate(self.aggs):
            enc.memo[id(agg)] = self.group_seed(i, s, kappa, enc)
        return enc

    # -- the program ------------------------------------------------------------
    def prog_step(self, s: PartitionState, r: _RowView) -> PartitionState:
        return self.pe.step(s, r.in_key, r.prog)

    def prog_partition(self, s: PartitionState, kappa) -> Rel:
        accs, flags, ferr = self.pe.final_values(s)
        em = self.pe.emit_partition(s.seen, kappa, accs, flags)
        return Rel(em.rows, or_all([em.err, z3.And(s.seen, ferr), s.err]))

    # -- pairing and the invariant ------------------------------------------------
    def pair(self, r: _RowView, matched_by_row, extra_conds=()) -> list:
        """[(plan component, program component, condition)] — candidates by function,
        each checked on one arbitrary row from one arbitrary common state."""
        nonnull = z3.And(*[z3.Not(k.null) for k in self.kappa])
        conds = [TRUE, nonnull, *extra_conds]
        pairs, used = [], set()
        for (i, c), f in ((ic, self.calls[ic[0]][ic[1]]) for ic in sorted(self.plan_kinds)):
            common = folds.symbolic(f, *self.plan_kinds[(i, c)], f"pair!{i}!{c}")
            for j, a in enumerate(self.p.accumulators):
                if ("acc", j) in used or a.func != f or self.prog_kinds[j] != self.plan_kinds[(i, c)]:
                    continue
                mine = folds.step(common, r.plan_member[i], r.plan_args[(i, c)])
                theirs = folds.step(common, z3.And(r.in_key, r.prog.acc_guard[j]), r.prog.acc_arg[j])
                hit = next((cd for cd in conds if _valid(z3.Implies(cd, folds.state_eq(mine, theirs)))), None)
                if hit is not None:
                    pairs.append((("call", i, c), ("acc", j), hit))
                    used.add(("acc", j))
                    break
        b = z3.Bool("pair!b")
        exists = [(("group", i), r.plan_member[i]) for i in range(len(self.aggs))]
        if matched_by_row is not None:
            exists.append((("matched",), z3.And(r.in_key, matched_by_row)))
        prog_exists = [(("flag", j), z3.And(r.in_key, g)) for j, g in enumerate(r.prog.flag_guard)]
        prog_exists.append((("seen",), r.in_key))
        for comp, m in exists:
            for pcomp, pm in prog_exists:
                hit = next((cd for cd in conds if _valid(z3.Implies(cd, z3.Or(b, m) == z3.Or(b, pm)))), None)
                if hit is not None:
                    pairs.append((comp, pcomp, hit))
                    break
        # "some row ..." components no row of a NULL key can satisfy (a NULL key never joins)
        self.never_null = [(("plan",) + comp) for comp, m in exists
                           if _valid(z3.Implies(z3.Not(nonnull), z3.Not(m)))]
        self.never_null += [(("prog",) + pcomp) for pcomp, pm in prog_exists
                            if _valid(z3.Implies(z3.Not(nonnull), z3.Not(pm)))]
        return pairs

    @staticmethod
    def _plan_comp(s: PlanState, comp):
        if comp[0] == "call":
            return s.calls[(comp[1], comp[2])]
        if comp[0] == "group":
            return s.groups[comp[1]]
        return s.matched

    @staticmethod
    def _prog_comp(s: PartitionState, comp):
        if comp[0] == "acc":
            return s.accs[comp[1]]
        if comp[0] == "flag":
            return s.flags[comp[1]]
        return s.seen

    def invariant(self, pairs, sp: PlanState, sq: PartitionState) -> z3.BoolRef:
        parts = []
        for a, b, cond in pairs:
            x, y = self._plan_comp(sp, a), self._prog_comp(sq, b)
            eq = folds.state_eq(x, y) if isinstance(x, folds.FoldState) else (x == y)
            parts.append(z3.Implies(cond, eq))
        init_p, init_q = self.plan_initial(), self.pe.initial(self.prog_kinds)
        for i in range(len(self.aggs)):
            empty = [folds.state_eq(sp.calls[(i, c)], init_p.calls[(i, c)]) for c in range(len(self.calls[i]))]
            parts.append(z3.Implies(z3.Not(sp.groups[i]), z3.And(*empty) if empty else TRUE))
        empty = [folds.state_eq(a, b) for a, b in zip(sq.accs, init_q.accs)] + [z3.Not(f) for f in sq.flags]
        parts.append(z3.Implies(z3.Not(sq.seen), z3.And(z3.Not(sq.err), *empty)))
        parts.append(z3.Implies(sq.err, z3.Or(sp.err, sp.pair_err) if sp.pair_err is not None else sp.err))
        null_key = z3.Or(*[k.null for k in self.kappa])
        for comp in self.never_null:
            x = self._plan_comp(sp, comp[1:]) if comp[0] == "plan" else self._prog_comp(sq, comp[1:])
            parts.append(z3.Implies(null_key, z3.Not(x)))
        return z3.And(*parts)

    # -- obligations ---------------------------------------------------------------
    def obligations(self) -> list[Obligation]:
        t = Table(self.scan.table, self.scan.columns, 1, tag="r!")
        r = self.row(t, self.kappa)
        obs: list[Obligation] = []
        final_plan = None
        by_row = matched_by_row = None
        if self.shape == JOIN_BACK:
            # row r against the aggregate row of its key with its FINAL values: matched?
            # the residual evaluated (both rows present, equal keys) and raising?
            final_plan = self.plan_symbolic("final")
            m, pa, pr, eq, rerr, aerr = self.mj_match(final_plan, self.kappa, t)
            matched_by_row = m
            # the plan raises for κ if the residual raises on a pair it forms, or if κ's
            # aggregate row raises (its upper edge: the program may evaluate a key-only σ
            # above γ per row, see Min & Join's "some row matched")
            by_row = (m, z3.Or(z3.And(pa, pr, eq if self.d.root.equi else TRUE, rerr), aerr))
            survives = [pa]       # "κ's aggregate row exists" (final): flags may pair only there
        pairs = self.pair(r, matched_by_row, survives if self.shape == JOIN_BACK else [])
        self.pairs = pairs
        sp, sq = self.plan_symbolic("S"), self.pe.symbolic_state(self.prog_kinds, "Q")
        inv = self.invariant(pairs, sp, sq)
        obs.append(Obligation(
            "fold.base", "empty input: every fold is initial, no group, no partition, no error; the "
            f"invariant holds ({len(pairs)} plan/program pairs: "
            + ", ".join(f"{'.'.join(map(str, a))}={'.'.join(map(str, b))}" for a, b, _ in pairs) + ")",
            self.invariant(pairs, self.plan_initial(), self.pe.initial(self.prog_kinds))))
        obs.append(Obligation(
            "fold.step", "one more row of any key: the GROUP BYs fold it into their group iff it passes "
            "their input edge; the program folds it into its partition under each accumulator's guard; "
            "the invariant is preserved" + (" (the row is in the input: its groups are non-empty in the final "
                                            "state it is matched against)" if final_plan is not None else ""),
            z3.Implies(z3.And(inv, *self._in_final(final_plan, r)),
                       self.invariant(pairs, self.plan_step(sp, r, by_row), self.prog_step(sq, r)))))
        if self.shape == JOIN:
            obs.append(self.dj_locality())
        if self.shape == JOIN_BACK:
            obs.append(self.mj_locality())
        if self.shape in (UNION, JOIN):
            plan = self.seeded(sp, self.kappa, t).encode(self.d.root)
            plan = Rel(plan.rows, z3.Or(plan.err, sp.err))
            prog = self.prog_partition(sq, self.kappa)
            obs.append(Obligation(
                "emit", "every key κ: the rows the plan outputs for κ's groups (through the upper edges and "
                f"the {'union' if self.shape == UNION else self.d.join_kind + ' join'}) and the program's "
                "partition emits have the same outcome, given the invariant",
                z3.Implies(inv, z3.Not(outcomes_differ(plan, prog)))))
            return obs
        # an aggregate joined back to its rows
        hyp_final = z3.And(inv, self._same_final(final_plan, sp))
        obs.append(Obligation(
            "emit.partition", "every key κ: the aggregate-side rows the plan outputs for κ (null-extended, "
            "semi or anti, decided by 'some row matched') and the program's partition emits agree",
            z3.Implies(hyp_final, z3.Not(outcomes_differ(self.mj_key_rows(sp, t),
                                                         self.prog_partition(sq, self.kappa))))))
        used = self.pe.state_read_by_row_emits()
        if self.p.memory == STREAMING and used:
            obs.append(self.running_step(used))
        obs.append(self.mj_row_obligation(sp, sq, hyp_final, t, r, by_row))
        return obs

    @staticmethod
    def _in_final(final: Optional[PlanState], r: _RowView) -> list:
        """A row of the input is folded into the final state too."""
        if final is None:
            return []
        return [z3.Implies(r.plan_member[i], final.groups[i]) for i in final.groups]

    def _same_final(self, a: PlanState, b: PlanState) -> z3.BoolRef:
        eqs = [folds.state_eq(a.calls[k], b.calls[k]) for k in a.calls]
        eqs += [a.groups[i] == b.groups[i] for i in a.groups]
        return z3.And(*eqs)

    # -- joins -----------------------------------------------------------------------
    def _side_row(self, enc: PlanEncoder, node) -> tuple:
        rel = enc.encode(node)
        if len(rel.rows) != 1:
            raise ProofSetupError("a join input is not one row per key / per input row")
        return rel.rows[0], rel.err

    def dj_locality(self) -> Obligation:
        j = self.d.root
        t = Table(self.scan.table, self.scan.columns, 1, tag="loc!")
        k1 = [self._key_var(k, v.kind, v.width, "kappa1") for k, v in zip(self.p.keys, self.kappa)]
        k2 = [self._key_var(k, v.kind, v.width, "kappa2") for k, v in zip(self.p.keys, self.kappa)]
        s1, s2 = self.plan_symbolic("L"), self.plan_symbolic("R")
        (pl, vl), _ = self._side_row(self.seeded(s1, k1, t), j.left)
        (pr, vr), _ = self._side_row(self.seeded(s2, k2, t), j.right)
        m, _, _ = PlanEncoder(t).join_match(j, vl, vr)
        return Obligation("locality", "a left group of key κ1 and a right group of key κ2 satisfy the ON "
                          "condition only if κ1 and κ2 are the same key (so the join is a union over keys)",
                          z3.Implies(z3.And(pl, pr, m), rows_not_distinct(k1, k2)))

    def mj_match(self, s: PlanState, kappa, t: Table):
        """(the join matches the aggregate row of κ with row r's join-side row, error of
        evaluating the residual on that pair) for the symbolic row of ``t``."""
        j = self.d.root
        a_node = j.left if self.mj_agg == 0 else j.right
        r_node = j.right if self.mj_agg == 0 else j.left
        (pa, va), aerr = self._side_row(self.seeded(s, kappa, t), a_node)
        (pr, vr), _ = self._side_row(PlanEncoder(t), r_node)
        lv, rv = (va, vr) if self.mj_agg == 0 else (vr, va)
        m, eq, rerr = PlanEncoder(t).join_match(j, lv, rv)
        return z3.And(pr, m), pa, pr, eq, rerr, aerr

    def mj_locality(self) -> Obligation:
        t = Table(self.scan.table, self.scan.columns, 1, tag="loc!")
        (p, vals), = t.rows
        s = self.plan_symbolic("A")
        m, pa, pr, _, _, _ = self.mj_match(s, self.kappa, t)
        return Obligation("locality", "the aggregate row of key κ and the join-side row of input row r "
                          "satisfy the ON condition only if r's partition key is κ",
                          z3.Implies(z3.And(p, pa, m), rows_not_distinct(self.pe.key_of(vals), self.kappa)))

    def mj_key_rows(self, s: PlanState, t: Table) -> Rel:
        j = self.d.root
        a_node = j.left if self.mj_agg == 0 else j.right
        enc = self.seeded(s, self.kappa, t)
        (pa, va), aerr = self._side_row(enc, a_node)
        side = "left" if self.mj_agg == 0 else "right"
        other = len((j.right if self.mj_agg == 0 else j.left).fields)
        rows = side_rows(j.kind, side, [(pa, va)], [z3.And(pa, s.matched)], other)
        kerr = z3.And(pa, enc.join_key_err(j, side, va))
        return Rel(rows, or_all([aerr, kerr, s.err, s.pair_err]))

    def mj_row_obligation(self, sp: PlanState, sq: PartitionState, inv, t: Table, r: _RowView,
                          by_row: tuple) -> Obligation:
        j = self.d.root
        side = "left" if self.mj_agg == 0 else "right"
        row_side = "right" if side == "left" else "left"
        a_node = j.left if self.mj_agg == 0 else j.right
        r_node = j.right if self.mj_agg == 0 else j.left
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

    def running_step(self, used: set) -> Obligation:
        t0 = Table(self.scan.table, self.scan.columns, 1, tag="first!")
        t1 = Table(self.scan.table, self.scan.columns, 1, tag="next!")
        (p0, v0), = t0.rows
        (p1, v1), = t1.rows
        m0 = z3.And(p0, rows_not_distinct(self.pe.key_of(v0), self.kappa))
        m1 = z3.And(p1, rows_not_distinct(self.pe.key_of(v1), self.kappa))
        c0, c1 = self.pe.contribution(v0), self.pe.contribution(v1)
        first = self.pe.step(self.pe.initial(self.prog_kinds), m0, c0)
        x = self.pe.symbolic_state(self.prog_kinds, "run")
        names = {n for ns, n in used}

        def same(s) -> z3.BoolRef:
            parts = []
            for j, a in enumerate(self.p.accumulators):
                if a.name in names:
                    parts.append(not_distinct(folds.finalize(s.accs[j]), folds.finalize(first.accs[j])))
            for j, f in enumerate(self.p.flags):
                if f.name in names:
                    parts.append(s.flags[j] == first.flags[j])
            return z3.And(*parts) if parts else TRUE
        after = self.pe.step(x, m1, c1)
        sorted_ = self.pe.sort_before(v0, v1, TRUE)
        return Obligation(
            "running.step", "sorted-prefix lemma: in the program's sort order "
            f"({', '.join(s.pretty() for s in self.p.sort) or 'none'}), if the running values of "
            f"{', '.join(sorted(names))} after a prefix equal those after the partition's first row, they "
            "still do after any later row of the partition; hence every row sees the final values",
            z3.Implies(z3.And(m0, m1, sorted_, same(x)), same(after)))


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------
def obligations(inst: ProofInstance, program: Optional[Program] = None,
                emit_outputs: str = GUARDED) -> tuple[list[Obligation], Program]:
    m = match_of(inst)
    prog = program if program is not None else program_of(inst)
    with encoding(ansi=True, functions=inst.functions):
        if families.get(m.family).proof_shape == SELF_EXISTS:
            return [Obligation(n, t, f) for n, t, f in exists_obligations(m, prog, emit_outputs)], prog
        return _Proof(inst, m, prog, emit_outputs).obligations(), prog


# (instance name, instance SQL, functions, program hash, emit_outputs, timeout) -> Result: a
# proof is a pure function of these (and of this code), so one process proves each once
# (the nightly job, the built-in catalog and the tests share the work). Unknown is not kept.
_PROVED: dict[str, Result] = {}


def prove_instance(inst: ProofInstance, timeout_ms: int = 20000, *, program: Optional[Program] = None,
                   emit_outputs: str = GUARDED) -> Result:
    """Prove the template program of ``inst`` (default: what the family's template builds
    for it now) for every table size. ``verified`` only if every obligation is proved."""
    from .certificate import program_sha256, sha256_of
    t0 = time.perf_counter()
    prog = program
    try:
        prog = program if program is not None else program_of(inst)
        why = unmodelled(prog)
        if why:     # no claim, either way, about what the proof does not model
            return Result(UNSUPPORTED, method="inductive", K=None, seconds=time.perf_counter() - t0,
                          reason=why, details=_details(inst, prog, [], emit_outputs))
        key = sha256_of([inst.name, inst.sql, inst.functions, program_sha256(prog), emit_outputs, timeout_ms])
        if key in _PROVED:
            return copy.deepcopy(_PROVED[key])
        obs, prog = obligations(inst, prog, emit_outputs)
    except Unmodelled as e:
        return Result(UNSUPPORTED, method="inductive", K=None, seconds=time.perf_counter() - t0,
                      reason=str(e), details=_details(inst, prog, [], emit_outputs))
    except (ProofSetupError, Unsupported, ValueError) as e:
        return Result(REFUTED if isinstance(e, ProofSetupError) else UNKNOWN, method="inductive", K=None,
                      seconds=time.perf_counter() - t0, reason=f"cannot set up the proof: {e}",
                      details=_details(inst, prog, [], emit_outputs))
    except Exception as e:  # the template refuses its own instance (TemplateError) ...
        return Result(REFUTED, method="inductive", K=None, seconds=time.perf_counter() - t0,
                      reason=f"the template builder refuses the instance: {type(e).__name__}: {e}",
                      details=_details(inst, prog, [], emit_outputs))
    _prove(obs, timeout_ms)
    statuses = {o.status for o in obs}
    status = VERIFIED if statuses == {"proved"} else (REFUTED if "failed" in statuses else UNKNOWN)
    failed = [o.name for o in obs if o.status != "proved"]
    reason = (f"all {len(obs)} obligations proved for every table size" if status == VERIFIED
              else f"obligations not proved: {', '.join(failed)}")
    det = _details(inst, prog, obs, emit_outputs)
    det["program_sha256"] = program_sha256(prog)
    r = Result(status, method="inductive", K=None, seconds=time.perf_counter() - t0, reason=reason,
               details=det)
    if status != UNKNOWN:
        _PROVED[key] = copy.deepcopy(r)
    return r


def unmodelled(program: Program) -> str:
    """Why the unbounded proof cannot speak about ``program`` ('' when it can): it models
    one partition's fold of arbitrary rows, not neighbours (``nb.*``: other rows at sort
    offsets), preconditions on the input (``requires``) or the one keyless partition
    (a global aggregate, present over an empty input)."""
    if program.neighbours:
        return "the unbounded proof does not model neighbours (nb.*: LAG/LEAD)"
    if program.requires:
        return "the unbounded proof does not model input preconditions (requires)"
    if not program.keys:
        return "the unbounded proof does not model a keyless (global-aggregate) program"
    return ""


def _details(inst: ProofInstance, prog, obs, emit_outputs) -> dict:
    return {"template": inst.name, "instance_sql": inst.sql, "functions": dict(inst.functions),
            "obligations": [o.to_json() for o in obs], "assumptions": list(inst.assumptions),
            "covers": inst.covers.to_json(), "emit_outputs": emit_outputs,
            "program": prog.to_json() if prog is not None else None, "claim": claim(inst)}


def prove_template(family: str, join_kind: Optional[str] = None, agg_left: bool = True,
                   branches: int = 2, func: str = "min", timeout_ms: int = 20000, part: str = "",
                   **kw) -> Result:
    """:func:`prove_instance` of the instance with these parameters
    (:func:`superop.verify.instances.find_by`)."""
    return prove_instance(find_by(family, join_kind, agg_left, branches, func, part), timeout_ms, **kw)


def claim(inst: ProofInstance) -> str:
    return (f"For every input table (any size, NULLs, duplicates) and every deterministic edge predicate and "
            f"projection (uninterpreted, possibly raising), the program the {inst.family} template builds for "
            f"the symbolic instance {inst.name} has the same outcome as the instance's query: the same bag of "
            f"rows, and no error where the query raises none. It stands for every instance its covers record "
            f"describes ({inst.covers.describe()}) under the assumptions listed.")
