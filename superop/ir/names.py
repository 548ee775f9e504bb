"""Identifiers and table names as Spark SQL text: one home for quoting.

:class:`TableName` is a table reference exactly as the user wrote it — one to three parts
(``t``, ``db.t``, ``catalog.db.t``), each with its case and whether it was back-quoted —
so that what superop writes back names the same table Spark resolved.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from sqlglot import exp

from .dialect import DIALECT, parse_one

_SAFE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Spark keywords that must be quoted as identifiers (ANSI reserved words and words
# sqlglot reads as keywords); quoting more than needed is harmless.
RESERVED = frozenset({
    "select", "from", "where", "group", "order", "by", "limit", "join", "on", "as", "and", "or",
    "not", "union", "all", "table", "case", "when", "then", "else", "end", "null", "true",
    "false", "in", "is", "left", "right", "full", "inner", "outer", "cross", "semi", "anti",
    "having", "distinct", "with", "date", "interval", "timestamp", "values", "using", "natural",
    "over", "partition", "window", "user", "current_date", "current_timestamp", "both",
    "leading", "trailing", "to", "of", "into", "array", "map", "struct", "exists", "between",
    "like", "rlike", "position", "cast", "primary", "foreign", "references", "check",
    "constraint", "unique", "create", "drop", "alter", "grant", "fetch", "offset",
    "time", "except", "intersect", "minus", "lateral", "any", "some", "only", "escape",
    "collate", "current_user", "session_user", "current_time", "tablesample", "qualify",
    "filter", "pivot", "unpivot", "rollup", "cube", "grouping", "sets", "for", "if", "ilike",
})


def needs_quotes(name: str) -> bool:
    return not _SAFE.match(name) or name.lower() in RESERVED


def ident(name: str, quoted: bool = False) -> exp.Identifier:
    """An identifier, back-quoted when written so or when Spark would not read it bare."""
    return exp.to_identifier(name, quoted=quoted or needs_quotes(name))


@dataclass(frozen=True)
class TableName:
    """A table reference as written: ``parts`` (catalog, database, table; 1-3 of them, case
    kept) and ``quoted`` (was each part back-quoted)."""
    parts: tuple[str, ...]
    quoted: tuple[bool, ...]

    def __post_init__(self) -> None:
        if not 1 <= len(self.parts) <= 3 or len(self.quoted) != len(self.parts):
            raise ValueError(f"a table name has 1 to 3 parts, got {self.parts!r}")

    @property
    def name(self) -> str:
        """The last part: the table's own name (Spark's implicit alias)."""
        return self.parts[-1]

    @classmethod
    def of(cls, *parts: str) -> "TableName":
        return cls(tuple(parts), tuple(False for _ in parts))

    @classmethod
    def from_table(cls, t: exp.Table) -> "TableName":
        ids = [t.args.get(k) for k in ("catalog", "db", "this")]
        if not isinstance(ids[2], exp.Identifier) or any(
                i is not None and not isinstance(i, exp.Identifier) for i in ids[:2]):
            raise ValueError(f"not a plain table name: {t.sql(dialect=DIALECT)}")
        got = [i for i in ids if isinstance(i, exp.Identifier)]
        return cls(tuple(str(i.this) for i in got), tuple(bool(i.args.get("quoted")) for i in got))

    @classmethod
    def parse(cls, text: str) -> "TableName":
        """``sales.ops``, ``\\`my db\\`.\\`t 1\\```, ``cat.db.t``."""
        try:
            node = parse_one(f"SELECT 1 FROM {text}")
            frm = node.args.get("from_") or node.args.get("from")
            t = frm.this if frm is not None else None
        except Exception:  # noqa: BLE001 - any parse failure means "not a table name"
            t = None
        if not isinstance(t, exp.Table) or t.args.get("alias") is not None or len(t.args) > 4:
            raise ValueError(f"not a table name: {text!r}")
        return cls.from_table(t)

    def to_table(self, alias: Optional[str] = None) -> exp.Table:
        ids = [ident(p, q) for p, q in zip(self.parts, self.quoted)]
        keys = ("catalog", "db", "this")[3 - len(ids):]
        t = exp.Table(**dict(zip(keys, ids)))
        if alias is not None:
            t.set("alias", exp.TableAlias(this=ident(alias)))
        return t

    def sql(self) -> str:
        """Spark SQL text naming this table (quotes kept where written or needed)."""
        text: str = self.to_table().sql(dialect=DIALECT)
        return text

    def normalized(self, case_sensitive: bool = False) -> tuple[str, ...]:
        return self.parts if case_sensitive else tuple(p.lower() for p in self.parts)

    def __str__(self) -> str:
        return self.sql()
