"""The super-operator DSL: the programs of the paper's Fig. 7-12 as data.

A program reads ONE input relation (the shared source of the sub-plan) and runs per
partition (rows with equal ``keys``; NULL keys form their own partition, as GROUP BY).
A program without keys (``keys == ()``) has exactly ONE partition, the whole input, and
that partition exists even when the input is empty — as ``GROUP BY ()``: a global
aggregate yields one row over no rows (count 0, sum/min/max/avg NULL). A keyed program
has one partition per distinct key and none over an empty input.

1. ``sort``   – optional order of the rows within the partition.
2. fold       – every :class:`Accumulator` folds the rows where its ``guard`` is TRUE
                (SQL aggregate semantics: NULL arguments are ignored; sum/min/max/avg of
                no value is NULL, count is 0); every :class:`Flag` becomes TRUE iff some
                row satisfies its guard (the paper's emptiness flags ``out_i``).
3. emit       – :class:`PartitionEmit`: once per partition after the fold, when its guard
                is TRUE (UNION ALL branches, join outputs); :class:`RowEmit`: once per row
                in sort order (join-back outputs).

Neighbours. A :class:`Neighbour` ``nb.<name>`` is, for the current row, the value of its
``arg`` on the row ``offset`` positions away in the partition's sort order (negative:
before, positive: after), NULL when the partition has no such row — SQL's LAG / LEAD over
``PARTITION BY keys ORDER BY sort``. Row emits may read it. Positions need a sort order
that is total within each partition; ties are broken by input order in the reference
semantics, while Spark's LAG/LEAD break them arbitrarily, so a program reading neighbours
is only meaningful on inputs whose sort columns are unique per partition — which a
:class:`RowNumber` precondition states. A presence marker is a neighbour whose ``arg`` is
TRUE: it is NULL exactly when there is no such row (a neighbour's value may be NULL too).

Preconditions. ``requires`` lists properties of the INPUT the program's equivalence with
its sub-plan relies on (:class:`RowNumber`: a column numbers the rows of each partition
1..n; :class:`~superop.ir.keys.Determines`: rows that agree on some columns agree on
others — a declared key's consequence). They do not change what the program computes; the verifier proves equivalence
for every input that satisfies them, the reference interpreter refuses an input that
does not, and the family that built the program must establish them for the source it
runs on (e.g. a ``row_number()`` of that source).

Names inside expressions (sqlglot) are qualified by their namespace:
``row.<col>`` an input column of the current row, ``key.<col>`` a partition key,
``acc.<name>`` an accumulator, ``flag.<name>`` a flag, ``nb.<name>`` a neighbour.

Memory class. ``streaming`` means a :class:`RowEmit` sees the accumulators' *running*
values (folded up to and including the current row): the program needs constant state
per partition. ``buffering`` means it sees the *final* values, which needs the partition
buffered. Partition emits always see final values. Whether a streaming program is right
is therefore a semantic question that the verifier decides (e.g. a running min over a
partition sorted on that column equals the final min; a running min under a guard does not
— the paper's Fig. 13).

Errors (ANSI mode: division by zero, overflow, invalid casts). An expression is
evaluated only where the program says so, and an error aborts the whole run:

* an accumulator's ``arg`` only on rows where its ``guard`` is TRUE (a flag's and an
  accumulator's guard on every row of the partition);
* an emit's ``outputs`` only when its ``guard`` is TRUE (a partition emit once per
  partition, a row emit once per row);
* a guard is evaluated left to right: in ``a AND b``, ``b`` only where ``a`` is not
  FALSE (``COALESCE(x, FALSE)`` evaluates ``x``).

The families' templates (``superop.families``, built with ``superop.families.kit.program``)
put the conditions under which the original query evaluates an expression first (the
path's emptiness flag, then its upper filter), so a program evaluates a partial
expression only where the original does; the native compiler (``superop.runtime.compile``)
keeps that order in Spark (outputs as ``CASE WHEN guard THEN output END``). The verifier
is to model errors as outcomes with these rules (issue 11 item 5, the proofs engineer).

This module is pure data + printing; it imports neither Spark nor Z3.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Union

import sqlglot
from sqlglot import exp

from ..ir.dependencies import Determines
from ..ir.dialect import DIALECT

AGG_FUNCS = ("count_star", "count", "sum", "min", "max", "avg", "count_distinct", "count_distinct_sorted",
             "max_by", "min_by", "stddev_samp", "var_samp")
# sample standard deviation / variance (Spark's stddev_samp / var_samp and their aliases
# stddev / variance): a constant state (count, sum, sum of squares) of the non-NULL values;
# NULL for fewer than 2 of them. The verifier leaves the final function of that state
# uninterpreted (:mod:`superop.verify.folds`)
MOMENT_FUNCS = ("stddev_samp", "var_samp")
# ARGMAX / ARGMIN: ``arg`` is the pair (payload, ordering), see :func:`by_parts`
BY_FUNCS = ("max_by", "min_by")
# the accumulators that keep a set of values per partition (not constant state)
SET_FUNCS = ("count_distinct",)
NAMESPACES = ("row", "key", "acc", "flag", "nb")
STREAMING, BUFFERING = "streaming", "buffering"


def e(sql: str) -> exp.Expr:
    """Parse a DSL expression written in Spark SQL, e.g. ``e("row.s < 100")``."""
    return sqlglot.parse_one(sql, dialect=DIALECT)


def ref(ns: str, name: str) -> exp.Column:
    assert ns in NAMESPACES, ns
    return exp.column(name, ns)


def _sql(x: Optional[exp.Expr]) -> str:
    return "TRUE" if x is None else x.sql(dialect=DIALECT)


class NoAccumulator(ValueError):
    """An SQL aggregate call the DSL has no accumulator for."""


_FOLDS = ((exp.Sum, "sum"), (exp.Min, "min"), (exp.Max, "max"), (exp.Avg, "avg"),
          # Spark: stddev = stddev_samp, variance = var_samp (sqlglot parses var_samp as Variance)
          (exp.StddevSamp, "stddev_samp"), (exp.Stddev, "stddev_samp"), (exp.Variance, "var_samp"))
_BY = ((exp.ArgMax, "max_by"), (exp.ArgMin, "min_by"))


def _constant(x: Optional[exp.Expr]) -> bool:
    return isinstance(x, (exp.Literal, exp.Null, exp.Boolean))


def by_pair(payload: exp.Expr, ordering: exp.Expr) -> exp.Tuple:
    """The argument of a ``max_by`` / ``min_by`` accumulator: ``(payload, ordering)``."""
    return exp.Tuple(expressions=[payload, ordering])


def by_parts(arg: exp.Expr) -> tuple[exp.Expr, exp.Expr]:
    """(payload, ordering) of a ``max_by`` / ``min_by`` accumulator's argument."""
    if not isinstance(arg, exp.Tuple) or len(arg.expressions) != 2:
        raise ValueError(f"max_by/min_by argument is not a (payload, ordering) pair: {_sql(arg)}")
    return arg.expressions[0], arg.expressions[1]


