"""Streamability checks of the paper's §4.3 (Algorithms 1-3), with the join implication
``⋈.eqPred ⇒ pairwise key equality`` decided by Z3, and the memory class of a program
checked against the sub-plan (not taken from its declaration).

The families' patterns come from the family registry (``superop.families``): the same
recognition every stage uses, the family's join premise (which key columns the ON
condition must equate) and its streamability statement. Only the decision of the join
premise is the verifier's own (Z3 here, union-find in matching).

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

from .. import families
from ..dsl import SET_FUNCS, STREAMING, Program, distinct_sort_obstacle
from ..families import Match, NearMiss
from ..families.kit.diamond import PlanContext, equalities_imply, equi_pairs
from ..families.kit.records import TemplateError
from ..ir.analysis import walk_edge
from ..ir.nodes import Join, Node, Scan, resolve_field, walk
from .check import check_memory_class
from .exprs import Ctx, bool3, cmp, ev
from .plan_encoder import PlanEncoder
from .relations import Table
from .result import Unsupported
from .solving import RestartingSolver
from .values import FALSE, TRUE, V, fresh, is_true, not_distinct


@dataclass
class StreamCheck:
    ok: bool
    family: Optional[str]
    reason: str
    details: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"ok": self.ok, "family": self.family, "reason": self.reason, "details": self.details}


def recognize(plan: Node) -> Optional[Match | NearMiss]:
    """What the family registry recognizes at ``plan`` or just below optional operators
    above it (a match, or a near-miss with its reason)."""
    ctx = PlanContext(plan)
    r = families.recognize_at(plan, ctx)
    if r is None:
        top = walk_edge(plan)
        if top.bottom is not plan:
            r = families.recognize_at(top.bottom, ctx)
    return r


def find_match(plan: Node) -> Optional[Match]:
    """The family instance rooted at ``plan`` or just below optional operators above it."""
    r = recognize(plan)
    return r if isinstance(r, Match) else None


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

    def col(c: exp.Column) -> V:
        try:
            return vals[resolve_field(fields, c)]
        except KeyError as err:
            raise Unsupported(str(err)) from None
    ctx = Ctx(col)
    cond = V(TRUE, FALSE, "bool")
    for a, b in join.equi:
        cond = bool3("and", cond, cmp(exp.EQ, ev(a, ctx), ev(b, ctx)))
    if join.residual is not None:
        cond = bool3("and", cond, ev(join.residual, ctx))
    nl = len(join.left.fields)
    goal = z3.And(*[not_distinct(vals[i], vals[nl + j]) for i, j in pairs]) if pairs else TRUE
    s = RestartingSolver(timeout_ms, make=z3.Solver)
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


def union_find_agrees(join: Join, pairs: list[tuple[int, int]]) -> bool:
    """The syntactic decision of the same implication (union-find over the ON clause's
    column equalities, as matching decides it). Where the ON clause equates bare columns
    it must agree with Z3; Z3 also decides what it cannot (``l.a + 0 = r.a``)."""
    prem = [(f"L{li}", f"R{ri}") for li, ri in equi_pairs(join)]
    return equalities_imply(prem, [(f"L{i}", f"R{j}") for i, j in pairs])


# ---------------------------------------------------------------------------
# Algorithms 1-3
# ---------------------------------------------------------------------------
def check_streamability(plan: Node, timeout_ms: int = 10000) -> StreamCheck:
    """Algorithms 1-3 for the family instance at ``plan``: the family's pattern (keys traced
    to the shared source, its own premises such as one MIN/MAX over one column for Min &
    Join), then the join premise ``ON ⇒ pairwise key equality`` decided by Z3."""
    r = recognize(plan)
    if r is None:
        return StreamCheck(False, None, "not an instance of any registered family ("
                           + ", ".join(f.catalog.long_name for f in families.REGISTRY) + ")")
    if isinstance(r, NearMiss):
        return StreamCheck(False, r.family, r.why)
    r = _over_one_table(r)
    fam = families.get(r.family)
    failed = fam.premise_failure(r)
    if failed is not None:
        reason, detail = failed
        return StreamCheck(False, r.family, reason.text + (f": {detail}" if detail else ""))
    details: dict = {}
    try:
        prem = fam.key_premise(r)
        if prem is not None:
            if any(not ls or not rs for ls, rs in prem.pairs):
                return StreamCheck(False, r.family, "a grouping key does not reach the join on both sides "
                                                    "(TraverseUp is empty)")
            pairs = [(min(ls), min(rs)) for ls, rs in prem.pairs]
            ok, why = join_implies_key_equality(prem.join, pairs, _scan_of(r.source), timeout_ms)
            details["union_find"] = union_find_agrees(prem.join, pairs)
            if not ok:
                return StreamCheck(False, r.family, why if ok is not None else f"undecided: {why}", details)
    except Unsupported as why:
        return StreamCheck(False, r.family, f"unsupported: {why}")
    st = fam.streamability(r)
    why = distinct_state_failure(r)
    if why is not None:
        return StreamCheck(False, r.family, why, dict(st.details, **details))
    return StreamCheck(True, r.family, st.text, dict(st.details, **details))


def _over_one_table(m: Match) -> Match:
    """The instance over its shared source read as one table when the source joins several
    (what the program reads is the source's rows; the Z3 premise below is decided over a
    row of each join input)."""
    if isinstance(m.source, Scan) or len({s.table for s in walk(m.source) if isinstance(s, Scan)}) == 1:
        return m
    over = families.over_source(m.root, m.source)
    again = None if over is None else families.recognize_at(over[0], PlanContext(over[0]))
    return again if isinstance(again, Match) and again.family == m.family else m


def distinct_state_failure(m: Match) -> Optional[str]:
    """Why the instance's COUNT(DISTINCT)s need a set per partition (None: it has none, or
    the template folds them all as the sorted constant-state fold: one distinct column,
    the partition sorted on it right after the keys)."""
    try:
        prog = m.program or families.build_program(m)
    except TemplateError:
        return None
    if not any(a.func in SET_FUNCS for a in prog.accumulators):
        return None
    obstacle = distinct_sort_obstacle(prog.accumulators, prog.sort, bool(prog.row_emits))
    return f"COUNT(DISTINCT) keeps a set of values per partition (buffering): {obstacle}"


def _scan_of(n: Node) -> Scan:
    if isinstance(n, Scan):
        return n
    scans = [x for x in walk(n) if isinstance(x, Scan)]
    if len({s.table for s in scans}) != 1:
        raise Unsupported("the shared source does not read exactly one table")
    return scans[0]


# ---------------------------------------------------------------------------
# Memory class of a program (checked, not declared)
# ---------------------------------------------------------------------------
def check_program_memory(sub_plan: Node, program: Program, K: int = 4,
                         timeout_ms: int = 20000) -> StreamCheck:
    """A program that declares ``streaming`` must (a) keep constant state per partition
    (no set-valued COUNT(DISTINCT); the sorted fold is constant state) and (b) be
    equivalent to the sub-plan when its row emits see running values.
    Returns the achieved class in ``details['memory']``."""
    achieved = check_memory_class(sub_plan, program, K=K, timeout_ms=timeout_ms)
    det = {"declared": program.memory, "memory": achieved, "K": K}
    if achieved is None:
        return StreamCheck(False, None, "the program is not equivalent to the sub-plan "
                                        "under either memory class (or undecided)", det)
    if program.memory == STREAMING and achieved != STREAMING:
        return StreamCheck(False, None, "declared streaming, but only correct when buffering "
                                        "(running values differ from final values)", det)
    return StreamCheck(True, None, f"declared {program.memory}, achieves {achieved}", det)
