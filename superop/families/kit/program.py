"""The program-building kit of the Fig. 10 templates: the pieces every family's template
builder uses to turn a matched tree into a DSL program (accumulators and flags of one
program, an aggregate path's outputs over them, DSL expression helpers, the join split of
Algorithms 2-3). No Spark, no Z3."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence, cast, overload

from sqlglot import exp

from ...ir.analysis import EdgeParams, capture_parameters
from ...ir.dialect import DIALECT
from ...ir.generate import translate_columns
from ...ir.nodes import Aggregate, Field, Join, Node
from ...dsl import Accumulator, Flag, NoAccumulator, PartitionEmit, Program, accumulator_call, ref
from .diamond import equalities_imply, equi_pairs, keys_implied, positions_carrying
from .records import Branch, KeyPremise, Match, Reason, ReasonCode, TemplateError

# ---------------------------------------------------------------------------
# expression helpers
# ---------------------------------------------------------------------------
@overload
def to_ns(e: exp.Expr, ns: str) -> exp.Expr: ...
@overload
def to_ns(e: None, ns: str) -> None: ...
@overload
def to_ns(e: Optional[exp.Expr], ns: str) -> Optional[exp.Expr]: ...
def to_ns(e: Optional[exp.Expr], ns: str) -> Optional[exp.Expr]:
    """Unqualified source columns -> ``ns.col``."""
    if e is None:
        return None
    e = e.copy()
    if isinstance(e, exp.Column):
        return ref(ns, e.name)
    for c in list(e.find_all(exp.Column)):
        c.replace(ref(ns, c.name))
    return e


def conj(*parts: Optional[exp.Expr]) -> Optional[exp.Expr]:
    """AND of the parts that are not None (None = TRUE); each part is copied."""
    out: Optional[exp.Expr] = None
    for p in parts:
        if p is None:
            continue
        p = p.copy()
        if not isinstance(p, (exp.Column, exp.Paren, exp.Not, exp.Coalesce, exp.Is, exp.Boolean)):
            p = exp.Paren(this=p)
        out = p if out is None else cast(exp.Expr, exp.and_(out, p, copy=False))
    return out


def is_true(e: Optional[exp.Expr]) -> Optional[exp.Expr]:
    """Two-valued: NULL counts as FALSE (so that NOT(...) is safe)."""
    if e is None:
        return None
    return exp.Coalesce(this=e.copy(), expressions=[exp.false()])


def negate(e: Optional[exp.Expr]) -> exp.Expr:
    """NOT e (None = TRUE, so its negation is FALSE)."""
    if e is None:
        return exp.false()
    return exp.Not(this=exp.Paren(this=e.copy()))


def null() -> exp.Expr:
    return exp.Null()


def keys_not_null(keys: Sequence[str]) -> Optional[exp.Expr]:
    return conj(*[exp.Not(this=exp.Is(this=ref("key", k), expression=exp.Null())) for k in keys])


def unparen(e: exp.Expr) -> exp.Expr:
    while isinstance(e, exp.Paren):
        e = e.this
    return e


def agg_call(node: exp.AggFunc) -> tuple[str, Optional[exp.Expr]]:
    """An aggregate call as (DSL accumulator function, argument); TemplateError when the
    DSL has no accumulator for it."""
    try:
        return accumulator_call(node)
    except NoAccumulator as e:
        raise TemplateError(str(e)) from None


def agg_calls(agg: Aggregate) -> list[exp.AggFunc]:
    return [c for e, _ in agg.items for c in e.find_all(exp.AggFunc)]


def accumulator_funcs(agg: Aggregate) -> Optional[frozenset[str]]:
    """The DSL accumulator functions an aggregate needs; None if one has no accumulator."""
    try:
        return frozenset(agg_call(c)[0] for c in agg_calls(agg))
    except TemplateError:
        return None


# ---------------------------------------------------------------------------
# accumulators of one program, an aggregate path over them
# ---------------------------------------------------------------------------
class Accs:
    """Accumulators and flags of one program, de-duplicated."""

    def __init__(self) -> None:
        self.accs: list[Accumulator] = []
        self.flags: list[Flag] = []

    def acc(self, func: str, arg: Optional[exp.Expr], guard: Optional[exp.Expr]) -> exp.Column:
        for a in self.accs:
            if a.func == func and a.arg == arg and a.guard == guard:
                return ref("acc", a.name)
        a = Accumulator(f"f{len(self.accs) + 1}", func, arg, guard)
        self.accs.append(a)
        return ref("acc", a.name)

    def flag(self, guard: Optional[exp.Expr]) -> Optional[exp.Column]:
        if guard is None:
            return None  # a partition always has a row: the flag would be TRUE
        for f in self.flags:
            if f.guard == guard:
                return ref("flag", f.name)
        fl = Flag(f"out{len(self.flags) + 1}", guard)
        self.flags.append(fl)
        return ref("flag", fl.name)


class AggBranch:
    """An aggregate path: keys traced to the source, its accumulators, and the DSL
    expression of every column at the core operator's input (``outputs``).

    Options for a path whose upper edge filters grouping keys (the pivot join): ``guard``
    (over source columns) is AND-ed to the lower edge's predicate — a σ on grouping keys
    commutes with the γ; ``upper_pred`` (over the γ's fields) replaces the upper edge's
    predicate (what was not pushed below the γ); ``fixed`` are grouping keys every row of
    the path holds one value of (fixed by an equality to a constant): they are not
    partition keys, and the path reads the value as ``min`` of the column over its rows.
    ``global_ok``: a global aggregate (no GROUP BY) is allowed — it has ONE row whatever
    its input edge keeps, so it gets no emptiness flag."""

    _UNSET: Any = object()

    def __init__(self, b: Branch, accs: Accs, keys: Optional[Sequence[str]] = None, *,
                 global_ok: bool = False, guard: Optional[exp.Expr] = None,
                 upper_pred: Any = _UNSET, fixed: Sequence[str] = ()):
        if b.agg is None or b.lower is None:
            raise TemplateError("not an aggregate path")
        agg: Aggregate = b.agg
        low = capture_parameters(b.lower)
        in_fields = b.lower.top.fields
        self.keys: list[str] = []
        for k in agg.keys:
            src = unparen(low.substitute(k, in_fields))
            if not isinstance(src, exp.Column):
                raise TemplateError(f"grouping key {k.sql(dialect=DIALECT)} is computed, not a source column")
            self.keys.append(src.name)
        if not self.keys and not global_ok:
            raise TemplateError("a global aggregate (no GROUP BY) has no partition key")
        self.fixed = [k for k in self.keys if k in set(fixed)]
        row_guard = to_ns(conj(low.predicate, guard), "row")
        self.flag = accs.flag(row_guard) if self.keys else None
        key_set = set(keys if keys is not None else self.keys) - set(self.fixed)
        fixed_refs = {k: accs.acc("min", ref("row", k), row_guard) for k in self.fixed}
        self.agg_out = [self._item(item, low, in_fields, row_guard, accs, key_set, fixed_refs)
                        for item, _ in agg.items]
        up = capture_parameters(b.upper)
        pred = up.predicate if upper_pred is AggBranch._UNSET else upper_pred
        self.phi_up = None if pred is None else translate_columns(pred, agg.fields, self.agg_out)
        self.outputs = [translate_columns(e, agg.fields, self.agg_out) for _, e in up.projection]
        self.top_fields = b.upper.top.fields
        self.present = conj(self.flag, self.phi_up)

    @property
    def partition_keys(self) -> list[str]:
        return [k for k in self.keys if k not in self.fixed]

    @staticmethod
    def _item(item: exp.Expr, low: EdgeParams, in_fields: Sequence[Field],
              guard: Optional[exp.Expr], accs: Accs, keys: set[str],
              fixed: dict[str, exp.Column]) -> exp.Expr:
        item = item.copy()
        for call in list(item.find_all(exp.AggFunc)):
            func, arg = agg_call(call)
            arg_src = None if arg is None else to_ns(low.substitute(arg, in_fields), "row")
            r = accs.acc(func, arg_src, guard)
            if cast(exp.Expr, call) is item:
                item = r
            else:
                call.replace(r)

        # remaining columns are group keys (over the aggregate's input)
        def fix(c: exp.Column) -> exp.Expr:
            src = unparen(low.substitute(c, in_fields))
            if isinstance(src, exp.Column) and src.name in keys:
                return ref("key", src.name)
            if isinstance(src, exp.Column) and src.name in fixed:
                return fixed[src.name].copy()
            raise TemplateError(f"column {c.sql(dialect=DIALECT)} is neither a grouping key nor aggregated")
        if isinstance(item, exp.Column) and item.table != "acc":
            return fix(item)
        for c in list(item.find_all(exp.Column)):
            if c.table not in ("acc", "key"):
                c.replace(fix(c))
        return item


def same_keys(branches: Sequence[AggBranch]) -> list[str]:
    first = branches[0].partition_keys
    for b in branches[1:]:
        if set(b.partition_keys) != set(first) or len(b.partition_keys) != len(first):
            raise TemplateError(f"paths are grouped on different keys: {first} vs {b.partition_keys}")
    return list(first)


def dsl_side(e: exp.Expr, fields: Sequence[Field], exprs: Sequence[exp.Expr]) -> exp.Expr:
    return unparen(translate_columns(e, tuple(fields), list(exprs)))


def _bare_ref(e: exp.Expr) -> Optional[str]:
    return f"{e.table}.{e.name}" if isinstance(e, exp.Column) else None


Side = tuple[Sequence[Field], Sequence[exp.Expr]]


def join_split(join: Join, sides: tuple[Side, Side], key_goals: Sequence[tuple[str, str]],
               check: bool = True) -> Optional[exp.Expr]:
    """Algorithms 2-3, lines "eqPred ⇒ pairwise key equality": the join's equalities
    between bare keys/columns must imply that every grouping key on one side equals the
    same key on the other. Key equalities are then implied by the partitioning (NULL keys
    are excluded separately); all other conjuncts form ψ (returned). ``check=False`` only
    splits (for sides whose columns are NULL-extended: the premise is checked on the
    sides where every input is present)."""
    (lf, lx), (rf, rx) = sides
    premises: list[tuple[str, str]] = []
    psi: list[exp.Expr] = []
    goal_set = set(key_goals)
    for left, right in join.equi:
        a, b = dsl_side(left, lf, lx), dsl_side(right, rf, rx)
        ka, kb = _bare_ref(a), _bare_ref(b)
        if ka and kb and ka.startswith(("key.", "row.")) and kb.startswith(("key.", "row.")):
            premises.append((f"L:{ka}", f"R:{kb}"))
            if (ka, kb) in goal_set:
                continue
        psi.append(exp.EQ(this=a, expression=b))
    goals = [(f"L:{a}", f"R:{b}") for a, b in key_goals]
    if check and not equalities_imply(premises, goals):
        raise TemplateError("the join's equality predicate does not imply equality of every grouping "
                            "key (join on non-key columns or on a subset of the keys)")
    if join.residual is not None:
        psi.append(dsl_side(join.residual, tuple(lf) + tuple(rf), list(lx) + list(rx)))
    return conj(*psi)


# ---------------------------------------------------------------------------
# the emits of a join tree over per-partition inputs (DJ, the pivot join)
# ---------------------------------------------------------------------------
MAX_ALTERNATIVES = 64   # rows a join tree may produce per partition (outer trees double them)


@dataclass(frozen=True)
class Alternative:
    """One row a join (sub-)tree may produce in a partition: it exists iff ``guard`` is
    TRUE, with ``outputs`` (one per field of the sub-tree's output)."""
    guard: Optional[exp.Expr]
    outputs: tuple[exp.Expr, ...]


@dataclass(frozen=True)
class TreeInput:
    """A leaf of a join tree: an input with at most one row per partition (an aggregate
    path), present iff ``present`` is TRUE, with ``outputs`` at the join (``fields``)."""
    fields: tuple[Field, ...]
    outputs: tuple[exp.Expr, ...]
    present: Optional[exp.Expr]


def _disj(parts: Sequence[exp.Expr]) -> exp.Expr:
    if len(parts) == 1:
        return parts[0].copy()
    return cast(exp.Expr, exp.or_(*[exp.Paren(this=p.copy()) for p in parts], copy=False))


def join_tree_emits(root: Node, inputs: dict[int, TreeInput], keys: Sequence[str],
                    equated: Optional[Sequence[str]] = None) -> list[PartitionEmit]:
    """The partition emits of a tree of joins (inner, left, right, full, semi, anti) over
    inputs of at most one row per partition, every join on the partition keys (checked
    on the rows where every input is present: Algorithms 2-3 at each join) plus a residual
    ψ. Per partition each sub-tree yields alternatives (guard, outputs): a leaf one (its
    presence), a join the matched pairs — both present, keys not NULL, ψ TRUE — and, per
    its kind, the unmatched rows of a preserved side NULL-extended. ``inputs`` maps
    id(leaf node) to the leaf; every other node under ``root`` must be a Join.
    ``equated``: the keys the joins equate when the others are determined by them (a
    declared key, :mod:`superop.ir.keys`); default every key."""
    eq = list(keys if equated is None else equated)
    goals = [(f"key.{k}", f"key.{k}") for k in eq]

    def go(n: Node) -> tuple[tuple[Field, ...], list[Alternative]]:
        leaf = inputs.get(id(n))
        if leaf is not None:
            return leaf.fields, [Alternative(leaf.present, leaf.outputs)]
        if not isinstance(n, Join):
            raise TemplateError(f"{n.op} inside the join tree")
        if n.kind == "cross":
            raise TemplateError("a cross join has no partition key")
        lf, la = go(n.left)
        rf, ra = go(n.right)
        matched: dict[tuple[int, int], exp.Expr] = {}
        for i, a in enumerate(la):
            for j, b in enumerate(ra):
                psi = join_split(n, ((lf, a.outputs), (rf, b.outputs)), goals, check=(i == 0 and j == 0))
                m = conj(is_true(a.guard), is_true(b.guard), keys_not_null(eq), is_true(psi))
                assert m is not None
                matched[i, j] = m
        nl = tuple(null() for _ in lf)
        nr = tuple(null() for _ in rf)
        out: list[Alternative] = []
        if n.kind in ("semi", "anti"):
            for i, a in enumerate(la):
                hit = _disj([matched[i, j] for j in range(len(ra))])
                out.append(Alternative(hit, a.outputs) if n.kind == "semi" else
                           Alternative(conj(a.guard, negate(hit)), a.outputs))
            return lf, out
        out += [Alternative(matched[i, j], a.outputs + b.outputs)
                for i, a in enumerate(la) for j, b in enumerate(ra)]
        if n.kind in ("left", "full"):
            out += [Alternative(conj(a.guard, negate(_disj([matched[i, j] for j in range(len(ra))]))),
                                a.outputs + nr) for i, a in enumerate(la)]
        if n.kind in ("right", "full"):
            out += [Alternative(conj(b.guard, negate(_disj([matched[i, j] for i in range(len(la))]))),
                                nl + b.outputs) for j, b in enumerate(ra)]
        if len(out) > MAX_ALTERNATIVES:
            raise TemplateError(f"the join tree may produce {len(out)} rows per partition "
                                f"(more than {MAX_ALTERNATIVES})")
        return lf + rf, out

    _, alts = go(root)
    return [PartitionEmit(a.guard, a.outputs) for a in alts]


def not_null_keys_prefilter(join_kind: Optional[str], program: Program,
                            preds: Sequence[Optional[exp.Expr]],
                            keys: Optional[Sequence[str]] = None) -> Optional[exp.Expr]:
    """A filter on the shared source that keeps every row a program can use: OR of the
    paths' source predicates when every path filters, AND keys NOT NULL when a NULL key
    never produces output (inner and semi joins; ``keys``: the keys the joins equate,
    default the program's)."""
    out: Optional[exp.Expr] = None
    if all(p is not None for p in preds):
        ps = [p.copy() for p in preds if p is not None]
        out = exp.Paren(this=exp.or_(*ps, copy=False)) if len(ps) > 1 else ps[0]
    if join_kind in ("inner", "semi"):
        nn = [exp.Not(this=exp.Is(this=exp.column(k), expression=exp.Null()))
              for k in (program.keys if keys is None else keys)]
        if nn:
            out = cast(exp.Expr, exp.and_(*([out] if out is not None else []), *nn, copy=False))
    return out


# ---------------------------------------------------------------------------
# the join premise of a tree of joins (n-way instances)
# ---------------------------------------------------------------------------
def tree_joins(m: Match) -> list[Join]:
    """The joins of a match's join tree (root first), down to its branches' top nodes."""
    leaves = {id(b.upper.top) for b in m.branches}
    out: list[Join] = []

    def go(n: Node) -> None:
        if id(n) in leaves or not isinstance(n, Join):
            return
        out.append(n)
        go(n.left)
        go(n.right)
    go(m.root)
    return out


def tree_implied(m: Match) -> list[tuple[Join, list[bool]]]:
    """Per join of the tree (root first): which of the partition keys its condition
    equates between its two sides (union-find)."""
    out = []
    for j in tree_joins(m):
        pairs = [(positions_carrying(j.left, k, m.source), positions_carrying(j.right, k, m.source))
                 for k in m.keys]
        out.append((j, keys_implied(j, pairs)))
    return out


def tree_premise_failure(m: Match, determined: frozenset[str] = frozenset()
                         ) -> Optional[tuple[ReasonCode, str]]:
    """Algorithms 2-3 at every join of the tree: its condition implies equality of every
    partition key between its two sides (union-find); (reason, detail) when one does not.
    ``determined``: key names a declared-key premise determines from the other keys (a
    join need not equate them if it equates every other key)."""
    for _j, implied in tree_implied(m):
        names = [m.source.names[k] for k in m.keys]
        missing = [n for n, ok in zip(names, implied) if not ok]
        others_ok = all(ok for n, ok in zip(names, implied) if n not in determined)
        if missing and not (others_ok and set(missing) <= determined):
            reason = Reason.JOIN_ON_SUBSET_OF_KEYS if any(implied) else Reason.JOIN_NOT_ON_GROUPING_KEYS
            return reason, "not equated: " + ", ".join(missing)
    return None


def root_key_premise(m: Match, determined: frozenset[str] = frozenset()) -> KeyPremise:
    """The root join's premise for the verifier's Z3 check; a sub-tree carries a key in
    several columns (one per branch): the pair the condition equates is asked for. Keys
    in ``determined`` (a declared-key premise) are equal because the others are."""
    j = m.join
    assert j is not None
    eq = equi_pairs(j)
    pairs = []
    for k in m.keys:
        if m.source.names[k] in determined:
            continue
        ls, rs = positions_carrying(j.left, k, m.source), positions_carrying(j.right, k, m.source)
        direct = [(i, r) for i, r in eq if i in ls and r in rs]
        pairs.append((frozenset([direct[0][0]]), frozenset([direct[0][1]])) if direct else (ls, rs))
    return KeyPremise(j, tuple(pairs))
