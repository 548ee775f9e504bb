"""The super-operator DSL (``superop.synth.dsl.Program``) over symbolic rows.

The pieces — a row's contribution to the accumulators and flags, the fold of one row
into a partition's state, the partition emits and the row emits of one partition / row,
the sort order — are public methods: the bounded encoding (:meth:`ProgramEncoder.encode`,
K rows) and the unbounded template proofs (``superop.verify.template_proofs``: one
arbitrary row, an arbitrary state) call the same code.

Semantics (the DSL's, see ``superop.synth.dsl``): partitions are the rows with
NULL-safe-equal keys; an accumulator folds the rows of its partition where its guard is
TRUE (its argument is evaluated only there); a flag is TRUE iff some row's guard is TRUE;
a partition emit runs once per non-empty partition with the final values; a row emit once
per row, with running values (folded over the rows at or before it in the sort order,
ties broken by input position) when the program is ``streaming``, final values when it is
``buffering``.

Errors. Guards of accumulators and flags are evaluated on every row of the partition,
arguments where the guard holds, every accumulator's final value once per partition (a
sum's overflow), running values (streaming row emits) once per row. An emit evaluates its
guard always; its outputs only where the guard holds (``GUARDED``, the DSL's semantics and
what the runtime must compile to) or always (``EAGER``: outputs evaluated for every
partition / row and the rows filtered afterwards — what an ``array(struct(guard,
outputs))`` generator does).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import z3
from sqlglot import exp

from ..dsl import BY_FUNCS, STREAMING, Program, by_parts
from . import folds
from .exprs import Ctx, ev, guard_holds
from .neighbours import neighbour_values, positions
from .relations import Rel, Table, clean, first_of_group, members_of
from .result import Unsupported
from .values import FALSE, TRUE, V, any_err, const, lt, not_distinct, or_all

GUARDED, EAGER = "guarded", "eager"
# accumulators the bounded encoding computes over the K rows, not by folding a state
NON_FOLDS = ("count_distinct", *BY_FUNCS)


@dataclass
class RowContribution:
    """What one input row gives the partition's state, before partition membership."""
    acc_guard: list[z3.BoolRef]          # per accumulator: its guard is TRUE on the row
    acc_arg: list[Optional[V]]           # per accumulator: its argument (None: count(*))
    flag_guard: list[z3.BoolRef]         # per flag: its guard is TRUE on the row
    err: z3.BoolRef                      # evaluating guards / arguments raises


@dataclass
class PartitionState:
    """A partition's state after some of its rows: one fold per accumulator, one boolean
    per flag, ``seen`` (some row), ``err`` (some row raised)."""
    accs: list[folds.FoldState]
    flags: list[z3.BoolRef]
    seen: z3.BoolRef
    err: z3.BoolRef


