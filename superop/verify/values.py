"""One SQL value in Z3: :class:`V`, SQL three-valued logic and NULL-safe comparison.

A :class:`V` is ``v`` (a Z3 term of the value's sort, or None for an untyped NULL
literal), ``null`` (a Z3 Bool), ``kind`` (int | real | str | bool | date), ``err`` (a Z3
Bool: evaluating the value raises an error, e.g. division by zero under ANSI) and, for
integers, ``width`` (32 for INT, 64 for BIGINT, ...; None = unbounded, no overflow check).
Types: int/bigint/... -> Int, double/float/decimal -> Real, string -> String,
boolean -> Bool, date -> Int (days since 1970-01-01).

Predicates use SQL three-valued logic: a boolean V with ``null`` = UNKNOWN; σ, join
conditions and guards keep a row only when the predicate is TRUE (:func:`is_true`).
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Optional, Sequence

import z3

from .result import Unsupported

EPOCH = _dt.date(1970, 1, 1)
FALSE, TRUE = z3.BoolVal(False), z3.BoolVal(True)

_INT_WIDTHS = {"tinyint": 8, "byte": 8, "smallint": 16, "short": 16, "int": 32, "integer": 32,
               "bigint": 64, "long": 64}


def kind_of_type(t: str) -> str:
    t = t.lower().strip()
    if t in _INT_WIDTHS:
        return "int"
    if t in ("double", "float", "real") or t.startswith("decimal") or t.startswith("numeric"):
        return "real"
    if t in ("string", "text") or t.startswith("varchar") or t.startswith("char"):
        return "str"
    if t in ("boolean", "bool"):
        return "bool"
    if t == "date":
        return "date"
    raise Unsupported(f"column type {t!r} is not modelled")


def int_width(t: str) -> Optional[int]:
    """Bit width of an integral Spark type (None for every other type)."""
    return _INT_WIDTHS.get(t.lower().strip())


def int_range(width: int) -> tuple[int, int]:
    return -(1 << (width - 1)), (1 << (width - 1)) - 1


def out_of_range(x: z3.ArithRef, width: Optional[int]) -> z3.BoolRef:
    """x does not fit a signed integer of ``width`` bits (FALSE when unbounded)."""
    if width is None:
        return FALSE
    lo, hi = int_range(width)
    return z3.Or(x < lo, x > hi)


def fresh(kind: str, name: str) -> z3.ExprRef:
    if kind in ("int", "date"):
        return z3.Int(name)
    if kind == "real":
        return z3.Real(name)
    if kind == "str":
        return z3.String(name)
    if kind == "bool":
        return z3.Bool(name)
    raise Unsupported(kind)


def sort_of(kind: str) -> z3.SortRef:
    return {"int": z3.IntSort(), "date": z3.IntSort(), "real": z3.RealSort(),
            "str": z3.StringSort(), "bool": z3.BoolSort()}[kind]


def default(kind: str) -> z3.ExprRef:
    return {"int": z3.IntVal(0), "date": z3.IntVal(0), "real": z3.RealVal(0),
            "str": z3.StringVal(""), "bool": FALSE}[kind]


@dataclass
class V:
    v: Optional[z3.ExprRef]
    null: z3.BoolRef
    kind: Optional[str]          # None only for an untyped NULL literal
    err: z3.BoolRef = FALSE      # evaluating this value raises
    width: Optional[int] = None  # integer bit width (overflow checks under ANSI)

    def val(self, kind: str) -> z3.ExprRef:
        """The value coerced to ``kind`` (NULL literals get a dummy value)."""
        if self.v is None:
            return default(kind)
        if kind == self.kind or (kind in ("int", "date") and self.kind in ("int", "date")):
            return self.v
        if kind == "real" and self.kind in ("int", "date"):
            return z3.ToReal(self.v)
        raise Unsupported(f"cannot combine {self.kind} with {kind}")

    def normalized(self, kind: str) -> z3.ExprRef:
        """The value, or the kind's default when NULL (so that a function of a NULL
        argument cannot depend on the don't-care value behind it)."""
        return z3.If(self.null, default(kind), self.val(kind))


NULL = V(None, TRUE, None)


def const(v: z3.ExprRef, kind: str, width: Optional[int] = None) -> V:
    return V(v, FALSE, kind, FALSE, width)


def is_true(b: V) -> z3.BoolRef:
    if b.v is None:
        return FALSE
    if b.kind != "bool":
        raise Unsupported(f"predicate of type {b.kind}")
    return z3.And(z3.Not(b.null), b.v)


def is_false(b: V) -> z3.BoolRef:
    if b.v is None:
        return FALSE
    return z3.And(z3.Not(b.null), z3.Not(b.v))


def common_kind(vals: Sequence[V]) -> Optional[str]:
    kinds = {x.kind for x in vals if x.kind is not None}
    if not kinds:
        return None
    if len(kinds) == 1:
        return kinds.pop()
    if kinds <= {"int", "real"}:
        return "real"
    if kinds <= {"int", "date"}:
        return "date"
    raise Unsupported(f"mixed types {sorted(kinds)}")


def common_width(vals: Sequence[V]) -> Optional[int]:
    """Spark's integral type widening: the wider type; unbounded if one side is."""
    ws = [x.width for x in vals if x.v is not None]
    if not ws or any(w is None for w in ws):
        return None
    return max(ws)


def not_distinct(a: V, b: V) -> z3.BoolRef:
    """NULL-safe equality (GROUP BY / partition / bag semantics: NULL equals NULL)."""
    if a.v is None or b.v is None:
        return z3.And(a.null, b.null)
    try:
        k = common_kind([a, b])
        eq = a.val(k) == b.val(k)
    except Unsupported:
        eq = FALSE   # values of unrelated types are never equal
    return z3.Or(z3.And(a.null, b.null), z3.And(z3.Not(a.null), z3.Not(b.null), eq))


def rows_not_distinct(a: Sequence[V], b: Sequence[V]) -> z3.BoolRef:
    if len(a) != len(b):
        return FALSE
    return z3.And(*[not_distinct(x, y) for x, y in zip(a, b)]) if a else TRUE


def ite(c: z3.BoolRef, a: V, b: V) -> V:
    """Value choice (no error semantics: callers that evaluate lazily add ``err``)."""
    k = common_kind([a, b])
    if k is None:
        return V(None, TRUE, None, z3.If(c, a.err, b.err))
    w = common_width([a, b]) if k == "int" else None
    return V(z3.If(c, a.val(k), b.val(k)), z3.If(c, a.null, b.null), k, z3.If(c, a.err, b.err), w)


def lt(x: z3.ExprRef, y: z3.ExprRef, kind: str) -> z3.BoolRef:
    """Strict order of two non-NULL values of ``kind`` (FALSE < TRUE for booleans)."""
    if kind == "bool":
        return z3.And(z3.Not(x), y)
    return x < y


def any_err(vals: Sequence[V]) -> z3.BoolRef:
    errs = [x.err for x in vals if not z3.is_false(x.err)]
    return z3.Or(*errs) if errs else FALSE


def or_all(bs: Sequence[z3.BoolRef]) -> z3.BoolRef:
    bs = [b for b in bs if not z3.is_false(b)]
    return z3.Or(*bs) if bs else FALSE
