"""Super-operator programs (superop.synth.dsl) -> Spark SQL that runs after ONE exchange.

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

:func:`run_generic` is the generic executor for programs without a native form
(repartition by the keys, sort within partitions, the reference interpreter in
``mapInPandas``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Mapping, Optional, Sequence

import sqlglot
from sqlglot import exp

from ..ir.conjuncts import filter_conjuncts
from ..ir.dialect import DIALECT
from ..ir.names import TableName, ident
from ..synth.dsl import BY_FUNCS, GROUPED, STREAMING, Program, by_parts

P = "__so_"          # prefix of every internal name (cannot clash with the source's columns)


class NoNativeForm(Exception):
    """The program has no Spark-native (single-exchange SQL) form; use run_generic."""


def _q(name: str) -> str:
    return ident(name).sql(dialect=DIALECT)


def _s(e: exp.Expression) -> str:
    return e.sql(dialect=DIALECT)


def _subst(e: Optional[exp.Expression], mapping) -> Optional[exp.Expression]:
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


def _paren(x: exp.Expression) -> exp.Expression:
    return x if isinstance(x, (exp.Column, exp.Literal, exp.Paren, exp.Func, exp.Null, exp.Boolean)) \
        else exp.Paren(this=x)


def _col(name: str, table: Optional[str] = None) -> exp.Column:
    return exp.Column(this=ident(name), table=ident(table) if table else None)


class _Names:
    def __init__(self, program: Program):
        self.acc = {a.name: f"{P}a_{a.name}" for a in program.accumulators}
        self.flag = {f.name: f"{P}f_{f.name}" for f in program.flags}

    def partition_ref(self, ns: str, name: str) -> exp.Column:
        """A partition emit's ``key.*``/``acc.*``/``flag.*`` as a column of the GROUP BY /
        window output (final values)."""
        if ns == "key":
            return _col(name)
        if ns == "acc":
            return _col(self.acc[name])
        if ns == "flag":
            return _col(self.flag[name])
        raise ValueError(f"{ns}.{name} is not allowed in a partition emit")


def _agg_sql(func: str, arg: Optional[exp.Expression], guard: Optional[exp.Expression], over: str = "") -> str:
    """A guarded aggregate (``over`` makes it a window aggregate). count(DISTINCT) is
    ``size(collect_set(..))``: same value (NULLs ignored, 0 for none) but a plain
    aggregate, so Spark needs no second exchange for it and it works over windows."""
    g = None if guard is None else _s(guard)
    ov = f" {over}" if over else ""
    if func == "count_star":
        return (f"count(1){ov}" if g is None else f"count(CASE WHEN {g} THEN 1 END){ov}")
    if func in BY_FUNCS:
        # max_by(x, o) ignores rows whose o is NULL: the guard goes on the ordering, so a
        # row outside it never wins; on the payload too, so Spark never evaluates x there
        # (a partial x only under its guard). No guarded row: NULL, as the fold.
        pay, order = (_s(x) for x in by_parts(arg))
        if g is None:
            return f"{func}({pay}, {order}){ov}"
        return f"{func}(CASE WHEN {g} THEN {pay} END, CASE WHEN {g} THEN {order} END){ov}"
    a = _s(arg)
    val = a if g is None else f"CASE WHEN {g} THEN {a} END"
    if func in ("count_distinct", "count_distinct_sorted"):
        # the sorted fold (runs of equal values in the program's sort order on its
        # argument) has the same value; Spark computes it from the set
        return f"CAST(size(collect_set({val}){ov}) AS BIGINT)"
    return f"{func}({val}){ov}"


_NULL_INTOLERANT = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)   # not <=> (NullSafeEQ)


def _unparen(x: exp.Expression) -> exp.Expression:
    while isinstance(x, exp.Paren):
        x = x.this
    return x


def _rejects_null(guard: exp.Expression, arg: Optional[exp.Expression]) -> bool:
    """Does ``guard`` being TRUE imply ``arg IS NOT NULL``? Only for a bare column that a
    conjunct of the guard compares (``=``, ``<>``, ``<``, ... are NULL on a NULL operand),
    tests with IN, or tests ``IS NOT NULL``."""
    arg = None if arg is None else _unparen(arg)
    if not isinstance(arg, exp.Column):
        return False

    def same(x: exp.Expression) -> bool:
        x = _unparen(x)
        return isinstance(x, exp.Column) and x.name == arg.name and x.table == arg.table

    for c in filter_conjuncts(guard):
        if isinstance(c, _NULL_INTOLERANT) and (same(c.this) or same(c.expression)):
            return True
        if isinstance(c, exp.In) and same(c.this):
            return True
        if isinstance(c, exp.Not) and isinstance(_unparen(c.this), exp.Is) \
                and isinstance(_unparen(c.this).expression, exp.Null) and same(_unparen(c.this).this):
            return True
    return False


INTEGRAL = frozenset({"tinyint", "smallint", "int", "bigint"})


def _flag_sql(guard: Optional[exp.Expression], accs: Sequence[tuple[str, Optional[exp.Expression],
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
        g = _s(guard)
        for func, arg, ag in accs:
            foldable = func in ("min", "max", "count") or (
                func == "sum" and isinstance(arg, exp.Column) and arg.name.lower() in integral)
            if foldable and ag is not None and _s(ag) == g and _rejects_null(guard, arg):
                agg = _agg_sql(func, arg, guard, over)
                return f"({agg} > 0)" if func == "count" else f"({agg} IS NOT NULL)"
    return f"({_agg_sql('count_star', None, guard, over)} > 0)"


def _row_ref(ns: str, name: str) -> exp.Expression:
    if ns not in ("row", "key"):
        raise ValueError(f"{ns}.{name} is not allowed here (only row.* in guards and arguments)")
    return _col(name)


@dataclass
class _Cell:
    """One output value of one emit: its SQL, and whether evaluating it can fail (ANSI
    errors: division by zero, overflow, casts) — such a cell is evaluated only under
    its emit's guard."""
    sql: str
    partial: bool = True


