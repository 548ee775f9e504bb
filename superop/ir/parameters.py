"""Typed parameters in place of literals (``:p<i>_<type>``) and of sub-query values
(``:q<i>_number``).

A placeholder stands for a value of a Spark type written in its name (``:p0_int``,
``:p1_bigint``, ``:p2_decimal_2_1``), so the IR, the templates and the SQL generator carry
it like a literal, and the verifier reads it as a free symbolic value of that type
(:mod:`superop.verify.exprs`). :mod:`superop.families.parametric` makes an instance's
parametric form with them. A ``:q<i>_number`` stands for the value of an uncorrelated
sub-query (:mod:`superop.ir.subqueries`): any number or NULL, a free real with a free NULL
flag to the verifier.
"""
from __future__ import annotations

import re
from typing import Any, Optional

from sqlglot import exp

_INT = re.compile(r"^\d+$")
_DEC = re.compile(r"^(\d+)\.(\d+)$")
_NAME = re.compile(r"^p(\d+)_(int|bigint|decimal_(\d+)_(\d+))$")
# a sub-query's value (superop.ir.subqueries): any number, or NULL
_VALUE_NAME = re.compile(r"^q\d+_number$")
VALUE_PLACEHOLDER = re.compile(r":q\d+_number\b")
PLACEHOLDER = re.compile(r":(p\d+_(?:int|bigint|decimal_\d+_\d+))\b")


def literal_type(text: str) -> Optional[str]:
    """Spark's type of a numeric literal as written (None: not a plain integer or decimal):
    ``5`` int, ``3000000000`` bigint, ``2.5`` decimal(2,1), ``0.05`` decimal(2,2)."""
    if _INT.match(text):
        n = int(text)
        return "int" if n < (1 << 31) else ("bigint" if n < (1 << 63) else None)
    m = _DEC.match(text)
    if m is None:
        return None
    scale = len(m.group(2))
    digits = (m.group(1) + m.group(2)).lstrip("0") or "0"
    precision = max(len(digits), scale)
    return f"decimal({precision},{scale})" if precision <= 38 else None


def parameter_name(i: int, typ: str) -> str:
    """The placeholder name of the ``i``-th parameter, of Spark type ``typ``."""
    return f"p{i}_" + typ.replace("(", "_").replace(",", "_").replace(")", "")


def value_parameter_name(i: int) -> str:
    """The placeholder name of the ``i``-th sub-query value of an instance: a number of any
    numeric type, or NULL (``q<i>_number``). Never bound to a literal."""
    return f"q{i}_number"


def value_parameter_index(name: str) -> int:
    """``i`` of a sub-query value's parameter ``q<i>_number``."""
    return int(name[1:].split("_", 1)[0])


def nullable_parameter(name: str) -> bool:
    """Is ``name`` a sub-query value's parameter (which may be NULL)?"""
    return _VALUE_NAME.match(name) is not None


def parameter_type(name: str) -> Optional[tuple[str, Optional[int]]]:
    """(the verifier's kind, its integer width) of a parameter named ``p<i>_<type>`` or
    ``q<i>_number`` (a real: every integer, decimal and double is one) (None: not a
    parameter name)."""
    if nullable_parameter(name):
        return "real", None
    m = _NAME.match(name)
    if m is None:
        return None
    if m.group(2) == "int":
        return "int", 32
    if m.group(2) == "bigint":
        return "int", 64
    return "real", None


# Integer arithmetic of parameters alone (``:p2_int + :p3_int``, TPC-DS q39's month + 1):
# Spark raises on its overflow (ANSI) wherever it is evaluated, and a program may evaluate
# it where the original does not (on a row a HAVING-like filter drops). A parametric
# certificate therefore assumes it does not overflow (the verifier adds that premise) and
# the runtime binds only literals for which it does not (:func:`arithmetic_in_range`).
_INT_RANGE = {32: (-(1 << 31), (1 << 31) - 1), 64: (-(1 << 63), (1 << 63) - 1)}


def is_parameter_arithmetic(e: Any) -> bool:
    """Is ``e`` (sqlglot) +, -, * or unary minus over parameters and integer literals only,
    with at least one parameter?"""
    if not isinstance(e, (exp.Add, exp.Sub, exp.Mul, exp.Neg)):
        return False
    placeholders = 0
    for n in e.walk():
        if isinstance(n, exp.Placeholder):
            placeholders += 1
        elif isinstance(n, exp.Literal):
            if n.is_string or not _INT.match(n.this):
                return False
        elif not isinstance(n, (exp.Add, exp.Sub, exp.Mul, exp.Neg, exp.Paren)):
            return False
    return placeholders > 0


def _int_value(e: Any, values: dict[str, str]) -> Optional[tuple[int, int]]:
    """(value, width) of an integer leaf or operation, None when out of its type's range or
    not an integer (a decimal parameter: no overflow modelled)."""
    if isinstance(e, exp.Paren):
        return _int_value(e.this, values)
    if isinstance(e, exp.Placeholder):
        typ = parameter_type(str(e.this or ""))
        text = values.get(str(e.this or ""))
        if typ is None or typ[1] is None or text is None or not _INT.match(text):
            return None
        return int(text), typ[1]
    if isinstance(e, exp.Literal):
        t = literal_type(e.this)
        return (int(e.this), 32 if t == "int" else 64) if t in ("int", "bigint") else None
    if isinstance(e, exp.Neg):
        inner = _int_value(e.this, values)
        return _in_range(-inner[0], inner[1]) if inner is not None else None
    a, b = _int_value(e.this, values), _int_value(e.expression, values)
    if a is None or b is None:
        return None
    lhs, rhs = a[0], b[0]
    v = lhs + rhs if isinstance(e, exp.Add) else (lhs - rhs if isinstance(e, exp.Sub) else lhs * rhs)
    return _in_range(v, max(a[1], b[1]))


def _in_range(v: int, width: int) -> Optional[tuple[int, int]]:
    lo, hi = _INT_RANGE[width]
    return (v, width) if lo <= v <= hi else None


def arithmetic_in_range(tree: Any, values: dict[str, str]) -> bool:
    """Does every integer arithmetic of parameters alone in ``tree`` stay in its Spark
    type's range (int, or bigint when an operand is) with the parameters bound to
    ``values`` (name -> literal text)? A decimal operand: not an integer operation, True."""
    for e in tree.find_all(exp.Add, exp.Sub, exp.Mul, exp.Neg):
        if not is_parameter_arithmetic(e):
            continue
        leaves = [n for n in e.walk() if isinstance(n, (exp.Placeholder, exp.Literal))]
        integral = all(isinstance(n, exp.Literal) or (parameter_type(str(n.this or "")) or ("", None))[1]
                       for n in leaves)
        if integral and _int_value(e, values) is None:
            return False
    return True
