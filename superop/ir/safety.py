"""Constructs that block a super-operator match, whatever the rule says.

A super-operator reads its shared source ONCE where the original query reads it once per
path, and evaluates the paths' edge and aggregate expressions in a different place and
order. That is only the same query when

* every expression on the match's edges, in its aggregates and in its join condition is
  deterministic (``rand()``, ``uuid()``, ``shuffle()``… give a different value per call;
  order-dependent functions such as ``first()``, ``collect_list()``, ``row_number()`` give
  a different value per evaluation order; a user-defined function's determinism is
  unknown); and
* the shared source gives the same rows each time it is read: no nondeterministic or
  order-dependent expression, no ``LIMIT`` (which rows survive is not fixed), no
  ``TABLESAMPLE``, no view hiding one of those, and no SQL superop cannot inspect.

``current_timestamp()``/``current_date()`` are fixed per query and do not block.
:func:`blocking_reason` decides; the ONE matching path (``superop.families.matching``)
turns a blocker into a near-miss with the :class:`BlockReason` as its reason, so mining
reports the reason the runtime refuses with. Pure IR: no Spark, no Z3.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from sqlglot import exp
from sqlglot.errors import SqlglotError

from .dialect import DIALECT, parse_one
from .functions import TIE_MODELLED, Determinism, risky_calls
from .lowering.exprs import has_query
from .nodes import Aggregate, Limit, Node, Opaque, Scan, expressions_of, walk
from .reasons import ReasonCode


class BlockReason(ReasonCode):
    """Why a match is refused: a near-miss reason of the matching path
    (``superop.families.matching``), the same code in mining outputs and runtime traces."""
    NONDETERMINISTIC = (
        "nondeterministic",
        "a nondeterministic expression (rand(), uuid(), ...) in the sub-plan",
        "Move rand(), uuid(), shuffle() out of the shared part: compute them above the pattern, or materialize "
        "their values once in a table.")
    ORDER_DEPENDENT = (
        "order_dependent",
        "an order-dependent function (first(), collect_list(), row_number(), a ROWS window frame, ...) in the "
        "sub-plan",
        "Use order-free functions (min/max, max_by with a tie-break, collect_set) instead of first(), "
        "collect_list(), row_number(), or a RANGE instead of a ROWS window frame.")
    UNKNOWN_FUNCTION = (
        "unknown_function",
        "a function that is not a Spark built-in (a UDF of unknown determinism)",
        "Use Spark built-ins instead of the UDF in the matched part, or apply the UDF above the pattern (after the "
        "aggregates).")
    LIMIT_IN_SOURCE = (
        "limit_in_source",
        "a LIMIT inside the shared input (which rows survive is not fixed)",
        "Move the LIMIT out of the shared input (above the pattern), or write the limited rows to a table once and "
        "read that.")
    SAMPLE_IN_SOURCE = (
        "sample_in_source",
        "a TABLESAMPLE inside the shared input",
        "Sample once into a table (CREATE TABLE ... AS SELECT ... TABLESAMPLE ...) and read that table instead.")
    VOLATILE_VIEW = (
        "volatile_view",
        "the shared input reads a view whose rows may differ per read",
        "Read a table, or a view without nondeterministic expressions, LIMIT or TABLESAMPLE inside it.")
    UNMODELED_IN_SOURCE = (
        "unmodeled_in_source",
        "SQL inside the shared input that superop cannot inspect",
        "Write the shared input as plain SELECT / WHERE / GROUP BY / JOIN / UNION ALL, or read it from a table.")
    SUBQUERY_ON_MATCH = (
        "subquery_on_match",
        "a sub-query in an edge, aggregate or join expression of the match (the super-operator's program reads only"
        " the row, keys and accumulators)",
        "Move the sub-query out of the matched expressions: join its result into the shared input as a column, or "
        "compute it in a CTE.")


_FROM_DETERMINISM = {
    Determinism.NONDETERMINISTIC: BlockReason.NONDETERMINISTIC,
    Determinism.ORDER_DEPENDENT: BlockReason.ORDER_DEPENDENT,
    Determinism.UNKNOWN: BlockReason.UNKNOWN_FUNCTION,
}


@dataclass(frozen=True)
class Blocker:
    """A refused match: the typed reason and what was found where."""
    reason: BlockReason
    detail: str

    def __str__(self) -> str:
        return f"{self.reason.value}: {self.detail}"


def _expression_blocker(e: exp.Expr, where: str, allowed: frozenset[str] = frozenset()) -> Optional[Blocker]:
    for d, name in risky_calls(e, allowed):
        return Blocker(_FROM_DETERMINISM[d], f"{name}() in {where}")
    for spec in e.find_all(exp.WindowSpec):
        if str(spec.args.get("kind") or "").upper() == "ROWS":
            return Blocker(BlockReason.ORDER_DEPENDENT, f"a ROWS window frame in {where}")
    return None


def _node_blocker(n: Node, where: str, interior: bool = False) -> Optional[Blocker]:
    # a replaced aggregate's own max_by/min_by: the verifier models their ties
    allowed = TIE_MODELLED if interior and isinstance(n, Aggregate) else frozenset()
    for e in expressions_of(n):
        b = _expression_blocker(e, f"{n.op} {where}", allowed)
        if b is not None:
            return b
    return None


def sql_blocker(sql: str, where: str) -> Optional[Blocker]:
    """For SQL carried as text (Opaque): parse it and look inside."""
    try:
        tree = parse_one(sql)
    except SqlglotError:
        return Blocker(BlockReason.UNMODELED_IN_SOURCE, f"unparsable SQL {where}")
    if tree.find(exp.TableSample) is not None:
        return Blocker(BlockReason.SAMPLE_IN_SOURCE, f"TABLESAMPLE {where}")
    if tree.find(exp.Limit, exp.Fetch) is not None:
        return Blocker(BlockReason.LIMIT_IN_SOURCE, f"LIMIT {where}")
    return _expression_blocker(tree, where)


def source_blocker(source: Node) -> Optional[Blocker]:
    """Why reading ``source`` once may not give what reading it once per path gives."""
    for n in walk(source):
        if isinstance(n, Limit):
            return Blocker(BlockReason.LIMIT_IN_SOURCE, f"LIMIT {n.limit} in the shared input")
        if isinstance(n, Opaque):
            b = sql_blocker(n.sql, "in the shared input")
        elif isinstance(n, Scan):
            b = Blocker(BlockReason.VOLATILE_VIEW, f"{n.table}: {n.volatile}") if n.volatile else None
        else:
            b = _node_blocker(n, "in the shared input")
        if b is not None:
            return b
    return None


def _subquery_blocker(n: Node) -> Optional[Blocker]:
    for e in expressions_of(n):
        if has_query(e):
            return Blocker(BlockReason.SUBQUERY_ON_MATCH,
                           f"a sub-query in {n.op} on the match: {e.sql(dialect=DIALECT)[:120]}")
    return None


def blocking_reason(interior: Iterable[Node], source: Node) -> Optional[Blocker]:
    """Why a match must not be rewritten, or None. ``interior`` are the nodes the
    super-operator replaces (root, aggregates, the operators on its edges); ``source``
    is the shared input they read."""
    for n in interior:
        if n is source:
            continue
        b = _node_blocker(n, "on the match", interior=True) or _subquery_blocker(n)
        if b is not None:
            return b
    return source_blocker(source)
