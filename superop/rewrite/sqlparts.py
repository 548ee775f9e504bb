"""The SQL pieces every native form of a super-operator program is built from: internal
names, guarded aggregates and flags, typed NULLs, partial cells under their guards, and the
emission of 0..n rows per group or row (a ``WHERE`` for one emit, else
``inline(filter(array(struct(..))))``). ``superop.rewrite.compile`` explains the forms.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Optional, Sequence

from sqlglot import exp

from ..dsl import BY_FUNCS, Program, by_parts
from ..ir.conjuncts import filter_conjuncts
from ..ir.dialect import DIALECT
from ..ir.names import ident

P = "__so_"          # prefix of every internal name (cannot clash with the source's columns)


class NoNativeForm(Exception):
    """The program has no Spark-native (single-exchange SQL) form; use run_generic."""


def quote(name: str) -> str:
    return ident(name).sql(dialect=DIALECT)


def sql_of(e: exp.Expression) -> str:
    return e.sql(dialect=DIALECT)


def subst(e: Optional[exp.Expression], mapping) -> Optional[exp.Expression]:
    """Replace ``ns.name`` references by ``mapping(ns, name)`` (an expression)."""
    if e is None:
        return None
    e = e.copy()
    if isinstance(e, exp.Column) and e.table:
        return mapping(e.table, e.name)
    for c in list(e.find_all(exp.Column)):
        if c.table:
            c.replace(mapping(c.table, c.name))
    return e


def col(name: str, table: Optional[str] = None) -> exp.Column:
    return exp.Column(this=ident(name), table=ident(table) if table else None)


class Names:
    def __init__(self, program: Program):
        self.acc = {a.name: f"{P}a_{a.name}" for a in program.accumulators}
        self.flag = {f.name: f"{P}f_{f.name}" for f in program.flags}

    def partition_ref(self, ns: str, name: str) -> exp.Column:
        """A partition emit's ``key.*``/``acc.*``/``flag.*`` as a column of the GROUP BY /
        window output (final values)."""
        if ns == "key":
            return col(name)
        if ns == "acc":
            return col(self.acc[name])
        if ns == "flag":
            return col(self.flag[name])
        raise ValueError(f"{ns}.{name} is not allowed in a partition emit")


def agg_sql(func: str, arg: Optional[exp.Expression], guard: Optional[exp.Expression], over: str = "") -> str:
    """A guarded aggregate (``over`` makes it a window aggregate). count(DISTINCT) is
    ``size(collect_set(..))``: same value (NULLs ignored, 0 for none) but a plain
    aggregate, so Spark needs no second exchange for it and it works over windows."""
    g = None if guard is None else sql_of(guard)
    ov = f" {over}" if over else ""
    if func == "count_star":
        return (f"count(1){ov}" if g is None else f"count(CASE WHEN {g} THEN 1 END){ov}")
    if func in BY_FUNCS:
        # max_by(x, o) ignores rows whose o is NULL: the guard goes on the ordering, so a
        # row outside it never wins; on the payload too, so Spark never evaluates x there
        # (a partial x only under its guard). No guarded row: NULL, as the fold.
        pay, order = (sql_of(x) for x in by_parts(arg))
        if g is None:
            return f"{func}({pay}, {order}){ov}"
        return f"{func}(CASE WHEN {g} THEN {pay} END, CASE WHEN {g} THEN {order} END){ov}"
    a = sql_of(arg)
    val = a if g is None else f"CASE WHEN {g} THEN {a} END"
    if func in ("count_distinct", "count_distinct_sorted"):
        # the sorted fold (runs of equal values in the program's sort order on its
        # argument) has the same value; Spark computes it from the set
        return f"CAST(size(collect_set({val}){ov}) AS BIGINT)"
    return f"{func}({val}){ov}"


NULL_INTOLERANT = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)   # not <=> (NullSafeEQ)


def unparen(x: exp.Expression) -> exp.Expression:
    while isinstance(x, exp.Paren):
        x = x.this
    return x


def rejects_null(guard: exp.Expression, arg: Optional[exp.Expression]) -> bool:
    """Does ``guard`` being TRUE imply ``arg IS NOT NULL``? Only for a bare column that a
    conjunct of the guard compares (``=``, ``<>``, ``<``, ... are NULL on a NULL operand),
    tests with IN, or tests ``IS NOT NULL``."""
    arg = None if arg is None else unparen(arg)
    if not isinstance(arg, exp.Column):
        return False

    def same(x: exp.Expression) -> bool:
        x = unparen(x)
        return isinstance(x, exp.Column) and x.name == arg.name and x.table == arg.table

    for c in filter_conjuncts(guard):
        if isinstance(c, NULL_INTOLERANT) and (same(c.this) or same(c.expression)):
            return True
        if isinstance(c, exp.In) and same(c.this):
            return True
        if isinstance(c, exp.Not) and isinstance(unparen(c.this), exp.Is) \
                and isinstance(unparen(c.this).expression, exp.Null) and same(unparen(c.this).this):
            return True
    return False


INTEGRAL = frozenset({"tinyint", "smallint", "int", "bigint"})


def flag_sql(guard: Optional[exp.Expression], accs: Sequence[tuple[str, Optional[exp.Expression],
                                                                      Optional[exp.Expression]]] = (),
              over: str = "", integral: Collection[str] = ()) -> str:
    """``exists row: guard`` as a boolean aggregate written so that Spark can share one
    aggregation buffer with an accumulator of the same guard (Spark plans semantically
    equal aggregate functions once, so the flag costs no column in the partial aggregate
    that crosses the exchange): ``count(CASE WHEN guard THEN 1 END) > 0`` (the same
    function as a guarded ``count(*)``), or ``min/max/count(CASE WHEN guard THEN x END)``
    tested for non-NULL / > 0 when ``guard`` implies ``x IS NOT NULL`` (an accumulator's
    ``(func, arg, guard)`` in ``accs``); ``sum(CASE WHEN guard THEN x END) IS NOT NULL``
    likewise, but only for a column ``x`` named in ``integral`` (its Spark type is an
    integer type: an integral sum is NULL only over no non-NULL input — it wraps with
    ANSI off and raises with ANSI on — whereas a decimal sum that overflows with ANSI off
    is NULL; never ``avg``). Each form is true iff some row of the group (window frame)
    has ``guard`` TRUE, and never NULL, as the program's flag."""
    if guard is not None:
        g = sql_of(guard)
        for func, arg, ag in accs:
            foldable = func in ("min", "max", "count") or (
                func == "sum" and isinstance(arg, exp.Column) and arg.name.lower() in integral)
            if foldable and ag is not None and sql_of(ag) == g and rejects_null(guard, arg):
                agg = agg_sql(func, arg, guard, over)
                return f"({agg} > 0)" if func == "count" else f"({agg} IS NOT NULL)"
    return f"({agg_sql('count_star', None, guard, over)} > 0)"


