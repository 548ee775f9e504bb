"""A sub-query conjunct that every filter over one shared input carries, read once below them.

TPC-DS q14b filters ``store_sales ⋈ item ⋈ date_dim`` twice — this year's week and last
year's — and both filters carry ``ss_item_sk IN (SELECT … FROM cross_items)``. Left on the
edges, the conjunct lands in every guard of the super-operator's accumulators and in its
source prefilter, and Spark evaluates the IN (an existence join with an INTERSECT of three
channels) once per occurrence. ``σ_{c ∧ r}(X) = σ_r(σ_c(X))``: the common conjunct is moved
into ONE filter that every one of them reads, which becomes the shared input, and the IN
runs once, as written. Only conjuncts with a sub-query value
(:class:`~superop.ir.dialect.SubqueryValue`) move, so no other match changes.
"""
from __future__ import annotations

from sqlglot import exp

from ...ir.dialect import SubqueryValue
from ...ir.lowering.exprs import conjuncts
from ...ir.nodes import Node, Select, walk
from .regroup import and_all


def _common(preds: list[list[exp.Expr]]) -> list[exp.Expr]:
    return [c for c in preds[0] if c.find(SubqueryValue) is not None
            and all(any(c == d for d in p) for p in preds[1:])]


def shared_subquery_conjuncts(plan: Node) -> Node:
    """``plan`` with the sub-query conjuncts common to every filter over one input read from
    one filter below them; ``plan`` itself when there are none."""
    by_child: dict[int, list[Select]] = {}
    for n in walk(plan):
        if isinstance(n, Select):
            by_child.setdefault(id(n.child), []).append(n)
    common = {k: c for k, sels in by_child.items() if len(sels) >= 2
              for c in [_common([conjuncts(s.predicate) for s in sels])] if c}
    if not common:
        return plan
    memo: dict[int, Node] = {}
    shared: dict[int, Node] = {}
    for n in walk(plan):                      # children before parents
        kids = tuple(memo[id(c)] for c in n.children)
        new = n if all(a is b for a, b in zip(kids, n.children)) else n.with_children(kids)
        if isinstance(n, Select) and id(n.child) in common:
            cs = common[id(n.child)]
            cond = and_all(cs)
            assert cond is not None               # cs is not empty
            below = shared.setdefault(id(n.child), Select(kids[0], cond))
            rest = [c for c in conjuncts(n.predicate) if not any(c == d for d in cs)]
            kept = and_all(rest)
            new = below if kept is None else Select(below, kept)
        memo[id(n)] = new
    return memo[id(plan)]
