"""The synthesizer's test inputs: generated tables over the sub-plan's leaves (small key
domains so that groups collide, NULLs, duplicates, every constant of the plan's predicates
and its neighbours, rows drawn to satisfy the paths' filters), tables made to satisfy a
program's preconditions, and one test table with its expected output.
"""
from __future__ import annotations

import datetime as _dt
import random

from ..dsl import Program
from ..dsl.expr_eval import EvalError, compile_expr, truth
from ..ir.dependencies import Determines
from ..ir.nodes import Node, Scan
from .literals import plan_literals, value_kind
from .parts import Parts

_DATES = [_dt.date(2020, 1, 1), _dt.date(2020, 1, 2), _dt.date(2020, 1, 3)]
_TIMES = [_dt.datetime(2020, 1, 1, 0, 0, 0), _dt.datetime(2020, 1, 1, 0, 0, 1), _dt.datetime(2020, 1, 2)]


class Inputs:
    """Generated input tables for a set of leaves (one when the source is shared)."""

    def __init__(self, parts: Parts, plan: Node, key_cols: set[str], seed: int = 7):
        self.leaves: list[Scan] = [s for s in parts.sources]
        lits = plan_literals(plan)
        near = lits.near
        self.domains = {}
        for leaf in self.leaves:
            doms = []
            for col, t in leaf.columns:
                k = value_kind(t)
                if col in key_cols:
                    # few values so that groups collide, plus EVERY constant of the plan
                    # (without neighbours): a filter on the key must be satisfiable
                    # (d = 'write'), also two filters on one key (d_year = 1998 and 1999)
                    dom = {"int": [1, 2], "real": [1.0, 2.0], "str": ["a", "b"],
                           "bool": [True, False], "date": _DATES[:2],
                           "ts": _TIMES[:2]}[k] + lits.exact.get(k, [])
                else:
                    dom = {"int": [0, 1, 2, 3] + near["int"],
                           "real": [0.5, 1.0, 2.5] + near["real"] + [float(x) for x in near["int"]],
                           "str": ["a", "b"] + near["str"],
                           "bool": [True, False], "date": _DATES + near["date"],
                           "ts": _TIMES + near["ts"]}[k]
                doms.append(list(dict.fromkeys(dom)))
            self.domains[id(leaf)] = doms
        self.rng = random.Random(seed)
        self.key_cols = set(key_cols)
        # Row-level predicates of the paths (summary predicates of the edges): rows are
        # often drawn to satisfy one of them, since a conjunction of several filters is
        # rarely hit by chance and a path whose filter never passes tests nothing.
        self.targets = []
        if len(self.leaves) == 1:
            cols = [c for c, _ in self.leaves[0].columns]
            for p in parts.paths:
                pred = getattr(p, "low_pred", None) if hasattr(p, "low_pred") else getattr(p, "pred", None)
                if pred is None:
                    continue
                try:
                    self.targets.append(compile_expr(pred, lambda c: (lambda i: lambda r: r[i])(cols.index(c.name))))
                except (EvalError, ValueError):
                    pass

    def _row(self, doms, null_p):
        return tuple(None if self.rng.random() < null_p else self.rng.choice(d) for d in doms)

    def table(self, n_rows: int, null_p: float = 0.15, one_key: bool = False) -> dict[int, list[tuple]]:
        """Random rows; ``one_key``: every key column fixed to one value (NULL included),
        i.e. one big group — per-group conditions (HAVING count(*) > 2, a min under a
        guard) need many rows in the same group to be exercised."""
        out = {}
        for leaf in self.leaves:
            doms = self.domains[id(leaf)]
            if one_key:
                doms = [[None if self.rng.random() < 0.25 else self.rng.choice(d)] if c in self.key_cols else d
                        for (c, _), d in zip(leaf.columns, doms)]
            rows = []
            for _ in range(n_rows):
                if rows and self.rng.random() < 0.15:
                    rows.append(rows[self.rng.randrange(len(rows))])   # duplicates matter for bags
                    continue
                row = self._row(doms, null_p)
                if self.targets and self.rng.random() < 0.5:
                    want = self.rng.choice(self.targets)
                    for _ in range(30):
                        if truth(want(row)):
                            break
                        row = self._row(doms, null_p)
                rows.append(row)
            out[id(leaf)] = rows
        return out

    def initial(self, n: int = 48) -> list[dict[int, list[tuple]]]:
        """The empty table, then ``n`` random tables of 1..8 rows, every third one a
        single group of 3..10 rows."""
        tables = [{id(l): [] for l in self.leaves}]
        for i in range(n):
            if i % 3 == 2:
                tables.append(self.table(3 + i % 8, null_p=0.1, one_key=True))
            else:
                tables.append(self.table(1 + i % 8, null_p=0.0 if i % 5 == 0 else 0.15))
        return tables


class CheckTable:
    """One test input (rows per leaf), the sub-plan's output on it as a bag, and where it
    came from (generated, z3)."""
    __slots__ = ("data", "expected", "origin")

    def __init__(self, data, expected, origin):
        self.data, self.expected, self.origin = data, expected, origin


def sort_rows(rows):
    return sorted((list(r) for r in rows), key=lambda r: [(v is None, str(type(v)), v if v is not None else 0)
                                                         for v in r])


def satisfy_requires(program: Program, leaf: Scan, data: dict, rng: random.Random) -> dict:
    """A generated table made to satisfy the program's preconditions: each RowNumber
    column numbers its partition's rows 1..n (in a random order); each Determines copies
    the determined columns from the first row with the same ``by`` values."""
    if not program.requires:
        return data
    cols = [c for c, _ in leaf.columns]
    rows = [list(r) for r in data[id(leaf)]]
    for req in program.requires:
        if isinstance(req, Determines):
            bi, di = [cols.index(c) for c in req.by], [cols.index(c) for c in req.determined]
            first: dict[tuple, list] = {}
            for r in rows:
                f = first.setdefault(tuple(r[i] for i in bi), r)
                for i in di:
                    r[i] = f[i]
            continue
        ci, pi = cols.index(req.column), [cols.index(p) for p in req.partition]
        groups: dict[tuple, list[list]] = {}
        for r in rows:
            groups.setdefault(tuple(r[i] for i in pi), []).append(r)
        for g in groups.values():
            for n, r in enumerate(rng.sample(g, len(g)), start=1):
                r[ci] = n
    out = dict(data)
    out[id(leaf)] = [tuple(r) for r in rows]
    return out
