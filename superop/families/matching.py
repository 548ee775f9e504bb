"""The ONE matching code path of every stage (mining, synthesis, verification, runtime):
the generic structure at a core node (``kit.diamond.shape_at``), each registered family's
pattern, then the checks that turn a recognized instance into a match:

1. the family's streamability premises and the join premise of Algorithms 2-3
   (union-find; the verifier re-decides the join premise with Z3);
2. single input, single output; no duplicate column names in the shared input;
3. constructs the proofs do not model (:mod:`superop.ir.safety`, :func:`unsafe_reason`);
4. the family's template builds the program (what the runtime will run).

A node that fails a check is a :class:`NearMiss` with the typed reason, the same in every
stage: what mining calls a candidate is what the runtime can match.
"""
from __future__ import annotations

from dataclasses import replace
from enum import Enum
from typing import Iterable, Optional

from ..ir.nodes import Node, walk
from ..ir.subqueries import opaque_subqueries
from ..ir.safety import BlockReason, Blocker, blocking_reason
from ..dsl import Program, sort_distinct
from .kit.diamond import PlanContext, keys_implied, shape_at
from .kit.keyedfilter import keyed_filters
from .kit.sharedconj import shared_subquery_conjuncts
from .kit.onerow import one_row_products
from .kit.regroup import regroup
from .kit.records import Finding, Match, NearMiss, Reason, ReasonCode, TemplateError
from . import registry


# the reasons the matching path itself refuses with, whatever the family (a family's own
# reasons are its ``Family.reasons``)
MATCHING_REASONS: tuple[type[ReasonCode], ...] = (Reason, BlockReason)


def reason_codes() -> dict[str, ReasonCode]:
    """Every near-miss reason mining or the runtime can report: code -> member."""
    enums = MATCHING_REASONS + tuple(e for fam in registry.REGISTRY for e in fam.reasons)
    return {r.value: r for e in enums for r in e}


def recognize_at(node: Node, ctx: PlanContext) -> Optional[Finding]:
    """The families' patterns and their own premises (no join premise, no template): what
    the verifier's streamability check starts from. The first family whose pattern holds
    and whose premises hold wins; a pattern whose premises fail is that family's near-miss
    and the next family may still take the node (Min & Join's MIN/MAX premise, then
    WinMagic's window over the whole partition); else the first near-miss."""
    shape = shape_at(node, ctx)
    if shape is None:
        return None
    near: Optional[NearMiss] = None
    for fam in registry.REGISTRY:
        r = fam.recognize(shape)
        if isinstance(r, Match):
            failed = fam.premise_failure(r)
            if failed is None:
                return r
            r = _near(r, *failed)
        if r is not None and near is None:
            near = r
    return near


def match_at(node: Node, ctx: PlanContext) -> Optional[Finding]:
    r = recognize_at(node, ctx)
    return finish(r, ctx) if isinstance(r, Match) else r


def _near(m: Match, reason: Enum, detail: str = "") -> NearMiss:
    return NearMiss(m.family, m.root, reason, detail, m.join_kind or "", len(m.branches), m.source)


def finish(m: Match, ctx: PlanContext) -> Finding:
    """The checks after a family's pattern (see the module doc); the match carries its
    program when it passes them."""
    fam = registry.get(m.family)
    failed = fam.premise_failure(m)
    if failed is not None:
        return _near(m, *failed)
    prem = fam.key_premise(m)
    if prem is not None:
        implied = keys_implied(prem.join, prem.pairs)
        if not all(implied):
            return _near(m, Reason.JOIN_ON_SUBSET_OF_KEYS if any(implied) else Reason.JOIN_NOT_ON_GROUPING_KEYS)
    names = list(m.source.names)     # as lowering normalized them (exact when case-sensitive)
    if len(set(names)) != len(names):
        return _near(m, Reason.DUPLICATE_SOURCE_COLUMNS)
    interior = m.interior
    for n in m.interior_nodes():
        if n is not m.root and any(id(p) not in interior for p in ctx.parents.get(id(n), ())):
            return _near(m, Reason.NOT_SINGLE_OUTPUT)
    blocked = unsafe_reason(m.interior_nodes(), m.source)
    if blocked is not None:
        return _near(m, blocked.reason, blocked.detail)
    try:
        program = build_program(m)
    except TemplateError as e:
        return _near(m, e.code or Reason.TEMPLATE_REFUSED, str(e))
    return replace(m, program=program)


def unsafe_reason(interior: Iterable[Node], source: Node) -> Optional[Blocker]:
    """Why the nodes a super-operator replaces, or its shared source, cannot be matched:
    :func:`superop.ir.safety.blocking_reason` (nondeterministic or order-dependent
    expressions, UDFs, LIMIT/TABLESAMPLE or unreadable SQL in the source, volatile views).
    Its :class:`~superop.ir.safety.BlockReason` is the near-miss reason."""
    return blocking_reason(interior, source)


def canonical(plan: Node) -> Node:
    """The canonical form the families are matched on: products with a one-row aggregate
    pushed below the GROUP BY they join (:func:`.kit.onerow.one_row_products`), then
    :func:`regroup`, then keyed filter joins of cross-joined global aggregates read as
    filters on one input (:func:`.kit.keyedfilter.keyed_filters`, under a declared key)."""
    return keyed_filters(regroup(one_row_products(shared_subquery_conjuncts(opaque_subqueries(plan)))))


def scan(plan: Node) -> list[Finding]:
    """Every match and near-miss of the plan, top-down; a match claims the nodes it
    replaces (its source stays open: a diamond inside another's shared input is found
    too). Mining reports these; the runtime applies the matches a rule admits.

    The plan is first brought into canonical form (:func:`canonical`: uses of a shared
    aggregate as one sub-tree of joins, their filters on them; keyed filter joins of
    global aggregates as filters on one input); the findings are nodes of
    ``canonical(plan)`` (``families.regroup``) — the plan a caller applies them to (the same object when nothing
    moves, and ``regroup`` of a canonical plan is that plan)."""
    plan = canonical(plan)
    ctx = PlanContext(plan)
    out: list[Finding] = []
    claimed: set[int] = set()
    for n in reversed(list(walk(plan))):          # parents before children
        if id(n) in claimed:
            continue
        f = match_at(n, ctx)
        if f is None:
            continue
        out.append(f)
        if isinstance(f, Match):
            claimed |= f.interior
    return out


def first_match(plan: Node, finished: bool = False) -> Optional[Match]:
    """The top-most instance in ``plan`` (recognized by a family's pattern; with
    ``finished`` also through the join premise and the template); a node of
    ``canonical(plan)``."""
    plan = canonical(plan)
    ctx = PlanContext(plan)
    for n in reversed(list(walk(plan))):
        f = match_at(n, ctx) if finished else recognize_at(n, ctx)
        if isinstance(f, Match):
            return f
    return None


def build_program(m: Match) -> Program:
    """The family's template program for ``m`` (TemplateError if it cannot build one), its
    COUNT(DISTINCT)s as the constant-state sorted fold where one sort order provides it
    (:func:`superop.synth.dsl.sort_distinct`)."""
    return sort_distinct(registry.get(m.family).build_program(m))
