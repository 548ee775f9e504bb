"""Join regions over uses of one shared aggregate, brought into the shape the pivot join
matches — a semantics-preserving rewrite of the plan IR, run by the matching path before
any family looks at the plan (:func:`regroup`; the same plan object when nothing moves).

A *use* is a leaf of a join tree whose σ/π/ρ edge reaches a shared node whose own σ/π/ρ
chain ends at an aggregate (a CTE or derived table of a GROUP BY read several times), or
a shared UNION ALL of such branches. A *region* is a tree of unshared joins with the
Select right above it (the WHERE of ``FROM t t1, t t2 WHERE ...``). In a region with two
or more uses of one shared node:

1. **Pushdown.** A conjunct that reads one use only is moved onto that use (a σ right
   above the leaf) wherever that is the same relation: from the WHERE through every
   join on whose preserved side the use is (inner: both; left: the left; right: the
   right; semi/anti: the left), from an ON clause onto its null-supplying side (left
   join: the right input; right join: the left; semi/anti: the right; inner: either).
2. **Branch selection.** A use of a shared UNION ALL whose filter equates a column with a
   constant that every other branch carries as a different literal (``sale_type = 's'``)
   reads that branch directly, through a ρ to the union's names, when every branch has
   the same column types (no type widening is lost).
3. **Regrouping** (inner regions only: inner joins commute and associate). The uses of
   one shared node become one left-deep sub-tree, the other leaves follow, and every
   conjunct is placed exactly once at the lowest join where the leaves it reads are
   joined (an equality between the two sides as an equi pair). When leaves change
   order the region's output columns do too, so that is done only under parents that
   read columns by name (a projection, an aggregate, a ρ).

A region that holds a nondeterministic conjunct, a column that does not resolve to one
leaf unambiguously, or a subquery is left as it is.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Optional, Sequence, cast

from sqlglot import exp

from ...ir.analysis import Edge, capture_parameters, walk_edge
from ...ir.functions import is_nondeterministic_expr
from ...ir.generate import translate_columns
from ...ir.lowering.exprs import conjuncts
from ...ir.nodes import Aggregate, Field, Join, Node, Rename, Select, UnionAll, walk
from .diamond import BY_NAME, PlanContext, field_type, find_field, join_tree
from .existence import existence
from .sink import sink

# ON-clause conjunct reading only one side: may it filter that side's input instead?
_ON_PUSH = {"inner": (True, True), "left": (False, True), "right": (True, False), "full": (False, False),
            "semi": (True, True), "anti": (False, True), "cross": (True, True)}
# filter on a join's output reading only one side: may it filter that side's input instead?
_WHERE_PUSH = {"inner": (True, True), "left": (True, False), "right": (False, True), "full": (False, False),
               "semi": (True, False), "anti": (True, False), "cross": (True, True)}
# parents that read their input's columns by name (a new column order is invisible to them)


def and_all(parts: Sequence[exp.Expr]) -> Optional[exp.Expr]:
    out: Optional[exp.Expr] = None
    for p in parts:
        p = p.copy()
        if isinstance(p, (exp.Or, exp.Xor)):
            p = exp.Paren(this=p)
        out = p if out is None else cast(exp.Expr, exp.and_(out, p, copy=False))
    return out


# ---------------------------------------------------------------------------
# uses of a shared aggregate
# ---------------------------------------------------------------------------
def aggregate_below(s: Node, ctx: PlanContext) -> Optional[Aggregate]:
    """The aggregate at the end of ``s``'s own σ/π/ρ chain (``s`` itself may be one)."""
    chain = walk_edge(s, ctx.shared_ids - {id(s)})
    return chain.bottom if isinstance(chain.bottom, Aggregate) else None


def shared_aggregate(leaf: Node, ctx: PlanContext) -> Optional[Node]:
    """The shared node a join leaf uses, if it is an aggregate (through σ/π/ρ) or a UNION
    ALL of aggregates."""
    s = walk_edge(leaf, ctx.shared_ids).bottom
    if not ctx.is_shared(s):
        return None
    if aggregate_below(s, ctx) is not None:
        return s
    if isinstance(s, UnionAll) and all(aggregate_below(b, ctx) is not None for b in s.inputs):
        return s
    return None