def accumulator_call(node: exp.AggFunc) -> tuple[str, Optional[exp.Expression]]:
    """An SQL aggregate call as (accumulator function of AGG_FUNCS, its argument); raises
    :class:`NoAccumulator` when the DSL cannot fold it."""
    if isinstance(node, exp.Count):
        arg = node.this
        if arg is None or isinstance(arg, exp.Star):
            return "count_star", None
        if isinstance(arg, exp.Distinct):
            if len(arg.expressions) != 1:
                raise NoAccumulator("COUNT(DISTINCT) over several columns")
            return "count_distinct", arg.expressions[0]
        return "count", arg
    for cls, name in _FOLDS:
        if type(node) is cls:
            if isinstance(node.this, exp.Distinct):
                raise NoAccumulator(f"{name.upper()}(DISTINCT)")
            return name, node.this
    if type(node) in (exp.First, exp.Last, exp.AnyValue) and _constant(node.this):
        # first/last/any_value of a constant (Fig. 15's FIRST("High")): the constant when
        # the group has a row, NULL when it has none — the value max() folds to
        return "max", node.this
    for cls, name in _BY:
        if type(node) is cls:
            if node.args.get("count") is not None or node.expression is None:
                raise NoAccumulator(f"{node.sql(dialect=DIALECT)}: {name} takes (payload, ordering) only")
            return name, by_pair(node.this.copy(), node.expression.copy())
    raise NoAccumulator(f"aggregate {node.sql(dialect=DIALECT)} has no accumulator")


