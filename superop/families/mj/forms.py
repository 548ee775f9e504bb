"""Min & Join's alternative forms of the window form's program: the partition-wide form
(the final MIN/MAX read by every row: no sort, buffering) and the group-limit form (only
the rows whose MIN/MAX column equals the aggregate: RANK() … = 1), with which join kinds
and sides admit each.
"""
from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from ...dsl import BUFFERING, STREAMING, Program, RowEmit, SortKey, ref
from ...ir.conjuncts import filter_conjuncts
from ..kit.program import conj, is_true
from ..kit.records import Side, TemplateError
from .reasons import MIN_MAX, GroupLimitReason, PartitionWideReason


# ---------------------------------------------------------------------------
# the partition-wide form
# ---------------------------------------------------------------------------
def admits_partition_wide(kind: str, side: Side) -> bool:
    """The join kinds / sides whose template has row emits (the only emits that read a
    running MIN/MAX): all but a semi/anti join with the aggregate on the left, which emits
    the aggregate side alone (partition emits only, already final)."""
    return not (kind in ("semi", "anti") and side is Side.LEFT)


def partition_wide_program(p: Program) -> Program:
    """The partition-wide form of a Min & Join program ``p`` (the window form the template
    builds): TemplateError (:class:`PartitionWideReason`) unless ``p`` is streaming with a
    sort, i.e. its row emits read a running MIN/MAX that is final from the partition's
    first row on in that order (the ``running.step`` lemma of its proof).

    Then the form is ``p`` with memory BUFFERING and no sort: every row emit reads the
    partition's final state, so the program needs no order inside a partition (the
    compiler renders it ``f(v) OVER (PARTITION BY keys)``) at the price of buffering the
    partition — Spark's Window operator buffers it either way. Its own proof instances
    (``covers.variant`` = ``partition-wide``) prove this program, not the window form's."""
    if p.memory != STREAMING or not p.sort or not p.row_emits:
        raise TemplateError("the row emits read no running MIN/MAX (not streaming with a sort)",
                            PartitionWideReason.NO_RUNNING_STATE)
    return replace(p, memory=BUFFERING, sort=())


# ---------------------------------------------------------------------------
# the group-limit form
# ---------------------------------------------------------------------------
def admits_group_limit(kind: str, side: Side) -> bool:
    """The join kinds / sides whose template emits only matched rows (one row emit, no
    partition emit): inner on either side, and a semi join with the rows on the left."""
    return kind == "inner" or (kind == "semi" and side is Side.RIGHT)


def argument_equality(c: exp.Expr, acc: str, col: str) -> bool:
    """Is ``c`` ``[COALESCE(] row.col = acc.acc [, FALSE)]`` (either order; ``=``, not ``<=>``)?"""
    while isinstance(c, exp.Paren):
        c = c.this
    if isinstance(c, exp.Coalesce) and len(c.expressions) == 1 and isinstance(c.expressions[0], exp.Boolean) \
            and not c.expressions[0].this:
        c = c.this
        while isinstance(c, exp.Paren):
            c = c.this
    if not isinstance(c, exp.EQ):
        return False
    sides = {(x.table, x.name) for x in (c.this, c.expression) if isinstance(x, exp.Column)}
    return sides == {("row", col), ("acc", acc)}


def group_limit_program(p: Program) -> Program:
    """The group-limit form of a Min & Join program ``p`` (the window form the template
    builds): TemplateError (a :class:`GroupLimitReason`) unless ``p`` has one row emit and
    nothing else to emit, one unguarded MIN/MAX ``m`` over a bare column ``v`` sorted on
    ``v`` (streaming), and its guard requires ``row.v = acc.m``.

    Then a row is emitted only where ``v`` equals the partition's MIN/MAX — the rows of
    RANK() = 1 in ``v``'s order among the rows with ``v`` NOT NULL — and there
    ``acc.m`` = ``row.v``. The form's program puts that equality FIRST in the guard (every
    other part is evaluated only on those rows) and reads ``row.v`` wherever the window
    form reads ``acc.m``: its only state is the equality (the compiler turns it into
    ``RANK() … = 1``, ``superop.rewrite.compile``). Ties all have rank 1 (every minimum
    row joins); a NULL ``v`` never equals the aggregate; an empty group has no row."""
    if p.partition_emits or len(p.row_emits) != 1 or p.flags or p.neighbours or not p.keys:
        raise TemplateError("the program emits more than the matched rows",
                            GroupLimitReason.EMITS_MORE_THAN_MATCHED_ROWS)
    if len(p.accumulators) != 1:
        raise TemplateError("not one MIN/MAX", GroupLimitReason.NOT_ONE_BARE_MIN_MAX)
    a = p.accumulators[0]
    if a.func not in MIN_MAX or a.guard is not None or not isinstance(a.arg, exp.Column) \
            or a.arg.table != "row" or p.memory != STREAMING \
            or p.sort != (SortKey(a.arg.name, ascending=a.func == "min", nulls_first=False),):
        raise TemplateError("not one unguarded MIN/MAX over a bare column, sorted on it",
                            GroupLimitReason.NOT_ONE_BARE_MIN_MAX)
    col = a.arg.name
    (em,) = p.row_emits
    parts = filter_conjuncts(em.guard, two_valued=True)
    eqs = [c for c in parts if argument_equality(c, a.name, col)]
    if not eqs:
        raise TemplateError("no conjunct row.v = MIN/MAX(v) in the join", GroupLimitReason.NO_ARGUMENT_EQUALITY)

    def on_row(x: exp.Expr) -> exp.Expr:
        x = x.copy()
        for c in list(x.find_all(exp.Column)):
            if c.table == "acc" and c.name == a.name:
                c.replace(ref("row", col))
        return x if not (isinstance(x, exp.Column) and x.table == "acc") else ref("row", col)
    rest = [on_row(c) for c in parts if c is not eqs[0]]
    guard = conj(is_true(exp.EQ(this=ref("row", col), expression=ref("acc", a.name))), *rest)
    return Program(keys=p.keys, output=p.output, accumulators=p.accumulators, row_emits=(
        RowEmit(guard, tuple(on_row(o) for o in em.outputs)),), sort=p.sort, memory=STREAMING,
        output_types=p.output_types)