def aggregated_use(leaf: Node, ctx: PlanContext) -> Optional[Node]:
    """The shared aggregate a join leaf aggregates again (σ/π/ρ over one unshared γ over
    σ/π/ρ over it — TPC-DS q65's per-store average of the per-(store, item) revenue it is
    joined back to): a use of the shared node too, grouped with its other uses."""
    b = walk_edge(leaf, ctx.shared_ids).bottom
    if not isinstance(b, Aggregate) or ctx.is_shared(b):
        return None
    return shared_aggregate(b.child, ctx)


def use_of(leaf: Node, ctx: PlanContext) -> Optional[Node]:
    return shared_aggregate(leaf, ctx) or aggregated_use(leaf, ctx)


# ---------------------------------------------------------------------------
# the region
# ---------------------------------------------------------------------------
@dataclass
class _Conj:
    expr: exp.Expr            # as written (columns resolve where it was)
    leaves: frozenset[int]
    cols: list[tuple[exp.Column, int, int]]   # each column: (column, leaf, position in leaf)
    home: Optional[int] = None      # index of the join it was in (None: the WHERE)
    equi: Optional[int] = None      # its position among that join's equi pairs

    def side_leaves(self, part: exp.Expr) -> set[int]:
        """The leaves a sub-expression of ``expr`` reads."""
        ids = {id(c): leaf for c, leaf, _ in self.cols}
        return {ids[id(c)] for c in part.find_all(exp.Column) if id(c) in ids}


@dataclass
class _Region:
    top: Node                       # the Select above the root join, or the root join
    root: Join
    where: Optional[Select]
    joins: list[Join]
    leaves: list[Node]
    slots: dict[int, list[tuple[int, int]]] = field(default_factory=dict)   # id(node) -> output slots

    def leaf_index(self, n: Node) -> Optional[int]:
        for i, x in enumerate(self.leaves):
            if x is n:
                return i
        return None


def _slots(n: Node, reg: _Region) -> list[tuple[int, int]]:
    hit = reg.slots.get(id(n))
    if hit is not None:
        return hit
    i = reg.leaf_index(n)
    if i is not None:
        out = [(i, p) for p in range(len(n.fields))]
    else:
        assert isinstance(n, Join)
        out = _slots(n.left, reg) + ([] if n.kind in ("semi", "anti") else _slots(n.right, reg))
    reg.slots[id(n)] = out
    return out


def _input_slots(j: Join, reg: _Region) -> list[tuple[int, int]]:
    """What a join's ON clause reads: both inputs' columns."""
    return _slots(j.left, reg) + _slots(j.right, reg)


def _attribute(e: exp.Expr, fields: Sequence[Field], slots: Sequence[tuple[int, int]],
               home: Optional[int], equi: Optional[int] = None) -> Optional[_Conj]:
    if is_nondeterministic_expr(e) or any(isinstance(x, exp.Query) for x in e.walk()):
        return None
    cols = []
    for c in e.find_all(exp.Column):
        if isinstance(c.this, exp.Star):
            return None
        i = find_field(fields, c)
        if i is None:
            return None
        leaf, pos = slots[i]
        cols.append((c, leaf, pos))
    return _Conj(e, frozenset(leaf for _, leaf, _ in cols), cols, home, equi)


def _requalified(cj: _Conj, leaves: Sequence[Node], scope: Sequence[tuple[int, Field]]) -> Optional[exp.Expr]:
    """The conjunct with each column written as its leaf field; None if that name does
    not resolve to exactly that field among ``scope`` ((leaf, field) pairs in order)."""
    fields = [f for _, f in scope]
    e = cj.expr.copy()
    # columns of the copy in the same order as cj.cols (find_all is deterministic)
    for c, (_, leaf, pos) in zip(list(e.find_all(exp.Column)), cj.cols):
        f = leaves[leaf].fields[pos]
        new = f.column()
        i = find_field(fields, new)
        if i is None or scope[i][0] != leaf or scope[i][1] != f or \
                sum(1 for lf, g in scope if lf == leaf and g == f) != 1:
            return None
        if c is e:
            return new
        c.replace(new)
    return e