class ProgramEncoder:
    """Encodes a super-operator program reading rows whose columns are ``columns`` (names,
    (name, type) pairs, or a :class:`Table`)."""

    def __init__(self, program: Program, columns, *, emit_outputs: str = GUARDED):
        if emit_outputs not in (GUARDED, EAGER):
            raise ValueError(f"emit_outputs must be {GUARDED} or {EAGER}")
        self.p = program
        self.table = columns if isinstance(columns, Table) else None
        cols = list(columns.columns if isinstance(columns, Table) else columns)
        self.names = [c if isinstance(c, str) else c[0] for c in cols]
        self.emit_outputs = emit_outputs

    # -- namespaces ----------------------------------------------------------
    def col_index(self, name: str) -> int:
        if name in self.names:
            return self.names.index(name)
        raise Unsupported(f"column {name!r} not in the program's input")

    def key_of(self, vals: Sequence[V]) -> list[V]:
        return [vals[self.col_index(k)] for k in self.p.keys]

    def ctx(self, vals: Optional[Sequence[V]], keyvals: Sequence[V], accs: dict, flags: dict,
            nbs: Optional[dict[str, V]] = None) -> Ctx:
        """``nbs``: the row's neighbours' values (``nb.<name>``; row emits only)."""
        keys = self.p.keys

        def col(c: exp.Column) -> V:
            ns, name = (c.table or "row").lower(), c.name
            if ns == "nb":
                if nbs is None or name not in nbs:
                    raise Unsupported(f"unknown neighbour nb.{name}")
                return nbs[name]
            if ns == "row":
                if vals is None:
                    raise Unsupported(f"row.{name} used in a partition emit")
                return vals[self.col_index(name)]
            if ns == "key":
                if name not in keys:
                    raise Unsupported(f"key.{name} is not a partition key")
                return keyvals[keys.index(name)]
            if ns == "acc":
                if name not in accs:
                    raise Unsupported(f"unknown accumulator acc.{name}")
                return accs[name]
            if ns == "flag":
                if name not in flags:
                    raise Unsupported(f"unknown flag flag.{name}")
                return flags[name]
            raise Unsupported(f"unknown namespace {ns}")
        return Ctx(col)

    # -- folding -------------------------------------------------------------
    def contribution(self, vals: Sequence[V]) -> RowContribution:
        ctx = self.ctx(vals, self.key_of(vals), {}, {})
        ag, aa, fg, errs = [], [], [], []
        for a in self.p.accumulators:
            g, gerr = guard_holds(a.guard, ctx)
            ag.append(g)
            if a.func in BY_FUNCS:        # (payload, ordering), both evaluated where guarded
                pay, order = by_parts(a.arg)
                b = folds.ByArg(ev(pay, ctx), ev(order, ctx))
                aa.append(b.clean())
                errs.append(z3.Or(gerr, z3.And(g, b.err)))
                continue
            x = ev(a.arg, ctx) if a.arg is not None else None
            aa.append(None if x is None else clean(x))
            errs.append(z3.Or(gerr, z3.And(g, x.err)) if x is not None else gerr)
        for f in self.p.flags:
            g, gerr = guard_holds(f.guard, ctx)
            fg.append(g)
            errs.append(gerr)
        return RowContribution(ag, aa, fg, or_all(errs))

    def arg_kinds(self, contribs: Sequence[RowContribution]) -> list[tuple[Optional[str], Optional[int]]]:
        out = []
        for ai, a in enumerate(self.p.accumulators):
            if a.func in ("count_star", "count_distinct") or a.func in BY_FUNCS:
                out.append((None, None))
            else:
                out.append(folds.arg_kind([(TRUE, c.acc_arg[ai]) for c in contribs]))
        return out

    def initial(self, kinds) -> PartitionState:
        accs = [folds.init(a.func, *kinds[i]) if a.func not in NON_FOLDS else None
                for i, a in enumerate(self.p.accumulators)]
        return PartitionState(accs, [FALSE] * len(self.p.flags), FALSE, FALSE)

    def symbolic_state(self, kinds, name: str) -> PartitionState:
        """An arbitrary partition state (fresh constants), for induction."""
        accs = []
        for i, a in enumerate(self.p.accumulators):
            if a.func == "count_distinct":
                raise Unsupported("count(DISTINCT) keeps a set per partition (not a constant-state fold)")
            if a.func in BY_FUNCS:
                raise Unsupported(f"{a.func}: ties are modelled over the K rows only (no inductive state)")
            accs.append(folds.symbolic(a.func, *kinds[i], f"{name}!acc!{a.name}"))
        flags = [z3.Bool(f"{name}!flag!{f.name}") for f in self.p.flags]
        return PartitionState(accs, flags, z3.Bool(f"{name}!seen"), z3.Bool(f"{name}!err"))

    def step(self, s: PartitionState, member: z3.BoolRef, c: RowContribution) -> PartitionState:
        """Fold one row into the state; ``member``: the row is present and in this partition."""
        accs = [folds.step(a, z3.And(member, c.acc_guard[i]), c.acc_arg[i]) if a is not None else None
                for i, a in enumerate(s.accs)]
        flags = [z3.Or(f, z3.And(member, c.flag_guard[i])) for i, f in enumerate(s.flags)]
        return PartitionState(accs, flags, z3.Or(s.seen, member), z3.Or(s.err, z3.And(member, c.err)))

    def final_values(self, s: PartitionState, bound: Optional[int] = None) -> tuple[dict, dict, z3.BoolRef]:
        """(acc name -> value, flag name -> value, error of computing the final values)."""
        accs, errs = {}, []
        for a, st in zip(self.p.accumulators, s.accs):
            if st is None:      # count(DISTINCT), max_by/min_by: computed by the bounded encoding itself
                continue
            v = folds.finalize(st, bound)
            errs.append(v.err)
            accs[a.name] = clean(v)
        flags = {f.name: const(b, "bool") for f, b in zip(self.p.flags, s.flags)}
        return accs, flags, or_all(errs)

    # -- emission --------------------------------------------------------------
    def _emit(self, emits, present: z3.BoolRef, ctx: Ctx) -> Rel:
        rows, errs = [], []
        for em in emits:
            g, gerr = guard_holds(em.guard, ctx)
            outs = [ev(o, ctx) for o in em.outputs]
            oerr = any_err(outs)
            evaluated = TRUE if self.emit_outputs == EAGER else g
            rows.append((z3.And(present, g), [clean(o) for o in outs]))
            errs.append(z3.And(present, z3.Or(gerr, z3.And(evaluated, oerr))))
        return Rel(rows, or_all(errs))

    def emit_partition(self, present: z3.BoolRef, keyvals: Sequence[V], accs: dict, flags: dict) -> Rel:
        """The partition emits of one partition (``present``: it is non-empty)."""
        return self._emit(self.p.partition_emits, present, self.ctx(None, keyvals, accs, flags))

    def emit_row(self, present: z3.BoolRef, vals: Sequence[V], accs: dict, flags: dict,
                 nbs: Optional[dict[str, V]] = None) -> Rel:
        """The row emits of one row, with the accumulator / flag / neighbour values it sees."""
        return self._emit(self.p.row_emits, present, self.ctx(vals, self.key_of(vals), accs, flags, nbs))

    def row_emits_read_state(self) -> bool:
        return bool(self.state_read_by_row_emits())

    def state_read_by_row_emits(self) -> set[tuple[str, str]]:
        used = set()
        for r in self.p.row_emits:
            for x in (r.guard, *r.outputs):
                if x is not None:
                    used.update((c.table.lower(), c.name) for c in x.find_all(exp.Column)
                                if (c.table or "").lower() in ("acc", "flag"))
        return used

    # -- sort order ------------------------------------------------------------
    def sort_before(self, a: Sequence[V], b: Sequence[V], tie: z3.BoolRef) -> z3.BoolRef:
        """Row ``a`` is at or before row ``b`` in the partition's sort order; ``tie``
        decides rows equal on every sort key (input position)."""
        out = tie
        for sk in reversed(self.p.sort):
            x, y = a[self.col_index(sk.column)], b[self.col_index(sk.column)]
            k = x.kind
            less = lt(x.v, y.v, k) if sk.ascending else lt(y.v, x.v, k)
            both = z3.And(z3.Not(x.null), z3.Not(y.null))
            nulls = z3.And(x.null, z3.Not(y.null)) if sk.nulls_first else z3.And(z3.Not(x.null), y.null)
            out = z3.Or(nulls, z3.And(both, less), z3.And(not_distinct(x, y), out))
        return out

    # -- neighbours (nb.*) -----------------------------------------------------
    def neighbours(self, rows, members) -> tuple[list[dict[str, V]], list[z3.BoolRef]]:
        """Per row, its neighbours' values (the row of its partition at its sort position
        + offset, NULL when none; :mod:`superop.verify.neighbours`), and the errors of
        evaluating the neighbours' arguments on the present rows (a window evaluates its
        argument on every row of the partition)."""
        if not self.p.neighbours:
            return [{} for _ in rows], []
        pos = positions(rows, members, lambda j, i: self.sort_before(rows[j][1], rows[i][1], z3.BoolVal(j < i)))
        args, errs = [], []
        for nb in self.p.neighbours:
            vs = [ev(nb.arg, self.ctx(vals, self.key_of(vals), {}, {})) for _, vals in rows]
            errs += [z3.And(pr, v.err) for (pr, _), v in zip(rows, vs)]
            args.append([clean(v) for v in vs])
        return neighbour_values(self.p, rows, members, pos, args), errs

    # -- the bounded encoding --------------------------------------------------
    def encode(self, table: Optional[Table] = None, rows: Optional[Rel] = None) -> Rel:
        """The program's output over the K rows of ``table`` (default: the constructor's), or
        over an encoded input relation ``rows`` (whose error is the program's too)."""
        if rows is not None:
            out = self._encode(rows.rows)
            return Rel(out.rows, or_all([rows.err, out.err]))
        t = table or self.table
        if t is None:
            raise ValueError("encode() needs a Table")
        return self._encode(t.rows)

    def _encode(self, rows) -> Rel:
        p, K = self.p, len(rows)
        keys = [self.key_of(vals) for _, vals in rows]
        contribs = [self.contribution(vals) for _, vals in rows]
        kinds = self.arg_kinds(contribs)
        errs = [z3.And(pr, c.err) for (pr, _), c in zip(rows, contribs)]
        members = [members_of(rows, keys, i) if p.keys else [r[0] for r in rows] for i in range(K)]
        firsts = first_of_group(rows, keys) if p.keys else [z3.BoolVal(i == 0) for i in range(K)]

        # the sort order as a strict relation over the K rows (ties: input position)
        before = [[self.sort_before(rows[i][1], rows[j][1], z3.BoolVal(i < j)) if i != j else FALSE
                   for j in range(K)] for i in range(K)] \
            if any(a.func == "count_distinct_sorted" for a in p.accumulators) else []
        # rows tied on a max_by/min_by ordering: resolved in the order the original reads
        # too (the same symbolic priorities for the same input positions)
        tie = folds.tie_order(K) if any(a.func in BY_FUNCS for a in p.accumulators) else []

        def fold(ms) -> tuple[dict, dict, z3.BoolRef]:
            s = self.initial(kinds)
            for j, m in enumerate(ms):
                s = self.step(s, m, contribs[j])
            accs, flags, err = self.final_values(s, K)
            for ai, a in enumerate(p.accumulators):
                pairs = [(z3.And(m, contribs[j].acc_guard[ai]), contribs[j].acc_arg[ai]) for j, m in enumerate(ms)]
                if a.func == "count_distinct":        # a set of values: not a fold
                    accs[a.name] = folds.count_distinct(pairs)
                elif a.func == "count_distinct_sorted":   # the fold, read in sort order
                    accs[a.name] = folds.count_runs(pairs, before)
                elif a.func in BY_FUNCS:
                    accs[a.name] = folds.extremum_by(a.func, [(m, b.payload, b.ordering) for m, b in pairs], tie)
            return accs, flags, err

        # every partition computes its final values once (a keyless program has one
        # partition, the whole table, even when empty)
        finals = [fold(members[i]) for i in range(K)] if p.keys else [fold([r[0] for r in rows])]
        out: list = []
        for i in range(len(finals)):
            present = firsts[i] if p.keys else TRUE
            accs, flags, ferr = finals[i]
            errs.append(z3.And(present, ferr))
            if p.partition_emits:
                em = self.emit_partition(present, keys[i] if p.keys else [], accs, flags)
                out += em.rows
                errs.append(em.err)
        if p.row_emits:
            running = p.memory == STREAMING and self.row_emits_read_state()
            nbs, nb_errs = self.neighbours(rows, members)
            errs += nb_errs
            for i, (pi, vals) in enumerate(rows):
                if running:
                    ms = [z3.And(m, self.sort_before(rows[j][1], vals, z3.BoolVal(j <= i)))
                          for j, m in enumerate(members[i])]
                    accs, flags, rerr = fold(ms)
                    errs.append(z3.And(pi, rerr))
                else:
                    accs, flags, _ = finals[i] if p.keys else finals[0]
                em = self.emit_row(pi, vals, accs, flags, nbs[i] if p.neighbours else None)
                out += em.rows
                errs.append(em.err)
        return Rel(out, or_all(errs))
