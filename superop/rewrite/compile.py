"""Super-operator programs (superop.dsl) -> Spark SQL that runs after ONE exchange.

* Only partition emits (DU, DJ): one ``GROUP BY keys`` with guarded aggregates
  (``sum(CASE WHEN guard THEN arg END)``), flags as ``count(CASE WHEN guard THEN 1 END) >
  0`` or as a test of an accumulator over the same guard (:func:`_flag_sql`: Spark shares
  the buffer, so a flag adds no column to what crosses the exchange), then the emits: a
  single emit is a ``WHERE``; several become
  ``inline(filter(array(struct(guard, outputs...), ...), x -> x.guard))`` — 0..n rows
  per group from one pass.
* No keys (global aggregates): the same without ``GROUP BY`` — exactly one row, also over
  an empty input, as the DSL's one keyless partition (a flag's ``count(..) > 0`` or
  ``min/max(..) IS NOT NULL`` is FALSE, not NULL, over no rows).
* Neighbours (``nb.*``): ``lag(arg, k)`` / ``lead(arg, k) OVER (PARTITION BY keys ORDER BY
  sort)`` — the same partitioning as every other window, so still one exchange.
* Row emits (MJ): window aggregates ``f(CASE WHEN guard THEN arg END) OVER (PARTITION BY
  keys)`` (final values; *running* values ``ORDER BY sort ROWS UNBOUNDED PRECEDING`` when a
  streaming program's row emits read the state), one output row per input row from the
  same inline/filter, partition emits once per partition via ``row_number() = 1``. Every
  window shares one PARTITION BY, so Spark plans one exchange.

* One row emit guarded by ``row.v = MIN(v)`` (MAX), the only state: ``RANK() = 1``
  over one window (:mod:`superop.rewrite.rank_limit`), which Spark limits per group below
  the exchange.
* Two row emits with complementary guards: one projection with ``CASE`` cells.

Partial expressions (ANSI errors). The DSL evaluates an emit's outputs only where its guard
holds (see ``superop.synth.dsl``); Spark builds every field of a struct and may evaluate a
projection before a filter. So every cell that can fail (anything but a bare column or
literal: division, arithmetic, casts) is written ``CASE WHEN guard THEN cell END``, and a
single emit is a ``WHERE`` only when no conjunct of its guard that can fail reads the
partition keys alone (Spark pushes such a conjunct below the aggregate / window, onto
every source row); otherwise it takes the generator form too.

Guards are two-valued at emission (``coalesce(g, false)``): a NULL guard never emits, as in
the DSL. NULL outputs take the output column's type (``CAST(NULL AS t)``) when types are
known, else the type of the same column in another emit (``if(false, expr, NULL)``), so
the array's structs agree. With ``output_types`` every output is cast to it, which keeps
the original query's column types exactly.

Programs without a native form raise :class:`NoNativeForm`; ``superop.runtime.generic``
runs them on Spark with the reference interpreter.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

from sqlglot import exp

from ..dsl import STREAMING, Program
from ..ir.names import TableName
from .rank_limit import group_limit, group_limit_sql
from .sqlparts import (INTEGRAL, P, Alt, Names, NoNativeForm, agg_sql, col, donor_null, emission, emit_outputs,
                       empty_sql, flag_sql, guard_sql, pushable_partial, quote, row_ref, sql_of, subst, unparen)

__all__ = ["NoNativeForm", "compile_program"]


def compile_program(program: Program, source: str, output_types: Optional[Sequence[str]] = None,
                    input_types: Optional[Mapping[str, str]] = None) -> str:
    """Spark SQL running ``program`` over ``source`` (a query or a table name whose
    columns are the program's ``row.*`` names). ``output_types`` (Spark SQL type strings,
    one per output column) override ``program.output_types``. ``input_types`` (source
    column -> Spark type, optional) lets a flag share an integral sum's buffer
    (:func:`flag_sql`). Raises NoNativeForm."""
    integral = frozenset(c.lower() for c, t in (input_types or {}).items() if t.lower() in INTEGRAL)
    src = source.strip()
    try:   # a (possibly qualified, quoted) table name
        src_item = f"{TableName.parse(src).sql()} AS {P}src"
    except ValueError:
        src_item = f"({src}) AS {P}src"
    types = list(output_types or program.output_types or [None] * len(program.output))
    if len(types) != len(program.output):
        raise ValueError("output_types must give one type per output column")
    if not program.partition_emits and not program.row_emits:
        return empty_sql(program, types)
    keyless = not program.keys
    if keyless and program.row_emits and program.partition_emits:
        # the keyless partition exists over an empty input, a window has no row there
        raise NoNativeForm("a keyless program with both row and partition emits")
    if not program.row_emits:
        return _group_by_form(program, src_item, types, integral)
    limit = group_limit(program)
    if limit is not None:
        return group_limit_sql(program, limit, src_item, types)
    return _window_form(program, src_item, types, integral)


def _group_by_form(program: Program, src_item: str, types: list[Optional[str]], integral: frozenset[str]) -> str:
    """Only partition emits: one GROUP BY with guarded aggregates, then guarded emission
    (no keys: a global aggregate, one row even over an empty input)."""
    nm = Names(program)
    keys = ", ".join(quote(k) for k in program.keys)
    items = [quote(k) for k in program.keys]
    for a in program.accumulators:
        items.append(f"{agg_sql(a.func, subst(a.arg, row_ref), subst(a.guard, row_ref))} AS {nm.acc[a.name]}")
    accs = [(a.func, subst(a.arg, row_ref), subst(a.guard, row_ref)) for a in program.accumulators]
    for f in program.flags:
        items.append(f"{flag_sql(subst(f.guard, row_ref), accs, integral=integral)} AS {nm.flag[f.name]}")
    if not items:
        items.append(f"count(1) AS {P}rows")          # a SELECT needs an item
    group = f" GROUP BY {keys}" if keys else ""
    inner = f"SELECT {', '.join(items)} FROM {src_item}{group}"
    part_map = nm.partition_ref
    cells = emit_outputs(program, program.partition_emits, types, part_map)
    guarded = [Alt(guard_sql(em.guard, part_map), c, pushable_partial(em.guard, program.keys))
               for em, c in zip(program.partition_emits, cells)]
    return emission(program, guarded, inner, types)


def _state_read_by_rows(program: Program) -> set[tuple[str, str]]:
    """The ``acc.*`` / ``flag.*`` the row emits read (they need running values when the
    program streams)."""
    used: set[tuple[str, str]] = set()
    for r in program.row_emits:
        for x in (r.guard, *r.outputs):
            if x is not None:
                used.update((c.table, c.name) for c in x.find_all(exp.Column) if c.table in ("acc", "flag"))
    return used


def _window_form(program: Program, src_item: str, types: list[Optional[str]], integral: frozenset[str]) -> str:
    """Row emits: per-row state as window aggregates over one PARTITION BY (running values
    where a streaming program's row emits read them), partition emits once per partition
    via ``row_number() = 1``, then guarded emission."""
    nm = Names(program)
    keys = ", ".join(quote(k) for k in program.keys)
    used_in_rows = _state_read_by_rows(program)
    running = program.memory == STREAMING and bool(used_in_rows)
    if running and not program.sort:
        raise NoNativeForm("a streaming program whose row emits read state needs a sort order")
    part = f"PARTITION BY {keys}" if keys else ""
    over_final = f"OVER ({part})"
    order = ", ".join(f"{quote(k.column)} {'ASC' if k.ascending else 'DESC'} "
                      f"NULLS {'FIRST' if k.nulls_first else 'LAST'}" for k in program.sort)
    over_run = f"OVER ({part} ORDER BY {order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    over_sorted = f"OVER ({part} ORDER BY {order})"
    items = [f"{P}src.*"]
    nb_col = {}
    for n in program.neighbours:
        nb_col[n.name] = f"{P}n_{n.name}"
        fn = "lag" if n.offset < 0 else "lead"
        items.append(f"{fn}({sql_of(subst(n.arg, row_ref))}, {abs(n.offset)}) {over_sorted} AS {nb_col[n.name]}")
    run_acc, run_flag = {}, {}
    for a in program.accumulators:
        arg, guard = subst(a.arg, row_ref), subst(a.guard, row_ref)
        items.append(f"{agg_sql(a.func, arg, guard, over_final)} AS {nm.acc[a.name]}")
        if running and ("acc", a.name) in used_in_rows:
            run_acc[a.name] = f"{P}r{nm.acc[a.name][len(P):]}"
            items.append(f"{agg_sql(a.func, arg, guard, over_run)} AS {run_acc[a.name]}")
    accs = [(a.func, subst(a.arg, row_ref), subst(a.guard, row_ref)) for a in program.accumulators]
    for f in program.flags:
        fg = subst(f.guard, row_ref)
        items.append(f"{flag_sql(fg, accs, over_final, integral)} AS {nm.flag[f.name]}")
        if running and ("flag", f.name) in used_in_rows:
            run_flag[f.name] = f"{P}r{nm.flag[f.name][len(P):]}"
            items.append(f"{flag_sql(fg, accs, over_run, integral)} AS {run_flag[f.name]}")
    if program.partition_emits:
        items.append(f"row_number() OVER (PARTITION BY {keys} ORDER BY {keys}) AS {P}rn")
    inner = f"SELECT {', '.join(items)} FROM {src_item}"

    def row_map(ns: str, name: str) -> exp.Column:
        if ns in ("row", "key"):
            return col(name)
        if ns == "nb":
            return col(nb_col[name])
        if ns == "acc":
            return col(run_acc.get(name, nm.acc[name]))
        if ns == "flag":
            return col(run_flag.get(name, nm.flag[name]))
        raise ValueError(ns)

    guarded = _window_alternatives(program, types, row_map, nm.partition_ref)
    if not program.partition_emits and len(program.row_emits) == 2 \
            and _complementary(program.row_emits[0].guard, program.row_emits[1].guard):
        return _either(program, guarded, inner)
    return emission(program, guarded, inner, types)


def _window_alternatives(program: Program, types: list[Optional[str]], row_map, part_map) -> list[Alt]:
    """The emit alternatives of the window form: row emits on every row, partition emits
    on the partition's first row; untyped NULLs typed alike across both."""
    guarded: list[Alt] = []
    cells_r = emit_outputs(program, program.row_emits, types, row_map)
    for em, c in zip(program.row_emits, cells_r):
        guarded.append(Alt(guard_sql(em.guard, row_map), c, pushable_partial(em.guard, program.keys)))
    if program.partition_emits:
        cells_p = emit_outputs(program, program.partition_emits, types, part_map)
        for em, c in zip(program.partition_emits, cells_p):
            g = guard_sql(em.guard, part_map)
            guarded.append(Alt(f"({P}rn = 1)" if g == "TRUE" else f"({P}rn = 1 AND {g})", c,
                               pushable_partial(em.guard, program.keys)))
    # typed NULLs must agree across row and partition emits: recompute donors jointly
    if not any(types):
        allp = list(program.row_emits) + list(program.partition_emits)
        maps = [row_map] * len(program.row_emits) + [part_map] * len(program.partition_emits)
        rows = [[subst(o, m) for o in em.outputs] for em, m in zip(allp, maps)]
        for i, r in enumerate(rows):
            for j, x in enumerate(r):
                if isinstance(x, exp.Null):
                    donor = next((rr[j] for rr in rows if not isinstance(rr[j], exp.Null)), None)
                    if donor is not None:
                        guarded[i].cells[j] = donor_null(donor)
    return guarded


def _two_valued(e: exp.Expression) -> bool:
    """Is ``e`` never NULL (built from ``COALESCE(.., FALSE)``, ``IS NULL``, literals,
    AND/OR/NOT of such)?"""
    e = unparen(e)
    if isinstance(e, (exp.And, exp.Or)):
        return _two_valued(e.this) and _two_valued(e.expression)
    if isinstance(e, exp.Not):
        return _two_valued(e.this)
    if isinstance(e, exp.Coalesce):
        return bool(e.expressions) and isinstance(e.expressions[-1], exp.Boolean)
    return isinstance(e, (exp.Is, exp.Boolean))


def _complementary(g0: Optional[exp.Expression], g1: Optional[exp.Expression]) -> bool:
    """Does exactly one of two row-emit guards hold on every row (``g1`` is ``NOT g0`` and
    ``g0`` is never NULL)? E.g. a left join's matched row and its NULL-extended row."""
    if g0 is None or g1 is None or not isinstance(unparen(g1), exp.Not):
        return False
    return unparen(unparen(g1).this) == unparen(g0) and _two_valued(g0)


def _either(program: Program, guarded: list[Alt], inner_sql: str) -> str:
    """Two row emits with complementary guards: one output row per input row, each cell
    ``CASE WHEN g0 THEN cell0 ELSE cell1 END`` (a plain projection instead of a generator;
    a cell is evaluated only under its own emit's guard)."""
    a, b = guarded
    sel = []
    for j, n in enumerate(program.output):
        c0, c1 = a.cells[j], b.cells[j]
        cell = c0.sql if c0.sql == c1.sql else f"CASE WHEN {a.guard} THEN {c0.sql} ELSE {c1.sql} END"
        sel.append(f"{cell} AS {quote(n)}")
    return f"SELECT {', '.join(sel)} FROM ({inner_sql}) AS {P}in"
