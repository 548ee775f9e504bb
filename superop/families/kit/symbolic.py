"""The proof kit of the family declarations: pieces of the symbolic instances that
:meth:`~superop.families.kit.family.Family.proof_instances` returns (pure SQL text; no Z3).

A symbolic instance is SQL over ``t(k, a, b)`` whose edge predicates and projections are
calls of functions nobody defines — ``p1(k, a, b)``, ``f12(k, a, b)``, ``q1(k, c, n, ...)``,
``g1(...)``, ``theta(...)`` — declared with their result type. sqlglot parses them as
``exp.Anonymous``; the verifier encodes each as an uninterpreted function (value,
NULL-ness and *error* each an arbitrary function of the arguments), so a proof about the
instance holds for every deterministic predicate and projection, including partial ones
that raise.

Why one σ and one π per edge cover every σ/π/ρ chain: a template reads an edge only
through Algorithm 5 (``capture_parameters``: one summary predicate φ and one projection π
over the edge's bottom), and a chain σ_a π σ_b evaluates exactly like σ_φ with
φ = a AND b∘π (the same rows, the same expressions evaluated on them, AND short-circuiting
as the chain filters). Instantiating the uninterpreted φ and π with those compositions
turns the instance into the chain.
"""
from __future__ import annotations

from .planting import JOIN_SQL

SCHEMA: dict[str, dict[str, str]] = {"t": {"k": "int", "a": "int", "b": "int"}}

# the folds of one aggregate branch: every streaming fold, each over its own projection
_AGG_ITEMS = ("count(*) AS c", "count({f}1(k, a, b)) AS n", "sum({f}2(k, a, b)) AS s",
              "min({f}3(k, a, b)) AS mn", "max({f}4(k, a, b)) AS mx", "avg({f}5(k, a, b)) AS av")
_AGG_COLS = "k, c, n, s, mn, mx, av"

COMMON_ASSUMPTIONS: tuple[str, ...] = (
    "one grouping key column (k INT); the proof uses only NULL-safe equality of keys, the "
    "encoding every key type shares",
    "aggregate arguments of type INT; the folds treat every argument type alike (min/max in the "
    "type's order, sum/avg over numbers)",
    "edge predicates and projections are deterministic: each is an arbitrary (uninterpreted) "
    "function of its inputs, which may return NULL or raise",
    "ANSI mode: errors are outcomes; the program may not raise where the query does not",
    "emit outputs are evaluated only where the emit's guard holds (the DSL's semantics; the "
    "emitted SQL must preserve it, see each bounded certificate's emitted_sql)",
    "σ/π/ρ chains on an edge reduce to one σ and one π over the edge's bottom (Algorithm 5: "
    "the template reads an edge only through its summary predicate and projection)",
)
SUBSET_OF_FOLDS = ("a query aggregating with a subset of these functions, or with several calls of one, "
                   "is this instance with the other calls' projections never raising and ignored by the "
                   "upper edge: every accumulator folds independently and the upper edges are arbitrary "
                   "functions of the aggregates")


# COUNT(DISTINCT a): the program folds it sorted on ``a`` (every branch counts the same
# bare column, so one sort order serves them all: superop.dsl.sort_distinct)
_DISTINCT_ITEM = "count(DISTINCT a) AS cd"
DISTINCT_FOLD = "count_distinct_sorted"
DISTINCT_ASSUMPTIONS = (
    "COUNT(DISTINCT) of one input column, the same in every branch (what lets the program sort "
    "its partitions on that column and count runs of equal values in constant state); the plan's "
    "COUNT(DISTINCT) is the size of the set of non-NULL values a group folds",
)


def aggregate_branch(i: int, out: str, distinct: bool = False) -> str:
    """Branch ``i``: σ ``p{i}`` and one projection per fold below a GROUP BY k of every
    streaming fold (and ``count(DISTINCT a)`` with ``distinct``), then σ ``q{i}`` and π
    ``g{i}`` over the key and every aggregate."""
    items = ", ".join([x.format(f=f"f{i}") for x in _AGG_ITEMS] + ([_DISTINCT_ITEM] if distinct else []))
    cols = _AGG_COLS + (", cd" if distinct else "")
    return (f"SELECT k, g{i}({cols}) AS {out} FROM (SELECT k, {items} FROM t "
            f"WHERE p{i}(k, a, b) GROUP BY k) u{i} WHERE q{i}({cols})")


def aggregate_branch_functions(i: int) -> dict[str, str]:
    fs = {f"p{i}": "bool", f"q{i}": "bool", f"g{i}": "int"}
    fs.update({f"f{i}{j}": "int" for j in range(1, 6)})
    return fs


