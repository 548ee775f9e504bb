"""Typed parameters in place of literals: ``:p<i>_<type>`` placeholders.

A placeholder stands for a value of a Spark type written in its name (``:p0_int``,
``:p1_bigint``, ``:p2_decimal_2_1``), so the IR, the templates and the SQL generator carry
it like a literal, and the verifier reads it as a free symbolic value of that type
(:mod:`superop.verify.exprs`). :mod:`superop.families.parametric` makes an instance's
parametric form with them.
"""
from __future__ import annotations

import re
from typing import Optional

_INT = re.compile(r"^\d+$")
_DEC = re.compile(r"^(\d+)\.(\d+)$")
_NAME = re.compile(r"^p(\d+)_(int|bigint|decimal_(\d+)_(\d+))$")
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


def parameter_type(name: str) -> Optional[tuple[str, Optional[int]]]:
    """(the verifier's kind, its integer width) of a parameter named ``p<i>_<type>`` (None:
    not a parameter name)."""
    m = _NAME.match(name)
    if m is None:
        return None
    if m.group(2) == "int":
        return "int", 32
    if m.group(2) == "bigint":
        return "int", 64
    return "real", None