@dataclass(frozen=True)
class Accumulator:
    """``func`` over ``arg`` on the rows where ``guard`` is TRUE.

    ``count_distinct`` keeps the set of its non-NULL values (buffering state).
    ``count_distinct_sorted`` keeps (last value, count): it counts the *runs* of equal
    non-NULL values in the partition's sort order — a new value adds one when it differs
    from the last counted one. That equals COUNT(DISTINCT arg) exactly when equal values
    are adjacent among the guarded rows, i.e. when the program's first sort key is the
    argument (:func:`sort_distinct` builds such programs; the verifier proves the equality,
    it does not assume it).

    ``max_by`` / ``min_by`` (ARGMAX / ARGMIN, Spark's ``max_by(x, ord)``) take the pair
    ``arg = (x, ord)`` (:func:`by_parts`) and keep (best ordering value, its payload): rows
    whose ordering value is NULL are skipped, a NULL payload is kept, no row gives NULL.
    Rows that tie on the best ordering value give one of their payloads — which one is
    not fixed (Spark keeps the last one it reads); the reference interpreter keeps the
    last in its reading order, the verifier proves an equivalence for EVERY order in which
    ties are resolved (the same order for the original and the program,
    :func:`superop.verify.folds.extremum_by`)."""
    name: str
    func: str                                  # one of AGG_FUNCS
    arg: Optional[exp.Expr] = None       # over row.*; None only for count_star
    guard: Optional[exp.Expr] = None     # over row.*; None = TRUE

    def __post_init__(self):
        if self.func not in AGG_FUNCS:
            raise ValueError(f"unknown aggregate {self.func!r}")
        if (self.arg is None) != (self.func == "count_star"):
            raise ValueError(f"{self.func} {'needs' if self.arg is None else 'takes no'} argument")
        if self.func in BY_FUNCS:
            by_parts(self.arg)

    def pretty(self) -> str:
        fn = "count(*)" if self.func == "count_star" else (
            f"count(distinct {_sql(self.arg)})" if self.func == "count_distinct"
            else f"count(distinct {_sql(self.arg)}) [runs in sort order]" if self.func == "count_distinct_sorted"
            else f"{self.func}{_sql(self.arg)}" if self.func in BY_FUNCS
            else f"{self.func}({_sql(self.arg)})")
        g = f" if {_sql(self.guard)}" if self.guard is not None else ""
        return f"{self.name} = {fn}{g}"


@dataclass(frozen=True)
class Flag:
    name: str
    guard: Optional[exp.Expr] = None     # over row.*; None = TRUE

    def pretty(self) -> str:
        return f"{self.name} = exists row: {_sql(self.guard)}"


@dataclass(frozen=True)
class Neighbour:
    """``nb.<name>``: ``arg`` (over row.*) on the row ``offset`` positions away in the
    partition's sort order (< 0: before, as LAG; > 0: after, as LEAD); NULL if none."""
    name: str
    offset: int
    arg: exp.Expression

    def __post_init__(self):
        if not isinstance(self.offset, int) or self.offset == 0:
            raise ValueError("a neighbour's offset is a non-zero integer")

    def pretty(self) -> str:
        fn = "lag" if self.offset < 0 else "lead"
        return f"{self.name} = {fn}({_sql(self.arg)}, {abs(self.offset)})"


@dataclass(frozen=True)
class RowNumber:
    """Precondition on the input: within every partition on ``partition`` (NULL-safe, as
    the program's keys), ``column`` takes the values 1..n once each (n = the partition's
    row count) — it numbers the rows, as ``row_number()`` does."""
    column: str
    partition: tuple[str, ...]

    def pretty(self) -> str:
        return f"requires {self.column} = row number within ({', '.join(self.partition)})"

    def reads(self) -> tuple[str, ...]:
        return (self.column, *self.partition)

    def to_json(self) -> dict:
        return {"row_number": self.column, "partition": list(self.partition)}


Precondition = Union[RowNumber, Determines]   # Determines: a declared key (superop.ir.keys)


def precondition_from_json(d: dict) -> Precondition:
    if "row_number" in d:
        return RowNumber(d["row_number"], tuple(d["partition"]))
    return Determines.from_json(d)


