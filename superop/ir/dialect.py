"""The one SQL dialect superop reads and writes: Spark 4 SQL, literals as Spark reads them.

sqlglot's ``spark`` dialect differs from Spark 4's own parser on string literals:

* a doubled quote inside a literal (``'it''s'``; the same for ``"`` in a double-quoted
  literal) is one quote character in Spark 4; sqlglot reads two adjacent literals and
  writes ``CONCAT('it', 's')`` = ``its``;
* adjacent literals (``'a' 'b'``) are ONE literal in Spark (``'ab'``); sqlglot builds a
  ``CONCAT`` call (same value, but not the same expression: it is no longer a literal).

:class:`SuperopSpark` fixes both (a tokenizer that treats a doubled quote as an escape and a
parser that folds adjacent literals into one literal) and is registered with sqlglot under
the name :data:`DIALECT`. Every parse and every ``.sql()`` in superop goes through
:data:`DIALECT` (or :func:`parse_one` / :func:`to_sql_text`), so the text superop emits
means what the text it read meant. ``spark.sql.parser.escapedStringLiterals=true`` (no
backslash escapes at all) is a different language; :func:`check_session_dialect` refuses
it and callers pass the query through unchanged.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Optional

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.dialects.spark import Spark
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokenizer_core import TokenType

from ..errors import SqlError

#: The name under which :class:`SuperopSpark` is registered with sqlglot; pass it as
#: ``dialect=DIALECT`` to every sqlglot call.
DIALECT = "superopspark"

_STRING_TOKENS = (TokenType.STRING, TokenType.RAW_STRING)


class SuperopSpark(Spark):
    """Spark 4 SQL as Spark 4's parser reads it (see the module docstring)."""

    class Tokenizer(Spark.Tokenizer):
        # A quote character doubled inside a literal delimited by it is one quote
        # (Spark 4's lexer: '\'' ( ~('\''|'\\') | '\'\'' | '\\' . )* '\''). sqlglot's
        # scanner only treats a quote as an escape when it is followed by the same quote,
        # so '"' inside '...' and "'" inside "..." stay plain characters. Raw strings
        # (r'...') have no escapes at all: STRING_ESCAPES_ALLOWED_IN_RAW_STRINGS is False
        # in sqlglot's Spark tokenizer already.
        STRING_ESCAPES = ["\\", "'", '"']

    class Parser(SparkParser):
        def _adjacent_strings(self) -> bool:
            return (self._curr is not None and self._next is not None
                    and self._curr.token_type in _STRING_TOKENS
                    and self._next.token_type in _STRING_TOKENS)

        def _parse_atom(self) -> Optional[exp.Expr]:
            # sqlglot's fast path for one-token atoms; adjacent literals take the slow path
            if self._adjacent_strings():
                return None
            out: Optional[exp.Expr] = super()._parse_atom()
            return out

        def _parse_primary(self) -> Optional[exp.Expr]:
            # Adjacent string literals are ONE literal in Spark ('a' 'b' = 'ab'), raw or not.
            if self._adjacent_strings():
                parts: list[str] = []
                while self._curr is not None and self._curr.token_type in _STRING_TOKENS:
                    tok = self._curr
                    self._advance()
                    # a raw string's text is its value (no escapes were processed)
                    parts.append(tok.text)
                return exp.Literal.string("".join(parts))
            out: Optional[exp.Expr] = super()._parse_primary()
            return out


class SubqueryValue(exp.Expression):
    """An uncorrelated, deterministic sub-query of an expression held as its SQL text
    (``this``, parentheses included): one value (scalar) or one set (``x IN …``) per query.
    Its text is a string, not a tree, so nothing that walks an expression — renaming the
    row's columns into a program's namespaces, substituting them back — reaches the
    columns inside it; it renders as the text it was made from (:mod:`superop.ir.subqueries`).
    ``kind``: the Spark type of a scalar sub-query's value when the lowering could type it
    (its schema's columns through sqlglot's type annotation), else absent."""
    arg_types = {"this": True, "kind": False}


def _subquery_value_sql(self: Any, e: SubqueryValue) -> str:
    return str(e.this)


SuperopSpark.Generator.TRANSFORMS = {**SuperopSpark.Generator.TRANSFORMS, SubqueryValue: _subquery_value_sql}

assert Dialect.get(DIALECT) is SuperopSpark, "sqlglot registers dialects by class name"


@lru_cache(maxsize=None)
def dialect(case_sensitive: bool = False) -> Dialect:
    """The dialect instance, with identifier normalization as Spark resolves names:
    case-insensitive (Spark's default, ``spark.sql.caseSensitive=false``) lowercases
    identifiers during qualification; case-sensitive keeps them exactly."""
    strategy = "case_sensitive" if case_sensitive else "case_insensitive"
    return Dialect.get_or_raise(f"{DIALECT}, normalization_strategy = {strategy}")


def parse_one(sql: str) -> exp.Expr:
    """Parse one Spark SQL expression or statement (sqlglot errors propagate)."""
    return sqlglot.parse_one(sql, dialect=DIALECT)


def parse(sql: str) -> list[Optional[exp.Expr]]:
    return sqlglot.parse(sql, dialect=DIALECT)


def to_sql_text(e: exp.Expr, pretty: bool = False) -> str:
    """Spark SQL text of a sqlglot expression."""
    text: str = e.sql(dialect=DIALECT, pretty=pretty)
    return text


def check_session_dialect(spark: Any) -> None:
    """Raise SqlError when the session reads SQL in a way :data:`DIALECT` does not model."""
    conf = spark.conf.get("spark.sql.parser.escapedStringLiterals", "false")
    if str(conf).strip().lower() == "true":
        raise SqlError("spark.sql.parser.escapedStringLiterals=true is not supported "
                       "(string literals would be read differently); query passed through")


def pretty_sql(sql: str) -> str:
    """``sql`` re-printed one clause per line (superop's one dialect, superop.ir.dialect) for
    people to read. Only for display: what runs is the SQL as generated; unparsable text is
    returned as is."""
    try:
        trees = [t for t in parse(sql) if t is not None]
    except Exception:
        return sql
    if not trees:
        return sql
    return ";\n".join(to_sql_text(t, pretty=True) for t in trees)
