"""Canonical forms of units: one labelling of their tables, one normalized plan.

Two units of different queries read the same tables under different aliases and in a
different join order. A unit's tables are sorted (``(table, columns)``; a unit never reads
a table twice) and its leaf ``i`` becomes canonical leaf ``j``, written ``_c{j}``. Every
expression is then compared as text over ``_c{j}`` columns.

:func:`normalized_plan` builds the plan IR of a canonical unit — each table under a
canonical alias, a σ above it (the filters on that table), the inner joins in a fixed
greedy left-deep order with each join condition at the lowest join that can evaluate it,
and a π (``spj``) or γ (``agg``) on top. The same builder produces the covering
expressions that run, and (with placeholder σ/π attributes) the trees whose Merkle
fingerprints (:mod:`superop.mining.fingerprint`, loose on σ and π) identify similar
sub-expressions.
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

from sqlglot import exp

from ..ir.nodes import Aggregate, Join, Node, Project, Rename, Scan, Select
from .blocks import Canon, Unit, and_all, columns_outside_queries, leaves_of, substitute, text

_LEAF = re.compile(r"^_l(\d+)$")
_CANON = re.compile(r"^_c(\d+)$")


def canon_alias(j: int) -> str:
    return f"_c{j}"


def canon_of(u: Unit) -> Canon:
    leaves = u.block.flat.leaves
    order = sorted(u.S, key=lambda i: (leaves[i].table, leaves[i].columns))
    return Canon(order, tuple((leaves[i].table, leaves[i].columns, leaves[i].identity) for i in order))


def relabel(e: exp.Expression, mapping: dict[str, str]) -> exp.Expression:
    """Columns qualified by a key of ``mapping`` get the mapped qualifier."""
    e = e.copy()
    cols = [e] if isinstance(e, exp.Column) else columns_outside_queries(e)
    for c in cols:
        if c.table in mapping:
            c.set("table", exp.to_identifier(mapping[c.table]))
    return e


def to_canon(e: exp.Expression, canon: Canon) -> exp.Expression:
    return relabel(e, {f"_l{i}": canon_alias(j) for j, i in enumerate(canon.order)})


def canon_leaves(e: exp.Expression) -> frozenset[int]:
    out = set()
    for c in columns_outside_queries(e):
        m = _CANON.match(c.table or "")
        if m:
            out.add(int(m.group(1)))
    return frozenset(out)


def conjunct_text(e: exp.Expression) -> str:
    """Text of a conjunct, with the operands of = and <=> ordered (a = b is b = a)."""
    if isinstance(e, (exp.EQ, exp.NullSafeEQ)):
        a, b = sorted([text(e.this), text(e.expression)])
        return f"{a} {'=' if isinstance(e, exp.EQ) else '<=>'} {b}"
    return text(e)


# ---------------------------------------------------------------------------
def canonical_leaf(table: str, columns: tuple, j: int, identity: tuple = ()) -> Rename:
    """Canonical leaf j: the scan of ``table`` (its resolved ``identity`` kept, so the
    regenerated plan reads the very table the consumer reads) renamed to ``_l{j}``."""
    scan = Scan(table, columns, identity)
    return Rename(scan, tuple((f, f.name) for f in scan.fields), canon_alias(j))


def join_tree(leaves: Sequence[Node], leaf_sets: Sequence[frozenset], conds: Sequence[exp.Expression],
              leaf_of=canon_leaves) -> Node:
    """Inner joins of ``leaves`` in a fixed greedy left-deep order (start at the first
    leaf, then always the first leaf joined to what is already there); each condition
    sits at the lowest join where all the leaves it reads are present. ``leaf_sets[k]``
    are the labels of leaf ``k``; ``leaf_of(e)`` the labels an expression reads."""
    pending = list(conds)
    placed = [0]
    have = set(leaf_sets[0])
    cur = leaves[0]
    rest = list(range(1, len(leaves)))
    while rest:
        nxt = next((k for k in rest if any(leaf_of(c) & leaf_sets[k] and leaf_of(c) - leaf_sets[k]
                                           and leaf_of(c) <= have | leaf_sets[k] for c in pending)),
                   rest[0])
        rest.remove(nxt)
        right = set(leaf_sets[nxt])
        here = [c for c in pending if leaf_of(c) <= have | right and leaf_of(c) & right and leaf_of(c) & have]
        pending = [c for c in pending if not any(c is h for h in here)]
        equi, residual = [], []
        for c in here:
            if isinstance(c, exp.EQ) and leaf_of(c.this) and leaf_of(c.expression):
                if leaf_of(c.this) <= have and leaf_of(c.expression) <= right:
                    equi.append((c.this.copy(), c.expression.copy()))
                    continue
                if leaf_of(c.expression) <= have and leaf_of(c.this) <= right:
                    equi.append((c.expression.copy(), c.this.copy()))
                    continue
            residual.append(c)
        kind = "inner" if equi or residual else "cross"
        cur = Join(cur, leaves[nxt], kind, tuple(equi), and_all(residual))
        have |= right
        placed.append(nxt)
    if pending:     # conditions on one leaf or none: a σ on top
        cur = Select(cur, and_all(pending))
    return cur


def normalized_plan(tables: Sequence[tuple], joins: Sequence[exp.Expression],
                    filters: dict[int, list[exp.Expression]], extra: Sequence[exp.Expression] = (),
                    items: Optional[Sequence[tuple[exp.Expression, str]]] = None,
                    keys: Optional[Sequence[exp.Expression]] = None,
                    agg_items: Optional[Sequence[tuple[exp.Expression, str]]] = None) -> Node:
    """The canonical plan (module doc) over ``_c{j}`` columns: σ(filters[j]) above table j,
    the join conditions ``joins``, a σ(``extra``) above the joins (e.g. an OR of filters
    over several tables), then π(``items``) or γ(``keys``; ``agg_items``)."""
    leaves = []
    for j, (table, columns, identity) in enumerate(tables):
        leaf: Node = canonical_leaf(table, columns, j, identity)
        if filters.get(j):
            leaf = Select(leaf, and_all(filters[j]))
        leaves.append(leaf)
    plan = join_tree(leaves, [frozenset([j]) for j in range(len(leaves))], list(joins))
    if extra:
        plan = Select(plan, and_all(list(extra)))
    if keys is not None or agg_items is not None:
        return Aggregate(plan, tuple(k.copy() for k in (keys or ())),
                         tuple((e.copy(), n) for e, n in (agg_items or ())))
    return Project(plan, tuple((e.copy(), n) for e, n in (items or ())))


# ---------------------------------------------------------------------------
# Unit signatures
# ---------------------------------------------------------------------------
def unit_parts(u: Unit) -> tuple[list[exp.Expression], dict[int, list[exp.Expression]], list[exp.Expression]]:
    """(join conditions, filters per canonical leaf, leaf-free conjuncts) of a unit, over
    ``_c{j}`` columns. Join conditions read two or more tables of the unit."""
    canon = u.canon
    joins, filters, consts = [], {}, []
    flat = u.block.flat
    local = flat.local(u.S)
    if u.kind == "agg":     # the whole block is the unit: its leaf-free conjuncts too
        local = local + [c for c in flat.conjuncts if not leaves_of(c)]
    for c in local:
        cc = to_canon(c, canon)
        ls = canon_leaves(cc)
        if len(ls) >= 2:
            joins.append(cc)
        elif len(ls) == 1:
            filters.setdefault(next(iter(ls)), []).append(cc)
        else:
            consts.append(cc)
    return joins, filters, consts


def agg_parts(u: Unit) -> tuple[list[exp.Expression], list[tuple[exp.Expression, str]]]:
    """The aggregate's keys and items over ``_c{j}`` columns."""
    a: Aggregate = u.block.anchor
    root, flat = u.block.root, u.block.flat
    keys = [to_canon(substitute(k, root.fields, flat.outputs), u.canon) for k in a.keys]
    items = [(to_canon(substitute(e, root.fields, flat.outputs), u.canon), n) for e, n in a.items]
    return keys, items


def strict_signature(u: Unit) -> tuple:
    """What must be equal for two units to share one covering expression: the tables,
    the join conditions (literals included) and, for aggregates, the grouping keys."""
    joins, _, _ = unit_parts(u)
    sig = (u.kind, u.canon.tables, tuple(sorted(conjunct_text(c) for c in joins)))
    if u.kind == "agg":
        keys, _ = agg_parts(u)
        sig += (tuple(sorted(text(k) for k in keys)),)
    return sig


def fingerprint_tree(u: Unit) -> Node:
    """The unit's normalized plan with placeholder σ/π attributes (σ TRUE above every
    table, an empty π, no aggregate items): only what the fingerprint may see."""
    joins, _, _ = unit_parts(u)
    truth = {j: [exp.true()] for j in range(len(u.canon.order))}
    if u.kind == "agg":
        keys, _ = agg_parts(u)
        return normalized_plan(u.canon.tables, joins, truth, keys=keys, agg_items=())
    return normalized_plan(u.canon.tables, joins, truth, items=())
