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
:class:`~superop.ir.nodes.Scan`; :func:`superop.ir.dependencies.dependencies` derives which
columns of a plan node determine which (through filters, projections, renames and the
preserved sides of joins), so a rule that needs a key premise matches only where the
declarations give it. Loading declarations from files: ``superop.ir.schema``.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from ..errors import SchemaError

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


def keys_fingerprint(decls: Declarations, schema: object = None) -> str:
    """A short, order-free fingerprint of the declarations in force ("" when none)."""
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
