"""The plan IR: immutable relational operator nodes shared by every stage.

Conventions
-----------
* A node's output is an ordered tuple of ``Field(qualifier, name)``. Scans qualify
  their columns with the table name; Rename re-qualifies (a FROM alias or a derived
  table alias) and/or renames; Project / Aggregate / UnionAll / Window outputs carry
  the qualifier given to them (usually ``None``).
* Expressions are sqlglot expressions. A column reference ``exp.Column(name, table=q)``
  inside a node's expression resolves against the node's *input* fields: first by
  ``(q, name)``, and when ``q`` is empty by a unique ``name``. Expressions stored in
  nodes are never mutated (copy before transforming).
* Sharing is by identity: a sub-plan consumed by two or more parents is the same
  Python object (the paper's Spool). Nodes compare and hash structurally, so
  :func:`intern` can merge structurally identical sub-plans into one node.
"""
from __future__ import annotations

from dataclasses import dataclass, fields as dc_fields
from typing import Any, Iterator, Optional, Sequence, cast

from sqlglot import exp

from .functions import is_nondeterministic_expr, nondeterministic_in_sql
from .dialect import DIALECT
from .keys import DeclaredKey
from .names import TableName, ident

JOIN_KINDS = ("inner", "left", "right", "full", "semi", "anti", "cross")


@dataclass(frozen=True)
class Field:
    qualifier: Optional[str]
    name: str

    def __str__(self) -> str:
        return f"{self.qualifier}.{self.name}" if self.qualifier else self.name

    def column(self) -> exp.Column:
        return exp.column(self.name, self.qualifier) if self.qualifier else exp.column(self.name)


class Node:
    """Base of all plan nodes. Subclasses are frozen dataclasses with eq=False;
    structural equality and a cached structural hash live here so that DAGs with
    sharing hash in linear time."""

    @property
    def children(self) -> tuple["Node", ...]:
        raise NotImplementedError

    # -- structure -------------------------------------------------------
    @property
    def op(self) -> str:
        return type(self).__name__

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in dc_fields(cast(Any, self)) if f.name != "_hash")

    def __hash__(self) -> int:
        h = self.__dict__.get("_hash_cache")
        if h is None:
            h = hash((type(self).__name__, self._key()))
            object.__setattr__(self, "_hash_cache", h)
        return h

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Node) or type(self) is not type(other) or hash(self) != hash(other):
            return False
        return self._key() == other._key()

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    @property
    def fields(self) -> tuple[Field, ...]:
        """The output columns, computed once per node (nodes are immutable; matching traces
        columns through deep plans and asks every node for them many times)."""
        f = self.__dict__.get("_fields_cache")
        if f is None:
            f = self._fields()
            object.__setattr__(self, "_fields_cache", f)
        return f

    def _fields(self) -> tuple[Field, ...]:
        raise NotImplementedError

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def with_children(self, children: Sequence["Node"]) -> "Node":
        raise NotImplementedError

    def resolve(self, column: exp.Column) -> int:
        """Index of the input field a column of THIS node's expressions refers to
        (only for unary nodes; joins resolve against left+right)."""
        return resolve_field(self.input_fields(), column)

    def input_fields(self) -> tuple[Field, ...]:
        out: tuple[Field, ...] = ()
        for c in self.children:
            out += c.fields
        return out


def resolve_field(fields: Sequence[Field], column: exp.Column) -> int:
    """Index of the field ``column`` refers to: by (qualifier, name); an unqualified
    column by a unique name. A qualifier that no field carries any more (a name
    referenced above a Project) falls back to the unique name."""
    name = column.name
    q = column.table or None
    hits = [i for i, f in enumerate(fields) if f.name == name and (q is None or f.qualifier == q)]
    if len(hits) == 1:
        return hits[0]
    if not hits and q is not None and not any(f.qualifier == q for f in fields):
        hits = [i for i, f in enumerate(fields) if f.name == name]
        if len(hits) == 1:
            return hits[0]
    if not hits:
        raise KeyError(f"column {column.sql()} not found among {[str(f) for f in fields]}")
    raise KeyError(f"column {column.sql()} is ambiguous among {[str(f) for f in fields]}")


