"""Select-project-join blocks of a plan and the sharing units inside them.

A *block* is a maximal tree of σ, π, ρ and inner/cross joins (the operators of a
filter-map over the product of its inputs). Its *leaves* are everything else (scans,
aggregates, outer joins, ...) and any node shared by two parents. Flattening a block
(:func:`flatten`) expresses every filter, join condition and output over the leaves'
columns, written ``_l{i}.name`` — the form in which filters can be pushed to the leaf they
read, OR-ed across queries and placed again (the paper works on Catalyst's optimized
plans, where this pushdown has already happened; the plan IR keeps the query as written).

A *unit* is a candidate sub-expression for sharing (the paper's sub-tree τ):
* ``spj``: a set S of scan leaves of a block (the whole block, the leaves below one
  input of one of its joins, or two scans an equi-join condition links), with the
  conjuncts that read only S (join conditions inside S and filters on S's leaves) and
  the columns of S the rest of the query needs;
* ``agg``: an aggregate directly over a block whose leaves are all scans.

A block can be rewritten only at an *anchor*: a node whose output fields stay exactly the
same when the block is regenerated (a π/ρ block root; the plan root or a UNION ALL input,
which are positional; or the aggregate right above the block, also one over grouping
sets, which is re-applied unchanged and never itself shared).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from sqlglot import exp

from ..ir.nodes import (
    Aggregate,
    Field,
    GroupingAggregate,
    Join,
    Node,
    Project,
    Rename,
    Scan,
    Select,
    UnionAll,
    expressions_of,
    parents,
    resolve_field,
    walk,
)
from ..ir.safety import source_blocker

SPJ_JOINS = ("inner", "cross")
# Functions whose value differs between two queries of a batch even though each query
# sees one value: a covering expression computed once must not serve two queries.
VOLATILE = {"current_timestamp", "current_date", "now", "localtimestamp", "current_time",
            "unix_timestamp", "curdate", "current_timezone", "input_file_name",
            "input_file_block_start", "input_file_block_length", "current_user", "user",
            "session_user"}


def time_dependent_reason(e: exp.Expression) -> str:
    """Why ``e`` has one value per query but may differ between two queries of a batch
    (current_timestamp(), current_user(), ...), or "". ``superop.ir.safety`` lets these
    through — they are fixed within one query — but a covering expression computed once
    must not serve two queries with them."""
    for n in e.walk():
        if isinstance(n, (exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime)):
            return f"{n.sql_name().lower()}() is evaluated per query"
        if type(n).__name__ in ("CurrentUser", "UnixTimestamp", "CurrentSchema", "CurrentDatetime"):
            return f"{type(n).__name__} is evaluated per query"
        if isinstance(n, exp.Func) and n.sql_name().lower() in VOLATILE:
            return f"{n.sql_name().lower()}() is evaluated per query"
        if isinstance(n, exp.Anonymous) and str(n.this).lower() in VOLATILE:
            return f"{str(n.this).lower()}() is evaluated per query"
    return ""


def sharing_blocker(n: Node) -> str:
    """Why the sub-plan ``n`` must not be computed once for several queries, or "": the
    one safety check of the matching path (``superop.ir.safety.source_blocker``: reading
    it once must give what reading it once per query gives) plus expressions that are
    fixed per query but not across queries."""
    b = source_blocker(n)
    if b is not None:
        return str(b)
    for x in walk(n):
        for e in node_expressions(x):
            why = time_dependent_reason(e)
            if why:
                return why
    return ""


def node_expressions(n: Node) -> list[exp.Expression]:
    return expressions_of(n)


def is_spj(n: Node) -> bool:
    if isinstance(n, (Select, Rename)):
        return True
    if isinstance(n, Project):
        # a projection evaluated per row; a sub-query or window item is not a plain map
        return not any(x.find(exp.Query, exp.Window, exp.AggFunc) for x, _ in n.items)
    return isinstance(n, Join) and n.kind in SPJ_JOINS


# ---------------------------------------------------------------------------
# Expressions over leaf columns
# ---------------------------------------------------------------------------
def leaf_alias(i: int) -> str:
    return f"_l{i}"


def unique_names(fields: Sequence[Field]) -> list[str]:
    """Field names made unique (``name``, ``name_2``, ...) case-insensitively."""
    seen: set[str] = set()
    out = []
    for f in fields:
        n, k = f.name, 2
        while n.lower() in seen:
            n, k = f"{f.name}_{k}", k + 1
        seen.add(n.lower())
        out.append(n)
    return out


def columns_outside_queries(e: exp.Expression) -> list[exp.Column]:
    out, stack = [], [e]
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Column):
            out.append(n)
        elif not (isinstance(n, exp.Query) and n is not e):
            stack.extend(n.iter_expressions())
    return out


def substitute(e: exp.Expression, fields: Sequence[Field], cols: Sequence[exp.Expression]) -> exp.Expression:
    """``e`` with every column reference (resolved against ``fields``; not inside nested
    queries) replaced by the matching entry of ``cols``."""
    e = e.copy()
    fields = tuple(fields)
    if isinstance(e, exp.Column):
        return cols[resolve_field(fields, e)].copy()
    for c in columns_outside_queries(e):
        repl = cols[resolve_field(fields, c)].copy()
        if not isinstance(repl, (exp.Column, exp.Literal, exp.Paren, exp.Func, exp.Null, exp.Boolean)):
            repl = exp.Paren(this=repl)
        c.replace(repl)
    return e


def rename_columns(e: exp.Expression, mapping: dict[tuple[str, str], exp.Expression]) -> exp.Expression:
    """Replace columns ``table.name`` found in ``mapping`` (keys (table, name)); others stay."""
    e = e.copy()
    if isinstance(e, exp.Column):
        r = mapping.get((e.table, e.name))
        return r.copy() if r is not None else e
    for c in columns_outside_queries(e):
        r = mapping.get((c.table, c.name))
        if r is not None:
            c.replace(r.copy())
    return e


def conjuncts(e: Optional[exp.Expression]) -> list[exp.Expression]:
    if e is None:
        return []
    if isinstance(e, exp.Paren) and isinstance(e.this, exp.And):
        return conjuncts(e.this)
    if isinstance(e, exp.And):
        return conjuncts(e.this) + conjuncts(e.expression)
    return [e]


def and_all(preds: Sequence[exp.Expression]) -> Optional[exp.Expression]:
    out = None
    for p in preds:
        p = p.copy()
        if isinstance(p, (exp.Or, exp.Xor)):
            p = exp.Paren(this=p)
        out = p if out is None else exp.And(this=out, expression=p)
    return out


def or_all(preds: Sequence[exp.Expression]) -> Optional[exp.Expression]:
    out = None
    for p in preds:
        p = p.copy()
        if not isinstance(p, (exp.Column, exp.Paren, exp.Predicate, exp.Boolean)):
            p = exp.Paren(this=p)
        if isinstance(p, exp.And):
            p = exp.Paren(this=p)
        out = p if out is None else exp.Or(this=out, expression=p)
    return out


def leaves_of(e: exp.Expression) -> frozenset[int]:
    """Leaf indices an expression over ``_l{i}`` columns reads."""
    out = set()
    for c in columns_outside_queries(e):
        if c.table.startswith("_l") and c.table[2:].isdigit():
            out.add(int(c.table[2:]))
    return frozenset(out)


def text(e: exp.Expression) -> str:
    return e.sql(dialect="spark")


# ---------------------------------------------------------------------------
# Flattening
# ---------------------------------------------------------------------------
@dataclass
class Flat:
    """A block flattened over its leaves (module doc)."""
    root: Node
    leaves: list[Node]
    leaf_names: list[list[str]]                 # unique column names per leaf
    conjuncts: list[exp.Expression]             # filters and join conditions
    outputs: list[exp.Expression]               # one per root field
    joins: list[tuple[frozenset, frozenset]]    # (left leaves, right leaves) per join, top-down

    def local(self, S: frozenset) -> list[exp.Expression]:
        """Conjuncts that read only (and at least one of) the leaves in S."""
        return [c for c in self.conjuncts if leaves_of(c) and leaves_of(c) <= S]


def flatten(root: Node, shared: frozenset = frozenset()) -> Flat:
    """Flatten the block rooted at ``root``; nodes in ``shared`` (ids) are leaves."""
    leaves: list[Node] = []
    names: list[list[str]] = []
    joins: list[tuple[frozenset, frozenset]] = []

    def go(n: Node, top: bool):
        if not is_spj(n) or (not top and id(n) in shared):
            i = len(leaves)
            leaves.append(n)
            names.append(unique_names(n.fields))
            return [exp.column(nm, leaf_alias(i)) for nm in names[-1]], [], frozenset([i])
        if isinstance(n, Select):
            outs, cj, ls = go(n.child, False)
            return outs, cj + conjuncts(substitute(n.predicate, n.child.fields, outs)), ls
        if isinstance(n, Project):
            outs, cj, ls = go(n.child, False)
            return [substitute(e, n.child.fields, outs) for e, _ in n.items], cj, ls
        if isinstance(n, Rename):
            outs, cj, ls = go(n.child, False)
            return [outs[resolve_field(n.child.fields, f.column())] for f, _ in n.mapping], cj, ls
        slot = len(joins)
        joins.append((frozenset(), frozenset()))
        lo, lc, ll = go(n.left, False)
        ro, rc, rl = go(n.right, False)
        joins[slot] = (ll, rl)
        fields, outs = n.left.fields + n.right.fields, lo + ro
        cj = lc + rc
        for a, b in n.equi:
            cj.append(exp.EQ(this=substitute(a, fields, outs), expression=substitute(b, fields, outs)))
        cj += conjuncts(substitute(n.residual, fields, outs)) if n.residual is not None else []
        return outs, cj, ll | rl

    outs, cj, _ = go(root, True)
    return Flat(root, leaves, names, cj, outs, joins)


# ---------------------------------------------------------------------------
# Blocks, anchors and units of a plan
# ---------------------------------------------------------------------------
ANCHOR_PROJECTION = "projection"   # a π/ρ block root: regenerated with the same fields
ANCHOR_POSITIONAL = "positional"   # plan root / UNION ALL input: names and order matter
ANCHOR_AGGREGATE = "aggregate"     # the aggregate over the block (reads named block columns)
ANCHOR_GROUPING = "grouping"       # the same for γ over grouping sets, never itself shared
GROUPING_ANCHORS = {Aggregate: ANCHOR_AGGREGATE, GroupingAggregate: ANCHOR_GROUPING}


@dataclass
class Block:
    query: int
    flat: Flat
    anchor: Optional[Node]
    anchor_kind: Optional[str]
    used: list[int]                 # indices of root outputs the anchor reads
    volatile: str                   # why nothing of it may be shared ("" = it may)
    why_not: str = ""               # why the block cannot be rewritten ("" = it can)

    @property
    def root(self) -> Node:
        return self.flat.root


@dataclass
class Unit:
    """A candidate sub-expression (module doc). ``S`` are leaf indices of ``block``."""
    kind: str                        # "spj" | "agg"
    block: Block
    S: frozenset
    children: list["Unit"] = field(default_factory=list)
    why_not: str = ""                # why it cannot take part ("" = it can)
    key: Optional[tuple] = None      # SE key (fingerprint, strict signature), set by similar.py
    fingerprint: str = ""
    canon: Optional["Canon"] = None  # canonical form, set by similar.py

    @property
    def query(self) -> int:
        return self.block.query

    def footprint(self) -> frozenset:
        """The plan positions this unit replaces or reads — (block, leaf) occurrences, and
        the aggregate it replaces. Two units of one query whose footprints meet cannot
        both be rewritten. (Occurrences, not node ids: the IR interns identical scans.)"""
        out = {(id(self.block.root), i) for i in self.S}
        if self.kind == "agg":
            out.add(("anchor", id(self.block.anchor)))
        return frozenset(out)

    def describe(self) -> str:
        tabs = ", ".join(sorted(self.block.flat.leaves[i].table for i in self.S
                                if isinstance(self.block.flat.leaves[i], Scan)))
        return f"q{self.query} {self.kind}[{tabs}]"


@dataclass
class Canon:
    """Canonical labelling of a unit's leaves: canonical index j -> the unit's leaf index."""
    order: list[int]                         # canonical j -> leaf i
    tables: tuple                            # canonical j -> (table, columns, identity)

    def index(self) -> dict[int, int]:
        return {i: j for j, i in enumerate(self.order)}


def _used_outputs(anchor: Node, root: Node) -> list[int]:
    used: set[int] = set()
    for e in node_expressions(anchor):
        for c in columns_outside_queries(e):
            used.add(resolve_field(root.fields, c))
    return sorted(used)


# Why a block under GROUP BY ROLLUP / CUBE / GROUPING SETS is left out when asked to
# (``plan_batch(grouping_sets=False)``, ``--no-grouping-sets``). Sharing it is sound (the
# aggregate is re-applied as written over the block read from the CE;
# tests/share/test_differential.py) and on by default since session 10: in session 9 it
# was off, because q36 widened the 4-table CE of q53/q63/q89 to every item (0.767x on the
# SF 1 dashboard batch); narrower SEs of the members that filter a table and restrictions
# that do not count their own SE's CE as a server gave the planner the better options
# (BENCHMARKS, "Session 10").
GROUPING_SETS_OFF = ("a GROUP BY ROLLUP/CUBE/GROUPING SETS query takes no part when turned off "
                     "(grouping_sets=False, --no-grouping-sets)")


def blocks_of(plan: Node, query: int, grouping_sets: bool = True) -> list[Block]:
    """Every block of ``plan`` (top-down), with its anchor when it has one. A block under a
    :class:`GroupingAggregate` is anchored by it unless ``grouping_sets`` is off."""
    ps = parents(plan)
    shared = frozenset(i for i, p in ps.items() if len(p) >= 2)
    roots = []
    for n in walk(plan):
        if is_spj(n):
            par = ps.get(id(n), [])
            if n is plan or id(n) in shared or any(not is_spj(p) for p in par):
                roots.append(n)
        elif isinstance(n, Scan):
            par = ps.get(id(n), [])
            if len(par) == 1 and type(par[0]) in GROUPING_ANCHORS:
                roots.append(n)        # a trivial block: an aggregate straight over a scan
    out = []
    for r in reversed(roots):          # walk() is post-order: reversed = top-down-ish
        flat = flatten(r, shared)
        par = ps.get(id(r), [])
        volatile = sharing_blocker(r)
        anchor, kind, why = None, None, ""
        if isinstance(r, (Project, Rename)) and is_spj(r):
            anchor, kind = r, ANCHOR_PROJECTION
        elif r is plan or (par and all(isinstance(p, UnionAll) for p in par)):
            anchor, kind = r, ANCHOR_POSITIONAL
        elif len(par) == 1 and isinstance(par[0], GroupingAggregate) and not grouping_sets:
            why = GROUPING_SETS_OFF
        elif len(par) == 1 and type(par[0]) in GROUPING_ANCHORS:
            anchor, kind = par[0], GROUPING_ANCHORS[type(par[0])]
            volatile = volatile or sharing_blocker(par[0])
        else:
            why = f"the block under {par[0].op if par else '?'} has no anchor that keeps its columns"
        used = list(range(len(r.fields))) if kind in (ANCHOR_PROJECTION, ANCHOR_POSITIONAL) else \
            (_used_outputs(anchor, r) if anchor is not None else [])
        if kind in (ANCHOR_AGGREGATE, ANCHOR_GROUPING):
            names = [r.fields[k].name.lower() for k in used]
            if len(set(names)) != len(names):
                why = "the aggregate reads two block columns of the same name"
        out.append(Block(query, flat, anchor, kind, used, volatile, why))
    return out


def needed_columns(block: Block, S: frozenset) -> list[tuple[int, str]]:
    """(leaf, column) of S that the query still needs once S is extracted: read by a
    conjunct outside S or by an output the anchor uses."""
    flat = block.flat
    local = {id(c) for c in flat.local(S)}
    exprs = [c for c in flat.conjuncts if id(c) not in local]
    exprs += [flat.outputs[k] for k in block.used]
    out = []
    for e in exprs:
        for c in columns_outside_queries(e):
            if c.table.startswith("_l") and int(c.table[2:]) in S and (int(c.table[2:]), c.name) not in out:
                out.append((int(c.table[2:]), c.name))
    return sorted(out)


def units_of(blocks: list[Block]) -> list[Unit]:
    """The units of a query's blocks as a forest (top-down): an aggregate unit above its
    block's whole-block unit, a block unit above the units of its joins' inputs."""
    out = []
    for b in blocks:
        n = len(b.flat.leaves)
        whole = frozenset(range(n))
        spj = _spj_unit(b, whole)
        spj.children += _joined_pairs(b, spj)
        if b.anchor_kind == ANCHOR_AGGREGATE:
            agg = Unit("agg", b, whole, [spj])
            agg.why_not = _unit_why_not(b, whole) or b.why_not
            out.append(agg)
        else:
            out.append(spj)
    return out


def _spj_unit(b: Block, S: frozenset) -> Unit:
    u = Unit("spj", b, S)
    u.why_not = _unit_why_not(b, S) or b.why_not
    for left, right in b.flat.joins:
        if left | right == S:        # the join whose inputs split S
            u.children = [_spj_unit(b, left), _spj_unit(b, right)]
            break
    return u


def _joined_pairs(b: Block, whole: Unit) -> list[Unit]:
    """Units of two scans joined by a condition of the block that are not an input of one
    of its joins as written. Inner joins commute, so ``store_sales ⋈ date_dim`` is a
    sub-expression of ``FROM store_sales, customer_demographics, date_dim, item`` although
    the left-deep tree of that FROM list never joins those two first (the paper looks at
    Catalyst's reordered plans; the IR keeps the order as written). Pairs only: the
    fact-dimension join every query of a star schema repeats, at a bounded number of
    units per block."""
    if len(b.flat.leaves) < 3:
        return []
    have: set[frozenset] = set()
    stack = [whole]
    while stack:
        u = stack.pop()
        have.add(u.S)
        stack.extend(u.children)
    out = []
    for c in b.flat.conjuncts:
        S = leaves_of(c)
        if len(S) != 2 or S in have or not isinstance(c, exp.EQ):
            continue
        have.add(S)
        u = Unit("spj", b, S)
        u.why_not = _unit_why_not(b, S) or b.why_not
        out.append(u)
    return out


def _unit_why_not(b: Block, S: frozenset) -> str:
    if b.anchor is None:
        return b.why_not or "no anchor"
    if b.volatile:
        return f"not shareable: {b.volatile}"
    leaves = [b.flat.leaves[i] for i in S]
    if not all(isinstance(x, Scan) for x in leaves):
        return "reads an input that is not a base table scan"
    tables = [x.table for x in leaves]
    if len(set(tables)) != len(tables):
        return "reads the same table twice"
    if len(S) > 1:
        # the inner-join graph of S must be connected (no cross product is cached)
        comp = {min(S)}
        links = [leaves_of(c) for c in b.flat.local(S) if len(leaves_of(c)) >= 2]
        grew = True
        while grew:
            grew = False
            for ls in links:
                if ls & comp and not ls <= comp:
                    comp |= ls
                    grew = True
        if comp != set(S):
            return "a cross product"
    return ""
