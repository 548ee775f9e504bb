"""The parametric super-operators of the paper's Fig. 10 (SuperOp_DU, SuperOp_DJ,
SuperOp_MJ), instantiated from a matched abstract tree.

``build_program(decomposition)`` captures every abstract edge's parameters
(Algorithm 5: summary predicate φ and projection map π) and fills the template:

* DU (n-way): per branch i an accumulator set ``f_i`` guarded by the lower edge's φ, an
  emptiness flag ``out_i`` when that φ can reject rows, and one partition emit guarded by
  ``out_i ∧ φ_upper_i`` producing ``π_upper_i(key, f_i)``.
* DJ (inner/left/right/full/semi/anti): the same folds; emits guarded by
  ``matched = present_L ∧ present_R ∧ keys NOT NULL ∧ ψ`` (NULL keys never join) and, per
  join kind, null-extended emits under ``present ∧ ¬matched``.
* MJ: one aggregate branch joined back to the rows of the same source: row emits guarded
  by ``φ_row ∧ present ∧ keys NOT NULL ∧ ψ``; outer/semi/anti sides as for DJ. The program
  is ``streaming`` only when every value a row emit reads is final after the first row
  of a sorted partition (one unguarded min/max over a source column, sorted on it);
  otherwise it is declared ``buffering`` (still correct, not streaming — Fig. 13).

The streamability checks of Algorithms 1-3 run first (:func:`check_streamability`); the
join-key implication is decided by union-find (``superop.verify`` re-decides it with Z3).
No Spark, no Z3.
"""
from __future__ import annotations

from typing import Optional, Sequence

from sqlglot import exp

from ..ir.analysis import Branch, Decomposition, capture_parameters, equalities_imply
from ..ir.dialect import DIALECT
from ..ir.generate import translate_columns
from ..ir.nodes import Aggregate, Field
from .dsl import (BUFFERING, STREAMING, Accumulator, Flag, PartitionEmit, Program, RowEmit,
                  SortKey, ref)


class TemplateError(Exception):
    """The matched tree is not an instance this template implements (with the reason)."""


# ---------------------------------------------------------------------------
# expression helpers
# ---------------------------------------------------------------------------
def _to_ns(e: Optional[exp.Expression], ns: str) -> Optional[exp.Expression]:
    """Unqualified source columns -> ``ns.col``."""
    if e is None:
        return None
    e = e.copy()
    if isinstance(e, exp.Column):
        return ref(ns, e.name)
    for c in list(e.find_all(exp.Column)):
        c.replace(ref(ns, c.name))
    return e


def _and(*parts: Optional[exp.Expression]) -> Optional[exp.Expression]:
    out = None
    for p in parts:
        if p is None:
            continue
        p = p.copy()
        if not isinstance(p, (exp.Column, exp.Paren, exp.Not, exp.Coalesce, exp.Is, exp.Boolean)):
            p = exp.Paren(this=p)
        out = p if out is None else exp.and_(out, p, copy=False)
    return out


def _true(e: Optional[exp.Expression]) -> Optional[exp.Expression]:
    """Two-valued: NULL counts as FALSE (so that NOT(...) is safe)."""
    if e is None:
        return None
    return exp.Coalesce(this=e.copy(), expressions=[exp.false()])


def _not(e: Optional[exp.Expression]) -> exp.Expression:
    if e is None:
        return exp.false()
    return exp.Not(this=exp.Paren(this=e.copy()))


def _null() -> exp.Expression:
    return exp.Null()


_AGG = {exp.Sum: "sum", exp.Min: "min", exp.Max: "max", exp.Avg: "avg"}


class _Accs:
    """Accumulators and flags of one program, de-duplicated."""

    def __init__(self):
        self.accs: list[Accumulator] = []
        self.flags: list[Flag] = []

    def acc(self, func: str, arg, guard) -> exp.Column:
        for a in self.accs:
            if a.func == func and a.arg == arg and a.guard == guard:
                return ref("acc", a.name)
        a = Accumulator(f"f{len(self.accs) + 1}", func, arg, guard)
        self.accs.append(a)
        return ref("acc", a.name)

    def flag(self, guard) -> Optional[exp.Column]:
        if guard is None:
            return None  # a partition always has a row: the flag would be TRUE
        for f in self.flags:
            if f.guard == guard:
                return ref("flag", f.name)
        f = Flag(f"out{len(self.flags) + 1}", guard)
        self.flags.append(f)
        return ref("flag", f.name)