# ---------------------------------------------------------------------------
# Leaves
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Scan(Node):
    """A base table. ``table`` is its name as the user wrote it, as Spark SQL text
    (``ops``, ``sales.ops``, ``cat.db.t``, back-quoted parts kept); ``columns`` are
    (name, spark type). ``identity`` is what the name resolved to (see
    :mod:`superop.ir.schema`): two scans are the same node iff they have the same identity
    and columns, so ``sales.ops`` and ``default.ops`` never merge. ``qualifier`` is how the
    fields are qualified (the table's own name, as the lowering normalized it).
    ``identity`` and ``qualifier`` default to the lowercased parts / last part of ``table``."""
    table: str
    columns: tuple[tuple[str, str], ...]
    identity: tuple[str, ...] = ()
    qualifier: str = ""
    volatile: str = ""             # a view whose rows may differ per read: why
    keys: tuple[DeclaredKey, ...] = ()   # declared keys/dependencies (superop.ir.keys); not identity

    def __post_init__(self) -> None:
        name = TableName.parse(self.table)
        if not self.identity:
            object.__setattr__(self, "identity", tuple(p.lower() for p in name.parts))
        if not self.qualifier:
            object.__setattr__(self, "qualifier", name.name)

    def _key(self) -> tuple[Any, ...]:
        return (self.identity, self.columns)

    @property
    def name(self) -> TableName:
        return TableName.parse(self.table)

    @property
    def identity_sql(self) -> str:
        """The resolved identity as one dotted name, parts back-quoted where Spark needs it
        (the temp-view marker ``""`` dropped): how outputs name the table that was read,
        the same for every spelling of it (``SALES.OPS`` and ``sales.ops`` when
        case-insensitive)."""
        return ".".join(ident(p).sql(dialect=DIALECT) for p in self.identity if p)

    @property
    def children(self) -> tuple["Node", ...]:
        return ()

    def _fields(self) -> tuple[Field, ...]:
        return tuple(Field(self.qualifier, c) for c, _ in self.columns)

    def with_children(self, children: Sequence["Node"]) -> "Node":
        return self


@dataclass(frozen=True, eq=False)
class Opaque(Node):
    """SQL the IR does not model, carried through untouched (a derived table body).
    ``output`` are the output column names of ``sql``."""
    sql: str
    output: tuple[str, ...]
    reason: str = ""

    @property
    def children(self) -> tuple["Node", ...]:
        return ()

    def _fields(self) -> tuple[Field, ...]:
        return tuple(Field(None, n) for n in self.output)

    def with_children(self, children: Sequence["Node"]) -> "Node":
        return self


# ---------------------------------------------------------------------------
# Unary
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Select(Node):
    """σ: keep rows where ``predicate`` is TRUE (three-valued logic)."""
    child: Node
    predicate: exp.Expr

    @property
    def children(self) -> tuple["Node", ...]:
        return (self.child,)

    def _fields(self) -> tuple[Field, ...]:
        return self.child.fields

    def with_children(self, children: Sequence["Node"]) -> "Node":
        return Select(children[0], self.predicate)


@dataclass(frozen=True, eq=False)
class Project(Node):
    """π: computes ``items`` = ((expression, output name), ...) per row."""
    child: Node
    items: tuple[tuple[exp.Expr, str], ...]
    qualifier: Optional[str] = None

    @property
    def children(self) -> tuple["Node", ...]:
        return (self.child,)

    def _fields(self) -> tuple[Field, ...]:
        return tuple(Field(self.qualifier, n) for _, n in self.items)

    def with_children(self, children: Sequence["Node"]) -> "Node":
        return Project(children[0], self.items, self.qualifier)


