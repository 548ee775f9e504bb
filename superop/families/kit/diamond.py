"""Diamond tracing on the plan IR: the ONE implementation of what mining, the verifier and
the runtime used to trace separately (AdvanceNext of the paper's §4.2 and the column
tracing of Algorithms 1-4).

* :class:`PlanContext` — a plan with its parents and shared nodes (the Spool candidates).
  :func:`agg_paths_check` — Algorithm 1 on aggregate paths;
  :func:`trace` follows one output column of a node down to the field of a
  node below it that it carries unchanged (renames, bare projections, grouping keys, join
  sides, filters/sorts/limits, the input columns of a window).
* :func:`shape_at` — the generic structure at a core node (a UNION ALL, or a tree of
  unshared joins flattened to its leaves): per input, the σ/π/ρ edge above an optional
  aggregate, the edge below it and where the path stops. Families decide from it whether
  the node is an instance of their abstract tree. :func:`tree_positions` maps a join-tree
  node's columns to the paths they come from.
* :func:`positions_carrying`, :func:`keys_implied`, :func:`equalities_imply` — the join premise of
  Algorithms 2-3 decided without a solver (union-find); the verifier re-decides it with Z3.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Optional, Sequence

from sqlglot import exp

from ...ir.analysis import Edge, walk_edge
from ...ir.dependencies import dependencies
from ...ir.dialect import DIALECT
from ...ir.generate import to_sql
from ...ir.keys import KEYS_ENTRY, DeclaredKey, keys_entry
from ...ir.lower import qualified
from ...ir.nodes import (
    Aggregate,
    Field,
    Join,
    Limit,
    Node,
    Project,
    Rename,
    Scan,
    Select,
    Sort,
    UnionAll,
    Window,
    parents,
    replace,
    resolve_field,
    walk,
)
from .records import Branch, Reason

_MAX_TRACE = 10_000
# the operators that read their input's columns by name, not by position
BY_NAME = (Project, Aggregate, Rename)


def find_field(fields: Sequence[Field], col: exp.Column) -> Optional[int]:
    """:func:`superop.ir.nodes.resolve_field` that says None instead of raising."""
    try:
        return resolve_field(tuple(fields), col)
    except KeyError:
        return None


def find_field_strict(fields: Sequence[Field], col: exp.Column) -> Optional[int]:
    """The one field ``col`` names — by its qualifier too when it has one (no fallback to
    the bare name: on a join's two sides ``i.s`` is not ``o.s``), else None."""
    hits = [i for i, f in enumerate(fields) if f.name == col.name and (not col.table or f.qualifier == col.table)]
    return hits[0] if len(hits) == 1 else None


def bare_column(e: Optional[exp.Expr]) -> Optional[exp.Column]:
    """The column ``e`` is (through parentheses), else None."""
    while isinstance(e, exp.Paren):
        e = e.this
    return e if isinstance(e, exp.Column) else None


def trace(node: Node, idx: int, stop: Node) -> Optional[int]:
    """The index in ``stop.fields`` that output column ``idx`` of ``node`` carries
    unchanged (via renames, bare projections, grouping keys, join sides, filters),
    else None (computed on the way, or ``stop`` is not below)."""
    for _ in range(_MAX_TRACE):
        if node is stop:
            return idx
        if isinstance(node, (Select, Sort, Limit)):
            node = node.children[0]
            continue
        if isinstance(node, Window):             # appends columns, keeps its input's
            if idx >= len(node.child.fields):
                return None
            node = node.child
            continue
        if isinstance(node, Rename):
            j = find_field(node.child.fields, node.mapping[idx][0].column())
            if j is None:
                return None
            idx, node = j, node.child
            continue
        if isinstance(node, (Project, Aggregate)):
            c = bare_column(node.items[idx][0])
            if c is None:
                return None
            j = find_field(node.child.fields, c)
            if j is None:
                return None
            if isinstance(node, Aggregate) and not any(
                    (k := bare_column(key)) is not None and find_field(node.child.fields, k) == j
                    for key in node.keys):
                return None
            idx, node = j, node.child
            continue
        if isinstance(node, Join):
            nl = len(node.left.fields)
            if idx < nl:
                node = node.left
            else:
                idx, node = idx - nl, node.right
            continue
        return None
    return None


def field_type(node: Node, idx: int) -> Optional[str]:
    """The declared (scan) type of output column ``idx`` of ``node`` when it carries a base
    table's column unchanged (through renames, bare projections, grouping keys, join sides,
    filters, UNION ALL inputs that all agree); None otherwise."""
    for _ in range(_MAX_TRACE):
        if isinstance(node, Scan):
            return node.columns[idx][1].lower()
        if isinstance(node, UnionAll):
            ts = {field_type(c, idx) for c in node.inputs}
            return ts.pop() if len(ts) == 1 else None
        child = node.children[0] if len(node.children) == 1 else None
        if isinstance(node, (Select, Sort, Limit)):
            node = node.children[0]
            continue
        if isinstance(node, Join):
            nl = len(node.left.fields)
            node, idx = (node.left, idx) if idx < nl else (node.right, idx - nl)
            continue
        if isinstance(node, Rename) and child is not None:
            j = find_field(child.fields, node.mapping[idx][0].column())
        elif isinstance(node, (Project, Aggregate)) and child is not None:
            c = bare_column(node.items[idx][0])
            j = None if c is None else find_field(child.fields, c)
            if j is not None and isinstance(node, Aggregate) and not any(
                    (k := bare_column(key)) is not None and find_field(child.fields, k) == j
                    for key in node.keys):
                j = None
        else:
            return None
        if j is None or child is None:
            return None
        node, idx = child, j
    return None


class PlanContext:
    """One plan: its parents, its shared nodes, and column tracing over it."""

    def __init__(self, plan: Node):
        self.plan = plan
        self.parents = parents(plan)
        self.shared_ids = frozenset(i for i, ps in self.parents.items() if len(ps) >= 2)

    def is_shared(self, n: Node) -> bool:
        return id(n) in self.shared_ids

    def read_by_name(self, n: Node) -> bool:
        """Does the one parent above ``n`` (through filters) read its columns by name (a
        projection, an aggregate, a ρ)? Then a rewrite of ``n`` may reorder its columns."""
        ps = self.parents.get(id(n), [])
        if len(ps) != 1:
            return False
        return self.read_by_name(ps[0]) if isinstance(ps[0], Select) else isinstance(ps[0], BY_NAME)


# ---------------------------------------------------------------------------
# The generic structure at a core node
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Path:
    """One input of a core node: σ/π/ρ edge, optional aggregate, σ/π/ρ edge; ``stop`` is
    where the path of σ/π/ρ/γ operators ends (a shared node, a scan, any other operator)
    and ``n_aggs`` how many aggregates it passed (more than one: stacked aggregates)."""
    branch: Branch
    stop: Node
    n_aggs: int

    @property
    def agg(self) -> Optional[Aggregate]:
        return self.branch.agg


@dataclass(frozen=True, eq=False)
class Shape:
    """A core node (UNION ALL, or the root of a tree of unshared joins) and its inputs."""
    root: Node
    joins: tuple[Join, ...]          # the flattened join tree, root first (empty for a union)
    paths: tuple[Path, ...]
    ctx: PlanContext

    @property
    def join_kinds(self) -> tuple[str, ...]:
        return tuple(sorted({j.kind for j in self.joins}))

    @property
    def join_kind(self) -> str:
        """The join kind, ``mixed:<k1>,<k2>`` for a tree of several kinds, "" for a union."""
        ks = self.join_kinds
        if not ks:
            return ""
        return ks[0] if len(ks) == 1 else "mixed:" + ",".join(ks)

    @property
    def agg_paths(self) -> tuple[Path, ...]:
        return tuple(p for p in self.paths if p.agg is not None)

    def tables(self) -> list[str]:
        """Base tables under the first path's stop (what the diamond reads)."""
        stop = self.paths[0].stop
        return sorted({m.table for m in walk(stop) if isinstance(m, Scan)})


def path_of(top: Node, ctx: PlanContext) -> Path:
    upper = walk_edge(top, ctx.shared_ids)
    b = upper.bottom
    if isinstance(b, Aggregate) and not ctx.is_shared(b):
        lower = walk_edge(b.child, ctx.shared_ids)
        n, stop = 1, lower.bottom
        while isinstance(stop, Aggregate) and not ctx.is_shared(stop):
            n += 1
            stop = walk_edge(stop.child, ctx.shared_ids).bottom
        return Path(Branch(upper, b, lower), stop, n)
    return Path(Branch(upper), b, 0)


def join_tree(j: Join, ctx: PlanContext) -> tuple[list[Join], list[Node]]:
    """The joins of the unshared join tree rooted at ``j`` (root first) and its leaves."""
    joins: list[Join] = []
    leaves: list[Node] = []

    def go(n: Node) -> None:
        if isinstance(n, Join) and (n is j or not ctx.is_shared(n)):
            joins.append(n)
            go(n.left)
            go(n.right)
        else:
            leaves.append(n)
    go(j)
    return joins, leaves


def tree_positions(node: Node, leaves: Sequence[Node]) -> list[tuple[int, int]]:
    """(leaf index, field index at that leaf) of every output column of ``node``, a node
    of a join tree whose leaves are ``leaves`` (the join inputs a Shape's paths start at,
    ``path.branch.upper.top``)."""
    for i, leaf in enumerate(leaves):
        if node is leaf:
            return [(i, j) for j in range(len(leaf.fields))]
    if isinstance(node, Join):
        left = tree_positions(node.left, leaves)
        return left if node.kind in ("semi", "anti") else left + tree_positions(node.right, leaves)
    raise ValueError(f"{node.op} is not a node of the join tree")


def shape_at(node: Node, ctx: PlanContext) -> Optional[Shape]:
    if isinstance(node, UnionAll) and len(node.inputs) >= 2:
        return Shape(node, (), tuple(path_of(c, ctx) for c in node.inputs), ctx)
    if isinstance(node, Join):
        joins, leaves = join_tree(node, ctx)
        return Shape(node, tuple(joins), tuple(path_of(x, ctx) for x in leaves), ctx)
    return None


# ---------------------------------------------------------------------------
# Keys (Algorithm 1) and the join premise (Algorithms 2-3)
# ---------------------------------------------------------------------------
def key_sources(agg: Aggregate, stop: Node) -> Optional[tuple[int, ...]]:
    """The aggregate's grouping keys traced down to ``stop``'s fields (TraverseDown of
    Algorithm 4), in key order; None when a key is computed."""
    out: list[int] = []
    for k in agg.keys:
        c = bare_column(k)
        if c is None:
            return None
        j = find_field(agg.child.fields, c)
        if j is None:
            return None
        t = trace(agg.child, j, stop)
        if t is None:
            return None
        out.append(t)
    return tuple(out)


def equi_pairs(j: Join) -> list[tuple[int, int]]:
    """(left field index, right field index) of every ``column = column`` conjunct of the
    ON clause between the two inputs (from ``equi`` and from ``residual``)."""
    conj: list[exp.Expr] = [exp.EQ(this=a, expression=b) for a, b in j.equi]
    stack = [j.residual] if j.residual is not None else []
    while stack:
        e = stack.pop()
        if isinstance(e, exp.Paren):
            stack.append(e.this)
        elif isinstance(e, exp.And):
            stack += [e.this, e.expression]
        else:
            conj.append(e)
    out = []
    lf, rf = j.left.fields, j.right.fields
    for c in conj:
        if not isinstance(c, exp.EQ):
            continue
        a, b = bare_column(c.this), bare_column(c.expression)
        if a is None or b is None:
            continue
        sa, sb = _side(a, lf, rf), _side(b, lf, rf)
        if sa == "L" and sb == "R":
            out.append((_idx(lf, a), _idx(rf, b)))
        elif sa == "R" and sb == "L":
            out.append((_idx(lf, b), _idx(rf, a)))
    return out


def _idx(fields: Sequence[Field], c: exp.Column) -> int:
    i = find_field(fields, c)
    assert i is not None
    return i


def _side(c: exp.Column, lf: Sequence[Field], rf: Sequence[Field]) -> Optional[str]:
    q = c.table or None
    if q is not None:
        in_l = any(f.qualifier == q for f in lf)
        in_r = any(f.qualifier == q for f in rf)
        if in_l != in_r:
            side, fields = ("L", lf) if in_l else ("R", rf)
            return side if find_field(fields, c) is not None else None
    li, ri = find_field(lf, c), find_field(rf, c)
    if (li is None) == (ri is None):
        return None
    return "L" if li is not None else "R"


def equalities_imply(premises: Sequence[tuple[str, str]], goals: Sequence[tuple[str, str]]) -> bool:
    """Does the conjunction of equalities ``premises`` imply every equality in ``goals``?
    Equality is an equivalence, so this is exactly connectivity (union-find)."""
    uf = _UnionFind()
    for a, b in premises:
        uf.union(a, b)
    return all(a == b or uf.find(a) == uf.find(b) for a, b in goals)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)