def _is_total(x: exp.Expression) -> bool:
    """Evaluating ``x`` cannot raise: a column or a literal."""
    while isinstance(x, exp.Paren):
        x = x.this
    return isinstance(x, (exp.Column, exp.Literal, exp.Null, exp.Boolean))


def _typed_null(t: str) -> _Cell:
    return _Cell(f"CAST(NULL AS {t})", partial=False)


def _donor_null(donor: Optional[exp.Expression]) -> _Cell:
    # if(false, e, NULL) has e's type and never evaluates e
    return _Cell("NULL" if donor is None else f"if(false, {_s(donor)}, NULL)", partial=False)


def _emit_outputs(program: Program, emits, out_types: Sequence[Optional[str]], mapping) -> list[list[_Cell]]:
    """The cells of every emit, NULLs typed, values cast to ``out_types``."""
    rows = [[_subst(o, mapping) for o in em.outputs] for em in emits]
    out = []
    for r in rows:
        cells = []
        for j, x in enumerate(r):
            t = out_types[j]
            if isinstance(x, exp.Null):
                if t:
                    cells.append(_typed_null(t))
                else:
                    cells.append(_donor_null(next((rr[j] for rr in rows if not isinstance(rr[j], exp.Null)), None)))
            else:
                # a cast to the original's own output type can still fail (narrowing):
                # the cell is partial unless it is a bare column/literal and uncast
                cells.append(_Cell(f"CAST({_s(x)} AS {t})" if t else _s(x), partial=bool(t) or not _is_total(x)))
        out.append(cells)
    return out


@dataclass
class _Alt:
    """One emit at SQL level: its two-valued guard, its cells, and whether the guard may
    not be used as a WHERE (see :func:`_pushable_partial`)."""
    guard: str
    cells: list[_Cell]
    no_where: bool = False

    def value(self, j: int) -> str:
        """Cell ``j``, evaluated only when the guard holds (a partial cell outside its
        guard could raise an error the original query never raises)."""
        c = self.cells[j]
        if not c.partial or self.guard == "TRUE":
            return c.sql
        return f"CASE WHEN {self.guard} THEN {c.sql} END"


def _pushable_partial(guard: Optional[exp.Expression], keys: Sequence[str]) -> bool:
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


def _key_passthrough(program: Program) -> dict[int, str]:
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


