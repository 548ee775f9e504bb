"""Small helpers shared by the sub-commands: argument definitions and parsing, reading
the SQL argument."""
from __future__ import annotations

from pathlib import Path

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


def read_sql(args) -> str:
    if getattr(args, "sql", None) is not None:
        return args.sql
    path = Path(args.sql_file)
    if not path.is_file():
        raise SuperopError(f"SQL file not found: {path}")
    return path.read_text()