def keys_implied(join: Join, pairs: Sequence[tuple[frozenset[int], frozenset[int]]]) -> list[bool]:
    """Per key: do the join's column equalities connect some left column carrying it with
    some right column carrying it? (Algorithm 2 line 13 / Algorithm 3 line 10.)"""
    uf = _UnionFind()
    for li, ri in equi_pairs(join):
        uf.union(f"L{li}", f"R{ri}")
    return [any(uf.find(f"L{x}") == uf.find(f"R{y}") for x in ls for y in rs) for ls, rs in pairs]


# (id(top), id(stop)) -> (top, stop, what each position of top carries): the premises ask
# about every key of every join of a match, per rule; nodes are immutable, and holding
# both nodes keeps their ids from being reused while the entry lives
_CARRIED: dict[tuple[int, int], tuple[Node, Node, tuple[Optional[int], ...]]] = {}
_CARRIED_MAX = 4096
_CARRIED_LOCK = threading.Lock()


def carried(top: Node, stop: Node) -> tuple[Optional[int], ...]:
    """Per output position of ``top``: the field of ``stop`` it carries unchanged
    (:func:`trace`), None where it carries none."""
    key = (id(top), id(stop))
    with _CARRIED_LOCK:
        hit = _CARRIED.get(key)
    if hit is not None and hit[0] is top and hit[1] is stop:
        return hit[2]
    out = tuple(trace(top, i, stop) for i in range(len(top.fields)))
    with _CARRIED_LOCK:
        if len(_CARRIED) >= _CARRIED_MAX:
            _CARRIED.clear()
        _CARRIED[key] = (top, stop, out)
    return out


