"""Building one candidate program of the synthesizer: the program of one point of the
search space (:class:`superop.synth.space.Choice`) over the parts of a sub-plan
(:mod:`superop.synth.parts`) — accumulators and flags per aggregate path, the emits of the
core operator's cases, the sort and memory class.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from sqlglot import exp

from ..dsl import (
    BUFFERING,
    STREAMING,
    Accumulator,
    Flag,
    NoAccumulator,
    PartitionEmit,
    Program,
    RowEmit,
    accumulator_call,
    distinct_sort_obstacle,
    ref,
    sort_distinct,
)
from ..ir.nodes import Join
from .parts import AggPath, NotSupported, Parts, to_row, tr, unparen
from .space import Choice, PathChoice


class NotExpressible(Exception):
    """A candidate choice cannot be written as a program (e.g. an output refers to a
    grouping column that is not a partition key)."""


def conj(*parts: Optional[exp.Expression]) -> Optional[exp.Expression]:
    out = None
    for p in parts:
        if p is None:
            continue
        p = p.copy()   # parts may be cached path conditions: never link them into a new tree
        if not isinstance(p, (exp.Column, exp.Paren, exp.Not, exp.Is, exp.Boolean, exp.Coalesce)):
            p = exp.Paren(this=p)
        out = p if out is None else exp.and_(out, p, copy=False)
    return out


def negate(e: Optional[exp.Expression], null_safe: bool) -> exp.Expression:
    """NOT e. Plain NOT is NULL when e is NULL (the row is then dropped); the NULL-safe
    form treats a NULL condition as not holding. Which one is right is for the search."""
    if e is None:
        return exp.false()
    inner = exp.Coalesce(this=e.copy(), expressions=[exp.false()]) if null_safe else exp.Paren(this=e.copy())
    return exp.Not(this=inner)


def agg_call(node: exp.AggFunc) -> tuple[str, Optional[exp.Expression]]:
    try:
        return accumulator_call(node)
    except NoAccumulator as e:
        raise NotSupported(f"{e} in the DSL") from None


class _Builder:
    """Builds the program of one Choice. Path parts depend only on (path, its choice,
    keys) and are cached across candidates (the expressions are never mutated: every
    use copies), which keeps enumerating hundreds of candidates cheap."""

    def __init__(self, parts: Parts, choice: Choice, cache: Optional[dict] = None):
        self.parts, self.c = parts, choice
        self.cache = cache if cache is not None else {}

    def key_expr(self, e: exp.Expression) -> exp.Expression:
        """Source columns outside aggregates -> key.* (must be partition keys)."""
        keys = set(self.c.keys)
        e = e.copy()

        def fix(c: exp.Column):
            if c.table in ("acc", "key", "flag", "row"):
                return c
            if c.name in keys:
                return ref("key", c.name)
            raise NotExpressible(f"{c.name} is neither a partition key nor aggregated")
        if isinstance(e, exp.Column):
            return fix(e)
        for c in list(e.find_all(exp.Column)):
            c.replace(fix(c))
        return e

    def agg_path(self, p: AggPath, pc: PathChoice):
        """-> (accumulators, flags, outputs at the core input, presence condition); the
        accumulators of path i are f<i>_<j> (the paper's f_i*), its flag out<i>."""
        ck = (p.index, pc, self.c.keys)
        if ck in self.cache:
            hit = self.cache[ck]
            if isinstance(hit, NotExpressible):
                raise hit
            return hit
        try:
            r = self._agg_path(p, pc)
        except NotExpressible as why:
            self.cache[ck] = why
            raise
        self.cache[ck] = r
        return r

    def _agg_path(self, p: AggPath, pc: PathChoice):
        guard = p.low_pred if pc.guarded else None
        accs: list[Accumulator] = []

        def acc(func, arg):
            for a in accs:
                if a.func == func and a.arg == arg:
                    return ref("acc", a.name)
            a = Accumulator(f"f{p.index + 1}_{len(accs) + 1}", func, arg, guard)
            accs.append(a)
            return ref("acc", a.name)

        out_items = []
        for item in p.items:
            item = item.copy()
            for call in list(item.find_all(exp.AggFunc)):
                func, arg = agg_call(call)
                r = acc(func, to_row(arg))
                if call is item:
                    item = r
                else:
                    call.replace(r)
            out_items.append(self.key_expr(item))
        up_pred = None if p.up_pred is None else tr(p.up_pred, p.agg.fields, out_items)
        outs = [tr(e, p.agg.fields, out_items) for e in p.up_map]
        flags = [Flag(f"out{p.index + 1}", p.low_pred)] if pc.flagged else []
        present = conj(ref("flag", flags[0].name) if flags else None, up_pred)
        return accs, flags, outs, present

    def build(self) -> Program:
        parts, c = self.parts, self.c
        pcs = iter(c.paths)
        side = []
        accs: list[Accumulator] = []
        flags: list[Flag] = []
        for p in parts.paths:
            if isinstance(p, AggPath):
                a, f, outs, present = self.agg_path(p, next(pcs))
                accs += a
                flags += f
                side.append((outs, present))
            else:
                side.append((list(p.out), p.pred))
        pemits, remits = [], []

        def finish(core_out, guard):
            g = conj(guard, None if parts.root_pred is None else tr(parts.root_pred, parts.core.fields, core_out))
            outs = tuple(unparen(tr(e, parts.core.fields, core_out)) for e in parts.root_map)
            return g, outs

        if parts.is_union:
            for outs, present in side:
                pemits.append(PartitionEmit(*finish(outs, present)))
        elif parts.product:
            # one row: every global aggregate's outputs side by side, if every row survives
            pemits.append(PartitionEmit(*finish([o for outs, _ in side for o in outs],
                                                 conj(*[present for _, present in side]))))
        else:
            j: Join = parts.core
            (lo, lp), (ro, rp) = side
            match = self._match_condition(j, lo, ro)
            nl = [exp.Null() for _ in lo]
            nr = [exp.Null() for _ in ro]
            semi = j.kind in ("semi", "anti")
            cases = {
                "both": (conj(lp, rp, match), lo if semi else lo + ro),
                "left": (conj(lp, negate(conj(rp, match), c.null_safe_not)), lo if semi else lo + nr),
                "right": (conj(rp, negate(conj(lp, match), c.null_safe_not)), nl + ro),
            }
            row_side = parts.row_side
            agg_side = None if row_side is None else ("right" if row_side == "left" else "left")
            for case in c.emits:
                g, core_out = cases[case]
                if row_side is None:
                    pemits.append(PartitionEmit(*finish(core_out, g)))
                elif case == row_side or (case == "both" and not (semi and agg_side == "left")):
                    remits.append(RowEmit(*finish(core_out, g)))
                else:
                    # an aggregate row that some / no row of the partition matches: a flag
                    # over the rows, possible when the match condition reads no accumulator
                    apres = lp if agg_side == "left" else rp
                    aout = lo if agg_side == "left" else ro
                    m = self._row_match_flag(conj(rp if agg_side == "left" else lp, match), flags)
                    if case == "both":          # semi join, aggregate on the left
                        g, core_out = conj(apres, m), aout
                    else:                       # aggregate side preserved / anti join
                        g = conj(apres, exp.Not(this=m))
                        nulls = [exp.Null() for _ in (ro if agg_side == "left" else lo)]
                        core_out = aout if semi else (aout + nulls if agg_side == "left" else nulls + aout)
                    pemits.append(PartitionEmit(*finish(core_out, g)))
        memory = c.memory if remits else STREAMING
        prog = Program(keys=c.keys, output=parts.root_names, accumulators=tuple(accs),
                       flags=tuple(flags), partition_emits=tuple(pemits), row_emits=tuple(remits),
                       sort=c.sort if remits else (), memory=memory)
        if any(a.func == "count_distinct" for a in accs):
            # COUNT(DISTINCT x): constant state (the sorted fold) when the partition can be
            # sorted on x; else it keeps the partition's distinct values (buffering)
            prog = sort_distinct(prog)
            if any(a.func == "count_distinct" for a in prog.accumulators):
                if remits and memory == STREAMING:
                    raise NotExpressible("COUNT(DISTINCT) cannot run in constant state: "
                                         + str(distinct_sort_obstacle(prog.accumulators, prog.sort, True)))
                prog = replace(prog, memory=BUFFERING)
        return prog

    @staticmethod
    def _row_match_flag(cond: Optional[exp.Expression], flags: list) -> exp.Expression:
        """flag.match = exists row: cond, with key.k read as row.k (equal inside the
        partition); not expressible when cond reads accumulators (final values)."""
        g = None
        if cond is not None:
            g = cond.copy()
            for col in list(g.find_all(exp.Column)):
                if col.table in ("acc", "flag"):
                    raise NotExpressible("whether a row matches depends on accumulators: "
                                         "no flag can record it while folding")
                if col.table == "key":
                    col.replace(ref("row", col.name))
        for f in flags:
            if f.name == "match":
                return ref("flag", "match")
        flags.append(Flag("match", g))
        return ref("flag", "match")

    def _match_condition(self, j: Join, lo, ro) -> Optional[exp.Expression]:
        """The join condition inside one partition: equated partition keys reduce to
        'key is not NULL' (if chosen); every other conjunct is evaluated as is."""
        lf, rf = self.parts.paths[0].top_fields, self.parts.paths[1].top_fields
        conds = []
        nonnull = []
        for le, re_ in j.equi:
            a = unparen(tr(le, lf, lo))
            b = unparen(tr(re_, rf, ro))
            ka = a.name if isinstance(a, exp.Column) and a.table in ("key", "row") else None
            kb = b.name if isinstance(b, exp.Column) and b.table in ("key", "row") else None
            if ka is not None and ka == kb and ka in self.c.keys:
                if ka not in nonnull:
                    nonnull.append(ka)
                continue
            conds.append(exp.EQ(this=a, expression=b))
        if j.residual is not None:
            conds.append(tr(j.residual, lf + rf, list(lo) + list(ro)))
        guards = [exp.Not(this=exp.Is(this=ref("key", k), expression=exp.Null()))
                  for k in nonnull] if self.c.null_keys else []
        return conj(*guards, *conds)


def build(parts: Parts, choice: Choice, cache: Optional[dict] = None) -> Program:
    """The program of one point of the search space (``cache`` may be shared across calls
    for the same ``parts``)."""
    return _Builder(parts, choice, cache).build()
