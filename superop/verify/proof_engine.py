"""The generic engine of the unbounded template proofs: induction over the input rows.

The program side of a proof is encoded by the SAME
:class:`~superop.verify.program_encoder.ProgramEncoder` the bounded verifier uses; the
plan side comes from the instance's IR through the SAME
:class:`~superop.verify.plan_encoder.PlanEncoder` (a GROUP BY's input edge over one
symbolic row, the group row of one key, the edges above it via seeded sub-plans). Folds
are :mod:`superop.verify.folds` on both sides.

Induction over the input rows, per key κ (a nullable key value; NULL is its own
partition and never joins):
* state — the plan's per-group fold of every aggregate call, "group non-empty" per
  aggregate, "some row of κ raised" (and what the shape tracks besides, e.g. "the group
  was matched by some row"); the program's accumulators, flags, "partition non-empty",
  "some row raised";
* invariant — equalities between plan components and program components, paired by
  function and checked on one row (a wrong pairing only makes the proof fail), guarded
  by "κ is not NULL" where only that holds; "an empty group / partition has initial
  state"; program errors imply plan errors;
* ``fold.base`` (empty input) and ``fold.step`` (one arbitrary row of any key);
* ``running.step`` (streaming row emits that read state): in the program's sort order the
  running value after any prefix equals the value after the partition's first row
  (the sorted-prefix lemma), so every row sees the final value.
The obligations after these — what the plan outputs for one key against the program's
emits — are the shape's (:mod:`superop.verify.proof_shapes`). Nothing here names a family.
An obligation is proved when its negation is unsat; ``unknown`` (timeout) never counts.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

import z3
from sqlglot import exp

from ..dsl import Program
from ..families import Match, get
from ..families.kit.diamond import key_sources
from ..families.kit.family import ProofInstance
from ..ir.nodes import Aggregate, Scan, resolve_field
from . import folds
from .aggregates import agg_call_func, agg_calls
from .exprs import Ctx, ev
from .plan_encoder import PlanEncoder
from .program_encoder import PartitionState, ProgramEncoder
from .relations import Rel, Table, clean
from .result import Unsupported
from .solving import RestartingSolver
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


def valid(formula: z3.BoolRef, timeout_ms: int = 5000) -> bool:
    s = RestartingSolver(timeout_ms, make=z3.Solver)
    s.add(z3.Not(formula))
    return s.check() == z3.unsat


def prove_all(obs: list[Obligation], timeout_ms: int) -> None:
    for ob in obs:
        t0 = time.perf_counter()
        s = RestartingSolver(timeout_ms, make=z3.Solver)
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


@dataclass(frozen=True)
class Models:
    """What a proof shape models beyond one partition's fold of arbitrary rows."""
    neighbours: bool = False      # nb.*: other rows at sort offsets, under RowNumber (requires)
    keyless: bool = False         # the one partition of a program without keys


def unmodelled(program: Program, models: Models = Models()) -> str:
    """Why the unbounded proof of a shape modelling ``models`` cannot speak about
    ``program`` ('' when it can): neighbours (``nb.*``) and input preconditions
    (``requires``) only where the shape reads rows at sort offsets, the one keyless
    partition (present over an empty input) only where the shape has no key."""
    if program.neighbours and not models.neighbours:
        return "the unbounded proof does not model neighbours (nb.*: LAG/LEAD)"
    if program.requires and not models.neighbours:
        return "the unbounded proof does not model input preconditions (requires)"
    if not program.keys and not models.keyless and not models.neighbours:
        return "the unbounded proof does not model a keyless (global-aggregate) program"
    return ""


# the program's fold of a plan aggregate when they differ: COUNT(DISTINCT) runs sorted
_PROGRAM_FOLD = {"count_distinct": "count_distinct_sorted"}