# -- global aggregates (a product of one-row aggregates) --------------------------------
_GLOBAL_COLS = "c, n, s, mn, mx, av"
GLOBAL_ASSUMPTIONS = (
    "no grouping key: every input row is in the one partition, which exists (and emits its "
    "one row) also over an empty input",
)


def global_branch(i: int, out: str, distinct: bool = False) -> str:
    """Branch ``i`` of a product of global aggregates: σ ``p{i}`` and one projection per fold
    below an aggregate without GROUP BY of every streaming fold (and ``count(DISTINCT a)``
    with ``distinct``), then σ ``q{i}`` (a HAVING: it may drop the branch's one row) and π
    ``g{i}`` over the aggregates."""
    items = ", ".join([x.format(f=f"f{i}") for x in _AGG_ITEMS] + ([_DISTINCT_ITEM] if distinct else []))
    cols = _GLOBAL_COLS + (", cd" if distinct else "")
    return (f"SELECT g{i}({cols}) AS {out} FROM (SELECT {items} FROM t "
            f"WHERE p{i}(k, a, b)) u{i} WHERE q{i}({cols})")


def global_branch_functions(i: int) -> dict[str, str]:
    return aggregate_branch_functions(i)


# -- a ranked view joined to itself at rank offsets ----------------------------------------
NEIGHBOUR_SCHEMA: dict[str, dict[str, str]] = {"t": {"k": "int", "o": "int", "a": "int"}}
# the view: one row per (k, o), ranked by o within k — no ties, so rn numbers each
# partition's rows 1..n (what the family's match establishes as the program's precondition)
_VIEW = ("WITH v AS (SELECT k, o, s, rank() OVER (PARTITION BY k ORDER BY o) AS rn "
         "FROM (SELECT k, o, sum(a) AS s FROM t GROUP BY k, o) g) ")
NEIGHBOUR_ASSUMPTIONS = (
    "one partition column (k INT); the proof uses only NULL-safe equality of it and an equi-join "
    "on it, whatever its type",
    "the view's rank numbers the rows of each partition 1..n (RowNumber, the precondition the "
    "family's match establishes: a rank whose ORDER BY cannot tie): the row at sort offset d from a "
    "row is the one row of its partition whose rank is the row's + d",
    "every view column is an arbitrary value: the proof reads the view as a table of its columns "
    "under that precondition, so it holds for every view that satisfies it",
    "edge predicates, projections and the join residuals are deterministic: each is an arbitrary "
    "(uninterpreted) function of its inputs, which may return NULL or raise",
    "ANSI mode: errors are outcomes; the program may not raise where the query does not",
    "σ/π/ρ chains on a use's edge reduce to one σ and one π over the view (Algorithm 5)",
)


# the same without a partition: the whole view ranked by o
_WHOLE_VIEW = ("WITH v AS (SELECT k, o, s, rank() OVER (ORDER BY k, o) AS rn "
               "FROM (SELECT k, o, sum(a) AS s FROM t GROUP BY k, o) g) ")


def neighbour_use(i: int) -> str:
    """Use ``i`` of the view: σ ``p{i}`` and π ``f{i}`` (the rank and the partition column
    pass through, as the join needs them)."""
    return f"(SELECT k, rn, f{i}(k, o, s, rn) AS y{i} FROM v WHERE p{i}(k, o, s, rn)) u{i}"


def neighbour_instance(uses: list[tuple[str, int]], partitioned: bool = True) -> tuple[str, dict[str, str]]:
    """(SQL, functions) of the centre joined to one use per (join kind, rank offset d):
    ``ON u0.k = u_i.k AND u0.rn = u_i.rn - d AND theta{i}(u0.y0, u_i.y_i)`` (without a
    partition: no ``u0.k = u_i.k``, the rank over the whole view)."""
    cols = ", ".join(["u0.k", "u0.y0"] + [f"u{i}.y{i}" for i in range(1, len(uses) + 1)])
    sql = f"{_VIEW if partitioned else _WHOLE_VIEW}SELECT {cols} FROM {neighbour_use(0)}"
    fns = {"f0": "int", "p0": "bool"}
    for i, (kind, d) in enumerate(uses, start=1):
        off = f"- {d}" if d > 0 else f"+ {-d}"
        on = f"u0.k = u{i}.k AND " if partitioned else ""
        sql += (f" {JOIN_SQL[kind]} {neighbour_use(i)} ON {on}u0.rn = u{i}.rn {off} "
                f"AND theta{i}(u0.y0, u{i}.y{i})")
        fns.update({f"f{i}": "int", f"p{i}": "bool", f"theta{i}": "bool"})
    return sql, fns
