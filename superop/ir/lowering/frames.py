"""DataFrame plans -> the plan IR: what the two front ends share.

A DataFrame has no SQL text: its plan is Catalyst's analyzed logical plan on a classic
session (:mod:`.catalyst`) or a protobuf ``Relation`` on a Spark Connect client
(:mod:`.connect`). Both front ends resolve every column to an **attribute** (Catalyst's
expression id; the Connect front end numbers attributes the same way) and build IR nodes
here, so column identity never depends on names: duplicate names after a join, a column
renamed twice or referenced through another DataFrame resolve exactly.

Leaves. What the IR reads as a table is a **leaf**: a catalog table or view, a file read
by path, local data, a cached or checkpointed plan, a range. Each becomes a ``Scan`` whose
*name* is a placeholder (``__so_leaf_<token>_<n>``) and whose *identity* says what it
reads (the table's resolved name; for data without a name, what Spark says identifies
it) — so two uses of one leaf share one ``Scan``, as two reads of one table do in SQL.
Generated SQL reads the placeholder, which the runtime binds to the original leaf
DataFrame (``spark.sql(text, **{placeholder: leaf})``): the rewritten plan reads exactly
the data the original reads. A sub-plan the IR does not model (an operator or expression
it has no node for, a UDF, an RDD of unknown lineage) becomes an ``Opaque`` leaf bound the
same way: it is carried through untouched and blocks any match that would have to look
inside it — never guessed.

Everything here is pure: plans in, IR out; the caller (``superop.runtime``) asks Spark
for what only Spark knows (:class:`LeafFacts`) through a callback.
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from sqlglot import exp

from ..dialect import parse_one
from ..generate import translate_columns
from ..nodes import (Aggregate, Field, Join, Node, Opaque, Project, Rename, Scan, Window, intern,
                     is_nondeterministic)

Path = tuple[int, ...]
Env = dict[int, Field]


class Unsure(Exception):
    """A construct the IR does not model: the smallest enclosing sub-plan that can be
    bound as it is becomes an Opaque leaf with this reason."""


@dataclass(frozen=True)
class LeafFacts:
    """What the caller knows about a leaf sub-plan from Spark itself.

    ``key``: Spark's semantic identity of what the leaf reads (equal keys = the same
    rows; e.g. the canonicalized plan's hash); ``table``: the name the IR gives an unnamed
    leaf (a path read: ``(format, path)``, as the event-log lowering names it);
    ``volatile``: why two reads may give different rows ("" = they do not); ``output``:
    (name, type, attribute) of a sub-plan's columns, where the plan does not list them."""
    key: str = ""
    table: tuple[str, ...] = ()
    volatile: str = ""
    output: tuple[tuple[str, str, int], ...] = ()


FactsOf = Callable[[Path, str], LeafFacts]


def no_facts(path: Path, kind: str) -> LeafFacts:
    return LeafFacts()


@dataclass(frozen=True)
class Leaf:
    """One bound input of a lowered DataFrame plan: ``placeholder`` is the table name the
    generated SQL reads, ``path`` where the leaf sits in the source plan (child indices
    from the root), ``kind`` what it is (table, view, path, local, cached, checkpoint,
    range, sql, opaque), ``identity`` what it reads."""
    placeholder: str
    path: Path
    kind: str
    identity: tuple[str, ...]
    columns: tuple[tuple[str, str], ...]
    reason: str = ""


@dataclass
class FrameLowered:
    """A DataFrame plan as IR: the plan, its leaves (to bind), its output names in order
    (duplicates allowed, as a DataFrame may have them) and what became Opaque, why."""
    plan: Node
    leaves: tuple[Leaf, ...]
    names: tuple[str, ...]
    reasons: list[str] = field(default_factory=list)

    @property
    def fully_lowered(self) -> bool:
        return not self.reasons


@dataclass
class Built:
    """A lowered sub-plan: its node and, in output order, the attribute of every column
    (``env`` maps each attribute to the node's output field)."""
    node: Node
    attrs: tuple[int, ...]
    env: Env

    def field_of(self, attr: int) -> Field:
        f = self.env.get(attr)
        if f is None:
            raise Unsure(f"attribute #{attr} is not an input of the operator")
        return f


_SAFE_NAME = re.compile(r"[^A-Za-z0-9_]")


