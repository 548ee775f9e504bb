"""Z3 encoding of two DSL constructs over K symbolic rows (``superop.synth.dsl``):

* neighbours ``nb.<name>`` — a row's neighbour at offset d is the row of its partition
  whose position in the sort order is the row's position + d (NULL when there is none);
  positions count the partition's present rows strictly before a row, ties broken by
  input position exactly as the program encoder's sort precedence does;
* preconditions (``Program.requires``) — :class:`~superop.synth.dsl.RowNumber`: in every
  partition the column takes the values 1..n once each; :class:`~superop.ir.keys.Determines`
  (a declared key): present rows equal on its ``by`` columns are equal on the determined
  ones (NULL-safe). The bounded verifier proves a
  program equivalent to its sub-plan on every input table that satisfies them.

Used by the program encoder (``ProgramEncoder.encode``) and the bounded check; imports
the encoding's values from ``superop.verify.values``.
"""
from __future__ import annotations

from typing import Callable, Sequence

import z3

from ..dsl import Program
from ..ir.dependencies import Determines
from ..ir.keys import DeclaredKey
from .result import Unsupported
from .values import NULL, V, ite, rows_not_distinct

Rows = Sequence[tuple[z3.BoolRef, Sequence[V]]]


def positions(rows: Rows, members: Sequence[Sequence[z3.BoolRef]],
              before: Callable[[int, int], z3.BoolRef]) -> list[z3.ArithRef]:
    """Per row i: how many rows of its partition (``members[i][l]``: row l is present and
    in i's partition) come strictly before it (``before(l, i)``, l ≠ i)."""
    out = []
    for i in range(len(rows)):
        terms = [z3.If(z3.And(members[i][l], before(l, i)), 1, 0) for l in range(len(rows)) if l != i]
        out.append(z3.Sum(terms) if terms else z3.IntVal(0))
    return out


def neighbour_values(program: Program, rows: Rows, members: Sequence[Sequence[z3.BoolRef]],
                     pos: Sequence[z3.ArithRef], args: Sequence[Sequence[V]]) -> list[dict[str, V]]:
    """Per row i, every neighbour's value: ``args[k][l]`` is neighbour k's argument on
    row l; the value is the argument on the row of i's partition at position
    pos[i] + offset, NULL when no row is there."""
    out = []
    for i in range(len(rows)):
        vals: dict[str, V] = {}
        for k, nb in enumerate(program.neighbours):
            v: V = NULL
            for l in reversed(range(len(rows))):
                if l == i:
                    continue
                v = ite(z3.And(members[i][l], pos[l] == pos[i] + nb.offset), args[k][l], v)
            vals[nb.name] = v
        out.append(vals)
    return out


def determines_constraints(rows: Rows, by: Sequence[int], determined: Sequence[int]) -> list[z3.BoolRef]:
    """Present rows NULL-safe equal on the positions ``by`` are equal on ``determined``."""
    out: list[z3.BoolRef] = []
    for i, (pi_, vi) in enumerate(rows):
        for l in range(i + 1, len(rows)):
            pl, vl = rows[l]
            same = rows_not_distinct([vi[j] for j in by], [vl[j] for j in by])
            out.append(z3.Implies(z3.And(pi_, pl, same),
                                  rows_not_distinct([vi[j] for j in determined], [vl[j] for j in determined])))
    return out


def declared_key_constraints(keys: Sequence[DeclaredKey], rows: Rows,
                             col_index: Callable[[str], int]) -> list[z3.BoolRef]:
    """A table's declared keys (:mod:`superop.ir.keys`) on its symbolic rows: a key is
    NOT NULL and no two present rows share it; a dependency is :func:`determines_constraints`."""
    out: list[z3.BoolRef] = []
    for k in keys:
        bi = [col_index(c) for c in k.columns]
        if k.determines is not None:
            out += determines_constraints(rows, bi, [col_index(c) for c in k.determines])
            continue
        for i, (pi_, vi) in enumerate(rows):
            out += [z3.Implies(pi_, z3.Not(vi[j].null)) for j in bi]
            for l in range(i + 1, len(rows)):
                pl, vl = rows[l]
                out.append(z3.Not(z3.And(pi_, pl, rows_not_distinct([vi[j] for j in bi], [vl[j] for j in bi]))))
    return out


def requires_constraints(program: Program, rows: Rows, col_index: Callable[[str], int]) -> list[z3.BoolRef]:
    """The program's preconditions on the symbolic input rows."""
    out: list[z3.BoolRef] = []
    for c in program.requires:
        if isinstance(c, Determines):     # a declared key's consequence
            out += determines_constraints(rows, [col_index(x) for x in c.by], [col_index(x) for x in c.determined])
            continue
        ci = col_index(c.column)
        pi = [col_index(p) for p in c.partition]
        for i, (pres_i, vals_i) in enumerate(rows):
            x = vals_i[ci]
            if x.kind != "int":
                raise Unsupported(f"a row number over a column of kind {x.kind}")
            same = [z3.And(rows[l][0], rows_not_distinct([rows[l][1][j] for j in pi], [vals_i[j] for j in pi]))
                    for l in range(len(rows))]
            size = z3.Sum([z3.If(s, 1, 0) for s in same])
            out.append(z3.Implies(pres_i, z3.And(z3.Not(x.null), x.v >= 1, x.v <= size)))
            for l in range(i + 1, len(rows)):
                y = rows[l][1][ci]
                out.append(z3.Implies(z3.And(pres_i, same[l]), y.v != x.v))
    return out
