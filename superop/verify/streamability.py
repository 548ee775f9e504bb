"""Streamability checks of the paper's §4.3 (Algorithms 1-3), with the join implication
``⋈.eqPred ⇒ pairwise key equality`` decided by Z3, and the memory class of a program
checked against the sub-plan (not taken from its declaration).

Uses the lead's IR analyses (``superop.ir.analysis``): :func:`decompose` (AdvanceNext for
the trees of Fig. 6), :func:`capture_parameters` / :func:`traverse_up` (Algorithms 4-5).

The Z3 implication. The join's whole ON condition (equi conjuncts AND residual) is
evaluated in SQL three-valued logic over fresh, independent, nullable values for every
column of the join's two inputs (aggregate outputs are unconstrained, which only makes
the check stronger). It must imply, for each grouping key, that the left and the right
key are not distinct (``l.k <=> r.k``): then a row can only match rows of its own
partition, which is what a per-partition program needs. The check is valid iff
``cond ∧ ¬goal`` is unsat; a solver ``unknown`` fails the check.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import z3
from sqlglot import exp

from ..ir.analysis import Decomposition, capture_parameters, decompose, traverse_up, walk_edge
from ..ir.dialect import DIALECT
from ..ir.nodes import Aggregate, Join, Node, Scan, walk
from ..synth.dsl import STREAMING, Program
from .encode import (FALSE, TRUE, PlanEncoder, Table, V, _bool3, _cmp, ev, fresh, is_true,
                     not_distinct, Ctx)
from .result import Unsupported


@dataclass
class StreamCheck:
    ok: bool
    family: Optional[str]
    reason: str
    details: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"ok": self.ok, "family": self.family, "reason": self.reason, "details": self.details}


def find_decomposition(plan: Node) -> Optional[Decomposition]:
    """The Fig. 6 tree rooted at ``plan`` or just below optional operators above it."""
    d = decompose(plan, plan)
    if d is not None:
        return d
    top = walk_edge(plan)
    return decompose(top.bottom, plan) if top.bottom is not plan else None


# ---------------------------------------------------------------------------
# TraverseDown of grouping keys, TraverseUp to the root's inputs
# ---------------------------------------------------------------------------
def _bare(e: exp.Expression) -> Optional[str]:
    e = e.unnest() if isinstance(e, exp.Paren) else e
    return e.name if isinstance(e, exp.Column) else None


def key_sources(agg: Aggregate, lower) -> Optional[list[str]]:
    """Algorithm 4 for Γ.keys: source column of each grouping key (None: computed)."""
    params = capture_parameters(lower)
    out = []
    for k in agg.keys:
        src = _bare(params.substitute(k, lower.top.fields))
        if src is None:
            return None
        out.append(src)
    return out


def key_tops(agg: Aggregate, upper) -> list[Optional[str]]:
    """TraverseUp of each grouping key: the column name at the core parent's input
    that carries the key unchanged (None if the key is not passed up)."""
    out = []
    for k in agg.keys:
        names = [n for x, n in agg.items if x == k]
        hit = None
        for n in names:
            up = traverse_up([n], upper)
            if up:
                hit = up[0]
                break
        out.append(hit)
    return out


# ---------------------------------------------------------------------------
# The Z3 implication
# ---------------------------------------------------------------------------
def _field_kinds(node: Node, table: Scan) -> list[Optional[str]]:
    """Value kinds of ``node``'s output columns (from a 1-row symbolic encoding)."""
    t = Table(table.table, table.columns, 1, tag="kinds!")
    rel = PlanEncoder(t).encode(node)
    return [v.kind for v in rel.rows[0][1]] if rel.rows else [None] * len(node.fields)


