"""Aggregates as folds over symbolic rows: ``init`` / ``step`` / ``finalize`` with SQL's NULL
and empty-group rules. ONE implementation serves the plan's GROUP BY and window
aggregates, the program's accumulators (bounded: over K rows) and the template proofs
(unbounded: the state after an arbitrary prefix of rows, one more row).

* count(*) and count(x): a counter (x: non-NULL values only); 0 for no row.
* sum(x): (total, some non-NULL); NULL when no non-NULL value. An integral sum is a BIGINT
  and raises on overflow under ANSI (checked on the final total; Spark also raises when
  a partial sum overflows in the order it happens to add — that order is not modelled).
* avg(x): (total, count); NULL for count 0, a DOUBLE. ``finalize(bound=K)`` divides by a
  case split over 1..K (linear arithmetic, exact for bounded tables); without a bound it
  is real division by the count.
* min(x) / max(x): (current, NULL so far).
* stddev_samp(x) / var_samp(x): (count, sum, sum of squares) of the non-NULL values (as
  reals); NULL below 2 values (Spark 3+). The final value is an UNINTERPRETED function of
  that state (:func:`moment_function`, one per aggregate) and, under
  ``abstract_nonlinear``, so is x²: a proof (``unsat``) shows that both sides compute the
  statistic from the same (n, Σx, Σx²) — hence from the same non-NULL values' moments —
  and nothing about the function itself (Spark's DOUBLE rounding, which depends on the
  order rows are read, is not modelled, as for a sum of doubles). The exact encoding
  adds the function's definition as side facts (``Encoding.side``: var·n(n-1) = n·Σx² -
  (Σx)², stddev ≥ 0 its root) so a difference found there is real over the reals; the
  caller still re-decides it with the reference semantics (``superop.verify.check``).
* count(DISTINCT x) is not a fold with constant state: :func:`count_distinct` over K rows;
  for the unbounded proofs, the fold whose state is the SET of non-NULL values seen (an
  array from values to booleans) and its size (``init``/``step`` with ``count_distinct``),
  related to the program's sorted fold by :func:`related` (see there).
* max_by(x, o) / min_by(x, o): not folded here; :func:`extremum_by` computes them over
  the K rows with a tie order shared by the original and the program.
* count_distinct_sorted(x) (the DSL's sorted COUNT(DISTINCT)): (last value, some value,
  count of runs) — a non-NULL value adds one when it differs from the last one folded.
  Folded in the partition's sort order it counts the runs of equal values; bounded
  programs fold in that order through :func:`count_runs` (the order is a relation over
  the K rows, not the input positions).

Errors raised while evaluating an aggregate's *argument* are the caller's business (the
argument is evaluated once per member row); a fold's own error is the overflow of a sum.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Sequence

import z3

from .exprs import _DEFAULT as DEFAULT_ENCODING
from .exprs import current
from .result import Unsupported
from .values import (FALSE, NULL, TRUE, V, common_kind, default, fresh, lt, not_distinct,
                     out_of_range, sort_of)

FOLDS = ("count_star", "count", "sum", "min", "max", "avg", "count_distinct_sorted", "stddev_samp", "var_samp")
MOMENTS = ("stddev_samp", "var_samp")
BIGINT = 64


@dataclass(frozen=True)
class FoldState:
    func: str
    kind: Optional[str]             # the argument's kind (None: count(*) / NULL literals)
    width: Optional[int]            # the argument's integer width
    parts: tuple                    # the state's Z3 terms


def _sum_kind(func: str, kind: Optional[str]) -> Optional[str]:
    if func in ("sum", "avg", *MOMENTS) and kind not in ("int", "real", None):
        raise Unsupported(f"{func} over {kind}")
    return kind


def init(func: str, kind: Optional[str] = None, width: Optional[int] = None) -> FoldState:
    if func == "count_distinct":     # the plan's COUNT(DISTINCT), unbounded proofs only
        if kind is None:
            return FoldState(func, None, None, (z3.IntVal(0),))
        return FoldState(func, kind, width, (z3.K(sort_of(kind), FALSE), z3.IntVal(0)))
    if func not in FOLDS:
        raise Unsupported(f"aggregate {func} is not a fold")
    kind = _sum_kind(func, kind)
    if func in ("count_star", "count"):
        return FoldState(func, kind, width, (z3.IntVal(0),))
    if func == "count_distinct_sorted":
        if kind is None:             # over NULL literals only: stays 0
            return FoldState(func, None, None, (z3.IntVal(0),))
        return FoldState(func, kind, width, (default(kind), FALSE, z3.IntVal(0)))
    if kind is None:                 # over NULL literals only: stays NULL
        return FoldState(func, None, None, ())
    if func == "sum":
        return FoldState(func, kind, width, (default(kind), FALSE))
    if func == "avg":
        return FoldState(func, kind, width, (z3.RealVal(0), z3.IntVal(0)))
    if func in MOMENTS:
        return FoldState(func, kind, width, (z3.IntVal(0), z3.RealVal(0), z3.RealVal(0)))
    return FoldState(func, kind, width, (default(kind), TRUE))   # min / max


def symbolic(func: str, kind: Optional[str], width: Optional[int], name: str) -> FoldState:
    """An arbitrary state (every part a fresh constant): the state after some prefix."""
    proto = init(func, kind, width)
    parts = tuple(z3.Const(f"{name}!{i}", t.sort()) if z3.is_array(t) else fresh(_kind_of_term(t), f"{name}!{i}")
                  for i, t in enumerate(proto.parts))
    return FoldState(func, proto.kind, proto.width, parts)


def _kind_of_term(t: z3.ExprRef) -> str:
    if z3.is_bool(t):
        return "bool"
    if z3.is_int(t):
        return "int"
    if z3.is_real(t):
        return "real"
    return "str"


def step(s: FoldState, member: z3.BoolRef, x: Optional[V]) -> FoldState:
    """Fold one row into ``s``; ``member``: the row belongs to the group and passes the
    aggregate's guard; ``x``: the argument's value (None for count(*))."""
    if s.func == "count_star":
        (n,) = s.parts
        return FoldState(s.func, s.kind, s.width, (n + z3.If(member, 1, 0),))
    nn = FALSE if (x is None or x.v is None) else z3.And(member, z3.Not(x.null))
    if s.func == "count":
        (n,) = s.parts
        return FoldState(s.func, s.kind, s.width, (n + z3.If(nn, 1, 0),))
    if not s.parts or nn is FALSE or (s.func in ("count_distinct_sorted", "count_distinct") and s.kind is None):
        return s                     # NULL-literal argument
    k = s.kind
    assert k is not None and x is not None
    xv = x.val(k)
    if s.func == "count_distinct":
        seen, n = s.parts
        new_value = z3.And(nn, z3.Not(z3.Select(seen, xv)))
        return FoldState(s.func, k, s.width, (z3.If(nn, z3.Store(seen, xv, TRUE), seen), n + z3.If(new_value, 1, 0)))
    if s.func == "count_distinct_sorted":
        last, some, n = s.parts
        new = z3.And(nn, z3.Or(z3.Not(some), xv != last))
        return FoldState(s.func, k, s.width, (z3.If(nn, xv, last), z3.Or(some, nn), n + z3.If(new, 1, 0)))
    if s.func == "sum":
        tot, some = s.parts
        return FoldState(s.func, k, s.width, (tot + z3.If(nn, xv, default(k)), z3.Or(some, nn)))
    if s.func == "avg":
        tot, cnt = s.parts
        xr = z3.ToReal(xv) if k == "int" else xv
        return FoldState(s.func, k, s.width, (tot + z3.If(nn, xr, z3.RealVal(0)), cnt + z3.If(nn, 1, 0)))
    if s.func in MOMENTS:
        cnt, tot, sq = s.parts
        xr = z3.ToReal(xv) if k == "int" else xv
        return FoldState(s.func, k, s.width, (cnt + z3.If(nn, 1, 0), tot + z3.If(nn, xr, z3.RealVal(0)),
                                              sq + z3.If(nn, _square(xr), z3.RealVal(0))))
    cur, isnull = s.parts               # min / max
    better = lt(xv, cur, k) if s.func == "min" else lt(cur, xv, k)
    take = z3.And(nn, z3.Or(isnull, better))
    return FoldState(s.func, k, s.width, (z3.If(take, xv, cur), z3.And(isnull, z3.Not(nn))))


def finalize(s: FoldState, bound: Optional[int] = None) -> V:
    """The aggregate's value (``err``: a sum that overflows BIGINT under ANSI)."""
    if s.func in ("count_star", "count"):
        return V(s.parts[0], FALSE, "int", FALSE, BIGINT)
    if s.func in ("count_distinct_sorted", "count_distinct"):
        return V(s.parts[-1], FALSE, "int", FALSE, BIGINT)
    if not s.parts:
        return NULL
    if s.func == "sum":
        tot, some = s.parts
        w = BIGINT if s.kind == "int" else None
        err = z3.And(some, out_of_range(tot, w)) if current().ansi else FALSE
        return V(tot, z3.Not(some), s.kind, err, w)
    if s.func == "avg":
        tot, cnt = s.parts
        if bound is not None:
            # exact, linear division: the count is one of 1..bound
            val = z3.RealVal(0)
            for c in range(bound, 0, -1):
                val = z3.If(cnt == c, tot / c, val)
        else:
            val = tot / z3.ToReal(cnt)
        return V(val, cnt == 0, "real")
    if s.func in MOMENTS:
        cnt, tot, sq = s.parts
        enc = current()
        enc.opaque_used = True               # a difference through it is re-decided concretely
        val = moment_function(s.func)(cnt, tot, sq)
        if enc.abstract_nonlinear and not enc.exact_moments:
            enc.nonlinear_used = True        # so a difference is re-decided with the definition
        else:
            # the definition, as true facts for the caller to add (Encoding.side): for n >= 2,
            # var = (n q - s²) / (n (n - 1)), stddev = the non-negative root of var
            var = val * val if s.func == "stddev_samp" else val
            facts = [z3.Implies(cnt == c, var * (c * (c - 1)) == c * sq - tot * tot)
                     for c in range(2, (bound or 0) + 1)] if bound else \
                [z3.Implies(cnt >= 2, var * z3.ToReal(cnt) * z3.ToReal(cnt - 1) == z3.ToReal(cnt) * sq - tot * tot)]
            if s.func == "stddev_samp":
                facts.append(val >= 0)
            if enc is not DEFAULT_ENCODING:  # no caller to read them outside an encoding() block
                enc.side.append(z3.And(*facts))
        return V(val, cnt < 2, "real")
    cur, isnull = s.parts
    return V(cur, isnull, s.kind, FALSE, s.width)