def positions_carrying(top: Node, src: int, stop: Node) -> frozenset[int]:
    """Every output position of ``top`` that carries ``stop``'s field ``src`` unchanged
    (TraverseUp of Algorithm 4, decided by tracing each position down)."""
    return frozenset(i for i, s in enumerate(carried(top, stop)) if s == src)


def agg_paths_check(paths: Sequence[Path]) -> tuple[Optional[Reason], tuple[int, ...]]:
    """Algorithm 1 on aggregate paths: one aggregate each, ONE shared input, every
    grouping key a source column, the same non-empty key set on every path. Returns
    (reason, ()) or (None, the first path's key positions in key order)."""
    if any(p.n_aggs > 1 for p in paths):
        return Reason.STACKED_AGGREGATES, ()
    if len({id(p.stop) for p in paths}) > 1:
        return Reason.DIFFERENT_INPUTS, ()
    keys = []
    for p in paths:
        assert p.agg is not None
        k = key_sources(p.agg, p.stop)
        if k is None:
            return Reason.COMPUTED_GROUPING_KEY, ()
        keys.append(k)
    if len({frozenset(k) for k in keys}) > 1:
        return Reason.DIFFERENT_GROUPING_KEYS, ()
    if not keys[0]:
        return Reason.GLOBAL_AGGREGATE, ()
    return None, keys[0]