class FrameBuilder:
    """Builds IR nodes for a front end: leaves, unique output names, join sides that
    cannot be confused, and sharing (equal sub-plans are one object as soon as they are
    built, nondeterministic ones never)."""

    def __init__(self, token: str = ""):
        self.prefix = f"__so_leaf_{token or uuid.uuid4().hex[:8]}_"
        self.leaves: list[Leaf] = []
        self.reasons: list[str] = []
        self._keys: dict[tuple[tuple[str, ...], tuple[tuple[str, str], ...]], str] = {}
        self._table: dict[Node, Node] = {}
        self._nondet: set[int] = set()
        self._quals: dict[tuple[object, ...], str] = {}

    # -- sharing ----------------------------------------------------------------------
    def share(self, node: Node) -> Node:
        """``node``, or the structurally equal node built before (never for a sub-plan
        that evaluates something nondeterministic: two rand() calls are two values)."""
        if is_nondeterministic(node) or any(id(c) in self._nondet for c in node.children):
            self._nondet.add(id(node))
            return node
        return self._table.setdefault(node, node)

    # -- leaves -----------------------------------------------------------------------
    def _placeholder(self) -> str:
        return f"{self.prefix}{len(self.leaves)}"

    def table_leaf(self, path: Path, kind: str, identity: tuple[str, ...], name: str,
                   columns: Sequence[tuple[str, str, int]], facts: LeafFacts) -> Built:
        """A leaf read as a table: ``columns`` = (name, Spark type, attribute)."""
        names = [c for c, _, _ in columns]
        if not columns or len({n.lower() for n in names}) != len(names):
            raise Unsure("a leaf without columns or with duplicate column names")
        cols = tuple((c, t) for c, t, _ in columns)
        identity = tuple(identity)
        # one identity, one set of rows: a second leaf under the same name that Spark
        # says reads something else (a replaced view captured earlier) is another table
        seen = self._keys.setdefault((identity, cols), facts.key)
        if facts.key and seen and seen != facts.key:
            identity = identity + (f"#{facts.key}",)
            self._keys.setdefault((identity, cols), facts.key)
        ph = self._placeholder()
        qual = _SAFE_NAME.sub("_", name).lower() or "t"
        if qual.startswith(self.prefix.lower()):
            qual = "t"
        scan = Scan(ph, cols, identity=identity, qualifier=qual, volatile=facts.volatile)
        self.leaves.append(Leaf(ph, path, kind, identity, cols))
        node = self.share(scan)
        q = node.fields[0].qualifier if node.fields else qual
        return Built(node, tuple(a for _, _, a in columns),
                     {a: Field(q, c) for c, _, a in columns})

    def opaque_leaf(self, path: Path, columns: Sequence[tuple[str, str, int]], why: str) -> Built:
        """A sub-plan the IR does not model, bound as it is: Opaque, so that a match
        cannot look through it."""
        names = [c for c, _, _ in columns]
        if not columns or len({n.lower() for n in names}) != len(names):
            raise Unsure(f"{why} (and its output has duplicate or no column names)")
        ph = self._placeholder()
        cols = tuple((c, t) for c, t, _ in columns)
        self.leaves.append(Leaf(ph, path, "opaque", (ph,), cols, why))
        self.reasons.append(why)
        node = Opaque(f"SELECT * FROM {ph}", tuple(names), f"dataframe: {why}")
        return Built(node, tuple(a for _, _, a in columns), {a: Field(None, c) for c, _, a in columns})

    # -- operators --------------------------------------------------------------------
    def project(self, child: Built, items: Sequence[tuple[exp.Expr, str, int]]) -> Built:
        """π with (expression over ``child``'s fields, name, attribute) items. A
        re-selection of every column in order is no operator at all; a selection of
        bare columns is a ρ (as a query's derived table lowers); a selection of bare
        columns over a deterministic π is one π (as Catalyst's CollapseProject would)."""
        cols = [_field_of(e) for e, _, _ in items]
        if all(c is not None for c in cols) and len({a for _, _, a in items}) == len(items):
            fields = [c for c in cols if c is not None]
            if [a for _, _, a in items] == list(child.attrs) and \
                    [n for _, n, _ in items] == [f.name for f in fields] == [f.name for f in child.node.fields]:
                return child
            if isinstance(child.node, Project) and not is_nondeterministic(child.node):
                inner = child.node
                items = [(translate_columns(e, inner.fields, [x for x, _ in inner.items]), n, a)
                         for e, n, a in items]
                return self._project(inner.child, items)
            named = self.unique(items)
            node = self.share(Rename(child.node, tuple((f, nm) for f, (_, nm, _) in zip(fields, named))))
            return Built(node, tuple(a for _, _, a in named), {a: Field(None, nm) for _, nm, a in named})
        return self._project(child.node, items)

    def _project(self, child: Node, items: Sequence[tuple[exp.Expr, str, int]]) -> Built:
        named = self.unique(items)
        node = self.share(Project(child, tuple((e, n) for e, n, _ in named)))
        return Built(node, tuple(a for _, _, a in named), {a: Field(None, n) for _, n, a in named})

    def window(self, child: Built, items: Sequence[tuple[exp.Expr, str, int]]) -> Built:
        """ω: ``child``'s columns and one column per window expression."""
        named = self.unique(items, [f.name for f in child.node.fields])
        node = self.share(Window(child.node, tuple((e, n) for e, n, _ in named)))
        env = dict(child.env)
        env.update({a: Field(None, n) for _, n, a in named})
        return Built(node, child.attrs + tuple(a for _, _, a in named), env)

    def aggregate(self, child: Built, keys: Sequence[exp.Expr], items: Sequence[tuple[exp.Expr, str, int]]) -> Built:
        named = self.unique(items)
        node = self.share(Aggregate(child.node, tuple(keys), tuple((e, n) for e, n, _ in named)))
        return Built(node, tuple(a for _, _, a in named), {a: Field(None, n) for _, n, a in named})

    @staticmethod
    def unique(items: Sequence[tuple[exp.Expr, str, int]], taken: Sequence[str] = ()
               ) -> list[tuple[exp.Expr, str, int]]:
        """Output names unique within a node (Spark allows duplicates; the IR resolves
        columns by name): a repeated name gets a suffix, the attribute keeps identity."""
        names = unique_names([n for _, n, _ in items], taken)
        return [(e, nm, a) for (e, _, a), nm in zip(items, names)]

    def side(self, b: Built, other: Built, which: str) -> Built:
        """A join input whose fields cannot be confused with ``other``'s: re-qualified
        (an identity Rename, like a FROM alias) unless its qualifiers are already its own."""
        mine = {f.qualifier for f in b.node.fields}
        theirs = {f.qualifier for f in other.node.fields}
        pairs = [(f.qualifier, f.name.lower()) for f in b.node.fields]
        if None not in mine and not (mine & theirs) and len(set(pairs)) == len(pairs):
            return b
        q = self._qualifier(b.node, which, theirs)
        fields = b.node.fields
        names = [f.name for f in fields]
        new_names = unique_names(names)
        node = self.share(Rename(b.node, tuple(zip(fields, new_names)), q))
        pos = {f: i for i, f in enumerate(fields)}
        env = {a: Field(q, new_names[pos[f]]) for a, f in b.env.items() if f in pos}
        return Built(node, b.attrs, env)

    def _qualifier(self, node: Node, which: str, avoid: set[Optional[str]]) -> str:
        """A qualifier for ``node`` as a ``which`` join side that the other side does not
        carry: the same for the same node in the same context (so that repeated sub-plans
        stay equal and are shared), another where the other side already has it (the
        same view joined three times)."""
        key: tuple[object, ...] = (id(node), which)
        if self._quals.get(key) in avoid:
            key = (id(node), which, tuple(sorted(q or "" for q in avoid)))
        if key not in self._quals:
            taken = set(self._quals.values())
            k = len(self._quals) + 1
            while f"{which}{k}" in taken or f"{which}{k}" in avoid:
                k += 1
            self._quals[key] = f"{which}{k}"
        return self._quals[key]

    def join(self, left: Built, right: Built, kind: str,
             cond: Callable[[Env], Optional[exp.Expr]]) -> Built:
        """⋈ of two sides; ``cond(env)`` builds the ON condition over both sides' fields
        (``=`` conjuncts relating one side to the other become equi keys)."""
        left = self.side(left, right, "l")
        right = self.side(right, left, "r")
        env = {**left.env, **right.env}
        on = cond(env)
        equi, residual = split_equi(on, left.node.fields, right.node.fields)
        if kind == "cross" and (equi or residual is not None):
            kind = "inner"
        node = self.share(Join(left.node, right.node, kind, tuple(equi), residual))
        if kind in ("semi", "anti"):
            return Built(node, left.attrs, left.env)
        return Built(node, left.attrs + right.attrs, env)

    def finish(self, root: Built, names: Sequence[str]) -> FrameLowered:
        return FrameLowered(intern(root.node), tuple(self.leaves), tuple(names), self.reasons)


