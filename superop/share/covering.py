"""Covering expressions (CEs), extraction plans and the rewritten consumers.

For an SE ω of ``spj`` units (same tables, same join conditions):

* CE  Ω = π_Y(σ_{F_1 ∨ … ∨ F_m}(J)): the members' filters OR-ed (F_i = member i's filters
  on the unit's tables; one member without a filter means no filter at all), plus per
  table the OR of the members' filters on it when every member has one (implied by the
  OR; it lets Spark push a filter into each scan). Y = every column a member still needs
  above the unit, and the columns its filters read when the filters differ.
  All members with the same filters: Ω = π_Y(σ_F(J)) and extraction is a projection.
* extraction_i = π_{Y_i}(σ_{F_i}(Ω)), read from the cached relation (a temp view).

For an SE of ``agg`` units (same tables, same joins, same grouping keys), the covering
aggregate: γ_{keys; ∪ items}(σ_{C ∧ (R_1 ∨ … ∨ R_m)}(J)) where C are the filters every
member has and R_i the rest of member i's filters, allowed only when every conjunct of
every R_i reads grouping-key columns only (filtering on a grouping key keeps or drops whole
groups, so it commutes with the aggregation). extraction_i = π_{items_i}(σ_{R_i}(Ω)).
Different non-key filters, different keys or different joins: no covering aggregate.

The consumer query is regenerated at the block's anchor (see ``blocks.py``): the covered
tables are replaced by the extraction, the conditions read only by them are dropped
(the extraction applies them), everything else is placed again over the new inputs.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from sqlglot import exp

from ..ir.nodes import Aggregate, Node, Project, Rename, Scan, Select, replace, resolve_field, walk
from .blocks import (
    ANCHOR_AGGREGATE,
    ANCHOR_GROUPING,
    ANCHOR_POSITIONAL,
    ANCHOR_PROJECTION,
    Block,
    Unit,
    and_all,
    columns_outside_queries,
    leaf_alias,
    leaves_of,
    needed_columns,
    or_all,
    rename_columns,
    text,
)
from .canonical import agg_parts, conjunct_text, join_tree, normalized_plan, unit_parts
from .similar import SimilarSubexpression, identify, units_of_plan

TEMPLATE_FILTER = "filter-project"          # σ_p over π_Y(σ_{p ∨ q}(R))
TEMPLATE_IDENTITY = "project"               # π over π_Y(σ_p(R)), every member's filter is p
TEMPLATE_AGG_KEYS = "covering-aggregate"    # σ_k over γ(σ_{c ∧ (k ∨ k')}(R)), k on grouping keys
TEMPLATE_AGG_SAME = "same-aggregate"        # π over γ(σ_c(R)), every member's filter is c


@dataclass
class OverJoin:
    """What a CE or a consumer computes on top of the unit's join J: σ(filters), then
    π(items) or γ(keys; agg_items) — over canonical ``_c{j}`` columns. The bounded
    extraction check evaluates both over J taken as one symbolic table."""
    filters: list
    items: Optional[list] = None
    keys: Optional[list] = None
    agg_items: Optional[list] = None
    qualifier: Optional[str] = None

    def over(self, source: Node, column: Callable[[int, str], exp.Expression]) -> Node:
        """This shape over ``source``; ``column(j, name)`` is ``_c{j}.name`` there."""
        def rl(e):
            e = e.copy()
            targets = [e] if isinstance(e, exp.Column) else columns_outside_queries(e)
            for c in targets:
                if c.table and c.table.startswith("_c") and c.table[2:].isdigit():
                    r = column(int(c.table[2:]), c.name)
                    if c is e:
                        return r
                    c.replace(r)
            return e
        node = Select(source, and_all([rl(f) for f in self.filters])) if self.filters else source
        if self.items is not None:
            return Project(node, tuple((rl(e), n) for e, n in self.items), self.qualifier)
        return Aggregate(node, tuple(rl(k) for k in self.keys or ()),
                         tuple((rl(e), n) for e, n in self.agg_items or ()), self.qualifier)


@dataclass
class Consumer:
    """One member of an SE served by a CE."""
    unit: Unit
    ce: "CoveringExpression"
    extraction: Node                # what the rewritten query reads (over the view's scan)
    original: Node                  # the consumer's own sub-plan it replaces
    qualifier: str = ""             # spj: the extraction's qualifier inside the block
    colmap: dict = field(default_factory=dict)   # spj: (leaf, column) -> CE column
    own: Optional[OverJoin] = None  # the consumer's own σ/π or γ over the unit's join

    @property
    def query(self) -> int:
        return self.unit.query


@dataclass
class CoveringExpression:
    """Ω: the sharing plan cached once and read by its consumers."""
    id: str
    se: SimilarSubexpression
    kind: str
    template: str
    plan: Node                      # over base tables: what is persisted
    view: str                       # the temp view the consumers read
    view_scan: Scan
    consumers: list[Consumer] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    tables: tuple = ()                  # canonical (table, columns) of the unit's join J
    joins: list = field(default_factory=list)   # J's join conditions (``_c{j}`` columns)
    top: Optional[OverJoin] = None      # the CE over J
    proved: bool = False                # every consumer in ``consumers`` has a full proof

    def inline(self, node: Node, plan: Optional[Node] = None) -> Node:
        """``node`` with the view's scan replaced by the CE plan (what the proofs
        compare), or by ``plan``."""
        hits = {id(n): plan or self.plan for n in walk(node) if n is self.view_scan}
        return replace(node, hits) if hits else node

    @property
    def queries(self) -> list[int]:
        return sorted({c.query for c in self.consumers})


def _names(cols: list[tuple[int, str]]) -> dict[tuple[int, str], str]:
    """CE column names: the column's own name, ``name_j`` when two tables share it."""
    count: dict[str, int] = {}
    for _, c in cols:
        count[c.lower()] = count.get(c.lower(), 0) + 1
    out, used = {}, set()
    for j, c in cols:
        n = c if count[c.lower()] == 1 else f"{c}_{j}"
        while n.lower() in used:
            n += "_"
        used.add(n.lower())
        out[(j, c)] = n
    return out


