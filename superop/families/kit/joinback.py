"""The join-back template: ONE aggregate of a shared input joined back to the rows of that
input on the grouping keys (the paper's Fig. 6(c), SuperOp_MJ of Fig. 10), for every join
kind and either aggregate side; a global aggregate (no keys) cross-joined to the rows is
the keyless case (one partition). Min & Join (its streaming MIN/MAX case) and WinMagic (any
aggregate, buffering: a window over the whole partition) both build their programs here;
each family decides which instances are its own and the memory class of its program.

    ⋈ Join
    ├── e2 [σπρ]* ── γ GroupBy ── e1 [σπρ]* ── Spool
    └── e3 [σπρ]* ── Spool
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from sqlglot import exp

from ...ir.analysis import capture_parameters
from ...dsl import PartitionEmit, Program, RowEmit, SortKey, ref
from .diamond import Shape, key_sources, positions_carrying
from .family import source_predicate
from .program import (AggBranch, Accs, conj, is_true, join_split, keys_not_null, negate, not_null_keys_prefilter,
                      null, to_ns)
from .records import Branch, KeyPremise, Match, NearMiss, Reason, ReasonCode, Side, TemplateError


class JoinBackReason(ReasonCode):
    """Why the join-back template cannot build an instance (the aggregate side emitted
    alone decides "no row matched" with a flag folded row by row; the query evaluates the
    join residual only on the pairs it forms)."""
    RESIDUAL_ON_AGGREGATES = (
        "residual_on_aggregates",
        "a join residual reads the aggregate on a side emitted alone (outer/semi/anti): no row can evaluate it "
        "before its partition ends",
        "Keep conditions on the aggregate out of the ON clause of an outer, semi or anti join: use an inner join, "
        "or filter the groups with HAVING on the aggregate side.")
    RESIDUAL_BEHIND_AGGREGATE_FILTER = (
        "residual_behind_aggregate_filter",
        "a join residual on a side emitted alone behind a filter on the aggregate: the query evaluates it only for "
        "keys whose group survives, which no row can tell (a partial residual would raise)",
        "Drop the filter on the aggregate (HAVING) on the side emitted alone, or use an inner join.")


# the memory class and sort order of a join-back program, from its row emits and accumulators
MemoryRule = Callable[[Sequence[RowEmit], Accs], tuple[str, tuple[SortKey, ...]]]


def recognize_join_back(family: str, shape: Shape, join_kinds: Sequence[str]) -> Optional[Match | NearMiss]:
    """A join of ONE aggregate path and ONE row path over the same shared input, grouped on
    input columns (a :class:`Match` with the aggregate's side and key positions), a
    near-miss with the reason, or None (not this shape)."""
    if not shape.joins or len(shape.paths) != 2 or len(shape.agg_paths) != 1:
        return None
    paths = shape.paths
    side = Side.LEFT if paths[0].agg is not None else Side.RIGHT
    ap, rp = paths[side.pos], paths[side.other.pos]
    agg = ap.agg
    assert agg is not None

    def near(reason: ReasonCode, detail: str = "") -> NearMiss:
        return NearMiss(family, shape.root, reason, detail, shape.join_kind, 2, ap.stop)
    if ap.n_aggs > 1:
        return near(Reason.STACKED_AGGREGATES)
    if ap.stop is not rp.stop:
        return near(Reason.DIFFERENT_INPUTS)
    kind = shape.join_kind
    if kind not in join_kinds:
        return near(Reason.JOIN_KIND_UNSUPPORTED, kind)
    keys = key_sources(agg, ap.stop)
    if keys is None:
        return near(Reason.COMPUTED_GROUPING_KEY)
    if not keys and kind != "cross":
        # a product with a global aggregate (its one row beside every row) is the keyless
        # join-back; any other join of it has no key to partition on
        return near(Reason.GLOBAL_AGGREGATE)
    return Match(family, shape.root, ap.stop, (paths[0].branch, paths[1].branch), join_kind=kind,
                 agg_side=side, keys=keys)


def join_back_key_premise(m: Match) -> KeyPremise:
    """Algorithm 3's join premise: the ON clause equates every grouping key of the aggregate
    side with the same input column on the row side."""
    j = m.join
    assert j is not None and m.agg_side is not None
    agg_in, row_in = (j.left, j.right) if m.agg_side is Side.LEFT else (j.right, j.left)
    pairs = []
    for k in m.keys:
        a, r = positions_carrying(agg_in, k, m.source), positions_carrying(row_in, k, m.source)
        pairs.append((a, r) if m.agg_side is Side.LEFT else (r, a))
    return KeyPremise(j, tuple(pairs))


def emits_aggregate_alone(kind: str, side: Side) -> bool:
    """Does the template emit the aggregate side's row on its own (outer-preserved, or the
    left side of a semi/anti join), deciding it by "some row matched"?"""
    preserved = kind == "full" or (kind == "left" and side is Side.LEFT) or (kind == "right" and side is Side.RIGHT)
    return preserved or (kind in ("semi", "anti") and side is Side.LEFT)


def join_back_program(m: Match, memory: MemoryRule) -> Program:
    """SuperOp_MJ: row emits guarded by φ_row ∧ present ∧ keys NOT NULL ∧ ψ; outer, semi
    and anti sides as for DJ; ``memory`` decides the memory class and sort order (a
    buffering program's row emits read the partition's FINAL state)."""
    j = m.join
    assert j is not None and m.agg_side is not None
    accs = Accs()
    s = m.agg_side
    # no keys (a cross join): the one partition, whose aggregate row exists over no row
    A = AggBranch(m.branches[s.pos], accs, global_ok=not m.keys)
    keys = A.keys
    rb = m.branches[s.other.pos]
    up = capture_parameters(rb.upper)
    row_out = [to_ns(e, "row") for _, e in up.projection]
    phi_row = to_ns(up.predicate, "row")
    sides = ((A.top_fields, A.outputs), (rb.upper.top.fields, row_out))
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
        return _any_matched(A, m.branches[s.pos], keys, accs, phi_row, psi)

    if kind in ("inner", "left", "right", "full", "cross"):
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
    mem, sort = memory(row_emits, accs)
    return Program(keys=tuple(keys), output=m.root.names, accumulators=tuple(accs.accs),
                   flags=tuple(accs.flags), partition_emits=tuple(part_emits),
                   row_emits=tuple(row_emits), sort=sort, memory=mem)


def _any_matched(A: AggBranch, b: Branch, keys: Sequence[str], accs: Accs, phi_row: Optional[exp.Expr],
                 psi: Optional[exp.Expr]) -> exp.Expr:
    """"Some row matched the aggregate row" for the aggregate side emitted alone. The flag
    folds every row of the partition; the query evaluates the residual ψ only on the pairs
    it forms, i.e. with rows of keys whose group survives the aggregate path. So ψ sits
    behind that survival, decided per row (key not NULL, the σ below γ on keys only, the σ
    above γ on keys only): a partial ψ never raises where the query does not (e.g. a FULL
    join whose HAVING drops a key)."""
    if psi is not None and reads(psi, "acc"):
        raise TemplateError("a join residual over aggregates on the aggregate side emitted alone",
                            JoinBackReason.RESIDUAL_ON_AGGREGATES)
    guard = phi_row
    if psi is not None:
        survives = group_survives_per_row(A, b, keys)
        if survives is None:
            raise TemplateError("a join residual on the aggregate side emitted alone with a filter "
                                "on aggregates (or below γ on non-keys): the query evaluates it only "
                                "for keys whose group survives, which no row can tell",
                                JoinBackReason.RESIDUAL_BEHIND_AGGREGATE_FILTER)
        guard = conj(is_true(phi_row), survives, keys_to_rows(psi))
    f = accs.flag(guard)
    out = conj(f, is_true(A.present), keys_not_null(keys)) if f is not None else \
        conj(is_true(A.present), keys_not_null(keys))
    return out if out is not None else exp.true()


def reads(e: exp.Expr, ns: str) -> bool:
    """Does ``e`` read a name of DSL namespace ``ns``?"""
    return any(c.table == ns for c in e.find_all(exp.Column))


def keys_to_rows(e: exp.Expr) -> exp.Expr:
    """``key.k`` -> ``row.k`` (equal within a partition; a flag's guard reads the row)."""
    e = e.copy()
    for c in list(e.find_all(exp.Column)):
        if c.table == "key":
            c.replace(ref("row", c.name))
    return e


def group_survives_per_row(A: AggBranch, b: Branch, keys: Sequence[str]) -> Optional[exp.Expr]:
    """A row condition that holds on a row of key κ iff κ's group survives the aggregate
    path (non-empty after the σ below γ, kept by the σ above γ): the key is not NULL and
    both σ read only grouping keys. None when a σ reads anything else."""
    assert b.lower is not None
    low = to_ns(capture_parameters(b.lower).predicate, "row")
    if low is not None and any(c.name not in keys for c in low.find_all(exp.Column)):
        return None
    up = A.phi_up
    if up is not None and (reads(up, "acc") or reads(up, "flag")):
        return None
    return conj(keys_to_rows(keys_not_null(keys) or exp.true()), is_true(low),
                is_true(keys_to_rows(up)) if up is not None else None)


def join_back_prefilter(m: Match, program: Program) -> Optional[exp.Expr]:
    """The shared source's filter of a join-back instance: the aggregate side's lower edge
    and the rows side's upper edge, with non-NULL keys where the join needs them."""
    assert m.agg_side is not None
    a, r = m.branches[m.agg_side.pos], m.branches[m.agg_side.other.pos]
    return not_null_keys_prefilter(m.join_kind, program, [source_predicate(a.lower), source_predicate(r.upper)])


def join_back_rule_id(long_name: str, skeleton: tuple[Any, ...]) -> str:
    """``<family>-<join kind>[-aggregate-first]``: the rule id of a join-back skeleton."""
    side = "-aggregate-first" if skeleton[3] == Side.LEFT.value else ""
    return f"{long_name}-{skeleton[2]}{side}"