def _no_column(c: exp.Column) -> V:
    raise Unsupported(f"a fixed key's constant reads column {c.sql()}")


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
class RowView:
    """One symbolic input row as both sides see it."""
    present: z3.BoolRef
    vals: list
    in_key: z3.BoolRef                       # present and the row's partition key is κ
    plan_member: dict                        # aggregate index -> Bool (after its input edge)
    plan_args: dict                          # (aggregate, call) -> V | None
    plan_err: z3.BoolRef                     # errors of the aggregates' input edges on the row
    prog: object                             # RowContribution


@dataclass
class FinalMatch:
    """How the one symbolic row r meets its key's group with the group's FINAL values, in
    a shape that joins the groups with the input rows."""
    state: PlanState           # the final plan state of r's key
    by_row: tuple              # (r matches that group's row, the plan raises on that pair or on the row)
    matched: z3.BoolRef        # r matches that group's row
    survives: list             # conditions under which flags may be paired ("κ's group row exists")


@dataclass
class Induction:
    """What the shape's obligations read: the one symbolic row (of table ``t``), the
    symbolic plan and program states, the invariant between them and the final match."""
    t: Table
    r: RowView
    sp: PlanState
    sq: PartitionState
    inv: z3.BoolRef
    final: Optional[FinalMatch]


