"""The rank-limit native form: a program whose only state is one unguarded MIN (MAX) of a
column, sorted on it, and whose one row emit is guarded first by ``row.v = acc.m`` emits a
row only where ``v`` equals its partition's MIN (MAX): ``RANK() OVER (PARTITION BY keys
ORDER BY v) = 1`` among the rows with ``v`` NOT NULL (ties share rank 1). With the rank
filter a top-level conjunct right above the window, Spark's InferWindowGroupLimit plans a
WindowGroupLimit below the exchange, so only each task's local extreme rows are shuffled.
A family offers such a program as one of its forms (``Family.program_form``); the compiler
recognizes the shape on the DSL, whoever built it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from sqlglot import exp

from ..dsl import STREAMING, Program
from .sqlparts import P, Alt, emission, emit_outputs, guard_sql, pushable_partial, quote, row_ref, unparen


@dataclass(frozen=True)
class GroupLimit:
    """The rank-limit shape of a program (module doc): the column ``v``, MIN (ascending)
    or MAX, and the rest of the row emit's guard."""
    column: str
    ascending: bool
    rest: Optional[exp.Expression]      # the guard after the equality (reads no state)


def and_parts(e: exp.Expression) -> list[exp.Expression]:
    while isinstance(e, exp.Paren) and isinstance(e.this, exp.And):
        e = e.this
    return and_parts(e.this) + and_parts(e.expression) if isinstance(e, exp.And) else [e]


def group_limit(program: Program) -> Optional[GroupLimit]:
    """The program's group-limit shape (see :class:`GroupLimit`), or None."""
    if program.partition_emits or len(program.row_emits) != 1 or program.flags or program.neighbours \
            or not program.keys or len(program.accumulators) != 1 or program.memory != STREAMING:
        return None
    a = program.accumulators[0]
    if a.func not in ("min", "max") or a.guard is not None or not isinstance(a.arg, exp.Column) \
            or a.arg.table != "row" or len(program.sort) != 1:
        return None
    v, asc = a.arg.name, a.func == "min"
    k = program.sort[0]
    if (k.column, k.ascending, k.nulls_first) != (v, asc, False):
        return None
    em = program.row_emits[0]
    if em.guard is None:
        return None
    parts = and_parts(em.guard)
    first = unparen(parts[0])
    if isinstance(first, exp.Coalesce) and len(first.expressions) == 1 \
            and isinstance(first.expressions[0], exp.Boolean) and not first.expressions[0].this:
        first = unparen(first.this)
    if not isinstance(first, exp.EQ) or {(x.table, x.name) for x in (first.this, first.expression)
                                         if isinstance(x, exp.Column)} != {("row", v), ("acc", a.name)}:
        return None
    rest = parts[1:]
    if any(c.table in ("acc", "flag", "nb") for x in [*rest, *em.outputs] for c in x.find_all(exp.Column)):
        return None
    guard: Optional[exp.Expression] = None
    for x in rest:
        guard = x.copy() if guard is None else exp.and_(guard, x.copy())
    return GroupLimit(v, asc, guard)


def group_limit_sql(program: Program, limit: GroupLimit, src_item: str, types: Sequence[Optional[str]]) -> str:
    """``RANK() = 1`` over the rows with the column NOT NULL, then the rest of the guard:
    the rank filter is a top-level conjunct of the filter right above the window, so
    Spark's InferWindowGroupLimit plans a WindowGroupLimit below the exchange (only each
    task's local minimum rows are shuffled)."""
    keys = ", ".join(quote(k) for k in program.keys)
    v = quote(limit.column)
    inner = (f"SELECT {P}src.*, rank() OVER (PARTITION BY {keys} ORDER BY {v} "
             f"{'ASC' if limit.ascending else 'DESC'}) AS {P}rk FROM {src_item} WHERE {v} IS NOT NULL")
    em = program.row_emits[0]
    cells = emit_outputs(program, [em], types, row_ref)[0]
    g = guard_sql(limit.rest, row_ref)
    guard = f"({P}rk = 1)" if g == "TRUE" else f"({P}rk = 1) AND {g}"
    return emission(program, [Alt(guard, cells, pushable_partial(limit.rest, program.keys))], inner, types)