def _emission(program: Program, guarded: list[_Alt], inner_sql: str,
              out_types: Sequence[Optional[str]]) -> str:
    """0..n output rows per input row of ``inner_sql`` from the emit alternatives. Every
    partial cell sits under its guard (``CASE WHEN guard THEN cell END``): a struct
    builds all its fields, and Spark may evaluate a projection before a filter."""
    names = list(program.output)
    outs = [f"{P}o{j}" for j in range(len(names))]
    if len(guarded) == 1 and not guarded[0].no_where:
        alt = guarded[0]
        # a projection over a filter sees only the rows that pass it: no CASE needed
        sel = ", ".join(f"{c.sql} AS {_q(n)}" for c, n in zip(alt.cells, names))
        where = "" if alt.guard == "TRUE" else f" WHERE {alt.guard}"
        return f"SELECT {sel} FROM ({inner_sql}) AS {P}in{where}"
    passthrough = _key_passthrough(program)
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
            k = _q(passthrough[j])
            t = out_types[j]
            sel.append(f"{f'CAST({k} AS {t})' if t else k} AS {_q(n)}")
        else:
            sel.append(f"{o} AS {_q(n)}")
    pre = "".join(f"{_q(k)}, " for k in keep)
    return (f"SELECT {', '.join(sel)} FROM (SELECT {pre}{gen} FROM ({inner_sql}) AS {P}in) AS {P}em")


def _guard(g: Optional[exp.Expression], mapping) -> str:
    if g is None:
        return "TRUE"
    return f"coalesce({_s(_subst(g, mapping))}, false)"


def _empty(program: Program, out_types) -> str:
    cols = ", ".join(f"CAST(NULL AS {t or 'string'}) AS {_q(n)}" for n, t in zip(program.output, out_types))
    return f"SELECT {cols} WHERE false"