def _square(x: z3.ArithRef) -> z3.ArithRef:
    """x² — under ``abstract_nonlinear`` an uninterpreted function of x (linear for the
    solver; both sides apply the same function to the same values, so equal states stay
    equal for the real square)."""
    enc = current()
    enc.opaque_used = True
    if enc.abstract_nonlinear and not enc.exact_moments:
        enc.nonlinear_used = True
        return z3.Function("moments!square", z3.RealSort(), z3.RealSort())(x)
    return x * x


def moment_function(func: str) -> z3.FuncDeclRef:
    """The statistic as an uninterpreted function of (count, sum, sum of squares)."""
    return z3.Function(f"{func}!moments", z3.IntSort(), z3.RealSort(), z3.RealSort(), z3.RealSort())


def related(plan: FoldState, prog: FoldState, ascending: bool = True) -> z3.BoolRef:
    """The invariant between the plan's COUNT(DISTINCT x) (the set S of values seen, its
    size n) and the program's sorted fold (last value, some value, runs counted) of the
    same rows read in the program's sort order on x: the same count, a value iff S is not
    empty, and the last value is S's greatest (least, descending) — so a next row in sort
    order is new to S iff it differs from the last one. For two states of the same fold:
    :func:`state_eq`."""
    if plan.func != "count_distinct" or prog.func != "count_distinct_sorted":
        return state_eq(plan, prog)
    if plan.kind is None or prog.kind is None:
        return plan.parts[-1] == prog.parts[-1] if plan.kind == prog.kind else FALSE
    if plan.kind != prog.kind:
        return FALSE
    seen, n = plan.parts
    last, some, cnt = prog.parts
    y = z3.Const("distinct!y", sort_of(plan.kind))
    bounded = lt(y, last, plan.kind) if ascending else lt(last, y, plan.kind)
    return z3.And(n == cnt, n >= 0, some == (n > 0), z3.Implies(some, z3.Select(seen, last)),
                  z3.ForAll([y], z3.Implies(z3.Select(seen, y), z3.And(some, z3.Or(y == last, bounded)))))