def _region_at(j: Join, ctx: PlanContext) -> Optional[_Region]:
    ps = ctx.parents.get(id(j), [])
    if len(ps) == 1 and isinstance(ps[0], Join) and not ctx.is_shared(j):
        return None                          # inside another join tree
    joins, leaves = join_tree(j, ctx)
    where = ps[0] if len(ps) == 1 and isinstance(ps[0], Select) and not ctx.is_shared(j) else None
    return _Region(where if where is not None else j, j, where, joins, leaves)


# ---------------------------------------------------------------------------
# the rewrite
# ---------------------------------------------------------------------------
def regroup(plan: Node) -> Node:
    """``plan`` in the canonical form the families are matched on: self-joins read for
    existence only as semi joins (:func:`.existence.existence`), self-joins of
    decorrelated sub-queries sunk onto the input they read (:func:`.sink.sink`), then every
    join region over uses of a shared aggregate regrouped (see the module doc); ``plan``
    itself when nothing changes."""
    return _regroup(sink(existence(plan)))


def _regroup(plan: Node) -> Node:
    ctx = PlanContext(plan)
    regions: dict[int, _Region] = {}
    for n in walk(plan):
        if isinstance(n, Join):
            r = _region_at(n, ctx)
            if r is not None:
                uses = [use_of(x, ctx) for x in r.leaves]
                ids = [id(u) for u in uses if u is not None]
                if len(ids) != len(set(ids)):
                    regions[id(r.top)] = r
    if not regions:
        return plan
    memo: dict[int, Node] = {}
    bridges: dict[tuple[int, int], Node] = {}
    for n in walk(plan):
        kids = tuple(memo[id(c)] for c in n.children)
        same = n if all(a is b for a, b in zip(kids, n.children)) else n.with_children(kids)
        r = regions.get(id(n))
        new = _rebuild(r, ctx, memo, bridges) if r is not None else None
        # an equal rebuild keeps the node: regroup(regroup(p)) is regroup(p), object for object
        memo[id(n)] = same if new is None or new == same else new
    return memo[id(plan)]


def _rebuild(reg: _Region, ctx: PlanContext, memo: dict[int, Node],
             bridges: dict[tuple[int, int], Node]) -> Optional[Node]:
    uses = [use_of(x, ctx) for x in reg.leaves]
    # every conjunct of the region, attributed to the leaves it reads
    cjs: list[_Conj] = []
    for k, j in enumerate(reg.joins):
        fields = j.left.fields + j.right.fields
        parts: list[tuple[exp.Expr, Optional[int]]] = [
            (exp.EQ(this=a.copy(), expression=b.copy()), q) for q, (a, b) in enumerate(j.equi)]
        parts += [(x, None) for x in conjuncts(j.residual)]
        for p, q in parts:
            c = _attribute(p, fields, _input_slots(j, reg), k, q)
            if c is None:
                return None
            cjs.append(c)
    if reg.where is not None:
        for p in conjuncts(reg.where.predicate):
            c = _attribute(p, reg.root.fields, _slots(reg.root, reg), None)
            if c is None:
                return None
            cjs.append(c)
    inner = all(j.kind in ("inner", "cross") for j in reg.joins)
    pushed: dict[int, list[_Conj]] = {}
    for c in cjs:
        if len(c.leaves) == 1 and uses[next(iter(c.leaves))] is not None and _may_push(c, reg, inner):
            pushed.setdefault(next(iter(c.leaves)), []).append(c)
    # the leaves, with their pushed filters and (for a union) the branch they select
    new_leaves: list[Node] = []
    group: list[Optional[tuple[int, int]]] = []    # per leaf: (shared node, branch) it reads
    for i, leaf in enumerate(reg.leaves):
        node = memo[id(leaf)]
        mine = pushed.get(i, [])
        if mine:
            scope = [(i, f) for f in leaf.fields]
            preds = [_requalified(c, reg.leaves, scope) for c in mine]
            if any(p is None for p in preds):
                return None
            node = Select(node, cast(exp.Expr, and_all([p for p in preds if p is not None])))
        u = uses[i]
        g = None if u is None else (id(u), -1)
        if isinstance(u, UnionAll):
            sel = _select_branch(node, memo[id(u)], u, ctx, bridges)
            if sel is not None:
                node, g = sel[0], (id(u), sel[1])
        new_leaves.append(node)
        group.append(g)
    rest = [c for c in cjs if not any(c is p for ps in pushed.values() for p in ps)]
    if inner:
        return _regroup_inner(reg, ctx, new_leaves, group, rest)
    if not pushed:
        return None
    return _rebuild_outer(reg, new_leaves, rest)