@dataclass(frozen=True, eq=False)
class Rename(Node):
    """ρ (RestrRemap): restricts and renames columns, and sets the qualifier.
    ``mapping`` = ((input Field, new name), ...) in output order."""
    child: Node
    mapping: tuple[tuple[Field, str], ...]
    qualifier: Optional[str] = None

    @property
    def children(self) -> tuple["Node", ...]:
        return (self.child,)

    def _fields(self) -> tuple[Field, ...]:
        return tuple(Field(self.qualifier, new) for _, new in self.mapping)

    @property
    def renames(self) -> tuple[tuple[str, str], ...]:
        """(old name, new name) pairs that actually change a name (paper's a -> b)."""
        return tuple((f.name, new) for f, new in self.mapping if f.name != new)

    def is_identity(self) -> bool:
        """A pure re-qualification (FROM alias) that keeps every column and name."""
        return (not self.renames) and tuple(f for f, _ in self.mapping) == self.child.fields

    def with_children(self, children: Sequence["Node"]) -> "Node":
        return Rename(children[0], self.mapping, self.qualifier)


@dataclass(frozen=True, eq=False)
class Aggregate(Node):
    """γ: GROUP BY ``keys``; ``items`` = ((expression over keys and aggregate
    functions, name), ...). No keys and no aggregate functions never occurs;
    no keys means a global aggregate (exactly one output row)."""
    child: Node
    keys: tuple[exp.Expr, ...]
    items: tuple[tuple[exp.Expr, str], ...]
    qualifier: Optional[str] = None

    @property
    def children(self) -> tuple["Node", ...]:
        return (self.child,)

    def _fields(self) -> tuple[Field, ...]:
        return tuple(Field(self.qualifier, n) for _, n in self.items)

    def with_children(self, children: Sequence["Node"]) -> "Node":
        return Aggregate(children[0], self.keys, self.items, self.qualifier)


@dataclass(frozen=True, eq=False)
class GroupingAggregate(Node):
    """γ over grouping sets: ``GROUP BY`` with ROLLUP / CUBE / GROUPING SETS, carried as the
    clause the user wrote (``group``, an ``exp.Group`` whose columns resolve against the
    child's fields, like every node expression) so that generation emits exactly it.
    ``items`` may call ``grouping()`` / ``grouping_id()``. Only lowering and generation
    model it: provers, matchers and key analyses treat it as unknown (a key is NULL in
    a subtotal row, so no column is carried unchanged and the keys are no key); the plan
    below it is lowered like any other, so it can still be rewritten and shared."""
    child: Node
    group: exp.Group
    items: tuple[tuple[exp.Expr, str], ...]
    qualifier: Optional[str] = None

    @property
    def keys(self) -> tuple[exp.Expr, ...]:
        """The distinct grouping expressions, in the order written."""
        return grouping_keys(self.group)

    @property
    def children(self) -> tuple["Node", ...]:
        return (self.child,)

    def _fields(self) -> tuple[Field, ...]:
        return tuple(Field(self.qualifier, n) for _, n in self.items)

    def with_children(self, children: Sequence["Node"]) -> "Node":
        return GroupingAggregate(children[0], self.group, self.items, self.qualifier)


GROUPING_CONSTRUCTS = (exp.Rollup, exp.Cube, exp.GroupingSets)


def grouping_keys(group: exp.Group) -> tuple[exp.Expr, ...]:
    """Every distinct expression a GROUP BY clause groups by, through ROLLUP / CUBE /
    GROUPING SETS and their parenthesized sets, in the order written."""
    out: list[exp.Expr] = []

    def add(e: exp.Expr) -> None:
        if isinstance(e, GROUPING_CONSTRUCTS) or isinstance(e, exp.Tuple):
            for x in e.expressions:
                add(x)
        elif isinstance(e, exp.Paren):
            add(e.this)
        elif not any(e == o for o in out):
            out.append(e)

    for e in group.expressions:
        add(e)
    return tuple(out)


