"""Small helpers shared by the sub-commands: reading SQL/schema arguments and
writing files atomically."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from .errors import SuperopError


def add_sql_args(p) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--sql", help="the SQL text")
    g.add_argument("--sql-file", help="a file holding the SQL")
    p.add_argument("--schema", help='JSON schema file {"table": {"column": "type"}}')


def read_sql(args) -> str:
    if getattr(args, "sql", None) is not None:
        return args.sql
    path = Path(args.sql_file)
    if not path.is_file():
        raise SuperopError(f"SQL file not found: {path}")
    return path.read_text()


def read_schema(args) -> dict:
    from .ir.schema import load_schema
    if getattr(args, "schema", None):
        return load_schema(args.schema)
    return {}


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write via a temp file in the same directory + rename: readers never see a
    partial file and a failed write leaves the old file in place."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path, obj) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Atomic like :func:`atomic_write_text`; the file gets the mode a plain ``open`` would
    give it under the umask (0644 under 022), not the temporary file's 0600."""
    from .storage import file_mode
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def pretty_sql(sql: str) -> str:
    """``sql`` re-printed one clause per line (sqlglot, Spark dialect) for people to read.
    Only for display: what runs is the SQL as generated; unparsable text is returned as is."""
    import sqlglot
    try:
        trees = [t for t in sqlglot.parse(sql, dialect=SQL_DIALECT) if t is not None]
    except Exception:
        return sql
    if not trees:
        return sql
    return ";\n".join(t.sql(dialect=SQL_DIALECT, pretty=True) for t in trees)


# The dialect of every SQL text superop reads and writes (the IR's lower/generate use it).
SQL_DIALECT = "spark"
