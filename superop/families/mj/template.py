"""Min & Join's template program (SuperOp_MJ of the paper's Fig. 10): row emits guarded by
"the row matches its key's aggregate row", the outer, semi and anti sides, the flag that
decides "some row matched" for the aggregate side emitted alone, and the memory class
(streaming with a sort on the MIN/MAX column, or buffering: Fig. 13).
"""
from __future__ import annotations

from typing import Optional, Sequence

from sqlglot import exp

from ...dsl import BUFFERING, STREAMING, PartitionEmit, Program, RowEmit, SortKey, ref
from ...ir.analysis import capture_parameters
from ..kit.program import Accs, AggBranch, conj, is_true, join_split, keys_not_null, negate, null, to_ns
from ..kit.records import Branch, Match, Side, TemplateError
from .reasons import MIN_MAX, MJReason


def build_program(m: Match) -> Program:
    """SuperOp_MJ: row emits guarded by φ_row ∧ present ∧ keys NOT NULL ∧ ψ; outer,
    semi and anti sides as for DJ. ``streaming`` only when every value a row emit
    reads is final after the first row of a sorted partition (one unguarded min/max
    over a source column, sorted on it); otherwise ``buffering`` (Fig. 13)."""
    j = m.join
    assert j is not None and m.agg_side is not None
    accs = Accs()
    s = m.agg_side
    A = AggBranch(m.branches[s.pos], accs)
    keys = A.keys
    rb = m.branches[s.other.pos]
    up = capture_parameters(rb.upper)
    row_out = [to_ns(e, "row") for _, e in up.projection]
    phi_row = to_ns(up.predicate, "row")
    row_fields = rb.upper.top.fields
    sides = ((A.top_fields, A.outputs), (row_fields, row_out))
    goals = [(f"key.{k}", f"row.{k}") for k in keys]
    if s is Side.RIGHT:
        sides = (sides[1], sides[0])
        goals = [(b, a) for a, b in goals]
    psi = join_split(j, sides, goals)
    matched = conj(is_true(phi_row), is_true(A.present), keys_not_null(keys), is_true(psi))
    n_agg, n_row = [null() for _ in A.outputs], [null() for _ in row_out]
    kind = m.join_kind
    row_left = s is Side.RIGHT
    out_both = (row_out + A.outputs) if row_left else (A.outputs + row_out)
    row_preserved = kind == "full" or (kind == "left" and row_left) or (kind == "right" and not row_left)
    agg_preserved = kind == "full" or (kind == "left" and not row_left) or (kind == "right" and row_left)
    row_emits, part_emits = [], []

    def any_matched() -> exp.Expr:
        """"Some row matched the aggregate row" for the aggregate side emitted alone.
        The flag folds every row of the partition; the query evaluates the residual ψ
        only on the pairs it forms, i.e. with rows of keys whose group survives the
        aggregate path. So ψ sits behind that survival, decided per row (key not NULL,
        the σ below γ on keys only, the σ above γ on keys only): a partial ψ never
        raises where the query does not (e.g. a FULL join whose HAVING drops a key)."""
        if psi is not None and _reads(psi, "acc"):
            raise TemplateError("a join residual over aggregates on the aggregate side emitted alone",
                                MJReason.RESIDUAL_ON_AGGREGATES)
        guard = phi_row
        if psi is not None:
            survives = _group_survives_per_row(A, m.branches[s.pos], keys)
            if survives is None:
                raise TemplateError("a join residual on the aggregate side emitted alone with a filter "
                                    "on aggregates (or below γ on non-keys): the query evaluates it only "
                                    "for keys whose group survives, which no row can tell",
                                    MJReason.RESIDUAL_BEHIND_AGGREGATE_FILTER)
            guard = conj(is_true(phi_row), survives, _keys_to_rows(psi))
        f = accs.flag(guard)
        out = conj(f, is_true(A.present), keys_not_null(keys)) if f is not None else \
            conj(is_true(A.present), keys_not_null(keys))
        return out if out is not None else exp.true()

    if kind in ("inner", "left", "right", "full"):
        row_emits.append(RowEmit(matched, tuple(out_both)))
    if row_preserved:
        # only rows that reach the join (pass the row edge's φ) are null-extended
        out = (row_out + n_agg) if row_left else (n_agg + row_out)
        row_emits.append(RowEmit(conj(is_true(phi_row), negate(matched)), tuple(out)))
    if agg_preserved:
        out = (n_row + A.outputs) if row_left else (A.outputs + n_row)
        part_emits.append(PartitionEmit(conj(A.present, negate(any_matched())), tuple(out)))
    if kind in ("semi", "anti"):
        if row_left:
            g = matched if kind == "semi" else conj(is_true(phi_row), negate(matched))
            row_emits.append(RowEmit(g, tuple(row_out)))
        else:
            mm = any_matched()
            g = conj(A.present, mm) if kind == "semi" else conj(A.present, negate(mm))
            part_emits.append(PartitionEmit(g, tuple(A.outputs)))
    memory, sort = _memory(row_emits, accs)
    return Program(keys=tuple(keys), output=m.root.names, accumulators=tuple(accs.accs),
                   flags=tuple(accs.flags), partition_emits=tuple(part_emits),
                   row_emits=tuple(row_emits), sort=sort, memory=memory)


def _reads(e: exp.Expr, ns: str) -> bool:
    return any(c.table == ns for c in e.find_all(exp.Column))


def _keys_to_rows(e: exp.Expr) -> exp.Expr:
    """``key.k`` -> ``row.k`` (equal within a partition; a flag's guard reads the row)."""
    e = e.copy()
    for c in list(e.find_all(exp.Column)):
        if c.table == "key":
            c.replace(ref("row", c.name))
    return e


def _group_survives_per_row(A: AggBranch, b: Branch, keys: Sequence[str]) -> Optional[exp.Expr]:
    """A row condition that holds on a row of key κ iff κ's group survives the aggregate
    path (non-empty after the σ below γ, kept by the σ above γ): the key is not NULL and
    both σ read only grouping keys. None when a σ reads anything else."""
    assert b.lower is not None
    low = to_ns(capture_parameters(b.lower).predicate, "row")
    if low is not None and any(c.name not in keys for c in low.find_all(exp.Column)):
        return None
    up = A.phi_up
    if up is not None and (_reads(up, "acc") or _reads(up, "flag")):
        return None
    return conj(_keys_to_rows(keys_not_null(keys) or exp.true()), is_true(low),
                is_true(_keys_to_rows(up)) if up is not None else None)


def _memory(row_emits: Sequence[RowEmit], accs: Accs) -> tuple[str, tuple[SortKey, ...]]:
    """Streaming iff row emits read no flag and only one unguarded min/max over a source
    column (final after the first row once sorted on that column)."""
    used_acc: set[str] = set()
    used_flag = False
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
    if a.func in MIN_MAX and a.guard is None and isinstance(a.arg, exp.Column):
        return STREAMING, (SortKey(a.arg.name, ascending=(a.func == "min"), nulls_first=False),)
    return BUFFERING, ()