def _agg_call(node: exp.AggFunc) -> tuple[str, Optional[exp.Expression]]:
    if isinstance(node, exp.Count):
        arg = node.this
        if arg is None or isinstance(arg, exp.Star):
            return "count_star", None
        if isinstance(arg, exp.Distinct):
            if len(arg.expressions) != 1:
                raise TemplateError("COUNT(DISTINCT) over several columns")
            return "count_distinct", arg.expressions[0]
        return "count", arg
    for cls, name in _AGG.items():
        if type(node) is cls:
            if isinstance(node.this, exp.Distinct):
                raise TemplateError(f"{name.upper()}(DISTINCT)")
            return name, node.this
    raise TemplateError(f"aggregate {node.sql(dialect=DIALECT)} has no accumulator")


# ---------------------------------------------------------------------------
# branches
# ---------------------------------------------------------------------------
class _AggBranch:
    """An aggregate path: keys traced to the source, its accumulators, and the DSL
    expression of every column at the root's input (``outputs``)."""

    def __init__(self, b: Branch, accs: _Accs, keys: Optional[Sequence[str]] = None):
        agg: Aggregate = b.agg
        low = capture_parameters(b.lower)
        in_fields = b.lower.top.fields
        self.keys = []
        for k in agg.keys:
            src = low.substitute(k, in_fields)
            src = src.unnest() if isinstance(src, exp.Paren) else src
            if not isinstance(src, exp.Column):
                raise TemplateError(f"grouping key {k.sql(dialect=DIALECT)} is computed, not a source column")
            self.keys.append(src.name)
        if not self.keys:
            raise TemplateError("a global aggregate (no GROUP BY) has no partition key")
        guard = _to_ns(low.predicate, "row")
        self.flag = accs.flag(guard)
        key_set = set(keys if keys is not None else self.keys)
        agg_out = []
        for item, _name in agg.items:
            agg_out.append(self._item(item, low, in_fields, guard, accs, key_set))
        self.agg_out = agg_out
        up = capture_parameters(b.upper)
        self.phi_up = None if up.predicate is None else translate_columns(up.predicate, agg.fields, agg_out)
        self.outputs = [translate_columns(e, agg.fields, agg_out) for _, e in up.projection]
        self.top_fields = b.upper.top.fields
        self.present = _and(self.flag, self.phi_up)

    @staticmethod
    def _item(item, low, in_fields, guard, accs: _Accs, keys: set) -> exp.Expression:
        item = item.copy()
        calls = [n for n in item.find_all(exp.AggFunc)]
        for call in calls:
            func, arg = _agg_call(call)
            arg_src = None if arg is None else _to_ns(low.substitute(arg, in_fields), "row")
            r = accs.acc(func, arg_src, guard)
            if call is item:
                item = r
            else:
                call.replace(r)
        # remaining columns are group keys (over the aggregate's input)
        def fix(c: exp.Column) -> exp.Expression:
            src = low.substitute(c, in_fields)
            src = src.unnest() if isinstance(src, exp.Paren) else src
            if isinstance(src, exp.Column) and src.name in keys:
                return ref("key", src.name)
            raise TemplateError(f"column {c.sql(dialect=DIALECT)} is neither a grouping key nor aggregated")
        if isinstance(item, exp.Column) and item.table != "acc":
            return fix(item)
        for c in list(item.find_all(exp.Column)):
            if c.table not in ("acc", "key"):
                c.replace(fix(c))
        return item


def _dsl_side(e: exp.Expression, fields: Sequence[Field], exprs: Sequence[exp.Expression]) -> exp.Expression:
    x = translate_columns(e, tuple(fields), list(exprs))
    return x.unnest() if isinstance(x, exp.Paren) else x


def _bare(e: exp.Expression) -> Optional[str]:
    return f"{e.table}.{e.name}" if isinstance(e, exp.Column) else None