def _to_ce(e: exp.Expression, names: dict[tuple[int, str], str]) -> exp.Expression:
    """``_c{j}.col`` -> the CE column (unqualified: it resolves against the view's scan
    and, in proofs, against the inlined CE plan alike)."""
    e = e.copy()
    targets = [e] if isinstance(e, exp.Column) else columns_outside_queries(e)
    for c in targets:
        if c.table and c.table.startswith("_c") and c.table[2:].isdigit():
            repl = exp.column(names[(int(c.table[2:]), c.name)])
            if c is e:
                return repl
            c.replace(repl)
    return e


def _cols_read(exprs) -> list[tuple[int, str]]:
    out = []
    for e in exprs:
        for c in columns_outside_queries(e):
            if c.table and c.table.startswith("_c") and c.table[2:].isdigit():
                k = (int(c.table[2:]), c.name)
                if k not in out:
                    out.append(k)
    return out


def _dedupe(exprs) -> list[exp.Expression]:
    seen, out = set(), []
    for e in exprs:
        t = text(e)
        if t not in seen:
            seen.add(t)
            out.append(e)
    return out


def _type_of(tables, j: int, col: str) -> str:
    return dict(tables[j][1]).get(col, "unknown")


class Builder:
    """Builds the CEs of a batch; ``view_prefix`` names their temp views."""

    def __init__(self, view_prefix: str):
        self.view_prefix = view_prefix
        self.qual = itertools.count(1)

    def build(self, se: SimilarSubexpression, n: int) -> tuple[Optional[CoveringExpression], str]:
        """(CE, "") or (None, why no CE covers this SE)."""
        view = f"{self.view_prefix}{n}"
        return self._spj(se, f"ce{n}", view) if se.kind == "spj" else self._agg(se, f"ce{n}", view)

    # -- select-project-join ---------------------------------------------------
    def _spj(self, se, cid, view):
        ref = se.members[0]
        tables = ref.canon.tables
        joins_ref, _, _ = unit_parts(ref)
        parts = []
        for u in se.members:
            _, filters, _ = unit_parts(u)
            idx = u.canon.index()
            needed = [(idx[i], c) for i, c in needed_columns(u.block, u.S)]
            flat_f = [f for j in sorted(filters) for f in filters[j]]
            parts.append((u, filters, flat_f, needed))
        texts = [sorted(conjunct_text(f) for f in p[2]) for p in parts]
        same = all(t == texts[0] for t in texts)
        cols: list[tuple[int, str]] = []
        for _, _, flat_f, needed in parts:
            for k in needed + ([] if same else _cols_read(flat_f)):
                if k not in cols:
                    cols.append(k)
        if not cols:          # a consumer that needs no column (COUNT(*)): keep one
            cols = [(0, tables[0][1][0][0])]
        names = _names(cols)
        items = [(exp.column(c, f"_c{j}"), names[(j, c)]) for j, c in cols]
        if same:
            plan = normalized_plan(tables, joins_ref, parts[0][1], items=items)
            top = OverJoin(list(parts[0][2]), items=items)
            template = TEMPLATE_IDENTITY
        else:
            if any(not p[2] for p in parts):
                per_leaf, extra = {}, []       # a member reads every row: no filter at all
            else:
                disj = _dedupe([and_all(p[2]) for p in parts])
                extra = [or_all(disj)] if len(disj) > 1 else list(conj for conj in parts[0][2])
                per_leaf = {}
                for j in range(len(tables)):
                    if all(p[1].get(j) for p in parts):
                        d = _dedupe([and_all(p[1][j]) for p in parts])
                        per_leaf[j] = [or_all(d) if len(d) > 1 else d[0]]
                if all(set(p[1]) == set(per_leaf) for p in parts) and len(per_leaf) == 1:
                    extra = []      # every filter is on one table: its OR is the whole OR
            plan = normalized_plan(tables, joins_ref, per_leaf, extra=extra, items=items)
            top = OverJoin([f for j in sorted(per_leaf) for f in per_leaf[j]] + list(extra), items=items)
            template = TEMPLATE_FILTER
        scan = Scan(view, tuple((names[k], _type_of(tables, *k)) for k in cols))
        ce = CoveringExpression(cid, se, "spj", template, plan, view, scan, columns=[names[k] for k in cols],
                                tables=tables, joins=joins_ref, top=top)
        for u, _filters, flat_f, needed in parts:
            ce.consumers.append(self._spj_consumer(ce, u, flat_f, needed, names, same))
        return ce, ""

    def _spj_consumer(self, ce, u: Unit, flat_f, needed, names, same) -> Consumer:
        q = f"_x{next(self.qual)}"
        node: Node = ce.view_scan
        if not same and flat_f:
            node = Select(node, and_all([_to_ce(f, names) for f in flat_f]))
        out = [(exp.column(names[k]), names[k]) for k in needed] or \
            [(exp.column(ce.columns[0]), ce.columns[0])]
        extraction = Project(node, tuple(out), q)
        idx = u.canon.index()
        colmap = {(i, c): names[(idx[i], c)] for i, c in needed_columns(u.block, u.S)}
        first = next(iter(names))
        own = OverJoin(list(flat_f), items=[(exp.column(c, f"_c{j}"), names[(j, c)]) for j, c in needed]
                       or [(exp.column(first[1], f"_c{first[0]}"), names[first])], qualifier=q)
        return Consumer(u, ce, extraction, local_plan(u, q, names), q, colmap, own)

    # -- covering aggregate ----------------------------------------------------
    def _agg(self, se, cid, view):
        ref = se.members[0]
        tables = ref.canon.tables
        joins_ref, _, _ = unit_parts(ref)
        keys_ref, _ = agg_parts(ref)
        parts = []
        for u in se.members:
            _, filters, consts = unit_parts(u)
            keys, items = agg_parts(u)
            conj = [f for j in sorted(filters) for f in filters[j]] + consts
            parts.append((u, conj, keys, items))
        key_of = {text(k): i for i, k in enumerate(keys_ref)}
        key_cols = {(int(k.table[2:]), k.name): i for i, k in enumerate(keys_ref)
                    if isinstance(k, exp.Column) and k.table.startswith("_c")}
        common = [c for c in parts[0][1]
                  if all(any(conjunct_text(c) == conjunct_text(d) for d in p[1]) for p in parts)]
        ct = {conjunct_text(c) for c in common}
        rests = [[c for c in p[1] if conjunct_text(c) not in ct] for p in parts]
        for r in rests:
            for c in r:
                if c.find(exp.Query) is not None or any(k not in key_cols for k in _cols_read([c])):
                    return None, (f"member filters differ on a non-key column ({text(c)}): "
                                  "a covering aggregate would change the groups")
        if not keys_ref and any(rests):
            return None, "global aggregates with different filters"
        # union of items (by text), keys first
        agg_items: list[tuple[exp.Expression, str]] = [(k, f"_k{i}") for i, k in enumerate(keys_ref)]
        item_name: dict[str, str] = {}
        for _, _, keys, items in parts:
            if sorted(text(k) for k in keys) != sorted(key_of):
                return None, "grouping keys differ"
            for e, _ in items:
                t = text(e)
                if t in key_of:
                    item_name.setdefault(t, f"_k{key_of[t]}")
                elif t not in item_name:
                    item_name[t] = f"_a{len(item_name)}"
                    agg_items.append((e, item_name[t]))
        extra = list(common)
        if all(rests):
            disj = _dedupe([and_all(r) for r in rests])
            extra.append(or_all(disj) if len(disj) > 1 else disj[0])
        plan = normalized_plan(tables, joins_ref, {}, extra=extra, keys=keys_ref, agg_items=agg_items)
        template = TEMPLATE_AGG_SAME if not any(rests) else TEMPLATE_AGG_KEYS
        scan = Scan(view, tuple((n, "unknown") for _, n in agg_items))
        ce = CoveringExpression(cid, se, "agg", template, plan, view, scan, columns=[n for _, n in agg_items],
                                tables=tables, joins=joins_ref,
                                top=OverJoin(extra, keys=keys_ref, agg_items=agg_items))
        kname = {k: f"_k{i}" for k, i in key_cols.items()}
        for (u, conj, keys, items), rest in zip(parts, rests):
            node: Node = scan
            if rest:
                pred = and_all([relabel_keys(c, kname) for c in rest])
                node = Select(node, pred)
            a: Aggregate = u.block.anchor
            out = tuple((exp.column(item_name[text(e)]), n) for e, n in items)
            own = OverJoin(list(conj), keys=keys, agg_items=items, qualifier=a.qualifier)
            ce.consumers.append(Consumer(u, ce, Project(node, out, a.qualifier), a, own=own))
        return ce, ""