def source_dependencies(e: exp.Expr, fields: Sequence[Field], edge: Edge) -> Optional[frozenset[int]]:
    """The positions of ``edge.bottom``'s fields an expression over ``fields`` (the edge
    top's fields) is computed from; None if a column does not resolve."""
    idx: set[int] = set()
    for c in e.find_all(exp.Column):
        i = find_field(fields, c)
        if i is None:
            return None
        idx.add(i)
    for op in edge.ops:
        child = op.children[0].fields
        nxt: set[int] = set()
        if isinstance(op, Rename):
            for i in idx:
                j = find_field(child, op.mapping[i][0].column())
                if j is None:
                    return None
                nxt.add(j)
        elif isinstance(op, Project):
            for i in idx:
                for c in op.items[i][0].find_all(exp.Column):
                    j = find_field(child, c)
                    if j is None:
                        return None
                    nxt.add(j)
        else:
            nxt = idx
        idx = nxt
    return frozenset(idx)


SOURCE_TABLE = "__source"


def single_input_base(node: Node) -> Node:
    """The node where ``node``'s chain of one-input operators (σ/π/ρ/γ/windows/sorts)
    stops: the first node below it with no or several inputs (a scan, join or union)."""
    while len(node.children) == 1:
        node = node.children[0]
    return node