def sorted_after(prog: FoldState, x: Optional[V], member: z3.BoolRef, ascending: bool = True) -> z3.BoolRef:
    """The sort order's promise to the program's sorted fold: a row folded into it comes at
    or after the last value folded (rows arrive sorted on the distinct column)."""
    if prog.func != "count_distinct_sorted" or prog.kind is None or x is None or x.v is None:
        return TRUE
    last, some, _ = prog.parts
    xv = x.val(prog.kind)
    after = z3.Or(xv == last, lt(last, xv, prog.kind) if ascending else lt(xv, last, prog.kind))
    return z3.Implies(z3.And(member, z3.Not(x.null), some), after)


def state_eq(a: FoldState, b: FoldState) -> z3.BoolRef:
    if (a.func, a.kind, len(a.parts)) != (b.func, b.kind, len(b.parts)):
        return FALSE
    return z3.And(*[x == y for x, y in zip(a.parts, b.parts)]) if a.parts else TRUE


def arg_kind(pairs: Sequence[tuple[z3.BoolRef, V]]) -> tuple[Optional[str], Optional[int]]:
    vals = [x for _, x in pairs if x is not None]
    k = common_kind(vals)
    ws = {x.width for x in vals if x.v is not None}
    return k, (ws.pop() if len(ws) == 1 else None)