def detect(plans: Sequence[Node], k: int = 2, view_prefix: str = "_superop_ce_") -> tuple[
        list[SimilarSubexpression], list[CoveringExpression], dict[str, str]]:
    """(SEs, CEs, {SE id: why it has no CE}) of a batch of plan IR trees (query i =
    ``plans[i]``). No proof has run yet: every consumer still needs
    :func:`superop.share.proofs.prove`."""
    forests = [units_of_plan(p, i) for i, p in enumerate(plans)]
    ses = identify(forests, k)
    b = Builder(view_prefix)
    ces, why_not = [], {}
    for n, se in enumerate(ses, 1):
        ce, why = b.build(se, n)
        if ce is None:
            why_not[se.id] = why
        else:
            ces.append(ce)
    return ses, ces, why_not


def relabel_keys(e: exp.Expression, kname: dict[tuple[int, str], str]) -> exp.Expression:
    """A filter over grouping-key columns ``_c{j}.col`` -> over the CE's key outputs."""
    e = e.copy()
    targets = [e] if isinstance(e, exp.Column) else columns_outside_queries(e)
    for c in targets:
        repl = exp.column(kname[(int(c.table[2:]), c.name)])
        if c is e:
            return repl
        c.replace(repl)
    return e


def local_plan(u: Unit, qualifier: str, names: dict[tuple[int, str], str]) -> Node:
    """The consumer's own sub-plan for an spj unit: its tables joined and filtered by
    the conjuncts that read only them, projected to the columns needed above (named as
    in the CE; the CE's first column when nothing is needed). The extraction must equal it."""
    flat = u.block.flat
    S = sorted(u.S)
    leaves = []
    for i in S:
        leaf = flat.leaves[i]
        leaves.append(Rename(leaf, tuple((f, n) for f, n in zip(leaf.fields, flat.leaf_names[i])),
                             leaf_alias(i)))
    tree = join_tree(leaves, [frozenset([i]) for i in S], flat.local(u.S), leaf_of=leaves_of)
    needed = needed_columns(u.block, u.S)
    idx = u.canon.index()
    if needed:
        items = tuple((exp.column(c, leaf_alias(i)), names[(idx[i], c)]) for i, c in needed)
    else:
        j, c = next(iter(names))
        i = u.canon.order[j]
        items = ((exp.column(c, leaf_alias(i)), names[(j, c)]),)
    return Project(tree, items, qualifier)