@dataclass(frozen=True)
class PartitionEmit:
    guard: Optional[exp.Expr]            # over key.*, acc.*, flag.*
    outputs: tuple[exp.Expr, ...]

    def pretty(self) -> str:
        return f"if {_sql(self.guard)}: OUT({', '.join(_sql(o) for o in self.outputs)})"


@dataclass(frozen=True)
class RowEmit:
    guard: Optional[exp.Expr]            # over row.*, key.*, acc.*, flag.*
    outputs: tuple[exp.Expr, ...]

    def pretty(self) -> str:
        return f"for each row: if {_sql(self.guard)}: OUT({', '.join(_sql(o) for o in self.outputs)})"


@dataclass(frozen=True)
class SortKey:
    column: str                                # an input column
    ascending: bool = True
    nulls_first: bool = False

    def pretty(self) -> str:
        return f"{self.column} {'ASC' if self.ascending else 'DESC'} NULLS {'FIRST' if self.nulls_first else 'LAST'}"


def distinct_sort_obstacle(accumulators: tuple[Accumulator, ...], sort: tuple[SortKey, ...] = (),
                           row_emits: bool = False) -> Optional[str]:
    """Why the COUNT(DISTINCT) accumulators cannot all run as the constant-state sorted
    fold (None: they can, or there are none). The fold needs the partition sorted on the
    argument right after the keys, so every distinct argument must be the SAME bare input
    column, first in any sort order the program already has; a program with row emits
    keeps the sort order its running values need."""
    args = [a.arg for a in accumulators if a.func == "count_distinct"]
    if not args:
        return None
    if row_emits:
        return "COUNT(DISTINCT) in a program with row emits (its sort order is for the running values)"
    cols = {(x.table, x.name) if isinstance(x, exp.Column) else None for x in args}
    if None in cols:
        bad = next(x for x in args if not isinstance(x, exp.Column))
        return f"COUNT(DISTINCT {_sql(bad)}): the argument is not an input column, no sort order provides it"
    if len(cols) > 1:
        return ("COUNT(DISTINCT) over " + ", ".join(sorted(n for _, n in cols))
                + ": one sort order cannot make two columns' equal values adjacent")
    (_, col), = cols
    if sort and sort[0].column != col:
        return f"the program is sorted on {sort[0].column}, not on the distinct argument {col}"
    return None


def sort_distinct(program: "Program") -> "Program":
    """The program with its COUNT(DISTINCT x) accumulators as the constant-state sorted
    fold (``count_distinct_sorted``) and ``x`` its first sort key — when
    :func:`distinct_sort_obstacle` finds none; else the program unchanged (buffering)."""
    accs = program.accumulators
    if not any(a.func == "count_distinct" for a in accs) or distinct_sort_obstacle(
            accs, program.sort, bool(program.row_emits) or bool(program.neighbours)) is not None:
        return program
    col = next(a.arg for a in accs if a.func == "count_distinct")
    assert isinstance(col, exp.Column)
    sort = program.sort or (SortKey(col.name),)
    new = tuple(Accumulator(a.name, "count_distinct_sorted", a.arg, a.guard) if a.func == "count_distinct" else a
                for a in accs)
    return replace(program, accumulators=new, sort=sort, memory=STREAMING)