def fold(func: str, pairs: Sequence[tuple[z3.BoolRef, Optional[V]]], bound: Optional[int] = None) -> V:
    """The aggregate over (member, argument) pairs (bounded: one pair per row)."""
    if func == "count_distinct":
        return count_distinct(pairs)
    k, w = arg_kind(pairs) if func != "count_star" else (None, None)
    s = init(func, k, w)
    for m, x in pairs:
        s = step(s, m, x)
    return finalize(s, bound if bound is not None else len(pairs))


def _nn(m, x: V):
    return z3.And(m, z3.Not(x.null)) if x.v is not None else FALSE


def count_distinct(pairs: Sequence[tuple[z3.BoolRef, V]]) -> V:
    terms = []
    for j, (m, x) in enumerate(pairs):
        seen = [z3.And(_nn(pairs[i][0], pairs[i][1]), not_distinct(pairs[i][1], x)) for i in range(j)]
        terms.append(z3.And(_nn(m, x), z3.Not(z3.Or(*seen)) if seen else TRUE))
    n = z3.Sum([z3.If(t, 1, 0) for t in terms]) if terms else z3.IntVal(0)
    return V(n, FALSE, "int", FALSE, BIGINT)


def count_runs(pairs: Sequence[tuple[z3.BoolRef, Optional[V]]],
               before: Sequence[Sequence[z3.BoolRef]]) -> V:
    """count_distinct_sorted over K rows folded in the order ``before[i][j]`` (row i is
    strictly before row j; a strict total order on the rows): the number of counted rows
    (member, argument not NULL) whose immediate counted predecessor in that order is absent
    or carries a different value — the runs of equal values, what the (last, count) fold
    computes when it reads the rows in that order."""
    K = len(pairs)
    cnt = [_nn(m, x) if x is not None else FALSE for m, x in pairs]
    starts = []
    for j in range(K):
        x = pairs[j][1]
        if x is None or x.v is None:
            continue
        same_run = []
        for i in range(K):
            if i == j:
                continue
            between = [z3.And(cnt[k], before[i][k], before[k][j]) for k in range(K) if k not in (i, j)]
            pred = z3.And(cnt[i], before[i][j], z3.Not(z3.Or(*between)) if between else TRUE)
            xi = pairs[i][1]
            assert xi is not None
            same_run.append(z3.And(pred, not_distinct(xi, x)))
        starts.append(z3.And(cnt[j], z3.Not(z3.Or(*same_run)) if same_run else TRUE))
    n = z3.Sum([z3.If(t, 1, 0) for t in starts]) if starts else z3.IntVal(0)
    return V(n, FALSE, "int", FALSE, BIGINT)


