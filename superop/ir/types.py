"""Spark SQL type names, checked without Spark: what a ``--schema`` file may say.

:func:`type_problem` accepts exactly the data types Spark's DDL parser reads
(``StructType.fromDDL``; a test compares the two): the atomic types and their aliases,
``decimal(p, s)`` / ``char(n)`` / ``varchar(n)`` / ``time(p)``, ``string collate NAME``,
year-month and day-time intervals, and ``array<..>``, ``map<.., ..>``, ``struct<name: type,
..>``. For the names other tools print — pyarrow prints a Parquet file's schema as
``string_view``, ``int32``, ``decimal128(7, 2)``, ``timestamp[us]`` — it says what Spark
calls the type.
"""
from __future__ import annotations

import re
from typing import Optional

ATOMIC = frozenset({
    "boolean", "tinyint", "byte", "smallint", "short", "int", "integer", "bigint", "long",
    "float", "real", "double", "date", "timestamp", "timestamp_ntz", "timestamp_ltz", "string",
    "binary", "void", "variant", "time", "interval", "decimal", "dec", "numeric"})
_SIZED = {"decimal": (0, 2), "dec": (0, 2), "numeric": (0, 2), "char": (1, 1), "character": (1, 1),
          "varchar": (1, 1), "time": (0, 1)}
_INTERVAL_FIELDS = ("year", "month", "day", "hour", "minute", "second")

# names other tools print -> Spark's name (for the message)
_ARROW = {"string_view": "string", "large_string": "string", "utf8": "string", "large_utf8": "string",
          "str": "string", "text": "string", "int8": "tinyint", "int16": "smallint", "int32": "int",
          "int64": "bigint", "uint8": "smallint", "uint16": "int", "uint32": "bigint",
          "uint64": "decimal(20, 0)", "float16": "float", "halffloat": "float", "float32": "float",
          "float64": "double", "bool": "boolean", "date32": "date", "date64": "date",
          "binary_view": "binary", "large_binary": "binary", "null": "void", "datetime": "timestamp",
          "number": "decimal(p, s) or double", "varchar2": "varchar(n)"}
_TOKEN = re.compile(r"\s*(`(?:[^`]|``)*`|[A-Za-z_][A-Za-z0-9_]*|\d+|'(?:[^'\\]|\\.)*'|[<>(),:\[\]=]|\S)")


class _Bad(ValueError):
    pass


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = [m.group(1) for m in _TOKEN.finditer(text)]
        self.i = 0

    def peek(self) -> str:
        return self.toks[self.i].lower() if self.i < len(self.toks) else ""

    def take(self, want: Optional[str] = None) -> str:
        t = self.peek()
        if not t or (want is not None and t != want):
            raise _Bad(f"expected {want or 'a type'} at {' '.join(self.toks[self.i:]) or 'the end'!r}")
        self.i += 1
        return self.toks[self.i - 1]

    def number(self) -> int:
        t = self.take()
        if not t.isdigit():
            raise _Bad(f"expected a number, not {t!r}")
        return int(t)

    def type(self) -> None:
        name = self.take().lower()
        if name == "array":
            self.take("<")
            self.type()
            self.take(">")
        elif name == "map":
            self.take("<")
            self.type()
            self.take(",")
            self.type()
            self.take(">")
        elif name == "struct":
            self.struct()
        elif name == "interval" and self.peek() in _INTERVAL_FIELDS:
            self.interval()
        elif name in _SIZED and self.peek() == "(":
            self.sized(name)
        elif name in ("char", "character", "varchar"):
            raise _Bad(f"{name} needs a length, e.g. {name}(10)")
        elif name == "string" and self.peek() == "collate":
            self.take()
            self.take()
        elif name not in ATOMIC:
            raise _Bad(f"unknown type {name!r}")

    def sized(self, name: str) -> None:
        lo, most = _SIZED[name]
        self.take("(")
        args = [self.number()]
        while self.peek() == ",":
            self.take()
            args.append(self.number())
        self.take(")")
        if len(args) > most or any(a < lo for a in args):
            raise _Bad(f"{name} takes {most} argument{'s' if most > 1 else ''}")
        if name in ("decimal", "dec", "numeric"):
            p, s = args[0], args[1] if len(args) > 1 else 0
            if not 1 <= p <= 38 or s > p:
                raise _Bad(f"decimal({p}, {s}): precision must be 1..38 and scale at most the precision")
        if name == "time" and args[0] > 6:
            raise _Bad("time(p): p must be 0..6")

    def interval(self) -> None:
        start = self.take()
        if self.peek() == "to":
            self.take()
            end = self.take().lower()
            ym = ("year", "month")
            if end not in _INTERVAL_FIELDS or (start.lower() in ym) != (end in ym) or \
                    _INTERVAL_FIELDS.index(end) <= _INTERVAL_FIELDS.index(start.lower()):
                raise _Bad(f"interval {start} to {end} is not an interval type")

    def struct(self) -> None:
        self.take("<")
        if self.peek() == ">":
            self.take()
            return
        while True:
            self.take()                        # the field name (quoted or not)
            if self.peek() == ":":
                self.take()
            self.type()
            if self.peek() == "not":
                self.take()
                self.take("null")
            if self.peek() == "comment":
                self.take()
                if not self.take().startswith("'"):
                    raise _Bad("a comment is a quoted string")
            if self.peek() == ">":
                self.take()
                return
            self.take(",")


def type_problem(text: str) -> Optional[str]:
    """None if Spark reads ``text`` as a data type; else why not, with Spark's name for a
    type other tools print (``string_view`` -> ``string``, ``decimal128(7, 2)`` ->
    ``decimal(7, 2)``)."""
    hint = spark_name_of(text)
    try:
        p = _Parser(text)
        p.type()
        if p.i != len(p.toks):
            raise _Bad(f"unexpected {' '.join(p.toks[p.i:])!r} after the type")
    except _Bad as e:
        return f"{e}" + (f"; Spark calls it {hint}" if hint else "")
    return None


def spark_name_of(text: str) -> Optional[str]:
    """Spark's name for a type as Arrow / pandas / other databases print it, if known."""
    t = text.strip().lower()
    m = re.fullmatch(r"decimal(?:128|256|32|64)\((\d+),\s*(-?\d+)\)", t)
    if m:
        return f"decimal({m.group(1)}, {m.group(2)})"
    m = re.fullmatch(r"timestamp\[(\w+)(?:,\s*tz=(.+))?\]", t)
    if m:
        return "timestamp" if m.group(2) else "timestamp_ntz"
    m = re.fullmatch(r"(?:large_)?list(?:_view)?<(?:item:\s*)?(.+)>", t)
    if m:
        inner = spark_name_of(m.group(1)) or m.group(1)
        return f"array<{inner}>"
    m = re.fullmatch(r"dictionary<values=(\w+),.*>", t)
    if m:
        return spark_name_of(m.group(1)) or m.group(1)
    return _ARROW.get(t)