@dataclass(frozen=True, eq=False)
class Sort(Node):
    """ORDER BY; ``order`` holds sqlglot ``exp.Ordered`` items."""
    child: Node
    order: tuple[exp.Ordered, ...]

    @property
    def children(self) -> tuple["Node", ...]:
        return (self.child,)

    def _fields(self) -> tuple[Field, ...]:
        return self.child.fields

    def with_children(self, children: Sequence["Node"]) -> "Node":
        return Sort(children[0], self.order)


@dataclass(frozen=True, eq=False)
class Limit(Node):
    """LIMIT n [OFFSET m] (the paper's Top when over a Sort)."""
    child: Node
    limit: int
    offset: int = 0

    @property
    def children(self) -> tuple["Node", ...]:
        return (self.child,)

    def _fields(self) -> tuple[Field, ...]:
        return self.child.fields

    def with_children(self, children: Sequence["Node"]) -> "Node":
        return Limit(children[0], self.limit, self.offset)


@dataclass(frozen=True, eq=False)
class Window(Node):
    """Appends window-function columns: ``items`` = ((exp.Window, name), ...)."""
    child: Node
    items: tuple[tuple[exp.Expr, str], ...]
    qualifier: Optional[str] = None

    @property
    def children(self) -> tuple["Node", ...]:
        return (self.child,)

    def _fields(self) -> tuple[Field, ...]:
        return self.child.fields + tuple(Field(self.qualifier, n) for _, n in self.items)

    def with_children(self, children: Sequence["Node"]) -> "Node":
        return Window(children[0], self.items, self.qualifier)


# ---------------------------------------------------------------------------
# Multi-input
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Join(Node):
    """⋈: ``kind`` in JOIN_KINDS; ``equi`` = ((left expr, right expr), ...) conjuncts
    of the ON clause (``=`` only); ``residual`` the remaining ON conjuncts.
    Semi/anti output only the left fields."""
    left: Node
    right: Node
    kind: str
    equi: tuple[tuple[exp.Expr, exp.Expr], ...] = ()
    residual: Optional[exp.Expr] = None

    def __post_init__(self) -> None:
        if self.kind not in JOIN_KINDS:
            raise ValueError(f"unknown join kind {self.kind!r}")

    @property
    def children(self) -> tuple["Node", ...]:
        return (self.left, self.right)

    def _fields(self) -> tuple[Field, ...]:
        if self.kind in ("semi", "anti"):
            return self.left.fields
        return self.left.fields + self.right.fields

    @property
    def is_product(self) -> bool:
        """Pairs every left row with every right row: CROSS JOIN, a comma join, or an
        inner join without a condition / ON TRUE."""
        return self.kind == "cross" or (self.kind == "inner" and not self.equi
                                        and (self.residual is None or self.residual == exp.true()))

    def with_children(self, children: Sequence["Node"]) -> "Node":
        return Join(children[0], children[1], self.kind, self.equi, self.residual)


@dataclass(frozen=True, eq=False)
class UnionAll(Node):
    """∪ (bag union, n-ary). Output names are the first input's names;
    :func:`binary_unions` gives the left-deep binary form the paper uses."""
    inputs: tuple[Node, ...]
    qualifier: Optional[str] = None

    @property
    def children(self) -> tuple["Node", ...]:
        return self.inputs

    def _fields(self) -> tuple[Field, ...]:
        return tuple(Field(self.qualifier, f.name) for f in self.inputs[0].fields)

    def with_children(self, children: Sequence["Node"]) -> "Node":
        return UnionAll(tuple(children), self.qualifier)