# ---------------------------------------------------------------------------
# streamability (Algorithms 1-3, syntactic)
# ---------------------------------------------------------------------------
def check_streamability(d: Decomposition) -> tuple[bool, str]:
    try:
        build_program(d)
    except TemplateError as e:
        return False, str(e)
    return True, "ok"


def _same_keys(branches: list[_AggBranch]) -> list[str]:
    first = branches[0].keys
    for b in branches[1:]:
        if set(b.keys) != set(first) or len(b.keys) != len(first):
            raise TemplateError(f"paths are grouped on different keys: {first} vs {b.keys}")
    return list(first)


def _join_split(d: Decomposition, sides, key_goals: list[tuple[str, str]]):
    """Algorithms 2-3, lines "eqPred ⇒ pairwise key equality": the join's equalities
    between bare keys/columns must imply that every grouping key on one side equals the
    same key on the other. Key equalities are then implied by the partitioning (NULL keys
    are excluded separately); all other conjuncts form ψ."""
    j = d.join
    (lf, lx), (rf, rx) = sides
    premises, psi = [], []
    goal_set = set(key_goals)
    for l, r in j.equi:
        a, b = _dsl_side(l, lf, lx), _dsl_side(r, rf, rx)
        ka, kb = _bare(a), _bare(b)
        if ka and kb and ka.startswith(("key.", "row.")) and kb.startswith(("key.", "row.")):
            premises.append((f"L:{ka}", f"R:{kb}"))
            if (ka, kb) in goal_set:
                continue
        psi.append(exp.EQ(this=a, expression=b))
    goals = [(f"L:{a}", f"R:{b}") for a, b in key_goals]
    if not equalities_imply(premises, goals):
        raise TemplateError("the join's equality predicate does not imply equality of every grouping "
                            "key (join on non-key columns or on a subset of the keys)")
    if j.residual is not None:
        psi.append(_dsl_side(j.residual, tuple(lf) + tuple(rf), list(lx) + list(rx)))
    return _and(*psi)


def build_program(d: Decomposition) -> Program:
    if d.family == "DU":
        return _du(d)
    if d.family == "DJ":
        return _dj(d)
    if d.family == "MJ":
        return _mj(d)
    raise TemplateError(f"unknown family {d.family}")


def _keys_not_null(keys: Sequence[str]) -> Optional[exp.Expression]:
    return _and(*[exp.Not(this=exp.Is(this=ref("key", k), expression=exp.Null())) for k in keys])


def _du(d: Decomposition) -> Program:
    accs = _Accs()
    brs = [_AggBranch(b, accs) for b in d.branches]
    keys = _same_keys(brs)
    emits = tuple(PartitionEmit(b.present, tuple(b.outputs)) for b in brs)
    return Program(keys=tuple(keys), output=d.root.names, accumulators=tuple(accs.accs),
                   flags=tuple(accs.flags), partition_emits=emits, memory=STREAMING)


def _dj(d: Decomposition) -> Program:
    accs = _Accs()
    L, R = (_AggBranch(b, accs) for b in d.branches)
    keys = _same_keys([L, R])
    psi = _join_split(d, [(L.top_fields, L.outputs), (R.top_fields, R.outputs)],
                      [(f"key.{k}", f"key.{k}") for k in keys])
    matched = _and(_true(L.present), _true(R.present), _keys_not_null(keys), _true(psi))
    nl, nr = [_null() for _ in L.outputs], [_null() for _ in R.outputs]
    kind = d.join_kind
    emits = []
    if kind in ("inner", "left", "right", "full"):
        emits.append(PartitionEmit(matched, tuple(L.outputs + R.outputs)))
    if kind == "semi":
        emits.append(PartitionEmit(matched, tuple(L.outputs)))
    if kind == "anti":
        emits.append(PartitionEmit(_and(L.present, _not(matched)), tuple(L.outputs)))
    if kind in ("left", "full"):
        emits.append(PartitionEmit(_and(L.present, _not(matched)), tuple(L.outputs + nr)))
    if kind in ("right", "full"):
        emits.append(PartitionEmit(_and(R.present, _not(matched)), tuple(nl + R.outputs)))
    return Program(keys=tuple(keys), output=d.root.names, accumulators=tuple(accs.accs),
                   flags=tuple(accs.flags), partition_emits=tuple(emits), memory=STREAMING)