def compile_program(program: Program, source: str, output_types: Optional[Sequence[str]] = None,
                    input_types: Optional[Mapping[str, str]] = None) -> str:
    """Spark SQL running ``program`` over ``source`` (a query or a table name whose
    columns are the program's ``row.*`` names). ``output_types`` (Spark SQL type strings,
    one per output column) override ``program.output_types``. ``input_types`` (source
    column -> Spark type, optional) lets a flag share an integral sum's buffer
    (:func:`_flag_sql`). Raises NoNativeForm."""
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
        return _empty(program, types)
    nm = _names = _Names(program)
    keys = ", ".join(_q(k) for k in program.keys)
    keyless = not program.keys
    if keyless and program.row_emits and program.partition_emits:
        # the keyless partition exists over an empty input, a window has no row there
        raise NoNativeForm("a keyless program with both row and partition emits")

    if not program.row_emits:
        # --- one GROUP BY with guarded aggregates, then guarded emission (no keys: a
        # global aggregate, one row even over an empty input) ---
        items = [_q(k) for k in program.keys]
        for a in program.accumulators:
            items.append(f"{_agg_sql(a.func, _subst(a.arg, _row_ref), _subst(a.guard, _row_ref))} AS {nm.acc[a.name]}")
        accs = [(a.func, _subst(a.arg, _row_ref), _subst(a.guard, _row_ref)) for a in program.accumulators]
        for f in program.flags:
            items.append(f"{_flag_sql(_subst(f.guard, _row_ref), accs, integral=integral)} AS {nm.flag[f.name]}")
        if not items:
            items.append(f"count(1) AS {P}rows")          # a SELECT needs an item
        group = f" GROUP BY {keys}" if keys else ""
        inner = f"SELECT {', '.join(items)} FROM {src_item}{group}"

        part_map = nm.partition_ref
        cells = _emit_outputs(program, program.partition_emits, types, part_map)
        guarded = [_Alt(_guard(em.guard, part_map), c, _pushable_partial(em.guard, program.keys))
                   for em, c in zip(program.partition_emits, cells)]
        return _emission(program, guarded, inner, types)

    if program.layout == GROUPED:
        return _grouped_sql(program, nm, src_item, types, integral)
    limit = group_limit(program)
    if limit is not None:
        return _group_limit_sql(program, limit, src_item, types)

    # --- window form: per-row state over one PARTITION BY ---
    used_in_rows = set()
    for r in program.row_emits:
        for x in (r.guard, *r.outputs):
            if x is not None:
                used_in_rows.update((c.table, c.name) for c in x.find_all(exp.Column) if c.table in ("acc", "flag"))
    running = program.memory == STREAMING and bool(used_in_rows)
    if running and not program.sort:
        raise NoNativeForm("a streaming program whose row emits read state needs a sort order")
    part = f"PARTITION BY {keys}" if keys else ""
    over_final = f"OVER ({part})"
    order = ", ".join(f"{_q(k.column)} {'ASC' if k.ascending else 'DESC'} NULLS {'FIRST' if k.nulls_first else 'LAST'}"
                      for k in program.sort)
    over_run = f"OVER ({part} ORDER BY {order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    over_sorted = f"OVER ({part} ORDER BY {order})"
    items = [f"{P}src.*"]
    nb_col = {}
    for n in program.neighbours:
        nb_col[n.name] = f"{P}n_{n.name}"
        fn = "lag" if n.offset < 0 else "lead"
        items.append(f"{fn}({_s(_subst(n.arg, _row_ref))}, {abs(n.offset)}) {over_sorted} AS {nb_col[n.name]}")
    run_acc, run_flag = {}, {}
    for a in program.accumulators:
        arg, guard = _subst(a.arg, _row_ref), _subst(a.guard, _row_ref)
        items.append(f"{_agg_sql(a.func, arg, guard, over_final)} AS {nm.acc[a.name]}")
        if running and ("acc", a.name) in used_in_rows:
            run_acc[a.name] = f"{P}r{nm.acc[a.name][len(P):]}"
            items.append(f"{_agg_sql(a.func, arg, guard, over_run)} AS {run_acc[a.name]}")
    accs = [(a.func, _subst(a.arg, _row_ref), _subst(a.guard, _row_ref)) for a in program.accumulators]
    for f in program.flags:
        fg = _subst(f.guard, _row_ref)
        items.append(f"{_flag_sql(fg, accs, over_final, integral)} AS {nm.flag[f.name]}")
        if running and ("flag", f.name) in used_in_rows:
            run_flag[f.name] = f"{P}r{nm.flag[f.name][len(P):]}"
            items.append(f"{_flag_sql(fg, accs, over_run, integral)} AS {run_flag[f.name]}")
    if program.partition_emits:
        items.append(f"row_number() OVER (PARTITION BY {keys} ORDER BY {keys}) AS {P}rn")
    inner = f"SELECT {', '.join(items)} FROM {src_item}"

    def row_map(ns, name):
        if ns in ("row", "key"):
            return _col(name)
        if ns == "nb":
            return _col(nb_col[name])
        if ns == "acc":
            return _col(run_acc.get(name, nm.acc[name]))
        if ns == "flag":
            return _col(run_flag.get(name, nm.flag[name]))
        raise ValueError(ns)

    part_map = nm.partition_ref

    guarded: list[_Alt] = []
    cells_r = _emit_outputs(program, program.row_emits, types, row_map)
    for em, c in zip(program.row_emits, cells_r):
        guarded.append(_Alt(_guard(em.guard, row_map), c, _pushable_partial(em.guard, program.keys)))
    if program.partition_emits:
        cells_p = _emit_outputs(program, program.partition_emits, types, part_map)
        for em, c in zip(program.partition_emits, cells_p):
            g = _guard(em.guard, part_map)
            guarded.append(_Alt(f"({P}rn = 1)" if g == "TRUE" else f"({P}rn = 1 AND {g})", c,
                                _pushable_partial(em.guard, program.keys)))
    # typed NULLs must agree across row and partition emits: recompute donors jointly
    if not any(types):
        allp = list(program.row_emits) + list(program.partition_emits)
        maps = [row_map] * len(program.row_emits) + [part_map] * len(program.partition_emits)
        rows = [[_subst(o, m) for o in em.outputs] for em, m in zip(allp, maps)]
        for i, r in enumerate(rows):
            for j, x in enumerate(r):
                if isinstance(x, exp.Null):
                    donor = next((rr[j] for rr in rows if not isinstance(rr[j], exp.Null)), None)
                    if donor is not None:
                        guarded[i].cells[j] = _donor_null(donor)
    if not program.partition_emits and len(program.row_emits) == 2 \
            and _complementary(program.row_emits[0].guard, program.row_emits[1].guard):
        return _either(program, guarded, inner)
    return _emission(program, guarded, inner, types)