def row_ref(ns: str, name: str) -> exp.Expression:
    if ns not in ("row", "key"):
        raise ValueError(f"{ns}.{name} is not allowed here (only row.* in guards and arguments)")
    return col(name)


@dataclass
class Cell:
    """One output value of one emit: its SQL, and whether evaluating it can fail (ANSI
    errors: division by zero, overflow, casts) — such a cell is evaluated only under
    its emit's guard."""
    sql: str
    partial: bool = True


def is_total(x: exp.Expression) -> bool:
    """Evaluating ``x`` cannot raise: a column or a literal."""
    while isinstance(x, exp.Paren):
        x = x.this
    return isinstance(x, (exp.Column, exp.Literal, exp.Null, exp.Boolean))


def typed_null(t: str) -> Cell:
    return Cell(f"CAST(NULL AS {t})", partial=False)


def donor_null(donor: Optional[exp.Expression]) -> Cell:
    # if(false, e, NULL) has e's type and never evaluates e
    return Cell("NULL" if donor is None else f"if(false, {sql_of(donor)}, NULL)", partial=False)


def emit_outputs(program: Program, emits, out_types: Sequence[Optional[str]], mapping) -> list[list[Cell]]:
    """The cells of every emit, NULLs typed, values cast to ``out_types``."""
    rows = [[subst(o, mapping) for o in em.outputs] for em in emits]
    out = []
    for r in rows:
        cells = []
        for j, x in enumerate(r):
            t = out_types[j]
            if isinstance(x, exp.Null):
                if t:
                    cells.append(typed_null(t))
                else:
                    cells.append(donor_null(next((rr[j] for rr in rows if not isinstance(rr[j], exp.Null)), None)))
            else:
                # a cast to the original's own output type can still fail (narrowing):
                # the cell is partial unless it is a bare column/literal and uncast
                cells.append(Cell(f"CAST({sql_of(x)} AS {t})" if t else sql_of(x), partial=bool(t) or not is_total(x)))
        out.append(cells)
    return out


