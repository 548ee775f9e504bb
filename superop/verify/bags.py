"""Comparing outcomes: bags of rows (by multiplicity of NULL-safe-equal rows), or an error.

:func:`outcomes_differ` is what "equivalent" means for the verifier: the program may not
raise where the original does not, and where the original does not raise both return the
same bag. Where the original raises, the program may raise or return anything: Spark does
not promise the order in which a query's expressions are evaluated (an optimizer rule may
evaluate fewer of them), so an error of the original is not part of its contract.
:func:`outcomes_differ_strict` also requires the program to raise where the original does.

Which expressions the original evaluates is modelled for the plan as written (every
operator evaluates its expressions on its input rows; a hash join evaluates its residual
only on pairs with equal keys). Spark's optimizer departs from that in both directions:
it evaluates more (a join-condition conjunct that reads one side — also one derived
through the equi keys — is pushed into that input for inner, left/right outer on the
non-preserved side, semi and anti joins) and less (a filter is pushed below the
projection that computes a partial expression). The first makes the verifier stricter
than Spark (it may refute a rewrite that raises only where Spark's own plan raises too);
the second could let a rewrite that evaluates a partial projection on rows a pushed-down
filter removes pass — the template programs never do that: they evaluate an edge's
projection only where its captured predicate holds.
"""
from __future__ import annotations

import datetime as _dt
import itertools
from typing import Optional

import z3

from .relations import Rel
from .values import EPOCH, FALSE, V, common_kind, fresh, rows_not_distinct

_witness_seq = itertools.count(1)


def bags_differ(a: Rel, b: Rel) -> z3.BoolRef:
    """TRUE iff some row has different multiplicities in the two bags.

    A fresh witness row w is compared with every row of both bags once
    (count_a(w) != count_b(w)); a differing count forces w to equal some present row.
    This is linear in the bag sizes, instead of quadratic for "some present row"."""
    rows = a.rows + b.rows
    if not rows:
        return FALSE
    width = len(rows[0][1])
    if any(len(v) != width for _, v in rows):
        # different arities: any present row is a difference
        return z3.Or(*[p for p, _ in rows])
    seq = next(_witness_seq)
    w = []
    for c in range(width):
        kind = common_kind([v[c] for _, v in rows]) or "int"
        name = f"witness!{seq}!{c}"
        w.append(V(fresh(kind, name), z3.Bool(name + "!null"), kind))

    def count(rel: Rel) -> z3.ArithRef:
        return z3.Sum([z3.If(z3.And(p, rows_not_distinct(v, w)), 1, 0) for p, v in rel.rows]) \
            if rel.rows else z3.IntVal(0)
    return count(a) != count(b)


def outcomes_differ(original: Rel, program: Rel) -> z3.BoolRef:
    """The program raises where the original does not, or neither raises and the bags differ."""
    ok = z3.Not(original.err)
    return z3.And(ok, z3.Or(program.err, bags_differ(original, program)))


def outcomes_differ_strict(original: Rel, program: Rel) -> z3.BoolRef:
    """Also a difference: the original raises and the program does not."""
    return z3.Or(outcomes_differ(original, program), z3.And(original.err, z3.Not(program.err)))


def concrete(model: z3.ModelRef, x: V, kind_hint: Optional[str] = None):
    """The Python value of a V in a model (None for NULL)."""
    if x.v is None or z3.is_true(model.eval(x.null, model_completion=True)):
        return None
    val = model.eval(x.v, model_completion=True)
    k = x.kind
    if k == "int":
        return val.as_long()
    if k == "date":
        return EPOCH + _dt.timedelta(days=val.as_long())
    if k == "real":
        frac = val.as_fraction() if hasattr(val, "as_fraction") else None
        return float(frac) if frac is not None else float(val.as_decimal(17).rstrip("?"))
    if k == "str":
        return val.as_string()
    if k == "bool":
        return z3.is_true(val)
    return str(val)


def concrete_rel(model, rel: Rel) -> list[tuple]:
    out = []
    for p, vals in rel.rows:
        if z3.is_true(model.eval(p, model_completion=True)):
            out.append(tuple(concrete(model, v) for v in vals))
    return out


def raises(model, rel: Rel) -> bool:
    return z3.is_true(model.eval(rel.err, model_completion=True))