def _field_of(e: exp.Expr) -> Optional[Field]:
    if not isinstance(e, exp.Column):
        return None
    t = e.args.get("table")
    return Field(str(t.name) if t is not None else None, e.name)


def unique_names(names: Sequence[str], taken: Sequence[str] = ()) -> list[str]:
    """``names`` with repeats (case-insensitive, also against ``taken``) suffixed."""
    seen = {t.lower() for t in taken}
    out = []
    for n in names:
        name, k = n, 1
        while name.lower() in seen:
            k += 1
            name = f"{n}__so{k}"
        seen.add(name.lower())
        out.append(name)
    return out


def split_equi(on: Optional[exp.Expr], lf: tuple[Field, ...], rf: tuple[Field, ...]
               ) -> tuple[list[tuple[exp.Expr, exp.Expr]], Optional[exp.Expr]]:
    """ON conjuncts ``l = r`` with one side over the left fields only and the other over
    the right fields only -> equi pairs (left first); the rest -> one residual."""
    if on is None:
        return [], None
    conj = list(on.flatten()) if isinstance(on, exp.And) else [on]
    equi: list[tuple[exp.Expr, exp.Expr]] = []
    rest: list[exp.Expr] = []
    for c in conj:
        if isinstance(c, exp.Paren):
            c = c.this
        if isinstance(c, exp.EQ):
            a, b = c.this, c.expression
            sa, sb = _side_of(a, lf, rf), _side_of(b, lf, rf)
            if sa == "L" and sb == "R":
                equi.append((a, b))
                continue
            if sa == "R" and sb == "L":
                equi.append((b, a))
                continue
        rest.append(c)
    residual: Optional[exp.Expr] = None
    for r in rest:
        residual = r if residual is None else exp.and_(residual, r, copy=False)
    return equi, residual


