"""Min & Join's template program (SuperOp_MJ of the paper's Fig. 10): row emits guarded by
"the row matches its key's aggregate row", the outer, semi and anti sides, the flag that
decides "some row matched" for the aggregate side emitted alone, and the memory class
(streaming with a sort on the MIN/MAX column, or buffering: Fig. 13).
"""
from __future__ import annotations

from typing import Sequence

from sqlglot import exp

from ...dsl import BUFFERING, STREAMING, Program, RowEmit, SortKey
from ..kit.joinback import join_back_program
from ..kit.program import Accs
from ..kit.records import Match
from .reasons import MIN_MAX


def build_program(m: Match) -> Program:
    """SuperOp_MJ (:func:`~superop.families.kit.joinback.join_back_program`): ``streaming``
    only when every value a row emit reads is final after the first row of a sorted
    partition (one unguarded min/max over a source column, sorted on it); otherwise
    ``buffering`` (Fig. 13)."""
    return join_back_program(m, _memory)


def _memory(row_emits: Sequence[RowEmit], accs: Accs) -> tuple[str, tuple[SortKey, ...]]:
    """Streaming iff row emits read no flag and only one unguarded min/max over a source
    column (final after the first row once sorted on that column)."""
    used_acc: set[str] = set()
    used_flag = False
    for r in row_emits:
        for x in [r.guard, *r.outputs]:
            if x is None:
                continue
            for c in x.find_all(exp.Column):
                if c.table == "acc":
                    used_acc.add(c.name)
                elif c.table == "flag":
                    used_flag = True
    if not row_emits or not used_acc and not used_flag:
        return STREAMING, ()
    if used_flag or len(used_acc) != 1:
        return BUFFERING, ()
    a = next(a for a in accs.accs if a.name in used_acc)
    if a.func in MIN_MAX and a.guard is None and isinstance(a.arg, exp.Column):
        return STREAMING, (SortKey(a.arg.name, ascending=(a.func == "min"), nulls_first=False),)
    return BUFFERING, ()
