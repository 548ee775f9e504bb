"""Where lowering learns tables' columns and types: a schema source.

A :class:`SchemaSource` resolves a table name *as written* (``ops``, ``sales.ops``,
``cat.db.t``, quoted parts) to a :class:`TableInfo`: the columns with their Spark types and
the table's resolved **identity** — what Spark would read. Sharing uses the identity, so
``sales.ops`` and ``default.ops`` are never one node while ``ops`` and ``default.ops`` (with
``default`` current) are. A source also says whether names resolve case-sensitively
(``spark.sql.caseSensitive``); lowering never lowercases a name when they do.

* :class:`SparkCatalogSchema` asks a SparkSession, the way Spark resolves names: temp views
  shadow tables, then the current catalog and database.
* :class:`DictSchema` wraps the mapping form ``{"table": {"column": "type"}}``; keys may be
  qualified (``"sales.ops"``, ``"cat.db.t"``, back-quoted parts). A name matches the key
  with the same parts, else the one key it is a suffix of; a qualified name over a flat
  mapping (``sales.ops`` with only ``"ops"``) takes that entry's columns but keeps its own
  identity (it is not assumed to be the same table as ``ops``).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from ..errors import SchemaError
from ..explain import parse_tree, sections
from .dialect import check_session_dialect
from .functions import NONDETERMINISTIC
from .keys import KEYS_ENTRY, Declarations, DeclaredKey, check_columns, parse_keys
from .names import TableName
from .types import type_problem

Columns = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class TableInfo:
    """A resolved table: the name as written, what it resolved to, and its columns
    ((name, Spark type) in table order)."""
    name: TableName
    identity: tuple[str, ...]
    columns: Columns
    temporary: bool = False
    volatile: str = ""          # why two reads may give different rows ("" = they do not)
    keys: tuple[DeclaredKey, ...] = ()   # what the user declared (superop.ir.keys)


class SchemaSource:
    """Resolves table names for lowering (see the module docstring)."""

    case_sensitive: bool = False

    def resolve(self, name: TableName) -> Optional[TableInfo]:
        """The table ``name`` refers to, or None when there is no such table."""
        raise NotImplementedError

    def norm(self, name: str) -> str:
        """How Spark compares this identifier: as is, or case-insensitively."""
        return name if self.case_sensitive else name.lower()


def _key_parts(key: str) -> tuple[str, ...]:
    try:
        return TableName.parse(key).parts
    except ValueError:
        return (key,)             # a name that only makes sense as one (unquoted) part


class DictSchema(SchemaSource):
    """The mapping form ``{"table": {"column": "type"}}`` (see the module docstring)."""

    def __init__(self, mapping: Mapping[str, Mapping[str, str]], *, case_sensitive: bool = False,
                 current_database: Optional[str] = None):
        self.case_sensitive = case_sensitive
        self.current_database = current_database
        self._tables: dict[tuple[str, ...], Columns] = {}
        self._keys: dict[tuple[str, ...], tuple[DeclaredKey, ...]] = {}
        for key, cols in mapping.items():
            if key == KEYS_ENTRY:
                continue
            parts = tuple(self.norm(p) for p in _key_parts(str(key)))
            self._tables[parts] = tuple((self.norm(str(c)), str(t).lower()) for c, t in cols.items())
        for key, decls in parse_keys(mapping.get(KEYS_ENTRY)).items():
            self._keys[tuple(self.norm(p) for p in _key_parts(key))] = decls

    def resolve(self, name: TableName) -> Optional[TableInfo]:
        w = tuple(self.norm(p) for p in name.parts)
        hit: Optional[tuple[str, ...]] = w if w in self._tables else None
        if hit is None and self.current_database is not None and len(w) == 1:
            cur = (self.norm(self.current_database),) + w
            hit = next((k for k in self._tables if k[-2:] == cur), None)
        if hit is None:
            longer = [k for k in self._tables if len(k) > len(w) and k[-len(w):] == w]
            hit = longer[0] if len(longer) == 1 else None
        if hit is not None:
            return TableInfo(name, hit, self._tables[hit], keys=self._keys.get(hit, ()))
        if len(w) > 1 and w[-1:] in self._tables:
            # a flat mapping that does not know databases: same columns, own identity (and
            # no declared keys: it is not assumed to be the same table)
            return TableInfo(name, w, self._tables[w[-1:]])
        return None

    def tables(self) -> dict[tuple[str, ...], Columns]:
        return dict(self._tables)


class SparkCatalogSchema(SchemaSource):
    """Resolution by a SparkSession's catalog (works over Spark Connect too).
    ``on_table`` is called once per resolved table (e.g. to ANALYZE it)."""

    def __init__(self, spark: Any, on_table: Optional[Callable[[TableInfo], None]] = None,
                 keys: Optional[Declarations] = None):
        """``keys``: the declarations the caller vouches for (:mod:`superop.ir.keys`),
        table name as the user writes it -> its keys; the catalog's own constraints are
        not read."""
        check_session_dialect(spark)
        self.keys = {TableName.parse(t).normalized(False): ks for t, ks in (keys or {}).items()}
        self.spark = spark
        conf = str(spark.conf.get("spark.sql.caseSensitive", "false")).strip().lower()
        self.case_sensitive = conf == "true"
        self.on_table = on_table
        self._cache: dict[TableName, Optional[TableInfo]] = {}

    def resolve(self, name: TableName) -> Optional[TableInfo]:
        if name in self._cache:
            return self._cache[name]
        text = name.sql()
        try:
            t = self.spark.catalog.getTable(text)
            fields = self.spark.table(text).schema.fields
        except Exception:  # noqa: BLE001 - Spark says "not found" in several ways
            self._cache[name] = None
            return None
        volatile = ""
        if t.isTemporary or str(t.tableType or "").upper() == "VIEW":
            volatile = _view_volatility(self.spark.table(text))
        namespace = tuple(t.namespace or ())
        if t.isTemporary:
            identity = ("",) + namespace + (t.name,)        # "" = the session's temp views
        else:
            identity = (t.catalog or "",) + namespace + (t.name,)
        info = TableInfo(name, tuple(self.norm(p) for p in identity),
                         tuple((self.norm(f.name), f.dataType.simpleString()) for f in fields),
                         temporary=bool(t.isTemporary), volatile=volatile,
                         keys=self.keys.get(name.normalized(False), ()))
        self._cache[name] = info
        if self.on_table is not None:
            self.on_table(info)
        return info


_VOLATILE_NODES = {"GlobalLimit": "a LIMIT", "LocalLimit": "a LIMIT", "Tail": "a LIMIT",
                   "Offset": "an OFFSET", "Sample": "a TABLESAMPLE"}


def _view_volatility(df: Any) -> str:
    """Why two reads of a view may differ, from Spark's analyzed plan of its definition:
    a nondeterministic expression, a LIMIT or a TABLESAMPLE. "" when none is found (or
    the plan is not reachable, e.g. over Spark Connect)."""
    try:
        return plan_volatility(df._jdf.queryExecution().analyzed())
    except Exception:  # noqa: BLE001 - no JVM access (Spark Connect): read the plan's text
        return _view_volatility_text(df)


def plan_volatility(plan: Any) -> str:
    """Why two reads of a (JVM) logical plan may give different rows: a nondeterministic
    expression, a LIMIT or a TABLESAMPLE. "" when none is found."""
    if not plan.deterministic():
        return "its definition is nondeterministic"
    stack = [plan]
    while stack:
        n = stack.pop()
        what = _VOLATILE_NODES.get(n.getClass().getSimpleName())
        if what is not None:
            return f"its definition has {what}"
        kids = n.children()
        stack.extend(kids.apply(i) for i in range(kids.size()))
    return ""


def _view_volatility_text(df: Any) -> str:
    """:func:`_view_volatility` from the analyzed plan as ``EXPLAIN EXTENDED`` prints it
    (Spark Connect): a LIMIT/TABLESAMPLE operator or a call of one of Spark's
    nondeterministic functions. Conservative: the name followed by ``(`` anywhere in the
    text counts. "" when the text cannot be read."""
    try:
        text = sections(df._explain_string(extended=True)).get("Analyzed Logical Plan", "")
    except Exception:  # noqa: BLE001 - neither API: nothing known
        return ""
    root = parse_tree(text)
    for n in root.walk() if root is not None else ():
        what = _VOLATILE_NODES.get(n.name)
        if what is not None:
            return f"its definition has {what}"
    calls = set(re.findall(r"\b([a-z_][a-z0-9_]*)\(", text.lower()))
    if calls & NONDETERMINISTIC:
        return "its definition is nondeterministic"
    return ""


def schema_source(schema: object) -> SchemaSource:
    """A schema source for ``schema``: a source, a SparkSession or the mapping form."""
    if isinstance(schema, SchemaSource):
        return schema
    if hasattr(schema, "catalog") and hasattr(schema, "table"):      # a SparkSession
        return SparkCatalogSchema(schema)
    if isinstance(schema, Mapping):
        return DictSchema(normalize_schema(schema, keep_case=True))
    raise SchemaError(f"not a schema: {type(schema).__name__}")


def read_json_file(path: str | Path, what: str = "schema file") -> Any:
    """The parsed JSON of ``path``, or a one-line :class:`SchemaError` naming ``what``."""
    p = Path(path)
    if not p.is_file():
        raise SchemaError(f"{what} not found: {p}")
    try:
        return json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise SchemaError(f"{what} {p} is not valid JSON: {e.msg} (line {e.lineno})") from None


def load_schema(path: str | Path) -> dict[str, dict[str, str]]:
    return normalize_schema(read_json_file(path), str(path))


def normalize_schema(data: object, where: str = "schema",
                     keep_case: bool = False) -> dict[str, dict[str, str]]:
    """Validate the mapping form; names lowercased unless ``keep_case``."""
    if not isinstance(data, Mapping) or not all(isinstance(v, Mapping) for v in data.values()):
        raise SchemaError(f"{where}: expected {{\"table\": {{\"column\": \"type\"}}}}")
    out: dict[str, dict[str, str]] = {}
    for table, cols in data.items():
        if table == KEYS_ENTRY:
            continue
        k = str(table) if keep_case else str(table).lower()
        out[k] = {(str(c) if keep_case else str(c).lower()): str(t).lower() for c, t in cols.items()}
        for c, t in cols.items():
            why = type_problem(str(t)) if isinstance(t, str) else "not a type name"
            if why:
                raise SchemaError(f"{where}: column {table}.{c} has type {t!r}, which Spark does not "
                                  f"read as a type ({why})")
    decls = parse_keys(data.get(KEYS_ENTRY), where)
    if decls:
        low = (lambda x: x) if keep_case else str.lower
        decls = {low(t): tuple(DeclaredKey(tuple(map(low, k.columns)),
                                           None if k.determines is None else tuple(map(low, k.determines)))
                               for k in ks) for t, ks in decls.items()}
        check_columns(decls, {t: list(c) for t, c in out.items()}, where)
        out[KEYS_ENTRY] = {t: "; ".join(k.text() for k in ks) for t, ks in decls.items()}
    return out


def schema_from_spark(spark: Any, tables: list[str] | None = None) -> dict[str, dict[str, str]]:
    """Schema of the tables/views visible in a SparkSession's current catalog."""
    names = tables if tables is not None else [t.name for t in spark.catalog.listTables()]
    out: dict[str, dict[str, str]] = {}
    for name in names:
        st = spark.table(name).schema
        out[name.lower()] = {f.name.lower(): f.dataType.simpleString() for f in st.fields}
    return out


def load_schema_arg(path: Optional[str]) -> dict[str, Any]:
    """The schema of a command's ``--schema FILE`` argument ({} when not given)."""
    return load_schema(path) if path else {}


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
    p = Path(path)
    data = read_json_file(p, "keys file")
    if isinstance(data, Mapping) and data and all(isinstance(v, str) for v in data.values()):
        return parse_keys(data, str(p))                      # a bare "$keys" mapping
    decls = parse_keys(load_schema(p).get(KEYS_ENTRY), str(p))   # the schema file's own checks
    if not decls:
        raise SchemaError(f"keys file {p}: no {KEYS_ENTRY} entry (expected a schema file with "
                          f"one, or a mapping like {{\"customer\": \"c_customer_sk\"}})")
    return decls
