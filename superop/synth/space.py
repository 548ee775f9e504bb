"""The search space of the synthesizer: the parts of a sub-plan a candidate program is
built from, and the candidate programs themselves.

Parts (from the sub-plan, not from a table of known shapes):

* the root edge (σ/π/ρ above the root core operator) and the root core operator
  (UNION ALL of n inputs, a join, or a product — cross joins — of n global aggregates);
* per input path of the core operator, its edges captured with Algorithm 5
  (``superop.ir.analysis.capture_parameters``): for an aggregate path the upper edge
  (core input → γ), the γ and the lower edge (γ → source); for the row side of a
  join-back only one edge (core input → source). Edges go down to the base Scan, so a
  CTE/derived table that filters or projects the shared input simply folds into the
  path's summary predicate and projection map;
* candidate partition keys: each γ's keys traced down to source columns (TraverseDown,
  Algorithm 4), the source columns the join equates, and their union.

A candidate fixes one choice per *dimension*: partition keys; per aggregate path whether
its accumulators are guarded by the path's summary predicate and whether an emptiness
flag guards its output; which emit cases exist (for a join: matched / left-only /
right-only rows); whether NULL keys are excluded from matching; whether negated guards
are NULL-safe; and, for row emits, the sort order and memory class. Every combination
is a program; the synthesizer tries them smallest first. Dimensions that make no
difference for a sub-plan (a guard when the path has no filter) are not enumerated.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Iterator, Optional, Sequence

from sqlglot import exp

from .. import families
from ..families.kit.diamond import PlanContext
from ..ir.analysis import Edge, capture_parameters, walk_edge
from ..ir.generate import translate_columns
from ..ir.nodes import Aggregate, Field, Join, Node, Opaque, Scan, Sort, UnionAll, walk
from ..dsl import (BUFFERING, STREAMING, Accumulator, Flag, NoAccumulator, PartitionEmit, Program, RowEmit,
                   SortKey, accumulator_call, distinct_sort_obstacle, ref, sort_distinct)


class NotSupported(Exception):
    """The sub-plan is outside every search space (the reason is user-facing)."""


class NotExpressible(Exception):
    """A candidate choice cannot be written as a program (e.g. an output refers to a
    grouping column that is not a partition key)."""


# ---------------------------------------------------------------------------
# expression helpers
# ---------------------------------------------------------------------------
def tr(e: exp.Expression, fields: Sequence[Field], repl: Sequence[exp.Expression]) -> exp.Expression:
    """Columns of ``e`` (resolved against ``fields``) -> ``repl`` (parenthesized)."""
    return translate_columns(e, fields, repl)


def unparen(e: exp.Expression) -> exp.Expression:
    while isinstance(e, exp.Paren):
        e = e.this
    return e


def to_row(e: Optional[exp.Expression]) -> Optional[exp.Expression]:
    """Source columns (unqualified, as Algorithm 5 leaves them) -> ``row.col``."""
    if e is None:
        return None
    e = e.copy()
    if isinstance(e, exp.Column):
        return ref("row", e.name)
    for c in list(e.find_all(exp.Column)):
        c.replace(ref("row", c.name))
    return e


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


# ---------------------------------------------------------------------------
# the parts of a sub-plan
# ---------------------------------------------------------------------------
@dataclass
class AggPath:
    index: int
    top_fields: tuple[Field, ...]       # what the core operator reads
    agg: Aggregate
    up_map: list[exp.Expression]        # per top field, over agg.fields
    up_pred: Optional[exp.Expression]   # over agg.fields
    items: list[exp.Expression]         # agg items over source columns (AggFuncs kept)
    keys: list[exp.Expression]          # agg keys over source columns
    low_pred: Optional[exp.Expression]  # row.* (None = TRUE)
    source: Node

    def key_columns(self) -> Optional[list[str]]:
        out = []
        for k in self.keys:
            k = unparen(k)
            if not isinstance(k, exp.Column):
                return None
            out.append(k.name)
        return out


@dataclass
class RowPath:
    index: int
    top_fields: tuple[Field, ...]
    out: list[exp.Expression]           # per top field, row.*
    pred: Optional[exp.Expression]      # row.*
    source: Node


@dataclass
class Parts:
    family: str                         # the registry's family at the core ("" if none)
    core: Node                          # UnionAll | Join
    root_map: list[exp.Expression]      # per root field, over core.fields
    root_pred: Optional[exp.Expression]
    paths: list                         # AggPath | RowPath, in core input order
    sources: list[Node]                 # distinct bottoms (1 = one shared source)
    root_names: tuple[str, ...]
    product: bool = False               # the core is a product of global aggregates (one row each)

    @property
    def shared(self) -> bool:
        return len(self.sources) == 1

    @property
    def source(self) -> Node:
        return self.sources[0]

    @property
    def agg_paths(self) -> list[AggPath]:
        return [p for p in self.paths if isinstance(p, AggPath)]

    @property
    def is_union(self) -> bool:
        """The core glues its inputs (partition emits per path)."""
        return isinstance(self.core, UnionAll)

    @property
    def row_side(self) -> Optional[str]:
        """The join input that is a row path (row emits), if any."""
        for p in self.paths:
            if isinstance(p, RowPath):
                return "left" if p.index == 0 else "right"
        return None


def _edge_to_source(start: Node) -> Edge:
    # No stop at shared nodes: a shared CTE that filters/projects folds into the path.
    return walk_edge(start)


def strip_order(plan: Node) -> Node:
    while isinstance(plan, Sort):
        plan = plan.child       # output is compared as a bag: ORDER BY is irrelevant
    return plan


def analyze(plan: Node) -> Parts:
    plan = strip_order(plan)
    for n in walk(plan):
        if isinstance(n, Opaque):
            raise NotSupported(f"the sub-plan has an unmodeled part ({n.reason or 'opaque SQL'})")
    root_edge = walk_edge(plan)
    core = root_edge.bottom
    rp = capture_parameters(root_edge)
    root_map = [e for _, e in rp.projection]
    product = False
    if isinstance(core, UnionAll):
        tops = list(core.inputs)
    elif isinstance(core, Join) and _is_product(core):
        # a product (cross / unconditioned inner joins, flattened): only of global
        # aggregates, one row each, is it a one-partition program
        tops, product = _product_leaves(core), True
    elif isinstance(core, Join):
        if core.kind == "cross":
            raise NotSupported("a cross join has no partition key")
        tops = [core.left, core.right]
    else:
        raise NotSupported(f"the root core operator is {core.op}; a super-operator needs a UNION ALL "
                           "or a join of paths over one input")
    paths: list = []
    for i, top in enumerate(tops):
        up = _edge_to_source(top)
        if isinstance(up.bottom, Aggregate):
            agg = up.bottom
            low = _edge_to_source(agg.child)
            if not isinstance(low.bottom, Scan):
                raise NotSupported(f"path {i + 1} reads {low.bottom.op}, not a base table through σ/π/ρ")
            lp = capture_parameters(low)
            lfields = low.top.fields
            items = [tr(e, lfields, [x for _, x in lp.projection]) for e, _ in agg.items]
            keys = [tr(k, lfields, [x for _, x in lp.projection]) for k in agg.keys]
            upp = capture_parameters(up)
            paths.append(AggPath(i, up.top.fields, agg, [e for _, e in upp.projection], upp.predicate,
                                 items, keys, to_row(lp.predicate), low.bottom))
        elif isinstance(up.bottom, Scan):
            if isinstance(core, UnionAll):
                raise NotSupported(f"UNION ALL input {i + 1} is not an aggregate")
            upp = capture_parameters(up)
            paths.append(RowPath(i, up.top.fields, [to_row(e) for _, e in upp.projection],
                                 to_row(upp.predicate), up.bottom))
        else:
            raise NotSupported(f"path {i + 1} reaches {up.bottom.op}, not an aggregate or the input")
    if isinstance(core, Join) and not any(isinstance(p, AggPath) for p in paths):
        raise NotSupported("a join without an aggregate on either side (a self-join) is not a "
                           "super-operator shape")
    if product and not all(isinstance(p, AggPath) and not p.agg.keys for p in paths):
        raise NotSupported("a cross join has no partition key (only a product of global aggregates, "
                           "one row each, is one partition)")
    found = families.recognize_at(core, PlanContext(plan))
    family = found.family if found is not None else ""
    sources: list[Node] = []
    for p in paths:
        if not any(p.source is s for s in sources):
            sources.append(p.source)
    return Parts(family, core, root_map, rp.predicate, paths, sources, plan.names, product)


def _is_product(j: Join) -> bool:
    return j.kind == "cross" or (j.kind == "inner" and not j.equi
                                 and (j.residual is None or j.residual == exp.true()))


def _product_leaves(j: Join) -> list[Node]:
    """The inputs of a tree of product joins, left to right (the root's field order)."""
    out: list[Node] = []
    for c in (j.left, j.right):
        out += _product_leaves(c) if isinstance(c, Join) and _is_product(c) else [c]
    return out


def key_candidates(parts: Parts) -> list[tuple[str, ...]]:
    """Partition-key sets to try, smallest first: each γ's keys traced down to the source,
    the columns the join equates, and the union of all of them."""
    sets: list[tuple[str, ...]] = []

    def add(cols, allow_empty=False):
        t = tuple(dict.fromkeys(cols))
        if (t or allow_empty) and t not in sets:
            sets.append(t)

    for p in parts.agg_paths:
        ks = p.key_columns()
        if ks is None:
            # a computed key (GROUP BY a + 1): partitioning by the columns it reads is
            # right when the expression is injective; the tests decide
            ks = [c.name for k in p.keys for c in k.find_all(exp.Column)]
        # a global aggregate: one partition (the whole input)
        add(ks, allow_empty=not p.keys)
    if isinstance(parts.core, Join):
        add(_join_source_columns(parts))
    allc: list[str] = []
    for s in sets:
        allc += s
    add(allc)
    sets.sort(key=len)
    return sets


def _join_source_columns(parts: Parts) -> list[str]:
    """Source columns that both sides of an equi conjunct carry unchanged."""
    j: Join = parts.core
    out = []
    for le, re_ in j.equi:
        a = _side_source(parts.paths[0], le)
        b = _side_source(parts.paths[1], re_)
        if a is not None and a == b:
            out.append(a)
    return out


def _side_source(path, e: exp.Expression) -> Optional[str]:
    """The source column an expression at a core input carries unchanged (or None)."""
    if isinstance(path, RowPath):
        x = unparen(tr(e, path.top_fields, path.out))
        return x.name if isinstance(x, exp.Column) and x.table == "row" else None
    x = unparen(tr(e, path.top_fields, path.up_map))
    x = unparen(tr(x, path.agg.fields, path.items))
    if isinstance(x, exp.Column):
        return x.name
    return None


# ---------------------------------------------------------------------------
# building one candidate
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class PathChoice:
    guarded: bool       # accumulators fold only rows passing the path's summary predicate
    flagged: bool       # an emptiness flag guards the path's output


@dataclass(frozen=True)
class Choice:
    keys: tuple[str, ...]
    paths: tuple[PathChoice, ...]        # per AggPath
    emits: tuple[str, ...] = ("all",)   # DU: ("all",); joins: subset of both/left/right
    null_keys: bool = True               # exclude NULL keys from matching
    null_safe_not: bool = True
    sort: tuple[SortKey, ...] = ()
    memory: str = STREAMING

    def describe(self) -> str:
        parts = [f"keys={list(self.keys)}"]
        for i, p in enumerate(self.paths):
            parts.append(f"path{i + 1}(guard={'y' if p.guarded else 'n'}, flag={'y' if p.flagged else 'n'})")
        parts.append(f"emits={list(self.emits)}")
        parts.append(f"null-key-guard={'y' if self.null_keys else 'n'}")
        parts.append(f"null-safe-not={'y' if self.null_safe_not else 'n'}")
        if self.sort:
            parts.append("sort=" + ", ".join(s.pretty() for s in self.sort))
        parts.append(self.memory)
        return " ".join(parts)


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


# ---------------------------------------------------------------------------
# enumerating choices
# ---------------------------------------------------------------------------
def _subsets(items: Sequence[str]) -> list[tuple[str, ...]]:
    out = []
    for r in range(1, len(items) + 1):
        out.extend(itertools.combinations(items, r))
    return out


def choices(parts: Parts) -> Iterator[Choice]:
    """Every point of the search space (unordered; the caller sorts by program size)."""
    path_opts = []
    for p in parts.agg_paths:
        if p.low_pred is None:
            path_opts.append([PathChoice(False, False)])
        else:
            path_opts.append([PathChoice(g, f) for g in (False, True) for f in (False, True)])
    keysets = key_candidates(parts)
    if parts.product:
        # a global aggregate's row exists whatever its filter keeps: no emptiness flags
        opts = [[PathChoice(g, False) for g in ((False, True) if p.low_pred is not None else (False,))]
                for p in parts.agg_paths]
        for pcs in itertools.product(*opts):
            yield Choice((), tuple(pcs))
        return
    if parts.is_union:
        for ks in keysets:
            for pcs in itertools.product(*path_opts):
                yield Choice(ks, tuple(pcs))
        return
    j: Join = parts.core
    if parts.row_side is None:
        cases = ("both", "left") if j.kind in ("semi", "anti") else ("both", "left", "right")
        emit_sets = _subsets(cases)
        sorts_mem = [((), STREAMING)]
    else:
        cases = ("both", "left") if j.kind in ("semi", "anti") else ("both", "left", "right")
        emit_sets = _subsets(cases)
        sorts_mem = [(s, STREAMING) for s in _sort_options(parts)] + [((), BUFFERING)]
    for ks in keysets:
        for pcs in itertools.product(*path_opts):
            for em in emit_sets:
                has_neg = any(x != "both" for x in em)
                for nk in (False, True):
                    for ns in ((False, True) if has_neg else (True,)):
                        for s, mem in sorts_mem:
                            yield Choice(ks, tuple(pcs), em, nk, ns, s, mem)


def _sort_options(parts: Parts) -> list[tuple[SortKey, ...]]:
    """No sort, or a sort on a column an aggregate's argument reads (asc/desc, NULLs
    first/last) — the orders under which a running value may equal the final one (for
    min(b + 0) a sort on b does; for min(b + c) none does, and the search finds out)."""
    opts: list[tuple[SortKey, ...]] = [()]
    for p in parts.agg_paths:
        for item in p.items:
            for call in item.find_all(exp.AggFunc):
                if call.this is None or isinstance(call.this, exp.Star):
                    continue
                for col in call.this.find_all(exp.Column):
                    for asc in (True, False):
                        for nf in (False, True):
                            s = (SortKey(col.name, asc, nf),)
                            if s not in opts:
                                opts.append(s)
    return opts