@dataclass(frozen=True)
class ByArg:
    """The evaluated argument of ``max_by``/``min_by`` on one row (:func:`extremum_by`)."""
    payload: V
    ordering: V

    @property
    def err(self) -> z3.BoolRef:
        return z3.Or(self.payload.err, self.ordering.err)

    def clean(self) -> "ByArg":
        """Both values as stored in a row (their evaluation errors already accounted)."""
        return ByArg(replace(self.payload, err=FALSE), replace(self.ordering, err=FALSE))


def tie_order(K: int, tag: str = "tie") -> list[z3.ArithRef]:
    """One symbolic priority per position 0..K-1 (the same constants wherever they are
    named): the order in which rows tied on a ``max_by``/``min_by`` ordering value are
    resolved is (priority, position) — any total order of the positions, chosen by the
    solver. The original and the program read the same order (see :func:`extremum_by`)."""
    return [z3.Int(f"{tag}!{j}") for j in range(K)]


def extremum_by(func: str, rows: Sequence[tuple[z3.BoolRef, Optional[V], Optional[V]]],
                tie: Sequence[z3.ArithRef]) -> V:
    """``max_by`` / ``min_by`` over (member, payload, ordering) per position: the payload of
    the member row with the greatest (least) non-NULL ordering value; NULL when there is
    none (a NULL payload is a value like any other). Among rows tied on that value the
    winner is the one last in the tie order ``tie`` (priority, then position) — Spark keeps
    the last tied row it reads, in an order no query fixes.

    Shared nondeterminism: the original query and the program are encoded with the SAME
    ``tie`` constants for the same input positions, and the solver chooses them freely, so
    a proof holds for every resolution of ties: whichever tied payload the rewrite returns
    (Spark reads one order per aggregate node), the original returns that payload under
    that order. A rewrite that could return a payload the original never returns (another
    guard, another column, min for max) is refuted with a tie order that exposes it."""
    if func not in ("max_by", "min_by"):
        raise ValueError(func)
    okind = common_kind([o for _, _, o in rows if o is not None])
    pkind = common_kind([x for _, x, _ in rows if x is not None])
    pws = {x.width for _, x, _ in rows if x is not None and x.v is not None}
    if okind is None:                           # every ordering a NULL literal: no row counts
        return NULL
    cand = [z3.And(m, z3.Not(o.null)) if o is not None and o.v is not None else FALSE for m, _, o in rows]
    ovals = [o.val(okind) if o is not None and o.v is not None else default(okind) for _, _, o in rows]

    def better(j: int, i: int) -> z3.BoolRef:
        """row j wins over row i (both candidates)."""
        a, b = (ovals[i], ovals[j]) if func == "max_by" else (ovals[j], ovals[i])
        later = z3.Or(tie[j] > tie[i], z3.And(tie[j] == tie[i], z3.BoolVal(j > i)))
        return z3.Or(lt(a, b, okind), z3.And(ovals[i] == ovals[j], later))

    wins = [z3.And(cand[j], *[z3.Implies(cand[i], better(j, i)) for i in range(len(rows)) if i != j])
            for j in range(len(rows))]
    if pkind is None:                           # every payload a NULL literal
        return NULL
    val, isnull = default(pkind), TRUE
    for j in reversed(range(len(rows))):
        x = rows[j][1]
        xv, xn = (x.val(pkind), x.null) if x is not None and x.v is not None else (default(pkind), TRUE)
        val, isnull = z3.If(wins[j], xv, val), z3.If(wins[j], xn, isnull)
    return V(val, isnull, pkind, FALSE, pws.pop() if len(pws) == 1 else None)