@dataclass
class Alt:
    """One emit at SQL level: its two-valued guard, its cells, and whether the guard may
    not be used as a WHERE (see :func:`pushable_partial`)."""
    guard: str
    cells: list[Cell]
    no_where: bool = False

    def value(self, j: int) -> str:
        """Cell ``j``, evaluated only when the guard holds (a partial cell outside its
        guard could raise an error the original query never raises)."""
        c = self.cells[j]
        if not c.partial or self.guard == "TRUE":
            return c.sql
        return f"CASE WHEN {self.guard} THEN {c.sql} END"


def pushable_partial(guard: Optional[exp.Expression], keys: Sequence[str]) -> bool:
    """Would ``WHERE guard`` let Spark evaluate a partial conjunct on rows the guard's
    other conjuncts exclude? Spark pushes a filter conjunct that reads only grouping /
    partitioning keys below the aggregate / window — onto every source row — and may
    reorder conjuncts. ``key IS [NOT] NULL`` cannot fail; any other key-only conjunct may."""
    if guard is None:
        return False
    ks = set(keys)
    for c in filter_conjuncts(guard):
        cols = list(c.find_all(exp.Column))
        if not cols or not all(x.table in ("key", "row") and x.name in ks for x in cols):
            continue
        inner = c.this if isinstance(c, exp.Not) else c
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null) \
                and isinstance(inner.this, exp.Column):
            continue
        return True
    return False


def key_passthrough(program: Program) -> dict[int, str]:
    """Output positions that carry the same partition key in every emit: they are passed
    through the generator as the input column (not a struct field), so Spark keeps the
    hash partitioning on the key and a parent grouped/joined on it needs no new exchange."""
    out: dict[int, str] = {}
    # names are compared exactly: the IR is normalized already, and with
    # spark.sql.caseSensitive=true `K` and `k` are two columns
    keys = set(program.keys)
    emits = list(program.partition_emits) + list(program.row_emits)
    for j in range(len(program.output)):
        names: set[Optional[str]] = set()
        for em in emits:
            x = em.outputs[j]
            ok = isinstance(x, exp.Column) and x.table in ("key", "row") and x.name in keys
            if ok and x.table == "row" and em in program.partition_emits:
                ok = False
            names.add(x.name if ok else None)
        if len(names) == 1 and None not in names:
            (name,) = names
            if name is not None:
                out[j] = name
    return out


def emission(program: Program, guarded: list[Alt], inner_sql: str,
              out_types: Sequence[Optional[str]]) -> str:
    """0..n output rows per input row of ``inner_sql`` from the emit alternatives. Every
    partial cell sits under its guard (``CASE WHEN guard THEN cell END``): a struct
    builds all its fields, and Spark may evaluate a projection before a filter."""
    names = list(program.output)
    outs = [f"{P}o{j}" for j in range(len(names))]
    if len(guarded) == 1 and not guarded[0].no_where:
        alt = guarded[0]
        # a projection over a filter sees only the rows that pass it: no CASE needed
        sel = ", ".join(f"{c.sql} AS {quote(n)}" for c, n in zip(alt.cells, names))
        where = "" if alt.guard == "TRUE" else f" WHERE {alt.guard}"
        return f"SELECT {sel} FROM ({inner_sql}) AS {P}in{where}"
    passthrough = key_passthrough(program)
    structs = []
    for alt in guarded:
        fields = [f"{alt.guard} AS {P}g"] + [f"{alt.value(j)} AS {o}" for j, o in enumerate(outs)
                                             if j not in passthrough]
        structs.append(f"struct({', '.join(fields)})")
    gen = f"inline(filter(array({', '.join(structs)}), {P}x -> {P}x.{P}g))"
    keep = sorted(set(passthrough.values()))
    sel = []
    for j, (o, n) in enumerate(zip(outs, names)):
        if j in passthrough:
            k = quote(passthrough[j])
            t = out_types[j]
            sel.append(f"{f'CAST({k} AS {t})' if t else k} AS {quote(n)}")
        else:
            sel.append(f"{o} AS {quote(n)}")
    pre = "".join(f"{quote(k)}, " for k in keep)
    return (f"SELECT {', '.join(sel)} FROM (SELECT {pre}{gen} FROM ({inner_sql}) AS {P}in) AS {P}em")


def guard_sql(g: Optional[exp.Expression], mapping) -> str:
    if g is None:
        return "TRUE"
    return f"coalesce({sql_of(subst(g, mapping))}, false)"


def empty_sql(program: Program, out_types) -> str:
    cols = ", ".join(f"CAST(NULL AS {t or 'string'}) AS {quote(n)}" for n, t in zip(program.output, out_types))
    return f"SELECT {cols} WHERE false"