def binary_unions(u: UnionAll) -> UnionAll:
    """Left-deep binary form: ∪(∪(a, b), c)."""
    acc = u.inputs[0]
    for nxt in u.inputs[1:-1]:
        acc = UnionAll((acc, nxt), None)
    return UnionAll((acc, u.inputs[-1]), u.qualifier) if len(u.inputs) > 1 else u


UNARY_OPTIONAL = (Select, Project, Rename)  # the paper's optional (edge) operators
CORE = (Aggregate, Join, UnionAll, Sort, Limit, Window, GroupingAggregate)


# ---------------------------------------------------------------------------
# Traversal, sharing
# ---------------------------------------------------------------------------
def walk(root: Node) -> Iterator[Node]:
    """Each distinct node (by identity) once, post-order (children first)."""
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in seen:
            continue
        if expanded:
            seen.add(id(node))
            yield node
            continue
        stack.append((node, True))
        for c in reversed(node.children):
            if id(c) not in seen:
                stack.append((c, False))


def parents(root: Node) -> dict[int, list[Node]]:
    """id(node) -> list of parent nodes (one entry per edge) within ``root``."""
    out: dict[int, list[Node]] = {id(root): []}
    for n in walk(root):
        for c in n.children:
            out.setdefault(id(c), []).append(n)
    return out


def shared_nodes(root: Node) -> list[Node]:
    """Nodes consumed by two or more parents (Spools), post-order."""
    ps = parents(root)
    return [n for n in walk(root) if len(ps.get(id(n), ())) >= 2]


def is_nondeterministic(node: Node) -> bool:
    """True if ``node`` itself (not its inputs) evaluates a nondeterministic expression."""
    if isinstance(node, Opaque):
        return nondeterministic_in_sql(node.sql)
    return any(is_nondeterministic_expr(e) for e in expressions_of(node))


def intern(root: Node) -> Node:
    """Rebuild ``root`` so that structurally identical sub-plans are one object.
    A sub-plan that evaluates something nondeterministic (rand(), uuid(), ...) is
    never merged with a look-alike: two rand() calls are two different values."""
    table: dict[Node, Node] = {}
    memo: dict[int, Node] = {}
    nondet: set[int] = set()
    for n in walk(root):
        kids = tuple(memo[id(c)] for c in n.children)
        new = n if all(a is b for a, b in zip(kids, n.children)) else n.with_children(kids)
        if is_nondeterministic(n) or any(id(k) in nondet for k in kids):
            nondet.add(id(new))
            memo[id(n)] = new
            continue
        canon = table.setdefault(new, new)
        memo[id(n)] = canon
    return memo[id(root)]


def replace(root: Node, mapping: dict[int, Node]) -> Node:
    """Rebuild ``root`` with nodes whose id() is in ``mapping`` replaced (sharing kept)."""
    memo: dict[int, Node] = {}
    for n in walk(root):
        if id(n) in mapping:
            memo[id(n)] = mapping[id(n)]
            continue
        kids = tuple(memo[id(c)] for c in n.children)
        memo[id(n)] = n if all(a is b for a, b in zip(kids, n.children)) else n.with_children(kids)
    return memo[id(root)]


def is_fully_modeled(root: Node) -> bool:
    return not any(isinstance(n, Opaque) for n in walk(root))


def expressions_of(node: Node) -> list[exp.Expr]:
    """Every sqlglot expression a node holds (for column-usage analysis)."""
    if isinstance(node, Select):
        return [node.predicate]
    if isinstance(node, (Project, Window)):
        return [e for e, _ in node.items]
    if isinstance(node, Aggregate):
        return list(node.keys) + [e for e, _ in node.items]
    if isinstance(node, GroupingAggregate):
        return [node.group] + [e for e, _ in node.items]
    if isinstance(node, Sort):
        return list(node.order)
    if isinstance(node, Join):
        out = [e for pair in node.equi for e in pair]
        return out + ([node.residual] if node.residual is not None else [])
    if isinstance(node, Rename):
        return [f.column() for f, _ in node.mapping]
    return []