def _path_to(leaf: int, n: Node, reg: _Region) -> Optional[list[tuple[Join, int]]]:
    """The joins from ``n`` down to the leaf, each with the side (0/1) taken."""
    if reg.leaf_index(n) == leaf:
        return []
    if not isinstance(n, Join) or not any(n is x for x in reg.joins):
        return None
    for side, kid in enumerate((n.left, n.right)):
        sub = _path_to(leaf, kid, reg)
        if sub is not None:
            return [(n, side)] + sub
    return None


def _may_push(c: _Conj, reg: _Region, inner: bool) -> bool:
    leaf = next(iter(c.leaves))
    if inner:
        return True
    start: Node = reg.root if c.home is None else reg.joins[c.home]
    path = _path_to(leaf, start, reg)
    if path is None:
        return False
    if c.home is not None:                    # an ON conjunct: onto one input of its join
        j, side = path[0]
        if not _ON_PUSH[j.kind][side]:
            return False
        path = path[1:]
    return all(_WHERE_PUSH[j.kind][side] for j, side in path)


def _rebuild_outer(reg: _Region, leaves: list[Node], rest: list[_Conj]) -> Node:
    """Same joins in the same order; the pushed conjuncts gone from their joins / the WHERE
    (the others keep their text: the columns every join reads are unchanged)."""
    index = {id(j): k for k, j in enumerate(reg.joins)}

    def go(n: Node) -> Node:
        i = reg.leaf_index(n)
        if i is not None:
            return leaves[i]
        assert isinstance(n, Join)
        k = index[id(n)]
        mine = [c for c in rest if c.home == k]
        kept = {c.equi for c in mine if c.equi is not None}
        equi = tuple(pair for q, pair in enumerate(n.equi) if q in kept)
        resid = and_all([c.expr for c in mine if c.equi is None])
        return Join(go(n.left), go(n.right), n.kind, equi, resid)
    body = go(reg.root)
    where = [c.expr for c in rest if c.home is None]
    return Select(body, cast(exp.Expr, and_all(where))) if where else body