def join_implies_key_equality(join: Join, pairs: list[tuple[int, int]], scan: Scan,
                              timeout_ms: int = 10000) -> tuple[Optional[bool], str]:
    """Decide ``ON-condition ⇒ AND(left[i] <=> right[j])`` for index pairs (i, j) into the
    left / right fields. Returns (True|False|None for unknown, explanation)."""
    lk, rk = _field_kinds(join.left, scan), _field_kinds(join.right, scan)
    fields = join.left.fields + join.right.fields
    vals = []
    for n, (f, k) in enumerate(zip(fields, lk + rk)):
        k = k or "int"
        vals.append(V(fresh(k, f"jv!{n}!{f}"), z3.Bool(f"jv!{n}!{f}!null"), k))
    from ..ir.nodes import resolve_field

    def col(c: exp.Column) -> V:
        try:
            return vals[resolve_field(fields, c)]
        except KeyError as err:
            raise Unsupported(str(err)) from None
    ctx = Ctx(col)
    cond = V(TRUE, FALSE, "bool")
    for a, b in join.equi:
        cond = _bool3("and", cond, _cmp(exp.EQ, ev(a, ctx), ev(b, ctx)))
    if join.residual is not None:
        cond = _bool3("and", cond, ev(join.residual, ctx))
    nl = len(join.left.fields)
    goal = z3.And(*[not_distinct(vals[i], vals[nl + j]) for i, j in pairs]) if pairs else TRUE
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(is_true(cond), z3.Not(goal))
    r = s.check()
    if r == z3.unsat:
        return True, "the join condition implies equality of every grouping key"
    if r == z3.sat:
        m = s.model()
        bad = [f"{fields[i]} <=> {fields[nl + j]}" for i, j in pairs
               if not z3.is_true(m.eval(not_distinct(vals[i], vals[nl + j]), model_completion=True))]
        return False, f"the join condition does not imply {', '.join(bad)}"
    return None, f"solver: {s.reason_unknown()}"


def union_find_agrees(join: Join, pairs: list[tuple[int, int]]) -> Optional[bool]:
    """The lead's syntactic decision (``superop.ir.analysis.equalities_imply``) of the same
    implication, when the ON clause is a conjunction of bare column equalities (else None).
    Used as a cross-check: where it applies it must agree with Z3."""
    from ..ir.analysis import equalities_imply
    from ..ir.lowering.exprs import conjuncts as _conjuncts
    from ..ir.nodes import resolve_field
    fields = join.left.fields + join.right.fields
    conj = [exp.EQ(this=a, expression=b) for a, b in join.equi] + _conjuncts(join.residual)
    prem = []
    for c in conj:
        if not (isinstance(c, exp.EQ) and isinstance(c.this, exp.Column) and isinstance(c.expression, exp.Column)):
            continue
        try:
            prem.append((str(resolve_field(fields, c.this)), str(resolve_field(fields, c.expression))))
        except KeyError:
            return None
    nl = len(join.left.fields)
    return equalities_imply(prem, [(str(i), str(nl + j)) for i, j in pairs])


# ---------------------------------------------------------------------------
# Algorithms 1-3
# ---------------------------------------------------------------------------
def check_streamability(plan: Node, timeout_ms: int = 10000) -> StreamCheck:
    d = find_decomposition(plan)
    if d is None:
        return StreamCheck(False, None, "not an instance of Diamond UnionAll, Diamond Join or Min & Join")
    try:
        if d.family == "DU":
            return _du(d)
        if d.family == "DJ":
            return _dj(d, timeout_ms)
        return _mj(d, timeout_ms)
    except Unsupported as why:
        return StreamCheck(False, d.family, f"unsupported: {why}")


def _du(d: Decomposition) -> StreamCheck:
    """Algorithm 1: every path's grouping keys, renamings undone, are the same non-empty set."""
    sets = [key_sources(b.agg, b.lower) for b in d.branches]
    if any(s is None for s in sets):
        return StreamCheck(False, "DU", "a grouping key is computed on the edge, not a source column",
                           {"keys": sets})
    if not sets[0] or any(set(s) != set(sets[0]) for s in sets[1:]):
        return StreamCheck(False, "DU", f"paths are grouped on different keys: {sets}", {"keys": sets})
    return StreamCheck(True, "DU", f"every path is grouped on {sorted(sets[0])}",
                       {"keys": sorted(sets[0])})


def _dj(d: Decomposition, timeout_ms: int) -> StreamCheck:
    """Algorithm 2: Algorithm 1's key check, then TraverseUp of the keys to the join and
    ``eqPred ⇒ pairwise key equality`` by Z3."""
    base = _du(d)
    if not base.ok:
        return StreamCheck(False, "DJ", base.reason, base.details)
    L, R = d.branches
    ls, rs = key_sources(L.agg, L.lower), key_sources(R.agg, R.lower)
    lt, rt = key_tops(L.agg, L.upper), key_tops(R.agg, R.upper)
    if any(x is None for x in lt + rt):
        return StreamCheck(False, "DJ", "a grouping key does not reach the join (TraverseUp is empty)")
    join: Join = d.root
    lidx = {f.name: i for i, f in enumerate(join.left.fields)}
    ridx = {f.name: i for i, f in enumerate(join.right.fields)}
    pairs = [(lidx[lt[i]], ridx[rt[rs.index(src)]]) for i, src in enumerate(ls)]
    ok, why = join_implies_key_equality(join, pairs, d.source if isinstance(d.source, Scan)
                                        else _scan_of(d.source), timeout_ms)
    return StreamCheck(bool(ok), "DJ", why if ok is not None else f"undecided: {why}",
                       {"keys": sorted(ls), "join_kind": d.join_kind,
                        "union_find": union_find_agrees(join, pairs)})