# ---------------------------------------------------------------------------
# Regenerating a block with some of its tables read from CEs
# ---------------------------------------------------------------------------
@dataclass
class BlockRewrite:
    anchor: Node                 # replaces the block's anchor (same output fields)
    proof_original: Node         # the SPJ plans whose equality the placement proof shows
    proof_rewritten: Node


def _labels(e: exp.Expression) -> frozenset:
    return frozenset(c.table for c in columns_outside_queries(e) if c.table)


def rewrite_block(block: Block, consumers: list[Consumer],
                  leaf_map: Callable[[Node], Node] = lambda n: n,
                  expand: Callable[[Consumer], Node] = lambda c: c.extraction) -> BlockRewrite:
    """The block's anchor regenerated with each consumer's tables replaced by
    ``expand(consumer)`` (its extraction; in proofs, with the CE inlined) and every other
    input by ``leaf_map(leaf)``."""
    flat = block.flat
    covered: dict[int, Consumer] = {}
    for c in consumers:
        for i in c.unit.S:
            if i in covered:
                raise ValueError("two consumers cover the same table of one block")
            covered[i] = c
    local_ids = {id(x) for c in consumers for x in flat.local(c.unit.S)}
    nodes, sets, seen = [], [], set()
    colmap: dict[tuple[str, str], exp.Expression] = {}
    for i, leaf in enumerate(flat.leaves):
        c = covered.get(i)
        if c is None:
            n = leaf_map(leaf)
            nodes.append(Rename(n, tuple((f, nm) for f, nm in zip(n.fields, flat.leaf_names[i])),
                                leaf_alias(i)))
            sets.append(frozenset([leaf_alias(i)]))
        elif id(c) not in seen:
            seen.add(id(c))
            nodes.append(expand(c))
            sets.append(frozenset([c.qualifier]))
            for (li, col), ce_col in c.colmap.items():
                colmap[(leaf_alias(li), col)] = exp.column(ce_col, c.qualifier)
    rest = [rename_columns(x, colmap) for x in flat.conjuncts if id(x) not in local_ids]
    tree = join_tree(nodes, sets, rest, leaf_of=_labels)
    root = flat.root
    outs = {k: rename_columns(flat.outputs[k], colmap) for k in block.used}
    if block.anchor_kind == ANCHOR_PROJECTION:
        new = Project(tree, tuple((outs[k], f.name) for k, f in enumerate(root.fields)), root.qualifier)
        return BlockRewrite(new, root, new)
    if block.anchor_kind == ANCHOR_POSITIONAL:
        new = Project(tree, tuple((outs[k], f.name) for k, f in enumerate(root.fields)), None)
        return BlockRewrite(new, root, new)
    if block.anchor_kind not in (ANCHOR_AGGREGATE, ANCHOR_GROUPING):
        raise ValueError(f"block has no anchor ({block.why_not})")
    a = block.anchor
    assert a is not None
    pruned = Project(tree, tuple((outs[k], root.fields[k].name) for k in block.used), None)
    orig_items = []
    for k in block.used:
        f = root.fields[k]
        col = exp.column(f.name, f.qualifier) if f.qualifier else exp.column(f.name)
        if resolve_field(root.fields, col) != k:
            raise ValueError(f"column {f} of the block is ambiguous")
        orig_items.append((col, f.name))
    original = Project(root, tuple(orig_items), None)
    # the aggregate's own expressions, unchanged: they read the pruned block's columns
    # by name (every name is unique there; blocks.py refuses the block otherwise)
    return BlockRewrite(a.with_children((pruned,)), original, pruned)