def _regroup_inner(reg: _Region, ctx: PlanContext, leaves: list[Node],
                   group: list[Optional[tuple[int, int]]], rest: list[_Conj]) -> Optional[Node]:
    units: list[list[int]] = []
    for i, g in enumerate(group):
        members = [j for j, h in enumerate(group) if g is not None and h == g]
        if len(members) > 1:
            if members[0] == i:
                units.append(members)
            continue
        units.append([i])
    order = [i for u in units for i in u]
    if order != sorted(order):
        ps = ctx.parents.get(id(reg.top), [])
        if not ps or not all(isinstance(p, BY_NAME) for p in ps):
            return None                       # a new column order would be visible
    scope_all = [(i, f) for i in range(len(reg.leaves)) for f in reg.leaves[i].fields]
    placed: list[tuple[_Conj, exp.Expr]] = []
    for c in rest:
        e = _requalified(c, reg.leaves, scope_all)
        if e is None:
            return None
        placed.append((c, e))
    used = [False] * len(placed)
    # columns equated by some conjunct (bare column = bare column): equality is transitive,
    # so two leaves equated through a third may be joined on the implied equality
    classes = _UnionFind()
    for c in rest:
        if isinstance(c.expr, exp.EQ) and isinstance(c.expr.this, exp.Column) and \
                isinstance(c.expr.expression, exp.Column) and len(c.cols) == 2:
            (_, la, pa), (_, lb, pb) = c.cols
            classes.union((la, pa), (lb, pb))
    crosses = [0]

    def implied(lset: set[int], rset: set[int]) -> Optional[tuple[exp.Expr, exp.Expr]]:
        for a in classes.members():
            if a[0] not in lset:
                continue
            for b in classes.members():
                if b[0] in rset and classes.find(a) == classes.find(b):
                    return (reg.leaves[a[0]].fields[a[1]].column(), reg.leaves[b[0]].fields[b[1]].column())
        return None

    def join(left: Node, lset: set[int], right: Node, rset: set[int]) -> Node:
        both = lset | rset
        equi, resid = [], []
        for k, (c, e) in enumerate(placed):
            if used[k] or not c.leaves or not c.leaves <= both:
                continue
            used[k] = True
            if isinstance(e, exp.EQ) and isinstance(c.expr, exp.EQ):
                a, b = c.side_leaves(c.expr.this), c.side_leaves(c.expr.expression)
                if a and b and a <= lset and b <= rset:
                    equi.append((e.this.copy(), e.expression.copy()))
                    continue
                if a and b and a <= rset and b <= lset:
                    equi.append((e.expression.copy(), e.this.copy()))
                    continue
            resid.append(e)
        if not equi:
            eq = implied(lset, rset)
            if eq is not None:
                equi.append(eq)
        if not equi and not resid:
            crosses[0] += 1
        kind = "inner" if equi or resid else "cross"
        return Join(left, right, kind, tuple(equi), and_all(resid))

    def build(idx: list[int]) -> tuple[Node, set[int]]:
        acc, s = leaves[idx[0]], {idx[0]}
        for i in idx[1:]:
            acc = join(acc, s, leaves[i], {i})
            s = s | {i}
        return acc, s

    body, seen = build(units[0])
    for u in units[1:]:
        sub, sset = build(u)
        body = join(body, seen, sub, sset)
        seen |= sset
    if crosses[0] > sum(1 for j in reg.joins if j.kind == "cross" or (not j.equi and j.residual is None)):
        return None                           # would add a cartesian product
    top = [e for k, (_, e) in enumerate(placed) if not used[k]]
    return Select(body, cast(exp.Expr, and_all(top))) if top else body


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[tuple[int, int], tuple[int, int]] = {}

    def find(self, x: tuple[int, int]) -> tuple[int, int]:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: tuple[int, int], b: tuple[int, int]) -> None:
        self.parent[self.find(a)] = self.find(b)

    def members(self) -> list[tuple[int, int]]:
        return sorted(self.parent)


# ---------------------------------------------------------------------------
# static selection of a UNION ALL branch
# ---------------------------------------------------------------------------
def _select_branch(leaf: Node, u_new: Node, u: UnionAll, ctx: PlanContext,
                   bridges: dict[tuple[int, int], Node]) -> Optional[tuple[Node, int]]:
    """``leaf`` (σ/π/ρ over the union) reading the one branch its filter can select."""
    edge = walk_edge(leaf, ctx.shared_ids | {id(u_new)})
    if edge.bottom is not u_new or not isinstance(u_new, UnionAll):
        return None
    pred = capture_parameters(edge).predicate
    consts = [branch_columns(b, ctx) for b in u.inputs]
    if any(c is None for c in consts):
        return None
    sigs = [[s for _, s in cs] for cs in consts if cs is not None]
    if any(s != sigs[0] for s in sigs[1:]):
        return None                               # the union widens a type: keep it
    alive = []
    for bi, cs in enumerate(consts):
        assert cs is not None
        if not any(_refutes(p, u.fields, [x for x, _ in cs]) for p in conjuncts(pred)):
            alive.append(bi)
    if len(alive) != 1:
        return None
    bi = alive[0]
    bridge = bridges.get((id(u_new), bi))
    if bridge is None:
        b = u_new.inputs[bi]
        if len({f for f in b.fields}) != len(b.fields):
            return None
        bridge = Rename(b, tuple((f, g.name) for f, g in zip(b.fields, u_new.fields)), u_new.qualifier)
        bridges[(id(u_new), bi)] = bridge
    return _replace_bottom(edge, bridge), bi


