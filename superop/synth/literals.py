"""The constants of a sub-plan, by value kind, for the synthesizer's generated test tables.

    plan_literals(plan) -> Literals(exact, near)

``exact`` holds every constant the sub-plan's expressions name (a string compared with a
cast to DATE counts as a date), ``near`` the same constants with their neighbours for the
ordered kinds (v-1, v, v+1), so that generated rows land on both sides of every comparison.
The two lists are kept apart because a key column's domain must stay small (groups collide)
yet hold EVERY exact constant: ``d_year = 1998 AND d_year = 1999`` on a key is only
satisfiable — and a wrong candidate only refutable — when both years are in the domain.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field

from sqlglot import exp

from ..ir.dialect import DIALECT
from ..ir.nodes import Node, expressions_of, walk

KINDS = ("int", "real", "str", "date", "ts")


def value_kind(sql_type: str) -> str:
    """The generator's kind of a column type: int, real, bool, date, ts or str."""
    t = sql_type.lower()
    if t in ("int", "integer", "bigint", "long", "smallint", "tinyint", "short", "byte"):
        return "int"
    if t in ("double", "float", "real") or t.startswith("decimal"):
        return "real"
    if t in ("boolean", "bool"):
        return "bool"
    if t == "date":
        return "date"
    if t.startswith("timestamp"):
        return "ts"
    return "str"


def _empty() -> dict[str, list]:
    return {k: [] for k in KINDS}


@dataclass(frozen=True)
class Literals:
    """Constants by kind (``KINDS``), deduplicated, in the order the plan names them."""
    exact: dict[str, list] = field(default_factory=_empty)
    near: dict[str, list] = field(default_factory=_empty)


def _literal(lit: exp.Literal) -> tuple[str, object, list] | None:
    """(kind, value, neighbours) of one literal; None for a numeric text Python cannot read."""
    if lit.is_string:
        cast = lit.parent if isinstance(lit.parent, (exp.Cast, exp.TryCast)) else None
        to = cast.args["to"].sql(dialect=DIALECT).lower() if cast is not None else ""
        try:
            if to == "date":
                d = _dt.date.fromisoformat(lit.this[:10])
                day = _dt.timedelta(days=1)
                return "date", d, [d - day, d + day]
            if to.startswith("timestamp"):
                t = _dt.datetime.fromisoformat(lit.this)
                sec = _dt.timedelta(seconds=1)
                return "ts", t, [t - sec, t + sec]
        except ValueError:
            pass
        return "str", lit.this, []
    try:
        i = int(lit.this)
        return "int", i, [i - 1, i + 1]
    except ValueError:
        pass
    try:
        r = float(lit.this)
        return "real", r, [r - 0.5, r + 0.5]
    except ValueError:
        return None


def plan_literals(plan: Node) -> Literals:
    """Every constant of ``plan``'s expressions (see the module docstring)."""
    exact, near = _empty(), _empty()
    for n in walk(plan):
        for e in expressions_of(n):
            for lit in e.find_all(exp.Literal):
                got = _literal(lit)
                if got is None:
                    continue
                kind, value, around = got
                exact[kind].append(value)
                near[kind] += [around[0], value, around[1]] if around else [value]
    return Literals({k: list(dict.fromkeys(v)) for k, v in exact.items()},
                    {k: list(dict.fromkeys(v)) for k, v in near.items()})
