"""Bounded symbolic relations: :class:`Rel` (a bag of rows, or an error) and the symbolic
base :class:`Table`, plus NULL-safe grouping of rows.

A :class:`Rel` is a list of rows, each ``(present, [V...])``: a row takes part in the bag
iff ``present``; duplicates are separate rows, so multiplicities are counted, never
collapsed (bag semantics). ``err`` is the condition under which computing the relation
raises (ANSI errors): the relation's outcome is then "error" and its rows mean nothing.
Values stored in a row carry no error of their own (it was accounted in ``err`` by the
operator that computed them).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import z3

from .result import Unsupported
from .values import FALSE, V, fresh, int_width, kind_of_type, or_all, out_of_range, rows_not_distinct


@dataclass
class Rel:
    rows: list[tuple[z3.BoolRef, list[V]]]
    err: z3.BoolRef = field(default=FALSE)


def clean(x: V) -> V:
    """The value as stored in a row (its evaluation error already accounted)."""
    return replace(x, err=FALSE) if not z3.is_false(x.err) else x


def union(rels: Sequence[Rel]) -> Rel:
    rows = [r for rel in rels for r in rel.rows]
    return Rel(rows, or_all([rel.err for rel in rels]))


class Table:
    """The bounded symbolic base table: K rows of (present, values)."""

    def __init__(self, name: str, columns: Sequence[tuple[str, str]], K: int, tag: str = ""):
        self.name = name
        self.columns = list(columns)
        self.kinds = [kind_of_type(t) for _, t in columns]
        self.widths = [int_width(t) for _, t in columns]
        self.K = K
        self.rows: list[tuple[z3.BoolRef, list[V]]] = []
        for i in range(K):
            p = z3.Bool(f"{tag}{name}!{i}!present")
            vals = [V(fresh(k, f"{tag}{name}!{i}!{c}"), z3.Bool(f"{tag}{name}!{i}!{c}!null"), k, FALSE, w)
                    for (c, _), k, w in zip(columns, self.kinds, self.widths)]
            self.rows.append((p, vals))

    def rel(self) -> Rel:
        return Rel(list(self.rows))

    def domain(self) -> list[z3.BoolRef]:
        """What every real table satisfies: an integral column's values lie in its type's
        range (an INT column never holds 2^63; checks whose counterexample needs one are
        about no table)."""
        return [z3.Not(out_of_range(v.v, v.width)) for _, vals in self.rows for v in vals
                if v.kind == "int" and v.width is not None]

    def col_index(self, name: str) -> int:
        for i, (c, _) in enumerate(self.columns):
            if c == name:
                return i
        raise Unsupported(f"column {name!r} not in table {self.name}")


def first_of_group(rows, keys: list[list[V]]) -> list[z3.BoolRef]:
    """Row i represents its group iff it is present and no earlier present row has
    not-distinct keys (NULL keys form one group, as GROUP BY)."""
    out = []
    for i, (p, _) in enumerate(rows):
        earlier = [z3.And(rows[j][0], rows_not_distinct(keys[j], keys[i])) for j in range(i)]
        out.append(z3.And(p, z3.Not(z3.Or(*earlier))) if earlier else p)
    return out


def members_of(rows, keys: list[list[V]], i: int) -> list[z3.BoolRef]:
    return [z3.And(rows[j][0], rows_not_distinct(keys[j], keys[i])) for j in range(len(rows))]