def group_consumers(consumers) -> tuple[dict[int, tuple[Block, list[Consumer]]], dict[int, Consumer]]:
    """(spj, agg) for :func:`rewrite_query`: select-project-join consumers by the anchor
    of their block, aggregate consumers by the aggregate they replace."""
    spj: dict[int, tuple[Block, list[Consumer]]] = {}
    agg: dict[int, Consumer] = {}
    for c in consumers:
        if c.unit.kind == "agg":
            agg[id(c.unit.block.anchor)] = c
        else:
            spj.setdefault(id(c.unit.block.anchor), (c.unit.block, []))[1].append(c)
    return spj, agg


def rewrite_query(plan: Node, spj: dict[int, tuple[Block, list[Consumer]]],
                  agg: dict[int, Consumer]) -> Node:
    """The query with every chosen consumer read from its CE. ``spj`` maps id(anchor) to
    the block and its consumers, ``agg`` id(aggregate) to the consumer replacing it.
    Bottom-up, so an anchor regenerated above another sees the other's new version."""
    memo: dict[int, Node] = {}
    for n in walk(plan):
        if id(n) in agg:
            memo[id(n)] = agg[id(n)].extraction
        elif id(n) in spj:
            block, cons = spj[id(n)]
            memo[id(n)] = rewrite_block(block, cons, leaf_map=lambda leaf: memo[id(leaf)]).anchor
        else:
            kids = tuple(memo[id(c)] for c in n.children)
            memo[id(n)] = n if all(a is b for a, b in zip(kids, n.children)) else n.with_children(kids)
    return memo[id(plan)]
