"""What superop knows about a Spark function call: is its value a function of its
arguments? One home for that knowledge (lowering, sharing, generation and the match
safety check all ask here).

* ``NONDETERMINISTIC`` — Spark's own nondeterministic expressions (``deterministic ==
  false`` in the analyzed plan; ``tests/ir/test_functions.py`` checks each against Spark),
  plus ``aes_encrypt``, which Spark marks deterministic although its default GCM mode draws
  a random IV per call. Two evaluations give two values.
* ``ORDER_DEPENDENT`` — deterministic for Spark, but the value depends on the order rows
  arrive in (after a shuffle) or on how ties are broken: ``first``/``last``,
  ``collect_list``, ``max_by``, ``row_number``, ``lag``… Two evaluations of the same
  sub-plan may disagree. ``first``/``last``/``any_value`` of a constant are deterministic;
  ``max_by``/``min_by`` depend on the order only through ties, which the verifier models
  (:data:`TIE_MODELLED`).
* ``UNKNOWN`` — not a Spark built-in (:data:`superop.ir.spark_builtins.SPARK_BUILTINS`):
  a user-defined function whose determinism superop cannot know.

``current_timestamp()``, ``current_date()``, ``now()`` are deterministic within a query
(Spark folds them once per query) and count as DETERMINISTIC.
"""
from __future__ import annotations

import contextlib
import contextvars
import enum
import re
from typing import Iterable, Iterator, Optional

from sqlglot import exp

from .spark_builtins import SPARK_BUILTINS


class Determinism(enum.Enum):
    DETERMINISTIC = "deterministic"
    NONDETERMINISTIC = "nondeterministic"
    ORDER_DEPENDENT = "order_dependent"
    UNKNOWN = "unknown"


NONDETERMINISTIC: frozenset[str] = frozenset({
    "rand", "randn", "random", "uuid", "shuffle", "monotonically_increasing_id",
    "spark_partition_id", "input_file_name", "input_file_block_start", "input_file_block_length",
    "uniform", "randstr", "reflect", "java_method", "try_reflect", "aes_encrypt",
})
ORDER_DEPENDENT: frozenset[str] = frozenset({
    "first", "last", "first_value", "last_value", "any_value", "nth_value", "collect_list",
    "collect_set", "array_agg", "listagg", "string_agg", "max_by", "min_by", "mode",
    "row_number", "ntile", "lag", "lead",
})

# Order-dependent only through ties: the payload of ONE of the rows that tie on the ordering
# value. The verifier models that choice (``superop.verify.folds.extremum_by``: one tie order
# shared by the original and the rewrite), so an aggregate node's own max_by/min_by calls do
# not block a match (``superop.ir.safety``); anywhere else they do.
TIE_MODELLED: frozenset[str] = frozenset({"max_by", "min_by"})

# sqlglot parses some Spark names into typed nodes; their Spark names:
_CLASS_NAMES: dict[type[exp.Expr], str] = {
    exp.Rand: "rand", exp.Randn: "randn", exp.Uuid: "uuid", exp.Shuffle: "shuffle",
    exp.Uniform: "uniform", exp.Randstr: "randstr", exp.First: "first", exp.Last: "last",
    exp.FirstValue: "first_value", exp.LastValue: "last_value", exp.AnyValue: "any_value",
    exp.NthValue: "nth_value", exp.ArrayAgg: "collect_list", exp.ArrayUniqueAgg: "collect_set",
    exp.GroupConcat: "listagg", exp.ArgMax: "max_by", exp.ArgMin: "min_by", exp.Mode: "mode",
    exp.RowNumber: "row_number", exp.Ntile: "ntile", exp.Lag: "lag", exp.Lead: "lead",
}

_NAME_RE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def call_name(f: exp.Expr) -> Optional[str]:
    """The Spark name of a function call node (lowercase), None for non-calls. Typed
    sqlglot nodes without a special meaning here return their sqlglot name."""
    if isinstance(f, (exp.Anonymous, exp.AnonymousAggFunc)):
        return str(f.name).lower()
    if isinstance(f, exp.Func):
        for cls, name in _CLASS_NAMES.items():
            if isinstance(f, cls):
                return name
        return f.sql_name().lower()
    return None


# functions a caller declares deterministic for a block (the uninterpreted functions of the
# template proofs' symbolic instances: "every deterministic predicate", by construction)
_DECLARED: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("superop_declared", default=frozenset())


@contextlib.contextmanager
def declared_deterministic(names: Iterable[str]) -> Iterator[None]:
    """Within the block, calls of ``names`` (not Spark built-ins) count as DETERMINISTIC."""
    token = _DECLARED.set(_DECLARED.get() | {n.lower() for n in names})
    try:
        yield
    finally:
        _DECLARED.reset(token)


def classify_name(name: str) -> Determinism:
    n = name.lower()
    if n in _DECLARED.get():
        return Determinism.DETERMINISTIC
    if n in NONDETERMINISTIC:
        return Determinism.NONDETERMINISTIC
    if n in ORDER_DEPENDENT:
        return Determinism.ORDER_DEPENDENT
    if n not in SPARK_BUILTINS:
        return Determinism.UNKNOWN
    return Determinism.DETERMINISTIC


# order-dependent aggregates whose value is fixed when their argument is a constant
_CONSTANT_SAFE = frozenset({"first", "last", "first_value", "last_value", "any_value"})


def classify_call(f: exp.Expr) -> Determinism:
    """Determinism of one call node (its arguments not included). ``first('High')`` (any
    row's value of a constant) is DETERMINISTIC."""
    name = call_name(f)
    if name is None:
        return Determinism.DETERMINISTIC
    if name in _CONSTANT_SAFE and isinstance(f.this, (exp.Literal, exp.Null, exp.Boolean)) \
            and not any(v is not None for k, v in f.args.items() if k != "this"):
        return Determinism.DETERMINISTIC
    d = classify_name(name)
    if d is Determinism.UNKNOWN and not isinstance(f, (exp.Anonymous, exp.AnonymousAggFunc)):
        # a call sqlglot parsed into a typed node is a Spark built-in (sqlglot's name for
        # it may differ from Spark's, e.g. APPROX_QUANTILE for percentile_approx)
        return Determinism.DETERMINISTIC
    return d


def risky_calls(e: exp.Expr, allowed: frozenset[str] = frozenset()) -> Iterator[tuple[Determinism, str]]:
    """(determinism, name) of every call in ``e`` that is not DETERMINISTIC (calls named in
    ``allowed`` are skipped; their arguments are not)."""
    for n in e.walk():
        d = classify_call(n)
        if d is not Determinism.DETERMINISTIC and call_name(n) not in allowed:
            yield d, call_name(n) or n.key


def is_nondeterministic_expr(e: exp.Expr) -> bool:
    """The expression calls a function whose value may differ per call (rand(), uuid(),
    a UDF of unknown determinism counts too)."""
    return any(d in (Determinism.NONDETERMINISTIC, Determinism.UNKNOWN) for d, _ in risky_calls(e))


def nondeterministic_in_sql(sql: str) -> bool:
    """Conservative text check for SQL carried as a string (Opaque nodes)."""
    return any(m.group(1).lower() in NONDETERMINISTIC for m in _NAME_RE.finditer(sql))
