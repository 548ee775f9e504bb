"""Two forms the structural rewrite emits (``superop.rewrite.compile``), written as SQL the
lowering models, before qualification:

* the row generator ``SELECT pre, INLINE(FILTER(ARRAY(STRUCT(g_1 AS __so_g, e_11 AS o_1, ..),
  ..), x -> x.__so_g)) FROM src`` — 0..n output rows per input row — becomes ONE derived
  table that evaluates every struct's every field on every row (Spark builds the whole
  array before filtering it, so an error of any field on any row is an error of the
  query), read once per struct under ``WHERE g_i`` (``filter`` keeps the structs whose
  guard is TRUE; NULL and FALSE drop them) and glued by ``UNION ALL``::

      SELECT pre, __so_gv1 AS __so_g, __so_gv2 AS o_1 FROM (SELECT pre, g_1 AS __so_gv1,
        e_11 AS __so_gv2, .., g_2 AS __so_gv3, ..  FROM src) AS __so_gen WHERE __so_gv1
      UNION ALL SELECT pre, __so_gv3 AS __so_g, .. FROM (..the same..) AS __so_gen WHERE __so_gv3

  The two copies of the derived table lower to one shared plan node (plans are interned),
  evaluated once. Bags are compared, so the order of the rows is not needed.
* ``SIZE(COLLECT_SET(x))`` (an aggregate, not a window) is ``COUNT(DISTINCT x)``: the set
  of x's non-NULL values and its size, 0 for none.
"""
from __future__ import annotations

from typing import Optional

from sqlglot import exp

GV = "__so_gv"


def _struct_fields(s: exp.Expr) -> Optional[list[tuple[str, exp.Expr]]]:
    if not isinstance(s, exp.Struct):
        return None
    out = []
    for f in s.expressions:
        if isinstance(f, (exp.PropertyEQ, exp.Alias)) and f.args.get("this") is not None:
            name = f.this.name if isinstance(f, exp.PropertyEQ) else f.alias
            value = f.expression if isinstance(f, exp.PropertyEQ) else f.this
            out.append((str(name), value))
        else:
            return None
    return out


def _generator(e: exp.Expr) -> Optional[tuple[list[list[tuple[str, exp.Expr]]], Optional[str]]]:
    """(the structs' fields, the guard field the filter keeps or None) of an
    ``INLINE(FILTER(ARRAY(STRUCT..), x -> x.g))`` / ``INLINE(ARRAY(STRUCT..))``."""
    if not isinstance(e, exp.Inline):
        return None
    arr, guard = e.this, None
    if isinstance(arr, exp.ArrayFilter):
        lam = arr.expression
        if not isinstance(lam, exp.Lambda) or len(lam.expressions) != 1:
            return None
        var = lam.expressions[0].name
        body = lam.this
        if not (isinstance(body, exp.Dot) and isinstance(body.this, (exp.Identifier, exp.Column))
                and body.this.name == var):
            return None
        guard, arr = body.expression.name, arr.this
    if not isinstance(arr, exp.Array) or not arr.expressions:
        return None
    found = [_struct_fields(s) for s in arr.expressions]
    structs = [s for s in found if s is not None]
    if len(structs) != len(found):
        return None
    names = [n for n, _ in structs[0]]
    if any([n for n, _ in s] != names for s in structs) or (guard is not None and guard not in names):
        return None
    return structs, guard


def _expand(sel: exp.Select) -> Optional[exp.Expr]:
    """The UNION ALL form of a SELECT with one generator in its select list (else None)."""
    gens = [(i, g) for i, p in enumerate(sel.expressions) if (g := _generator(p)) is not None]
    if len(gens) != 1 or any(isinstance(p, exp.Inline) for i, p in enumerate(sel.expressions) if i != gens[0][0]):
        return None
    at, (structs, guard) = gens[0]
    pre = [p for i, p in enumerate(sel.expressions) if i != at]
    pre_names = [p.alias_or_name for p in pre]
    if any(not n for n in pre_names):
        return None
    inner = sel.copy()
    cols: list[exp.Expr] = [p.copy() for p in pre]
    for w in ("with_", "with"):       # the generator's own SELECT keeps no WITH of its own here
        if inner.args.get(w) is not None:
            return None
    slots: list[list[str]] = []
    n = 0
    for fields in structs:
        mine = []
        for _, value in fields:
            n += 1
            name = f"{GV}{n}"
            cols.append(exp.alias_(value.copy(), name, copy=False))
            mine.append(name)
        slots.append(mine)
    inner.set("expressions", cols)
    names = [f for f, _ in structs[0]]
    cte = f"__so_gen{id(sel) % 100000}"
    branches = []
    for mine in slots:
        outs: list[exp.Expr] = [exp.column(p) for p in pre_names[:at]]
        outs += [exp.alias_(exp.column(v), f) for v, f in zip(mine, names)]
        outs += [exp.column(p) for p in pre_names[at:]]
        q = exp.select(*outs, copy=False).from_(exp.to_table(cte), copy=False)
        if guard is not None:
            q = q.where(exp.column(mine[names.index(guard)]), copy=False)
        branches.append(q)
    out: exp.Expr = branches[0]
    for b in branches[1:]:
        out = exp.Union(this=out, expression=b, distinct=False)
    # one definition read once per struct: the fields are evaluated once per row
    out.set("with_" if "with_" in type(out).arg_types else "with",
            exp.With(expressions=[exp.CTE(this=inner, alias=exp.TableAlias(this=exp.to_identifier(cte)))]))
    return out


def _count_distinct(e: exp.Expr) -> exp.Expr:
    if isinstance(e, exp.ArraySize) and isinstance(e.this, (exp.ArrayUniqueAgg,)):
        return exp.Count(this=exp.Distinct(expressions=[e.this.this.copy()]))
    return e


def expand_generators(tree: exp.Expr) -> exp.Expr:
    """``tree`` with every generator SELECT in its UNION ALL form and every aggregate
    ``SIZE(COLLECT_SET(x))`` as ``COUNT(DISTINCT x)`` (the tree itself when it has none)."""
    if not any(True for _ in tree.find_all(exp.Inline, exp.ArraySize)):
        return tree
    tree = tree.transform(_count_distinct, copy=False)
    for sel in reversed(list(tree.find_all(exp.Select))):
        new = _expand(sel)
        if new is None:
            continue
        if sel is tree:
            return expand_generators(new)
        if isinstance(sel.parent, exp.Subquery):
            sel.replace(new)
        else:
            sel.replace(exp.Subquery(this=new))
    return tree