@dataclass(frozen=True)
class Program:
    keys: tuple[str, ...]                       # partition keys: input column names
    output: tuple[str, ...]                     # output column names, in order
    accumulators: tuple[Accumulator, ...] = ()
    flags: tuple[Flag, ...] = ()
    partition_emits: tuple[PartitionEmit, ...] = ()
    row_emits: tuple[RowEmit, ...] = ()
    sort: tuple[SortKey, ...] = ()
    memory: str = STREAMING
    output_types: tuple[str, ...] = ()          # optional Spark types, for NULL outputs
    neighbours: tuple[Neighbour, ...] = ()      # nb.* (LAG / LEAD in sort order)
    requires: tuple[Precondition, ...] = ()     # preconditions on the input

    def __post_init__(self):
        if self.memory not in (STREAMING, BUFFERING):
            raise ValueError(f"memory class must be {STREAMING} or {BUFFERING}")
        names = [a.name for a in self.accumulators] + [f.name for f in self.flags] + \
            [n.name for n in self.neighbours]
        if len(set(names)) != len(names):
            raise ValueError("accumulator/flag/neighbour names must be unique")
        if self.neighbours and not self.sort:
            raise ValueError("neighbours need a sort order (positions in the partition)")
        for em in self.partition_emits + self.row_emits:
            if len(em.outputs) != len(self.output):
                raise ValueError("every emit must produce one value per output column")

    @property
    def size(self) -> int:
        """A size measure for smallest-first search: statements + expression nodes."""
        n = len(self.accumulators) + len(self.flags) + len(self.partition_emits) + len(self.row_emits)
        n += len(self.sort) + len(self.neighbours)
        for a in self.accumulators:
            n += sum(1 for _ in a.arg.walk()) if a.arg is not None else 0
            n += sum(1 for _ in a.guard.walk()) if a.guard is not None else 0
        for f in self.flags:
            n += sum(1 for _ in f.guard.walk()) if f.guard is not None else 0
        for em in self.partition_emits + self.row_emits:
            n += sum(1 for _ in em.guard.walk()) if em.guard is not None else 0
        return n

    def pretty(self, name: str = "SuperOp") -> str:
        lines = [f"{name}(partition by {', '.join(self.keys)}"
                 + (f"; sort by {', '.join(s.pretty() for s in self.sort)}" if self.sort else "")
                 + f") [{self.memory}] -> ({', '.join(self.output)})"]
        for a in self.accumulators:
            lines.append("  " + a.pretty())
        for f in self.flags:
            lines.append("  " + f.pretty())
        for nb in self.neighbours:
            lines.append("  " + nb.pretty())
        for c in self.requires:
            lines.append("  " + c.pretty())
        for r in self.row_emits:
            lines.append("  " + r.pretty())
        for p in self.partition_emits:
            lines.append("  " + p.pretty())
        return "\n".join(lines)

    def to_json(self) -> dict:
        s = lambda x: None if x is None else x.sql(dialect=DIALECT)  # noqa: E731
        out = {
            "keys": list(self.keys), "output": list(self.output),
            "output_types": list(self.output_types), "memory": self.memory,
            "sort": [{"column": k.column, "ascending": k.ascending, "nulls_first": k.nulls_first}
                     for k in self.sort],
            "accumulators": [{"name": a.name, "func": a.func, "arg": s(a.arg), "guard": s(a.guard)}
                             for a in self.accumulators],
            "flags": [{"name": f.name, "guard": s(f.guard)} for f in self.flags],
            "partition_emits": [{"guard": s(p.guard), "outputs": [s(o) for o in p.outputs]}
                                for p in self.partition_emits],
            "row_emits": [{"guard": s(r.guard), "outputs": [s(o) for o in r.outputs]}
                          for r in self.row_emits],
        }
        # new constructs only when used: the JSON (and hash) of every other program is unchanged
        if self.neighbours:
            out["neighbours"] = [{"name": n.name, "offset": n.offset, "arg": s(n.arg)} for n in self.neighbours]
        if self.requires:
            out["requires"] = [c.to_json() for c in self.requires]
        return out

    @staticmethod
    def from_json(d: dict) -> "Program":
        p = lambda x: None if x is None else e(x)  # noqa: E731
        return Program(
            keys=tuple(d["keys"]), output=tuple(d["output"]),
            output_types=tuple(d.get("output_types", ())), memory=d.get("memory", STREAMING),
            sort=tuple(SortKey(k["column"], k.get("ascending", True), k.get("nulls_first", False))
                       for k in d.get("sort", ())),
            accumulators=tuple(Accumulator(a["name"], a["func"], p(a.get("arg")), p(a.get("guard")))
                               for a in d.get("accumulators", ())),
            flags=tuple(Flag(f["name"], p(f.get("guard"))) for f in d.get("flags", ())),
            partition_emits=tuple(PartitionEmit(p(x.get("guard")), tuple(e(o) for o in x["outputs"]))
                                  for x in d.get("partition_emits", ())),
            row_emits=tuple(RowEmit(p(x.get("guard")), tuple(e(o) for o in x["outputs"]))
                            for x in d.get("row_emits", ())),
            neighbours=tuple(Neighbour(n["name"], int(n["offset"]), e(n["arg"]))
                             for n in d.get("neighbours", ())),
            requires=tuple(precondition_from_json(c) for c in d.get("requires", ())),
        )