def over_source(root: Node, source: Node, schema: Optional[dict[str, dict[str, str]]] = None
                ) -> Optional[tuple[Node, dict[str, dict[str, str]]]]:
    """The sub-plan at ``root`` reading its shared ``source`` as one table (``__source``,
    the source's columns with their types) and that table's schema; ``root`` itself (and
    the scanned table's schema) when the source is a scan. What the program a family
    builds reads is the source's rows: checking the sub-plan for EVERY such table is at
    least as strong as checking it on the rows the source produces. None when a column's
    type is unknown or the source's column names repeat."""
    if isinstance(source, Scan):
        one: dict[str, dict[str, str]] = {source.table: dict(source.columns)}
        if source.keys:
            one[KEYS_ENTRY] = keys_entry({source.table: source.keys})
        return root, one
    names = list(source.names)
    if len({n.lower() for n in names}) != len(names):
        return None
    inferred: Optional[list[Optional[str]]] = None
    cols = []
    for i, n in enumerate(names):
        t = field_type(source, i)
        if t is None:
            inferred = inferred if inferred is not None else inferred_types(source)
            t = inferred[i]
        if t is None:
            return None
        cols.append((n, t))
    # what the source's declared keys make its columns determine (superop.ir.keys), as
    # dependencies of the one table: a sub-plan whose match relies on one still matches
    deps = tuple(DeclaredKey(tuple(names[i] for i in sorted(d.by)),
                             tuple(names[i] for i in sorted(d.on - d.by)))
                 for d in dependencies(source) if d.on - d.by)
    leaf = Scan(SOURCE_TABLE, tuple(cols), keys=deps)
    sch: dict[str, dict[str, str]] = {SOURCE_TABLE: dict(cols)}
    if deps:
        sch[KEYS_ENTRY] = keys_entry({SOURCE_TABLE: deps})
    return replace(root, {id(source): leaf}), sch


def inferred_types(node: Node) -> list[Optional[str]]:
    """Spark SQL types of ``node``'s output columns as sqlglot infers them from the scans'
    declared types (None where it cannot)."""
    from sqlglot.optimizer.annotate_types import annotate_types

    # a qualified table is not found in this flat mapping: its types are unknown (None)
    schema: dict[str, object] = {n.table: dict(n.columns) for n in walk(node) if isinstance(n, Scan)}
    try:
        ast = annotate_types(qualified(to_sql(node), schema), schema=schema, dialect=DIALECT)
    except Exception:  # a type is a convenience here: unknown means "cannot"
        return [None] * len(node.fields)
    out: list[Optional[str]] = []
    for e in ast.selects:
        t = e.type
        out.append(None if t is None or t.this == exp.DataType.Type.UNKNOWN
                   else t.sql(dialect=DIALECT).lower())
    return out if len(out) == len(node.fields) else [None] * len(node.fields)