def _side_of(e: exp.Expr, lf: tuple[Field, ...], rf: tuple[Field, ...]) -> Optional[str]:
    cols = list(e.find_all(exp.Column))
    if not cols:
        return None
    sides = set()
    for c in cols:
        key = Field(c.table or None, c.name)
        sides.add("L" if key in lf else "R" if key in rf else "?")
    return sides.pop() if len(sides) == 1 and "?" not in sides else None


# ---------------------------------------------------------------------------
# expressions both front ends build
# ---------------------------------------------------------------------------
_HOLE = re.compile(r"^__so_h(\d+)$")


def call(name: str, args: Sequence[exp.Expr], distinct: bool = False) -> exp.Expr:
    """``name(args...)`` as sqlglot parses that Spark SQL call (the same typed node a
    query's lowering gets, e.g. ``Count``, ``Rank``)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise Unsure(f"function name {name!r}")
    holes = ", ".join(f"__so_h{i}" for i in range(len(args)))
    text = f"{name}({'DISTINCT ' if distinct else ''}{holes})"
    try:
        tree = parse_one(text)
    except Exception:
        raise Unsure(f"function {name}") from None
    return fill_holes(tree, args)


def fill_holes(tree: exp.Expr, args: Sequence[exp.Expr]) -> exp.Expr:
    """Replace the ``__so_h<i>`` placeholder columns of ``tree`` by ``args[i]``."""
    def fill(n: exp.Expr) -> exp.Expr:
        if isinstance(n, exp.Column) and not n.table:
            m = _HOLE.match(n.name)
            if m:
                return args[int(m.group(1))].copy()
        return n
    return tree.transform(fill)


def paren(e: exp.Expr) -> exp.Expr:
    """``e`` as an operand: parenthesized unless it is atomic (a column, literal, call...)."""
    if isinstance(e, (exp.Column, exp.Literal, exp.Paren, exp.Func, exp.Null, exp.Boolean, exp.Cast,
                      exp.Case, exp.Window, exp.Star)):
        return e
    return exp.Paren(this=e)


def null_test(e: exp.Expr, negated: bool = False) -> exp.Expr:
    """Spark's ``isnull(e)`` / ``isnotnull(e)`` as SQL's ``e IS NULL`` / ``NOT e IS NULL``:
    the form every stage (the encoder, the synthesizer's evaluator) models."""
    test = exp.Is(this=paren(e), expression=exp.null())
    return exp.Not(this=test) if negated else test


def count_star(e: exp.Expr) -> exp.Expr:
    """``e`` with every ``count(<non-NULL literal>)`` as ``count(*)``: the same aggregate
    (Spark's analyzer writes ``count(*)`` as ``count(1)``), in the form a query writes it,
    so a DataFrame's count and a query's fold the same way."""
    def fix(n: exp.Expr) -> exp.Expr:
        if isinstance(n, exp.Count) and isinstance(n.this, (exp.Literal, exp.Boolean)) \
                and not n.args.get("expressions"):
            return exp.Count(this=exp.Star(), big_int=True)
        return n
    return e.transform(fix)


SPARK_TYPES = {"integer": "INT", "int": "INT", "long": "BIGINT", "bigint": "BIGINT",
               "short": "SMALLINT", "smallint": "SMALLINT", "byte": "TINYINT", "tinyint": "TINYINT",
               "float": "FLOAT", "double": "DOUBLE", "string": "STRING", "boolean": "BOOLEAN",
               "date": "DATE", "timestamp": "TIMESTAMP", "timestamp_ntz": "TIMESTAMP_NTZ",
               "binary": "BINARY", "void": "VOID"}
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$")


def simple_type(t: object) -> str:
    """Spark's ``simpleString`` of a type as a plan serializes it (``integer``,
    ``decimal(10,2)``); Unsure for nested types."""
    if not isinstance(t, str):
        raise Unsure("a nested type")
    s = t.strip().lower()
    if s in SPARK_TYPES:
        return {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}.get(s, s)
    m = _DECIMAL.match(s)
    if m:
        return f"decimal({m.group(1)},{m.group(2)})"
    if s.startswith(("char(", "varchar(")):
        return s
    raise Unsure(f"type {t}")


def sql_type(t: object) -> exp.DataType:
    s = simple_type(t)
    return exp.DataType.build(SPARK_TYPES.get(s, s).upper())


def literal(value: Optional[str], t: object) -> exp.Expr:
    """A Spark literal of type ``t`` whose text is ``value`` (None = NULL) with exactly
    that type: a bare number only where Spark reads it as that type (``int``, a decimal
    written with its scale), else a CAST."""
    s = simple_type(t)
    if value is None:
        return exp.null() if s == "void" else exp.Cast(this=exp.null(), to=sql_type(s))
    if s == "string":
        return exp.Literal.string(value)
    if s == "boolean":
        if value.lower() not in ("true", "false"):
            raise Unsure(f"boolean literal {value!r}")
        return exp.Boolean(this=value.lower() == "true")
    if s in ("int", "bigint", "smallint", "tinyint"):
        if not re.fullmatch(r"-?\d+", value):
            raise Unsure(f"integer literal {value!r}")
        num = exp.Literal.number(value.lstrip("-"))
        lit: exp.Expr = exp.Neg(this=num) if value.startswith("-") else num
        if s == "int" and -2**31 <= int(value) < 2**31:
            return lit if not value.startswith("-") else exp.Paren(this=lit)
        return exp.Cast(this=lit, to=sql_type(s))
    if s in ("double", "float"):
        if re.fullmatch(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", value):
            return exp.Cast(this=exp.Literal.number(value), to=sql_type(s))
        if value in ("NaN", "Infinity", "-Infinity"):
            return exp.Cast(this=exp.Literal.string(value), to=sql_type(s))
        raise Unsure(f"{s} literal {value!r}")
    if s.startswith("decimal("):
        if not re.fullmatch(r"-?\d+(\.\d+)?", value):
            raise Unsure(f"decimal literal {value!r}")
        return exp.Cast(this=exp.Literal.number(value), to=sql_type(s))
    if s == "date" and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return exp.Cast(this=exp.Literal.string(value), to=sql_type("date"))
    raise Unsure(f"a {s} literal")

