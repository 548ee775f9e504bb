"""Keyed filter joins: a global aggregate whose input is another's input joined, in
addition, to one table on a DECLARED KEY of that table, read as a filter on ONE shared
input — the canonical form that makes TPC-DS q61 a global-aggregate diamond (GA).

    γ_f σ_{c ∧ r}(R ⋈_{fk = pk} P)  ×  γ_g σ_c(R)
      =  γ_f σ_{pk IS NOT NULL ∧ r}(S)  ×  γ_g S          with S = σ_c(R) ⟕_{fk = pk} P

when ``pk`` is a declared key of ``P`` (:mod:`superop.ir.keys`: unique and NOT NULL) and
``r`` reads ``P`` only. Why: a left join on a key keeps every row of ``σ_c(R)`` exactly
once (no two ``P`` rows share ``pk``), so ``γ_g S`` folds the rows of ``γ_g σ_c(R)``; the
rows of ``S`` with a ``P`` row (``pk IS NOT NULL``: the join equates it with ``fk``) are
the inner join's, so the filtered branch folds the rows of ``R ⋈ P`` that pass ``r``.
Without the key a ``P`` row repeated on ``pk`` would repeat rows of ``S``: the rewrite is
wrong, and it is not made (the GA near-miss ``filter_join_not_on_key`` says why).

The premise is part of the claim: the canonical source is recorded with its
:class:`KeyedFilter` premise (:func:`premise_of`), the GA match carries it in
``Match.premises`` and its covers record, and a rule admits such a match only when its
certificates were proved under the same premise. The runtime canonicalizes with the
session's declarations (``SuperOpSession(keys=...)``), so the rule applies only where they
give the key. The proof of the step is :mod:`superop.verify.keyed_filter` (bounded, two
tables, the key assumed; without it Z3 finds a counterexample).

Admitted (everything else is left as written): a product (cross joins, joins without a
condition) of two or more inputs, each a σ/π/ρ edge over a global aggregate (no GROUP BY)
whose own input is a chain of filters over a tree of inner joins (conditions: equalities
and conjuncts) or over one scan; one input — the *base* — joins the fewest tables; every other input joins
the same tables (same table, same qualifier), with the same conditions, plus ONE table
``P`` (a scan) joined by one equality ``fk = pk`` (``fk`` of another table), its other
conditions reading ``P`` only, deterministic, without sub-queries; every such input joins
the same ``P`` on the same equality.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from sqlglot import exp

from ...ir.analysis import walk_edge
from ...ir.dialect import SubqueryValue
from ...ir.functions import Determinism, risky_calls
from ...ir.lowering.exprs import conjuncts
from ...ir.nodes import Aggregate, Join, Node, Scan, Select, replace, walk
from .diamond import PlanContext
from .regroup import and_all

PREMISE_TEXT = "filter join on a declared key"


@dataclass(frozen=True)
class KeyedFilter:
    """The premise of the canonical form: ``key`` (columns of the shared source) is a
    declared key of the table a filtering join reads; ``origins``: the declaration."""
    key: tuple[str, ...]
    origins: tuple[str, ...] = field(default=(), compare=False)

    def text(self) -> str:
        return PREMISE_TEXT

    def pretty(self) -> str:
        return f"requires {', '.join(self.key)} a declared key ({'; '.join(self.origins)})"

    def reads(self) -> tuple[str, ...]:
        return self.key


# canonical shared sources made here -> their premise (nodes compare by identity)
_PREMISES: "weakref.WeakKeyDictionary[Node, KeyedFilter]" = weakref.WeakKeyDictionary()


def premise_of(source: Node) -> Optional[KeyedFilter]:
    """The premise of a shared source this module made (None for any other node)."""
    return _PREMISES.get(source)


@dataclass
class _Region:
    """An aggregate's input as a filter chain over inner joins: leaves, equalities (as
    text pairs, with the expressions) and conjuncts (text -> expression)."""
    leaves: list[Node]
    equis: dict[frozenset[str], tuple[exp.Expr, exp.Expr]]
    conds: dict[str, exp.Expr]


@dataclass
class Analysis:
    """One input against the base: the extra table, the equality joining it, its own
    conditions; ``keyed`` whether the join column is a declared key."""
    table: Scan
    fk: exp.Expr
    pk: exp.Column
    own: list[exp.Expr]
    keyed: bool


def _region(n: Node) -> Optional[_Region]:
    conds: list[exp.Expr] = []
    while isinstance(n, Select):
        conds += conjuncts(n.predicate)
        n = n.child
    if not isinstance(n, (Join, Scan)):
        return None
    leaves: list[Node] = []
    equis: dict[frozenset[str], tuple[exp.Expr, exp.Expr]] = {}

    def go(x: Node) -> bool:
        if isinstance(x, Join):
            if x.kind not in ("inner", "cross"):
                return False
            for a, b in x.equi:
                equis[frozenset((a.sql(), b.sql()))] = (a, b)
            conds.extend(conjuncts(x.residual) if x.residual is not None else [])
            return go(x.left) and go(x.right)
        leaves.append(x)
        return True
    if not go(n):
        return None
    if any(c.find(exp.Select, exp.Subquery, SubqueryValue) is not None or _nondeterministic(c) for c in conds):
        return None
    return _Region(leaves, equis, {c.sql(): c for c in conds if c != exp.true()})


def _nondeterministic(c: exp.Expr) -> bool:
    """A call whose value may differ per call (a UDF of unknown determinism is left to the
    matching path's safety check, which blocks it on a match)."""
    return any(d is Determinism.NONDETERMINISTIC for d, _ in risky_calls(c))


def _leaf_id(n: Node) -> Optional[tuple[Any, ...]]:
    return (n.identity or (n.table,), n.qualifier, n.columns) if isinstance(n, Scan) else None


def _qualifiers(c: exp.Expr) -> set[str]:
    return {col.table for col in c.find_all(exp.Column)}


def analyze(base: Node, other: Node) -> Optional[Analysis]:
    """``other`` as ``base`` joined, in addition, to one scan on one equality (module
    doc); None when it is not that."""
    rb, ro = _region(base), _region(other)
    if rb is None or ro is None:
        return None
    ids_b = [_leaf_id(x) for x in rb.leaves]
    ids_o = [_leaf_id(x) for x in ro.leaves]
    if None in ids_b or None in ids_o or len(ids_o) != len(ids_b) + 1:
        return None
    extra = [i for i, x in enumerate(ids_o) if x not in ids_b]
    if len(extra) != 1 or sorted(map(repr, [x for i, x in enumerate(ids_o) if i != extra[0]])) != sorted(
            map(repr, ids_b)):
        return None
    p = ro.leaves[extra[0]]
    assert isinstance(p, Scan)
    q = p.qualifier
    if not q or any(isinstance(x, Scan) and x.qualifier == q for x in rb.leaves):
        return None
    if not set(rb.equis) <= set(ro.equis) or not set(rb.conds) <= set(ro.conds):
        return None
    new_eq = [ro.equis[k] for k in ro.equis if k not in rb.equis]
    own = [ro.conds[k] for k in ro.conds if k not in rb.conds]
    if len(new_eq) != 1 or any(_qualifiers(c) != {q} for c in own):
        return None
    a, b = new_eq[0]
    fk, pk = (a, b) if _qualifiers(b) == {q} else (b, a)
    if not isinstance(pk, exp.Column) or pk.table != q or q in _qualifiers(fk) or not _qualifiers(fk):
        return None
    keyed = any(k.is_key and [c.lower() for c in k.columns] == [pk.name.lower()] for k in p.keys)
    return Analysis(p, fk, pk, own, keyed)


@dataclass
class _Use:
    agg: Aggregate          # the global aggregate of one product input
    inp: Node               # its input


def _product_uses(j: Join, ctx: PlanContext) -> Optional[list[_Use]]:
    """The inputs of a product region at ``j``, each a σ/π/ρ edge over a global aggregate."""
    leaves: list[Node] = []

    def go(x: Node) -> None:
        if isinstance(x, Join) and x.is_product and not ctx.is_shared(x):
            go(x.left)
            go(x.right)
        else:
            leaves.append(x)
    go(j)
    out = []
    for lf in leaves:
        a = walk_edge(lf, ctx.shared_ids).bottom
        if not isinstance(a, Aggregate) or a.keys or ctx.is_shared(a):
            return None
        out.append(_Use(a, a.child))
    return out


def refusal(uses: Sequence[Node]) -> Optional[str]:
    """Why inputs of a product of global aggregates (their aggregates' inputs) that one
    keyed join would make one input are not read so: the join column is no declared key
    (None when they are not such inputs at all)."""
    found = _plan(list(uses))
    if found is None:
        return None
    _, an = found
    bad = [x for x in an if x is not None and not x.keyed]
    if not bad:
        return None
    x = bad[0]
    return f"{x.table.table} is joined on {x.pk.sql()}, which is not a declared key of {x.table.table}"


def _plan(inputs: list[Node]) -> Optional[tuple[int, list[Optional[Analysis]]]]:
    """(the base input's index, per input its analysis against the base: None for the
    base and inputs equal to it)."""
    regions = [_region(x) for x in inputs]
    if any(r is None for r in regions) or len(inputs) < 2:
        return None
    base = min(range(len(inputs)), key=lambda i: len(regions[i].leaves))   # type: ignore[union-attr]
    an: list[Optional[Analysis]] = []
    for i, x in enumerate(inputs):
        if i == base or x is inputs[base]:
            an.append(None)
            continue
        a = analyze(inputs[base], x)
        if a is None:
            return None
        an.append(a)
    real = [a for a in an if a is not None]
    if not real:
        return None
    first = real[0]
    if any(a.table is not first.table and _leaf_id(a.table) != _leaf_id(first.table) for a in real) or any(
            (a.fk.sql(), a.pk.sql()) != (first.fk.sql(), first.pk.sql()) for a in real):
        return None
    return base, an


def keyed_filters(plan: Node) -> Node:
    """``plan`` with every product of global aggregates that a keyed filter join makes
    one input rewritten to read that input (module doc); ``plan`` itself when none."""
    ctx = PlanContext(plan)
    mapping: dict[int, Node] = {}
    done: set[int] = set()
    for n in walk(plan):
        if not isinstance(n, Join) or not n.is_product or id(n) in done:
            continue
        uses = _product_uses(n, ctx)
        if uses is None:
            continue
        found = _plan([u.inp for u in uses])
        if found is None:
            continue
        base, an = found
        real = [a for a in an if a is not None]
        if not all(a.keyed for a in real):
            continue
        first = real[0]
        src = Join(uses[base].inp, first.table, "left", ((first.fk.copy(), first.pk.copy()),))
        _PREMISES[src] = KeyedFilter((first.pk.name,), (f"{first.table.table}: {first.pk.name}",))
        for u, a in zip(uses, an):
            if a is None:
                child: Node = src
            else:
                guard = exp.Not(this=exp.Is(this=a.pk.copy(), expression=exp.Null()))
                pred = and_all([guard] + a.own)
                assert pred is not None
                child = Select(src, pred)
            mapping[id(u.agg)] = u.agg.with_children((child,))
        done |= {id(x) for x in walk(n) if isinstance(x, Join)}
    return replace(plan, mapping) if mapping else plan
