"""Declared keys: the one home of key and functional-dependency premises.

A user may declare, per table, columns that determine others — like Spark's informational
(``RELY``) constraints, they are NOT checked against the data: the user vouches for them,
and a rewrite that relies on one is only as right as the declaration.

* a **key** ``(c1, c2)`` of table T: no two rows of T agree on it and none is NULL (a
  primary key, or a NOT NULL business key of a table that keeps no history); it
  determines every column of T;
* a **dependency** ``(c1) -> (d1, d2)`` (the form a derived table gets, e.g. the join of a
  fact table with a keyed dimension read as one table): rows that agree on ``c1``
  (NULL-safe) agree on ``d1, d2``.

Where declarations live — the schema mapping's reserved entry ``"$keys"`` (the same file
``--schema FILE`` reads; the runtime's ``SuperOpSession(keys=...)`` takes the same
mapping)::

    {"customer": {"c_customer_sk": "int", ...},
     "$keys": {"customer": "c_customer_sk; c_customer_id",
               "__source": "c_customer_id -> c_first_name, c_last_name"}}

Each value lists a table's declarations separated by ``;``: ``a, b`` is a key,
``a -> b, c`` a dependency. Lowering puts a table's declarations on its
:class:`~superop.ir.nodes.Scan`; :func:`dependencies` derives which columns of a plan node
determine which (through filters, projections, renames and the preserved sides of joins),
so a rule that needs a key premise matches only where the declarations give it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from ..errors import SchemaError

if TYPE_CHECKING:
    from .nodes import Node

KEYS_ENTRY = "$keys"


@dataclass(frozen=True)
class DeclaredKey:
    """``columns`` of a table determine ``determines`` (None: every column — a key:
    unique and NOT NULL)."""
    columns: tuple[str, ...]
    determines: Optional[tuple[str, ...]] = None

    @property
    def is_key(self) -> bool:
        return self.determines is None

    def text(self) -> str:
        cols = ", ".join(self.columns)
        return cols if self.determines is None else f"{cols} -> {', '.join(self.determines)}"

    @staticmethod
    def parse(text: str, where: str = "keys") -> "DeclaredKey":
        left, arrow, right = text.partition("->")
        cols = tuple(c.strip() for c in left.split(",") if c.strip())
        dets = tuple(c.strip() for c in right.split(",") if c.strip()) if arrow else None
        if not cols or (arrow and not dets):
            raise SchemaError(f"{where}: malformed key declaration {text!r} "
                              "(expected 'a, b' or 'a -> b, c')")
        return DeclaredKey(cols, dets)


Declarations = dict[str, tuple[DeclaredKey, ...]]


def parse_keys(entry: object, where: str = "schema") -> Declarations:
    """The ``"$keys"`` entry -> table name -> its declarations (names as written)."""
    if entry is None:
        return {}
    if not isinstance(entry, Mapping):
        raise SchemaError(f"{where}: {KEYS_ENTRY} must map table names to declarations")
    out: Declarations = {}
    for table, text in entry.items():
        if not isinstance(text, str):
            raise SchemaError(f"{where}: {KEYS_ENTRY}[{table!r}] must be a string like 'a; b, c; d -> e'")
        decls = tuple(DeclaredKey.parse(p, f"{where}: {KEYS_ENTRY}[{table!r}]")
                      for p in text.split(";") if p.strip())
        if decls:
            out[str(table)] = decls
    return out


def session_keys(keys: object) -> Declarations:
    """A runtime's declarations: the ``"$keys"`` mapping, or the path of a schema file
    (the ``--schema`` format) whose ``"$keys"`` entry holds them; None = none."""
    if keys is None:
        return {}
    if isinstance(keys, str):
        return load_keys_file(keys)
    return parse_keys(keys, "keys")


def load_keys_file(path: str) -> Declarations:
    """The declarations of a JSON file: a schema file (the ``--schema`` format, its
    columns checked against its ``"$keys"`` entry) or a bare ``"$keys"`` mapping
    (``{"customer": "c_customer_sk; c_customer_id"}``). A schema file without a
    ``"$keys"`` entry declares nothing and is refused (a wrong file must not silently
    turn every keyed rule off)."""
    from pathlib import Path

    from .schema import load_schema, read_json_file     # (schema imports this module)
    p = Path(path)
    data = read_json_file(p, "keys file")
    if isinstance(data, Mapping) and data and all(isinstance(v, str) for v in data.values()):
        return parse_keys(data, str(p))                      # a bare "$keys" mapping
    decls = parse_keys(load_schema(p).get(KEYS_ENTRY), str(p))   # the schema file's own checks
    if not decls:
        raise SchemaError(f"keys file {p}: no {KEYS_ENTRY} entry (expected a schema file with "
                          f"one, or a mapping like {{\"customer\": \"c_customer_sk\"}})")
    return decls


def keys_fingerprint(decls: Declarations, schema: object = None) -> str:
    """A short, order-free fingerprint of the declarations in force ("" when none)."""
    import hashlib
    entry = dict(keys_entry(decls))
    if isinstance(schema, Mapping) and isinstance(schema.get(KEYS_ENTRY), Mapping):
        entry.update({f"schema:{t}": str(v) for t, v in schema[KEYS_ENTRY].items()})
    if not entry:
        return ""
    text = "\n".join(f"{t}={v}" for t, v in sorted(entry.items()))
    return "|keys:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def keys_entry(decls: Mapping[str, Sequence[DeclaredKey]]) -> dict[str, str]:
    """The ``"$keys"`` entry of ``decls`` (inverse of :func:`parse_keys`)."""
    return {t: "; ".join(k.text() for k in ks) for t, ks in decls.items() if ks}


def tables_of(schema: Mapping[str, Mapping[str, str]]) -> dict[str, Mapping[str, str]]:
    """The schema mapping without its declarations: table -> columns."""
    return {t: cols for t, cols in schema.items() if t != KEYS_ENTRY}


def check_columns(decls: Declarations, columns: Mapping[str, Sequence[str]], where: str) -> None:
    """Every declared column must be a column of its table (a typo must not silently
    declare nothing)."""
    for table, ks in decls.items():
        cols = columns.get(table)
        if cols is None:
            raise SchemaError(f"{where}: {KEYS_ENTRY} declares keys of an unknown table {table!r}")
        have = {c.lower() for c in cols}
        for k in ks:
            bad = [c for c in k.columns + (k.determines or ()) if c.lower() not in have]
            if bad:
                raise SchemaError(f"{where}: {KEYS_ENTRY}[{table!r}] names unknown columns {bad}")


# ---------------------------------------------------------------------------
# functional dependencies of a plan node
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Dependency:
    """Rows of a node that agree (NULL-safe) on the output positions ``by`` agree on
    ``on``; ``origin`` is the declaration it comes from (``table: key``)."""
    by: frozenset[int]
    on: frozenset[int]
    origin: str


def dependencies(node: "Node") -> list[Dependency]:
    """The dependencies among ``node``'s output columns that its tables' declared keys
    give. Conservative: carried through filters, sorts, bare-column projections and
    renames, and the sides of joins whose rows are never NULL-padded (both sides of an
    inner/cross join, the preserved side of an outer join, the left of a semi/anti join);
    nothing through aggregates, windows, unions or computed columns."""
    from .nodes import Join, Limit, Project, Rename, Scan, Select, Sort
    if isinstance(node, Scan):
        names = [c.lower() for c, _ in node.columns]
        out = []
        for k in node.keys:
            try:
                by = frozenset(names.index(c.lower()) for c in k.columns)
                on = (frozenset(range(len(names))) if k.determines is None
                      else frozenset(names.index(c.lower()) for c in k.determines))
            except ValueError:
                continue
            out.append(Dependency(by, on, f"{node.table}: {k.text()}"))
        return out
    if isinstance(node, (Select, Sort, Limit)):
        return dependencies(node.children[0])
    if isinstance(node, (Project, Rename)):
        child = node.children[0]
        carried: dict[int, list[int]] = {}      # child position -> output positions
        for i in range(len(node.fields)):
            j = _carried_from(node, i)
            if j is not None:
                carried.setdefault(j, []).append(i)
        out = []
        for d in dependencies(child):
            if not all(j in carried for j in d.by):
                continue
            on = frozenset(i for j in d.on | d.by if j in carried for i in carried[j])
            out.append(Dependency(frozenset(carried[j][0] for j in d.by), on, d.origin))
        return out
    if isinstance(node, Join):
        nl = len(node.left.fields)
        left = dependencies(node.left) if node.kind in ("inner", "cross", "left", "semi", "anti") else []
        right = dependencies(node.right) if node.kind in ("inner", "cross", "right") else []
        return left + [Dependency(frozenset(i + nl for i in d.by), frozenset(i + nl for i in d.on), d.origin)
                       for d in right]
    return []


def _carried_from(node: "Node", i: int) -> Optional[int]:
    """The child position output ``i`` of a projection/rename carries unchanged."""
    from .nodes import Project, Rename, resolve_field
    from sqlglot import exp
    child = node.children[0]
    try:
        if isinstance(node, Rename):
            return resolve_field(child.fields, node.mapping[i][0].column())
        assert isinstance(node, Project)
        e = node.items[i][0]
        while isinstance(e, (exp.Paren, exp.Alias)):
            e = e.this
        return resolve_field(child.fields, e) if isinstance(e, exp.Column) else None
    except KeyError:
        return None


def closure(start: frozenset[int], deps: Sequence[Dependency]) -> tuple[frozenset[int], tuple[Dependency, ...]]:
    """The positions ``start`` determines, and the dependencies used to reach them."""
    have = set(start)
    used: list[Dependency] = []
    changed = True
    while changed:
        changed = False
        for d in deps:
            if d.by <= have and not d.on <= have:
                have |= d.on
                used.append(d)
                changed = True
    return frozenset(have), tuple(used)


# ---------------------------------------------------------------------------
# the premise a rewrite relies on
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Determines:
    """A premise on an input: rows that agree (NULL-safe) on ``by`` agree on
    ``determined`` (column names of the input). A match that needs it records it (with
    ``origins``, the declarations it was derived from — not part of what is proved); a
    program that relies on it lists it in ``Program.requires`` and the verifier proves
    the program for the inputs that satisfy it."""
    by: tuple[str, ...]
    determined: tuple[str, ...]
    origins: tuple[str, ...] = field(default=(), compare=False)

    def text(self) -> str:
        return f"{', '.join(self.by)} -> {', '.join(self.determined)}"

    def pretty(self) -> str:
        return f"requires {self.text()} (declared key)"

    def reads(self) -> tuple[str, ...]:
        return self.by + self.determined

    def to_json(self) -> dict[str, list[str]]:
        return {"by": list(self.by), "determined": list(self.determined)}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Determines":
        return Determines(tuple(d["by"]), tuple(d["determined"]))