def _two_valued(e: exp.Expression) -> bool:
    """Is ``e`` never NULL (built from ``COALESCE(.., FALSE)``, ``IS NULL``, literals,
    AND/OR/NOT of such)?"""
    e = _unparen(e)
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
    if g0 is None or g1 is None or not isinstance(_unparen(g1), exp.Not):
        return False
    return _unparen(_unparen(g1).this) == _unparen(g0) and _two_valued(g0)


def _either(program: Program, guarded: list[_Alt], inner_sql: str) -> str:
    """Two row emits with complementary guards: one output row per input row, each cell
    ``CASE WHEN g0 THEN cell0 ELSE cell1 END`` (a plain projection instead of a generator;
    a cell is evaluated only under its own emit's guard)."""
    a, b = guarded
    sel = []
    for j, n in enumerate(program.output):
        c0, c1 = a.cells[j], b.cells[j]
        cell = c0.sql if c0.sql == c1.sql else f"CASE WHEN {a.guard} THEN {c0.sql} ELSE {c1.sql} END"
        sel.append(f"{cell} AS {_q(n)}")
    return f"SELECT {', '.join(sel)} FROM ({inner_sql}) AS {P}in"


@dataclass(frozen=True)
class GroupLimit:
    """A program whose only state is ``row.v = acc.m`` first in its one row emit's guard,
    ``m`` an unguarded MIN (MAX) of ``row.v`` sorted on ``v`` (the Min & Join template's
    group-limit form, ``superop.families.mj.group_limit_program``): a row is emitted only
    where ``v`` equals its partition's MIN (MAX), i.e. ``RANK() OVER (PARTITION BY keys
    ORDER BY v ASC|DESC) = 1`` among the rows with ``v`` NOT NULL (ties share rank 1)."""
    column: str
    ascending: bool
    rest: Optional[exp.Expression]      # the guard after the equality (reads no state)


def _and_parts(e: exp.Expression) -> list[exp.Expression]:
    while isinstance(e, exp.Paren) and isinstance(e.this, exp.And):
        e = e.this
    return _and_parts(e.this) + _and_parts(e.expression) if isinstance(e, exp.And) else [e]


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
    parts = _and_parts(em.guard)
    first = _unparen(parts[0])
    if isinstance(first, exp.Coalesce) and len(first.expressions) == 1 \
            and isinstance(first.expressions[0], exp.Boolean) and not first.expressions[0].this:
        first = _unparen(first.this)
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


def _group_limit_sql(program: Program, limit: GroupLimit, src_item: str, types) -> str:
    """``RANK() = 1`` over the rows with the column NOT NULL, then the rest of the guard:
    the rank filter is a top-level conjunct of the filter right above the window, so
    Spark's InferWindowGroupLimit plans a WindowGroupLimit below the exchange (only each
    task's local minimum rows are shuffled)."""
    keys = ", ".join(_q(k) for k in program.keys)
    v = _q(limit.column)
    inner = (f"SELECT {P}src.*, rank() OVER (PARTITION BY {keys} ORDER BY {v} "
             f"{'ASC' if limit.ascending else 'DESC'}) AS {P}rk FROM {src_item} WHERE {v} IS NOT NULL")
    em = program.row_emits[0]
    cells = _emit_outputs(program, [em], types, _row_ref)[0]
    g = _guard(limit.rest, _row_ref)
    guard = f"({P}rk = 1)" if g == "TRUE" else f"({P}rk = 1) AND {g}"
    return _emission(program, [_Alt(guard, cells, _pushable_partial(limit.rest, program.keys))], inner, types)