def _replace_bottom(edge: Edge, new_bottom: Node) -> Node:
    node = new_bottom
    for op in reversed(edge.ops):
        node = op.with_children((node,))
    return node


def branch_columns(b: Node, ctx: PlanContext) -> Optional[list[tuple[Optional[exp.Literal], str]]]:
    """Per output column of a union branch (σ/π/ρ over an aggregate): the literal it
    always carries (None if not a constant) and a type signature (the expression over
    the aggregate's input with every column replaced by its declared type): equal
    signatures mean equal Spark types."""
    up = walk_edge(b, ctx.shared_ids - {id(b)})
    agg = up.bottom
    if not isinstance(agg, Aggregate):
        return None
    low = walk_edge(agg.child, ctx.shared_ids)
    lp = capture_parameters(low)
    src = low.bottom
    items = [lp.substitute(e, low.top.fields) for e, _ in agg.items]
    out: list[tuple[Optional[exp.Literal], str]] = []
    for _, written in capture_parameters(up).projection:
        e = _sub(written, agg.fields, items)
        if e is None:
            return None
        def typed(x: exp.Expr) -> exp.Expr:
            if isinstance(x, exp.Column):
                i = find_field(src.fields, x)
                t = field_type(src, i) if i is not None else None
                if t is None:
                    raise KeyError(x.sql())
                return exp.Var(this=f"T<{t}>")
            if isinstance(x, exp.Literal) and x.is_string:
                return exp.Var(this="T<string>")
            return x
        try:
            sig = e.copy().transform(typed)
        except KeyError:
            return None
        bare = e.unnest() if isinstance(e, exp.Paren) else e
        out.append((bare if isinstance(bare, exp.Literal) else None, _shape(sig)))
    return out


def _shape(e: exp.Expr) -> str:
    """The tree of ``e`` without its parentheses (TPC-DS q4 writes one branch's measure
    with an extra pair): the grouping is in the tree, so equal shapes are equal types."""
    while isinstance(e, exp.Paren):
        e = e.this
    parts = []
    for k, v in e.args.items():
        if isinstance(v, exp.Expr):
            parts.append(f"{k}={_shape(v)}")
        elif isinstance(v, list):
            parts.append(f"{k}=[" + ",".join(_shape(x) if isinstance(x, exp.Expr) else repr(x) for x in v) + "]")
        elif v is not None:
            parts.append(f"{k}={v!r}")
    return f"{type(e).__name__}({','.join(parts)})"


def _sub(e: exp.Expr, fields: Sequence[Field], items: Sequence[exp.Expr]) -> Optional[exp.Expr]:
    try:
        return translate_columns(e, fields, items)
    except KeyError:
        return None


def _refutes(p: exp.Expr, fields: Sequence[Field], consts: Sequence[Optional[exp.Literal]]) -> bool:
    """Is ``p`` (over the union's columns) FALSE on every row of a branch whose columns
    carry ``consts``? Only ``column = literal`` against a different literal counts."""
    while isinstance(p, exp.Paren):
        p = p.this
    if not isinstance(p, exp.EQ):
        return False
    for col, lit in ((p.this, p.expression), (p.expression, p.this)):
        if isinstance(col, exp.Column) and isinstance(lit, exp.Literal):
            i = find_field(fields, col)
            if i is None or consts[i] is None:
                return False
            return literals_differ(cast(exp.Literal, consts[i]), lit)
    return False


def literals_differ(a: exp.Literal, b: exp.Literal) -> bool:
    """Two literals that are certainly different values (same kind, different value)."""
    if a.is_string and b.is_string:
        return bool(a.this != b.this)
    if not a.is_string and not b.is_string:
        try:
            return Decimal(a.this) != Decimal(b.this)
        except InvalidOperation:
            return False
    return False