class TemplateProof:
    """The induction over the input rows of one symbolic instance, per key κ: the plan's
    and the program's states, their pairing into an invariant, ``fold.base`` and
    ``fold.step``. What the plan outputs for a key after the GROUP BYs — and so the
    obligations that end the proof — depends on the family's shape: a subclass of
    :mod:`superop.verify.proof_shapes` says (:meth:`shape_obligations`), and whether the
    plan state tracks the matches of a join of the groups with the input rows
    (:attr:`tracks_matches`, :meth:`row_errors`, :meth:`final_match`)."""
    tracks_matches = False     # PlanState.matched / pair_err are components of the state
    models = Models()          # what the shape models beyond one keyed partition's fold
    global_groups = False      # every group exists, also over no row (aggregates without a key)

    @classmethod
    def models_for(cls, program: Program) -> Models:
        """What the shape models for ``program`` (a shape may model a keyless program too)."""
        return cls.models

    def __init__(self, inst: ProofInstance, d: Match, program: Program, emit_outputs: str):
        self.inst, self.d, self.p = inst, d, program
        self.models = self.models_for(program)
        why = unmodelled(program, self.models)
        if why:
            raise Unsupported(why)
        src = d.source
        if not isinstance(src, Scan):
            raise ProofSetupError("the instance's shared source must be a base-table scan")
        self.scan = src
        self.pe = ProgramEncoder(program, src.columns, emit_outputs=emit_outputs)
        agg_branches = [i for i, b in enumerate(d.branches) if b.agg is not None]
        self.aggs: list[Aggregate] = [d.branches[i].agg for i in agg_branches]   # type: ignore[misc]
        self.tops = [d.branches[i].upper.top for i in agg_branches]
        self.lowers = [d.branches[i].lower for i in agg_branches]
        probe = Table(src.table, src.columns, 1, tag="probe!")
        kinds = dict(zip([c for c, _ in src.columns], zip(probe.kinds, probe.widths)))
        if not program.keys and not self.models.keyless:
            raise ProofSetupError("the program has no partition key")
        self.kappa = [self._key_var(k, *kinds[k], "kappa") for k in program.keys]
        self.key_maps = self._key_maps(agg_branches, src)
        self.calls = [[agg_call_func(c)[0] for c in agg_calls(agg)] for agg in self.aggs]
        if any(f in ("max_by", "min_by") for fs in self.calls for f in fs):
            # the tie order is modelled over K rows only (folds.extremum_by)
            raise ProofSetupError("max_by/min_by: ties are modelled by the bounded proof only")
        self.family = d.family
        self._probe_kinds(probe)

    def _key_maps(self, agg_branches: list[int], src: Scan) -> list[list]:
        """Per aggregate: for each grouping key, the position of the partition key κ it is
        (an int), or the constant its branch fixes it to (a value: the family's
        ``fixed_grouping_keys``, e.g. the pivot join's ``y = 2001``)."""
        fixed = get(self.d.family).fixed_grouping_keys(self.d)
        out: list[list] = []
        for i, agg in zip(agg_branches, self.aggs):
            pos = key_sources(agg, src)
            src_keys = None if pos is None else [src.names[j] for j in pos]
            consts = fixed[i] if i < len(fixed) else {}
            if src_keys is None or any(k not in self.p.keys and k not in consts for k in src_keys):
                raise Unmodelled(f"the unbounded proof does not model a grouping key {src_keys} that is "
                                 f"neither a partition key {list(self.p.keys)} nor fixed to a constant")
            out.append([self.p.keys.index(k) if k in self.p.keys else clean(ev(consts[k], Ctx(_no_column)))
                        for k in src_keys])
        return out

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
        return [kappa[j] if isinstance(j, int) else j for j in self.key_maps[i]]

    # -- one row --------------------------------------------------------------
    def row(self, table: Table, kappa) -> RowView:
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
        errs += self.row_errors(enc)
        in_key = z3.And(present, rows_not_distinct(self.pe.key_of(vals), kappa))
        return RowView(present, vals, in_key, member, args, or_all(errs), self.pe.contribution(vals))

    # -- plan state -----------------------------------------------------------
    def row_errors(self, enc: PlanEncoder) -> list:
        """Errors the plan raises on the one symbolic row besides its aggregates' input
        edges (none unless the shape says so)."""
        return []

    def plan_initial(self) -> PlanState:
        calls = {(i, c): folds.init(f, *self.plan_kinds[(i, c)])
                 for i, fs in enumerate(self.calls) for c, f in enumerate(fs)}
        mj = self.tracks_matches
        return PlanState(calls, {i: FALSE for i in range(len(self.aggs))},
                         FALSE if mj else None, FALSE, FALSE if mj else None)

    def plan_symbolic(self, name: str) -> PlanState:
        calls = {(i, c): folds.symbolic(f, *self.plan_kinds[(i, c)], f"{name}!call!{i}!{c}")
                 for i, fs in enumerate(self.calls) for c, f in enumerate(fs)}
        mj = self.tracks_matches
        return PlanState(calls, {i: z3.Bool(f"{name}!group!{i}") for i in range(len(self.aggs))},
                         z3.Bool(f"{name}!matched") if mj else None, z3.Bool(f"{name}!err"),
                         z3.Bool(f"{name}!pair_err") if mj else None)

    def plan_step(self, s: PlanState, r: RowView, by_row: Optional[tuple]) -> PlanState:
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
        g = TRUE if self.global_groups else s.groups[i]     # a global aggregate has its row over no row
        return Rel([(g, vals)], z3.And(g, err))

    def seeded(self, s: PlanState, kappa, table: Table) -> PlanEncoder:
        """An encoder whose GROUP BYs yield the group of κ in state ``s``; branches that
        share one aggregate (each with its own fixed keys) are seeded at their tops."""
        enc = PlanEncoder(table)
        if len({id(a) for a in self.aggs}) == len(self.aggs):
            for i, agg in enumerate(self.aggs):
                enc.memo[id(agg)] = self.group_seed(i, s, kappa, enc)
            return enc
        for i, (agg, top) in enumerate(zip(self.aggs, self.tops)):
            own = PlanEncoder(table)
            own.memo[id(agg)] = self.group_seed(i, s, kappa, own)
            enc.memo[id(top)] = own.encode(top)
        return enc

    # -- the program ------------------------------------------------------------
    def prog_step(self, s: PartitionState, r: RowView) -> PartitionState:
        return self.pe.step(s, r.in_key, r.prog)

    def prog_partition(self, s: PartitionState, kappa) -> Rel:
        accs, flags, ferr = self.pe.final_values(s)
        present = TRUE if not self.p.keys else s.seen      # the keyless partition exists over no row
        em = self.pe.emit_partition(present, kappa, accs, flags)
        return Rel(em.rows, or_all([em.err, z3.And(present, ferr), s.err]))

    # -- pairing and the invariant ------------------------------------------------
    def pair(self, r: RowView, matched_by_row, extra_conds=()) -> list:
        """[(plan component, program component, condition)] — candidates by function,
        each checked on one arbitrary row from one arbitrary common state."""
        nonnull = z3.And(*[z3.Not(k.null) for k in self.kappa])
        conds = [TRUE, nonnull, *extra_conds]
        pairs, used = [], set()
        for (i, c), f in ((ic, self.calls[ic[0]][ic[1]]) for ic in sorted(self.plan_kinds)):
            for j, a in enumerate(self.p.accumulators):
                if ("acc", j) in used or a.func != _PROGRAM_FOLD.get(f, f) \
                        or self.prog_kinds[j] != self.plan_kinds[(i, c)]:
                    continue
                hit = next((cd for cd in conds if valid(z3.Implies(cd, self._steps_alike(r, i, c, j)))), None)
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
                hit = next((cd for cd in conds if valid(z3.Implies(cd, z3.Or(b, m) == z3.Or(b, pm)))), None)
                if hit is not None:
                    pairs.append((comp, pcomp, hit))
                    break
        self.program_facts = self._program_facts(r, {b[1] for _, b, _ in pairs if b[0] == "acc"})
        # "some row ..." components no row of a NULL key can satisfy (a NULL key never joins)
        self.never_null = [(("plan",) + comp) for comp, m in exists
                           if valid(z3.Implies(z3.Not(nonnull), z3.Not(m)))]
        self.never_null += [(("prog",) + pcomp) for pcomp, pm in prog_exists
                            if valid(z3.Implies(z3.Not(nonnull), z3.Not(pm)))]
        return pairs

    def _steps_alike(self, r: RowView, i: int, c: int, j: int) -> z3.BoolRef:
        """Plan call (i, c) and program accumulator j fold the row ``r`` alike: from one
        arbitrary common state (from related states, for the plan's COUNT(DISTINCT) and the
        program's sorted fold, under the sort order's promise) to equal (related) states."""
        kind = self.plan_kinds[(i, c)]
        f, g = self.calls[i][c], self.p.accumulators[j].func
        p = folds.symbolic(f, *kind, f"pair!{i}!{c}")
        q = p if f == g else folds.symbolic(g, *self.prog_kinds[j], f"pair!{i}!{c}!prog")
        member = z3.And(r.in_key, r.prog.acc_guard[j])
        mine = folds.step(p, r.plan_member[i], r.plan_args[(i, c)])
        theirs = folds.step(q, member, r.prog.acc_arg[j])
        asc = self._ascending(j)
        if f == g:
            return folds.state_eq(mine, theirs)
        return z3.Implies(z3.And(folds.related(p, q, asc), folds.sorted_after(q, r.prog.acc_arg[j], member, asc)),
                          folds.related(mine, theirs, asc))

    def _program_facts(self, r: RowView, paired: set) -> list:
        """Invariants of the program's own state for accumulators no plan aggregate pairs
        with — a fixed key read back as ``min(y)`` over its use's rows (``y = c`` there):
        (``value``, j, c) "accumulator j is c when not NULL" and (``flag``, j, f)
        "accumulator j is not NULL iff flag f": candidates checked on one row here, proved
        by ``fold.base`` and ``fold.step`` with the rest of the invariant."""
        consts = [c for km in self.key_maps for c in km if not isinstance(c, int)]
        out = []
        for j, a in enumerate(self.p.accumulators):
            if j in paired or a.func not in ("min", "max"):
                continue
            x = r.prog.acc_arg[j]
            if x is None or x.v is None:
                continue
            counted = z3.And(r.in_key, r.prog.acc_guard[j], z3.Not(x.null))
            for c in consts:
                if c.kind == x.kind and valid(z3.Implies(counted, x.v == c.v)):
                    out.append(("value", j, c))
                    break
            for f, g in enumerate(r.prog.flag_guard):
                if valid(counted == z3.And(r.in_key, g)):
                    out.append(("flag", j, f))
                    break
        return out

    def _ascending(self, j: int) -> bool:
        """The direction the program's partitions are sorted on accumulator j's argument."""
        return bool(self.p.sort[0].ascending) if self.p.sort else True

    def sorted_premises(self, sq: PartitionState, r: RowView) -> list:
        """The sort order's promise to each sorted COUNT(DISTINCT) fold: the next row comes
        at or after the last value folded — only for an accumulator whose argument is the
        column the partitions are sorted on first."""
        out = []
        first = self.p.sort[0].column if self.p.sort else None
        for j, a in enumerate(self.p.accumulators):
            if a.func != "count_distinct_sorted":
                continue
            arg = a.arg
            if not (isinstance(arg, exp.Column) and arg.name == first):
                continue
            out.append(folds.sorted_after(sq.accs[j], r.prog.acc_arg[j], z3.And(r.in_key, r.prog.acc_guard[j]),
                                          self._ascending(j)))
        return out

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
            eq = folds.related(x, y, self._ascending(b[1])) if isinstance(x, folds.FoldState) else (x == y)
            parts.append(z3.Implies(cond, eq))
        init_p, init_q = self.plan_initial(), self.pe.initial(self.prog_kinds)
        for i in range(len(self.aggs)):
            empty = [folds.state_eq(sp.calls[(i, c)], init_p.calls[(i, c)]) for c in range(len(self.calls[i]))]
            parts.append(z3.Implies(z3.Not(sp.groups[i]), z3.And(*empty) if empty else TRUE))
        empty = [folds.state_eq(a, b) for a, b in zip(sq.accs, init_q.accs)] + [z3.Not(f) for f in sq.flags]
        parts.append(z3.Implies(z3.Not(sq.seen), z3.And(z3.Not(sq.err), *empty)))
        parts.append(z3.Implies(sq.err, z3.Or(sp.err, sp.pair_err) if sp.pair_err is not None else sp.err))
        for what, j, c in getattr(self, "program_facts", []):
            cur, isnull = sq.accs[j].parts
            parts.append(z3.Implies(z3.Not(isnull), cur == c.v) if what == "value" else (sq.flags[c] == z3.Not(isnull)))
        null_key = z3.Or(*[k.null for k in self.kappa])
        for comp in self.never_null:
            x = self._plan_comp(sp, comp[1:]) if comp[0] == "plan" else self._prog_comp(sq, comp[1:])
            parts.append(z3.Implies(null_key, z3.Not(x)))
        return z3.And(*parts)

    # -- obligations ---------------------------------------------------------------
    def obligations(self) -> list[Obligation]:
        t = Table(self.scan.table, self.scan.columns, 1, tag="r!")
        r = self.row(t, self.kappa)
        final = self.final_match(t)
        pairs = self.pair(r, final.matched if final is not None else None,
                          final.survives if final is not None else [])
        self.pairs = pairs
        sp, sq = self.plan_symbolic("S"), self.pe.symbolic_state(self.prog_kinds, "Q")
        inv = self.invariant(pairs, sp, sq)
        final_plan = final.state if final is not None else None
        obs: list[Obligation] = []
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
            z3.Implies(z3.And(inv, *self._in_final(final_plan, r), *self.sorted_premises(sq, r)),
                       self.invariant(pairs, self.plan_step(sp, r, final.by_row if final is not None else None),
                                      self.prog_step(sq, r)))))
        return obs + self.shape_obligations(Induction(t, r, sp, sq, inv, final))

    def final_match(self, t: Table) -> Optional[FinalMatch]:
        """How the symbolic row of ``t`` meets its key's group with its FINAL values, for a
        shape that joins the groups with the input rows (None: it does not)."""
        return None

    def shape_obligations(self, ind: Induction) -> list[Obligation]:
        """The obligations after ``fold.base`` and ``fold.step``: what the plan outputs per
        key (and per row) against the program's emits."""
        raise ProofSetupError(f"no proof shape for the {self.family} template")

    @staticmethod
    def _in_final(final: Optional[PlanState], r: RowView) -> list:
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