def _grouped_sql(program: Program, nm: _Names, src_item: str, types, integral) -> str:
    """The GROUPED layout (``Program.layout``) of a program whose row emits read final
    state: every source row with its key's ``GROUP BY`` row (NULL-safe: a NULL key's rows
    with the NULL group — one group per row), then the row emits. One row emit whose
    outputs read no state is a LEFT SEMI JOIN with its guard in the ON clause (the grouped
    side carries no column to the rows; Spark may broadcast it)."""
    keys = program.keys
    gk = [f"{P}gk{i}" for i in range(len(keys))]
    accs = [(a.func, _subst(a.arg, _row_ref), _subst(a.guard, _row_ref)) for a in program.accumulators]
    items = [f"{_q(k)} AS {g}" for k, g in zip(keys, gk)]
    items += [f"{_agg_sql(f, arg, g)} AS {nm.acc[a.name]}" for a, (f, arg, g) in zip(program.accumulators, accs)]
    items += [f"{_flag_sql(_subst(f.guard, _row_ref), accs, integral=integral)} AS {nm.flag[f.name]}"
              for f in program.flags]
    grouped = f"SELECT {', '.join(items)} FROM {src_item} GROUP BY {', '.join(_q(k) for k in keys)}"
    on = " AND ".join(f"{P}src.{_q(k)} <=> {P}g.{g}" for k, g in zip(keys, gk))

    def state_map(ns: str, name: str) -> exp.Expression:
        if ns in ("row", "key"):
            return _col(name, f"{P}src")
        return nm.partition_ref(ns, name)
    emits = program.row_emits
    state = {("acc", a.name) for a in program.accumulators} | {("flag", f.name) for f in program.flags}
    reads_state = any((c.table, c.name) in state for o in emits[0].outputs for c in o.find_all(exp.Column))
    if len(emits) == 1 and not reads_state:
        inner = (f"SELECT {P}src.* FROM {src_item} LEFT SEMI JOIN ({grouped}) AS {P}g "
                 f"ON {on} AND {_guard(emits[0].guard, state_map)}")
        cells = _emit_outputs(program, emits, types, _row_ref)[0]
        return _emission(program, [_Alt("TRUE", cells)], inner, types)
    inner = f"SELECT {P}src.*, {P}g.* FROM {src_item} JOIN ({grouped}) AS {P}g ON {on}"
    row_map = lambda ns, name: _col(name) if ns in ("row", "key") else nm.partition_ref(ns, name)  # noqa: E731
    cells = _emit_outputs(program, emits, types, row_map)
    guarded = [_Alt(_guard(em.guard, row_map), c, _pushable_partial(em.guard, keys)) for em, c in zip(emits, cells)]
    if len(emits) == 2 and _complementary(emits[0].guard, emits[1].guard):
        return _either(program, guarded, inner)
    return _emission(program, guarded, inner, types)


def check_roundtrip(sql: str) -> str:
    """The compiled SQL must survive sqlglot (the IR generator re-parses Opaque SQL)."""
    return sqlglot.parse_one(sql, dialect=DIALECT).sql(dialect=DIALECT)


# ---------------------------------------------------------------------------
# generic executor
# ---------------------------------------------------------------------------
def run_generic(spark, program: Program, source_df, output_schema):
    """Run any verified program on Spark: one exchange (repartition by the keys), sort
    within partitions (keys, then the program's sort), then the reference interpreter
    per partition in ``mapInPandas``. ``output_schema`` is a StructType or DDL string."""
    from ..synth.interpreter import run_program  # noqa: F401  (fail early if missing)
    keys = list(program.keys)
    if not keys:
        raise NoNativeForm("a program without partition keys")
    order = keys + [k.column for k in program.sort]
    df = source_df.repartition(*keys).sortWithinPartitions(*order)
    prog_json = program.to_json()
    columns = list(source_df.columns)

    def run(batches):
        import pandas as pd
        from superop.synth.dsl import Program as _P
        from superop.synth.interpreter import run_program as _run
        prog = _P.from_json(prog_json)
        parts = list(batches)
        if not parts:
            return
        pdf = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
        if len(pdf) == 0:
            return
        pdf = pdf[columns]
        rows = _run(prog, pdf)  # partitions of the program = equal keys inside this batch
        out = pd.DataFrame.from_records(rows, columns=list(prog.output)) if rows else \
            pd.DataFrame({c: pd.Series([], dtype=object) for c in prog.output})
        yield out

    return df.mapInPandas(run, schema=output_schema)
