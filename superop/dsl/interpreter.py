"""Reference semantics of the super-operator DSL (superop.synth.dsl): run a program on
a pandas DataFrame (or plain rows) with SQL NULL semantics.

    run_program(program, df) -> list[tuple]

Steps, per partition (equal ``program.keys``; NULL keys form one partition, as GROUP BY;
no keys: one partition, the whole input, even when it is empty):
sort (stable, NULLS FIRST/LAST as stated), fold accumulators and flags over the rows
where their guard is TRUE, then emit. A neighbour ``nb.x`` of a row is its ``arg`` on the
row ``offset`` positions away in the sorted partition (NULL if none). An input that
violates the program's ``requires`` raises :class:`ProgramError`. A ``RowEmit`` sees the *running* state (folded up
to and including the current row) when the program is ``streaming`` and the *final*
state when it is ``buffering``; a ``PartitionEmit`` always sees the final state.
This is the executable meaning of a program: tests and CEGIS compare it against the
original sub-plan, and the verifier replays its counterexamples through it.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Iterable, Sequence

from sqlglot import exp

from ..ir.dependencies import Determines
from .expr_eval import EvalError, compile_expr, truth
from .plan_eval import moment_value
from .program import BUFFERING, STREAMING, Accumulator, Program


class ProgramError(ValueError):
    """A program that cannot run on the given input (unknown column, bad namespace)."""


def py_value(v: Any) -> Any:
    """pandas/numpy scalar -> plain Python, NaN/NA/NaT -> None."""
    if v is None:
        return None
    try:
        import pandas as pd
        if v is pd.NA or v is pd.NaT:
            return None
        if isinstance(v, pd.Timestamp):
            return v.to_pydatetime()
    except ImportError:  # pragma: no cover
        pass
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        try:
            v = v.item()
        except (ValueError, AttributeError):
            pass
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def df_rows(df) -> tuple[tuple[str, ...], list[tuple]]:
    cols = tuple(str(c).lower() for c in df.columns)
    rows = [tuple(py_value(v) for v in r) for r in df.itertuples(index=False, name=None)]
    return cols, rows


def run_program(program: Program, df) -> list[tuple]:
    """Run ``program`` over the rows of ``df`` (columns = the program's input columns)."""
    cols, rows = df_rows(df)
    return run_program_rows(program, cols, rows)


# ---------------------------------------------------------------------------
class _Agg:
    __slots__ = ("func", "n", "v", "seen", "best")

    def __init__(self, func: str):
        self.func = func
        self.n = 0
        self.v = None
        self.seen = set() if func == "count_distinct" else None
        self.best = None                  # max_by / min_by: the best ordering value so far

    def add(self, x) -> None:
        f = self.func
        if f == "count_star":
            self.n += 1
            return
        if f in ("max_by", "min_by"):
            # x = (payload, ordering): a NULL ordering is skipped, a NULL payload kept; a
            # tie keeps the later row (what Spark's MaxBy/MinBy update does)
            pay, o = x
            if o is not None and (self.best is None or (o >= self.best if f == "max_by" else o <= self.best)):
                self.v, self.best = pay, o
            return
        if x is None:
            return
        if f == "count":
            self.n += 1
        elif f == "count_distinct":
            self.seen.add(x)
        elif f == "count_distinct_sorted":
            # constant state (last counted value, count): a run of equal values counts once
            if self.n == 0 or x != self.v:
                self.n += 1
            self.v = x
        elif f in ("sum", "avg"):
            self.v = x if self.v is None else self.v + x
            self.n += 1
        elif f in ("stddev_samp", "var_samp"):
            # Welford's update in DOUBLE, as Spark's CentralMomentAgg: v = (mean, m2)
            mean, m2 = self.v or (0.0, 0.0)
            self.n += 1
            delta = float(x) - mean
            dn = delta / self.n
            self.v = (mean + dn, m2 + delta * (delta - dn))
        elif f == "min":
            if self.v is None or x < self.v:
                self.v = x
        elif f == "max":
            if self.v is None or x > self.v:
                self.v = x

    def value(self):
        f = self.func
        if f in ("count_star", "count", "count_distinct_sorted"):
            return self.n
        if f in ("max_by", "min_by"):
            return self.v
        if f == "count_distinct":
            return len(self.seen)
        if f in ("stddev_samp", "var_samp"):
            return moment_value(f, self.n, self.v[1] if self.v else 0.0)
        if f == "avg":
            return None if self.n == 0 else self.v / self.n
        return self.v


class Compiled:
    """A program compiled against an input column list (reusable across inputs)."""

    def __init__(self, program: Program, columns: Sequence[str]):
        self.p = program
        cols = [c.lower() for c in columns]
        self.col_index = {c: i for i, c in enumerate(cols)}
        missing = [k for k in program.keys if k.lower() not in self.col_index]
        if missing:
            raise ProgramError(f"partition keys not in the input: {missing}")
        self.key_idx = [self.col_index[k.lower()] for k in program.keys]
        self.key_pos = {k.lower(): i for i, k in enumerate(program.keys)}
        self.acc_pos = {a.name.lower(): i for i, a in enumerate(program.accumulators)}
        self.flag_pos = {f.name.lower(): i for i, f in enumerate(program.flags)}
        self.nb_pos = {n.name.lower(): i for i, n in enumerate(program.neighbours)}
        for c in program.requires:
            for col in c.reads():
                if col.lower() not in self.col_index:
                    raise ProgramError(f"required column {col} not in the input")
        for s in program.sort:
            if s.column.lower() not in self.col_index:
                raise ProgramError(f"sort column {s.column} not in the input")
        row_only = ("row",)
        try:
            self.acc_arg = [self._c(a.arg, row_only) if a.arg is not None else None
                            for a in program.accumulators]
            self.acc_guard = [self._c(a.guard, row_only) for a in program.accumulators]
            self.flag_guard = [self._c(f.guard, row_only) for f in program.flags]
            self.nb_arg = [self._c(n.arg, row_only) for n in program.neighbours]
            pns = ("key", "acc", "flag")
            self.pemits = [(self._c(em.guard, pns), [self._c(o, pns) for o in em.outputs])
                           for em in program.partition_emits]
            rns = ("row", "key", "acc", "flag", "nb")
            self.remits = [(self._c(em.guard, rns), [self._c(o, rns) for o in em.outputs])
                           for em in program.row_emits]
        except EvalError as e:
            raise ProgramError(str(e)) from None

    # env = (row, keyvals, accvals, flagvals, neighbour values)
    def _c(self, e, allowed):
        if e is None:
            return None

        def resolve(col: exp.Column):
            ns = (col.table or "").lower()
            name = col.name.lower()
            if ns not in allowed:
                raise ProgramError(f"{col.sql()} is not allowed here (namespaces {allowed})")
            if ns == "row":
                if name not in self.col_index:
                    raise ProgramError(f"unknown input column {col.sql()}")
                i = self.col_index[name]
                return lambda env: env[0][i]
            if ns == "key":
                if name not in self.key_pos:
                    raise ProgramError(f"{col.sql()} is not a partition key")
                i = self.key_pos[name]
                return lambda env: env[1][i]
            if ns == "acc":
                if name not in self.acc_pos:
                    raise ProgramError(f"unknown accumulator {col.sql()}")
                i = self.acc_pos[name]
                return lambda env: env[2][i]
            if ns == "nb":
                if name not in self.nb_pos:
                    raise ProgramError(f"unknown neighbour {col.sql()}")
                i = self.nb_pos[name]
                return lambda env: env[4][i]
            if name not in self.flag_pos:
                raise ProgramError(f"unknown flag {col.sql()}")
            i = self.flag_pos[name]
            return lambda env: env[3][i]

        return compile_expr(e, resolve)

    def _sorted(self, rows: list[tuple]) -> list[tuple]:
        if not self.p.sort:
            return rows
        keys = [(self.col_index[s.column.lower()], s.ascending, s.nulls_first) for s in self.p.sort]

        def cmp(x, y):
            for i, asc, nf in keys:
                a, b = x[i], y[i]
                if a is None and b is None:
                    continue
                if a is None or b is None:
                    # a NULL goes first iff nulls_first (independent of direction, as in Spark)
                    return (-1 if nf else 1) if a is None else (1 if nf else -1)
                if a == b:
                    continue
                r = -1 if a < b else 1
                return r if asc else -r
            return 0
        return sorted(rows, key=functools.cmp_to_key(cmp))

    def _check_requires(self, rows: list[tuple]) -> None:
        """The input must satisfy every precondition (:class:`RowNumber`, :class:`Determines`)."""
        for c in self.p.requires:
            if isinstance(c, Determines):
                bi = [self.col_index[x.lower()] for x in c.by]
                di = [self.col_index[x.lower()] for x in c.determined]
                seen: dict[tuple, tuple] = {}
                for r in rows:
                    d = tuple(r[i] for i in di)
                    if seen.setdefault(tuple(r[i] for i in bi), d) != d:
                        raise ProgramError(f"input violates the precondition: {c.text()}")
                continue
            ci = self.col_index[c.column.lower()]
            pi = [self.col_index[x.lower()] for x in c.partition]
            groups: dict[tuple, list] = {}
            for r in rows:
                groups.setdefault(tuple(r[i] for i in pi), []).append(r[ci])
            for g, vals in groups.items():
                if sorted(v for v in vals if v is not None) != list(range(1, len(vals) + 1)) or None in vals:
                    raise ProgramError(f"input violates the precondition: {c.column} does not number the "
                                       f"rows of partition {g} 1..{len(vals)}")

    def _neighbours(self, prow: list[tuple]) -> list[list]:
        """Per row of a sorted partition, the value of every neighbour."""
        n = len(prow)
        args = [[f((r, None, None, None, None)) for r in prow] for f in self.nb_arg]
        return [[args[k][i + nb.offset] if 0 <= i + nb.offset < n else None
                 for k, nb in enumerate(self.p.neighbours)] for i in range(n)]

    def run(self, rows: Iterable[tuple]) -> list[tuple]:
        parts: dict[tuple, list[tuple]] = {}
        rows = list(rows)
        if self.p.requires:
            self._check_requires(rows)
        for r in rows:
            parts.setdefault(tuple(r[i] for i in self.key_idx), []).append(r)
        if not self.key_idx and not parts:
            parts[()] = []      # no keys = one partition, the whole input, even when empty (as GROUP BY ())
        out: list[tuple] = []
        streaming = self.p.memory == STREAMING
        for kv, prow in parts.items():
            prow = self._sorted(prow)
            nbs = self._neighbours(prow) if self.p.neighbours else [[]] * len(prow)
            aggs = [_Agg(a.func) for a in self.p.accumulators]
            flags = [False] * len(self.p.flags)
            if self.remits and not streaming:
                self._fold_all(prow, aggs, flags)
                accv = [a.value() for a in aggs]
                for r, nb in zip(prow, nbs):
                    self._emit_row(r, kv, accv, flags, nb, out)
            else:
                for r, nb in zip(prow, nbs):
                    self._fold(r, aggs, flags)
                    if self.remits:
                        self._emit_row(r, kv, [a.value() for a in aggs], flags, nb, out)
            accv = [a.value() for a in aggs]
            env = (None, kv, accv, flags, None)
            for g, outs in self.pemits:
                if g is None or truth(g(env)):
                    out.append(tuple(o(env) for o in outs))
        return out

    def _fold(self, r, aggs, flags):
        env = (r, None, None, None, None)
        for i, a in enumerate(aggs):
            g = self.acc_guard[i]
            if g is None or truth(g(env)):
                arg = self.acc_arg[i]
                a.add(arg(env) if arg is not None else None)
        for i, g in enumerate(self.flag_guard):
            if not flags[i] and (g is None or truth(g(env))):
                flags[i] = True

    def _fold_all(self, rows, aggs, flags):
        for r in rows:
            self._fold(r, aggs, flags)

    def _emit_row(self, r, kv, accv, flags, nb, out):
        env = (r, kv, accv, list(flags), nb)
        for g, outs in self.remits:
            if g is None or truth(g(env)):
                out.append(tuple(o(env) for o in outs))


def run_program_rows(program: Program, columns: Sequence[str], rows: Iterable[tuple]) -> list[tuple]:
    """Like :func:`run_program` over plain tuples (``columns`` names their positions)."""
    return Compiled(program, columns).run(rows)


__all__ = ["run_program", "run_program_rows", "Compiled", "ProgramError", "df_rows", "py_value",
           "STREAMING", "BUFFERING", "Accumulator"]
