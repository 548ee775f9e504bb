"""Small helpers shared by the sub-commands: reading SQL/schema arguments and
writing files atomically."""
from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from .errors import SuperopError


def add_sql_args(p) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--sql", help="the SQL text")
    g.add_argument("--sql-file", metavar="FILE", help="a file holding the SQL")
    add_schema_arg(p)


def add_schema_arg(p, default_note: str = "") -> None:
    p.add_argument("--schema", metavar="FILE",
                   help='JSON file of table column types: {"table": {"column": "type"}}'
                        + (f" ({default_note})" if default_note else ""))


def add_json_arg(p, what: str = "the result") -> None:
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON")


def add_spark_args(p) -> None:
    """--master / --conf for commands that start Spark (never overriding spark-submit,
    spark-defaults.conf or PYSPARK_SUBMIT_ARGS for what they are not given)."""
    p.add_argument("--master", metavar="URL",
                   help="Spark master (default: what spark-submit or spark-defaults.conf say, "
                        "else local[2])")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting, repeatable (e.g. spark.driver.memory=8g)")


def spark_conf(args) -> dict[str, str]:
    out = {}
    for kv in getattr(args, "conf", None) or []:
        if "=" not in kv:
            raise SuperopError(f"--conf needs KEY=VALUE, got {kv!r}")
        k, v = kv.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def timeout_s(v: str) -> float:
    """argparse type: a positive number of seconds."""
    import argparse
    try:
        x = float(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {v!r}") from None
    if x <= 0:
        raise argparse.ArgumentTypeError("a timeout must be > 0 seconds")
    return x


def seconds_as_ms(v: str) -> int:
    """argparse type: seconds on the command line, milliseconds inside."""
    return int(round(timeout_s(v) * 1000))


def deprecated(p, *flags: str, dest: str, use: str, type=None, action: str = "store") -> None:
    """Old spellings kept for one release: hidden from --help, warn on stderr when used."""
    import argparse
    import sys

    class _Warn(argparse.Action):
        def __call__(self, parser, ns, values, option_string=None):
            print(f"superop: {option_string} is deprecated; use {use}", file=sys.stderr)
            setattr(ns, self.dest, True if action == "store_true" else values)

    kw = {"nargs": 0} if action == "store_true" else {"type": type}
    p.add_argument(*flags, dest=dest, action=_Warn, help=argparse.SUPPRESS,
                   default=argparse.SUPPRESS, **kw)


def plain(doc: str) -> str:
    """A docstring as plain words for --help: no reStructuredText roles or literals."""
    import re
    doc = re.sub(r":\w+:`~?([^`]+)`", r"\1", doc)
    doc = re.sub(r"``([^`]+)``", r"\1", doc)
    return re.sub(r"`([^`]+)`", r"\1", doc)


class StageProgress:
    """One line per stage on stderr — also when stderr is not a terminal (a scheduled job's
    log) — with the stage's counts and elapsed time."""

    def __init__(self, prefix: str, enabled: bool = True):
        import time
        self.prefix, self.enabled, self.t0 = prefix, enabled, time.perf_counter()

    def line(self, msg: str, seconds: float | None = None) -> None:
        import sys
        import time
        if not self.enabled:
            return
        total = time.perf_counter() - self.t0
        took = f" ({seconds:.1f} s)" if seconds is not None else ""
        print(f"[{self.prefix} {total:6.1f}s] {msg}{took}", file=sys.stderr, flush=True)


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
    with atomic_writer(path) as f:
        f.write(data)


@contextmanager
def atomic_writer(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary file to stream into (e.g. a large generated log): written as a temp file in
    the same directory, renamed to ``path`` only when the block ends without an error (a
    failure leaves the old file in place), with the umask's mode (0644 under 022)."""
    from .storage import file_mode
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
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
    """``sql`` re-printed one clause per line (superop's one dialect, superop.ir.dialect) for
    people to read. Only for display: what runs is the SQL as generated; unparsable text is
    returned as is."""
    from .ir.dialect import parse, to_sql_text
    try:
        trees = [t for t in parse(sql) if t is not None]
    except Exception:
        return sql
    if not trees:
        return sql
    return ";\n".join(to_sql_text(t, pretty=True) for t in trees)
