"""Reading a batch: a file of queries, a directory of ``.sql`` files, a log window.

Statements are split at top-level semicolons found by sqlglot's Spark tokenizer (a ``;``
inside a string or a comment does not split); each statement's text is kept exactly as
written (no re-rendering).
"""
from __future__ import annotations

from pathlib import Path

from ..errors import SuperopError
from .sharing_plan import BatchQuery


def split_statements(text: str) -> list[str]:
    from sqlglot.dialects.spark import Spark
    from sqlglot.errors import SqlglotError
    from sqlglot.tokens import TokenType
    try:
        cuts = [t.start for t in Spark().tokenize(text) if t.token_type == TokenType.SEMICOLON]
    except SqlglotError as e:
        raise SuperopError(f"cannot tokenize SQL: {str(e).splitlines()[0]}") from None
    out, prev = [], 0
    for c in cuts + [len(text)]:
        s = text[prev:c].strip()
        if s and any(line.strip() and not line.strip().startswith("--") for line in s.splitlines()):
            out.append(s)
        prev = c + 1
    return out


def read_sql_file(path: str | Path) -> list[BatchQuery]:
    p = Path(path)
    if not p.is_file():
        raise SuperopError(f"SQL file not found: {p}")
    stmts = split_statements(p.read_text())
    if not stmts:
        raise SuperopError(f"no SQL statement in {p}")
    return [BatchQuery(f"{p.stem}#{i + 1}" if len(stmts) > 1 else p.stem, s) for i, s in enumerate(stmts)]


def read_sql_dir(path: str | Path) -> list[BatchQuery]:
    """Every ``*.sql`` file of the directory (sorted by name; q2 before q10)."""
    p = Path(path)
    if not p.is_dir():
        raise SuperopError(f"SQL directory not found: {p}")
    files = sorted(p.glob("*.sql"), key=lambda f: _natural(f.stem))
    if not files:
        raise SuperopError(f"no .sql files in {p}")
    out = []
    for f in files:
        out += read_sql_file(f)
    return out


def _natural(s: str):
    import re
    return [int(x) if x.isdigit() else x.lower() for x in re.split(r"(\d+)", s)]


def register_tables_dir(spark, path: str | Path) -> list[str]:
    """Register every ``<name>.parquet`` file or ``<name>/`` parquet directory under
    ``path`` as the temp view ``<name>``. Returns the names."""
    p = Path(path)
    if not p.is_dir():
        raise SuperopError(f"tables directory not found: {p}")
    names = []
    for f in sorted(p.iterdir()):
        name = f.name[:-len(".parquet")] if f.name.endswith(".parquet") else f.name
        if f.name.startswith((".", "_")) or not (f.name.endswith(".parquet") or f.is_dir()):
            continue
        spark.read.parquet(str(f)).createOrReplaceTempView(name)
        names.append(name)
    if not names:
        raise SuperopError(f"no parquet tables under {p}")
    return names