def _scan_of(n: Node) -> Scan:
    scans = [x for x in walk(n) if isinstance(x, Scan)]
    if len({s.table for s in scans}) != 1:
        raise Unsupported("the shared source does not read exactly one table")
    return scans[0]


def _mj(d: Decomposition, timeout_ms: int) -> StreamCheck:
    """Algorithm 3: keys of Γ traced to the source and up both join inputs, the Z3
    implication, then exactly one aggregate, a MIN or MAX over one source column (the
    partition is sorted on it). A σ on the edge into the aggregate (Fig. 13) makes the
    running MIN/MAX differ from the final one: not streaming."""
    s = d.agg_side
    A, Rb = d.branches[s], d.branches[1 - s]
    set1 = key_sources(A.agg, A.lower)
    if not set1:
        return StreamCheck(False, "MJ", "grouping keys are computed or absent")
    set2 = key_tops(A.agg, A.upper)
    set3 = traverse_up(set1, Rb.upper)
    if any(x is None for x in set2) or not set3 or len(set2) != len(set3):
        return StreamCheck(False, "MJ", "a grouping key does not reach the join on both sides")
    join: Join = d.root
    agg_fields, row_fields = (join.left, join.right) if s == 0 else (join.right, join.left)
    aidx = {f.name: i for i, f in enumerate(agg_fields.fields)}
    ridx = {f.name: i for i, f in enumerate(row_fields.fields)}
    pairs = [(aidx[a], ridx[r]) for a, r in zip(set2, set3)]
    if s == 1:
        pairs = [(j, i) for i, j in pairs]
    scan = d.source if isinstance(d.source, Scan) else _scan_of(d.source)
    ok, why = join_implies_key_equality(join, pairs, scan, timeout_ms)
    uf = union_find_agrees(join, pairs)
    if not ok:
        return StreamCheck(False, "MJ", why if ok is not None else f"undecided: {why}", {"union_find": uf})
    calls = [c for x, _ in A.agg.items for c in x.find_all(exp.AggFunc)]
    if len(calls) != 1 or not isinstance(calls[0], (exp.Min, exp.Max)):
        return StreamCheck(False, "MJ", "needs exactly one aggregate, a MIN or a MAX "
                                        f"(found {[c.sql(dialect=DIALECT) for c in calls]})")
    params = capture_parameters(A.lower)
    col = _bare(params.substitute(calls[0].this, A.lower.top.fields))
    if col is None:
        return StreamCheck(False, "MJ", "the MIN/MAX argument is not a single source column")
    pred_cols = {c.name for c in params.predicate.find_all(exp.Column)} if params.predicate is not None else set()
    if params.predicate is not None and not pred_cols <= set(set1):
        return StreamCheck(False, "MJ", "a Select on the edge into the aggregate (Fig. 13): the first row "
                                        "of the sorted partition need not pass it, so the running "
                                        "MIN/MAX is not final — needs buffering")
    # a σ over grouping keys only keeps or drops whole partitions: still streaming
    asc = isinstance(calls[0], exp.Min)
    return StreamCheck(True, "MJ", f"{'MIN' if asc else 'MAX'}({col}) is final after the first row "
                                   f"of a partition sorted on {col} {'ASC' if asc else 'DESC'}",
                       {"keys": sorted(set1), "sort": col, "ascending": asc, "join_kind": d.join_kind,
                        "union_find": uf})


# ---------------------------------------------------------------------------
# Memory class of a program (checked, not declared)
# ---------------------------------------------------------------------------
def check_program_memory(sub_plan: Node, program: Program, K: int = 4,
                         timeout_ms: int = 20000) -> StreamCheck:
    """A program that declares ``streaming`` must (a) keep constant state per partition
    (no COUNT DISTINCT) and (b) be equivalent to the sub-plan when its row emits see
    running values. Returns the achieved class in ``details['memory']``."""
    from .check import check_memory_class
    achieved = check_memory_class(sub_plan, program, K=K, timeout_ms=timeout_ms)
    det = {"declared": program.memory, "memory": achieved, "K": K}
    if achieved is None:
        return StreamCheck(False, None, "the program is not equivalent to the sub-plan "
                                        "under either memory class (or undecided)", det)
    if program.memory == STREAMING and achieved != STREAMING:
        return StreamCheck(False, None, "declared streaming, but only correct when buffering "
                                        "(running values differ from final values)", det)
    return StreamCheck(True, None, f"declared {program.memory}, achieves {achieved}", det)