def _mj(d: Decomposition) -> Program:
    accs = _Accs()
    s = d.agg_side
    A = _AggBranch(d.branches[s], accs)
    keys = A.keys
    rb = d.branches[1 - s]
    up = capture_parameters(rb.upper)
    row_out = [_to_ns(e, "row") for _, e in up.projection]
    phi_row = _to_ns(up.predicate, "row")
    row_fields = rb.upper.top.fields
    sides = [(A.top_fields, A.outputs), (row_fields, row_out)]
    goals = [(f"key.{k}", f"row.{k}") for k in keys]
    if s == 1:
        sides = sides[::-1]
        goals = [(b, a) for a, b in goals]
    psi = _join_split(d, sides, goals)
    matched = _and(_true(phi_row), _true(A.present), _keys_not_null(keys), _true(psi))
    n_agg, n_row = [_null() for _ in A.outputs], [_null() for _ in row_out]
    kind = d.join_kind
    row_left = s == 1
    out_both = (row_out + A.outputs) if row_left else (A.outputs + row_out)
    row_preserved = kind == "full" or (kind == "left" and row_left) or (kind == "right" and not row_left)
    agg_preserved = kind == "full" or (kind == "left" and not row_left) or (kind == "right" and row_left)
    row_emits, part_emits = [], []

    def any_matched():
        if psi is not None and any(c.table == "acc" for c in psi.find_all(exp.Column)):
            raise TemplateError("a join residual over aggregates on the preserved aggregate side")
        f = accs.flag(_and(phi_row, psi) if (phi_row is not None or psi is not None) else None)
        return _and(f, _true(A.present), _keys_not_null(keys)) if f is not None else \
            _and(_true(A.present), _keys_not_null(keys)) or exp.true()

    if kind in ("inner", "left", "right", "full"):
        row_emits.append(RowEmit(matched, tuple(out_both)))
    if row_preserved:
        # only rows that reach the join (pass the row edge's φ) are null-extended
        out = (row_out + n_agg) if row_left else (n_agg + row_out)
        row_emits.append(RowEmit(_and(_true(phi_row), _not(matched)), tuple(out)))
    if agg_preserved:
        out = (n_row + A.outputs) if row_left else (A.outputs + n_row)
        part_emits.append(PartitionEmit(_and(A.present, _not(any_matched())), tuple(out)))
    if kind in ("semi", "anti"):
        if row_left:
            g = matched if kind == "semi" else _and(_true(phi_row), _not(matched))
            row_emits.append(RowEmit(g, tuple(row_out)))
        else:
            m = any_matched()
            g = _and(A.present, m) if kind == "semi" else _and(A.present, _not(m))
            part_emits.append(PartitionEmit(g, tuple(A.outputs)))
    memory, sort = _mj_memory(row_emits, accs)
    return Program(keys=tuple(keys), output=d.root.names, accumulators=tuple(accs.accs),
                   flags=tuple(accs.flags), partition_emits=tuple(part_emits),
                   row_emits=tuple(row_emits), sort=sort, memory=memory)


def _mj_memory(row_emits, accs: _Accs) -> tuple[str, tuple[SortKey, ...]]:
    """Streaming iff row emits read no flag and only one unguarded min/max over a
    source column (final after the first row once sorted on that column)."""
    used_acc, used_flag = set(), False
    for r in row_emits:
        for x in [r.guard, *r.outputs]:
            if x is None:
                continue
            for c in x.find_all(exp.Column):
                if c.table == "acc":
                    used_acc.add(c.name)
                elif c.table == "flag":
                    used_flag = True
    if not row_emits or not used_acc and not used_flag:
        return STREAMING, ()
    if used_flag or len(used_acc) != 1:
        return BUFFERING, ()
    a = next(a for a in accs.accs if a.name in used_acc)
    if a.func in ("min", "max") and a.guard is None and isinstance(a.arg, exp.Column):
        return STREAMING, (SortKey(a.arg.name, ascending=(a.func == "min"), nulls_first=False),)
    return BUFFERING, ()
