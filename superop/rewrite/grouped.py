"""The GROUPED layout of a program (``Program.layout``): row emits that read the partition's
final state, run as the rows joined with the ``GROUP BY keys`` of the accumulators and
flags (a NULL-safe key equality: every row meets its own partition's one group row), then
the row emits — the same program as the window form, laid out so that a partial aggregate
crosses the exchange instead of every row. One row emit whose outputs read no state is a
``LEFT SEMI JOIN`` with the emit's guard in the ON clause (no column of the grouped side
reaches the rows; Spark may broadcast it)."""
from __future__ import annotations

from typing import Optional

from sqlglot import exp

from ..dsl import Program
from .sqlparts import (P, Alt, Names, agg_sql, col, emission, emit_outputs, flag_sql, guard_sql,
                       pushable_partial, quote, row_ref, subst)


def grouped_form(program: Program, src_item: str, types: list[Optional[str]], integral: frozenset[str]) -> str:
    nm = Names(program)
    keys = program.keys
    gk = [f"{P}gk{i}" for i in range(len(keys))]
    accs = [(a.func, subst(a.arg, row_ref), subst(a.guard, row_ref)) for a in program.accumulators]
    items = [f"{quote(k)} AS {g}" for k, g in zip(keys, gk)]
    items += [f"{agg_sql(f, arg, g)} AS {nm.acc[a.name]}" for a, (f, arg, g) in zip(program.accumulators, accs)]
    items += [f"{flag_sql(subst(f.guard, row_ref), accs, integral=integral)} AS {nm.flag[f.name]}"
              for f in program.flags]
    grouped = f"SELECT {', '.join(items)} FROM {src_item} GROUP BY {', '.join(quote(k) for k in keys)}"
    on = " AND ".join(f"{P}src.{quote(k)} <=> {P}g.{g}" for k, g in zip(keys, gk))
    emits = program.row_emits
    state = {("acc", a.name) for a in program.accumulators} | {("flag", f.name) for f in program.flags}
    reads_state = any((c.table, c.name) in state for em in emits for o in em.outputs
                      for c in o.find_all(exp.Column))
    if len(emits) == 1 and not reads_state:
        def state_map(ns: str, name: str) -> exp.Expression:
            return col(name, f"{P}src") if ns in ("row", "key") else nm.partition_ref(ns, name)
        inner = (f"SELECT {P}src.* FROM {src_item} LEFT SEMI JOIN ({grouped}) AS {P}g "
                 f"ON {on} AND {guard_sql(emits[0].guard, state_map)}")
        cells = emit_outputs(program, emits, types, row_ref)[0]
        return emission(program, [Alt("TRUE", cells)], inner, types)

    def row_map(ns: str, name: str) -> exp.Expression:
        return col(name) if ns in ("row", "key") else nm.partition_ref(ns, name)
    inner = f"SELECT {P}src.*, {P}g.* FROM {src_item} JOIN ({grouped}) AS {P}g ON {on}"
    cells_all = emit_outputs(program, emits, types, row_map)
    guarded = [Alt(guard_sql(em.guard, row_map), c, pushable_partial(em.guard, keys))
               for em, c in zip(emits, cells_all)]
    return emission(program, guarded, inner, types)
