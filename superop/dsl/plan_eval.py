"""A small reference evaluator of the plan IR over Python rows (no Spark).

CEGIS checks thousands of (candidate, input) pairs; Spark needs ~100 ms per query, this
needs microseconds. Its meaning is cross-checked against Spark in tests/synth.

    eval_plan(node, tables={"ops": rows}, bind={id(shared): rows}) -> list[tuple]

``bind`` replaces a node (by identity) with given rows — the synthesizer binds the
shared source of a sub-plan to a generated input table. Rows are tuples in the node's
field order; NULL is ``None``. Sort/Limit/Window/Opaque are not evaluated
(:class:`PlanEvalError`); ORDER BY is irrelevant for bag comparison anyway.
"""
from __future__ import annotations

import math
from typing import Callable, Optional

from sqlglot import exp

from ..ir.nodes import Aggregate, Join, Node, Project, Rename, Scan, Select, Sort, UnionAll, resolve_field
from .expr_eval import EvalError, compile_expr, truth
from .program import NoAccumulator, accumulator_call


class PlanEvalError(Exception):
    pass


def _resolver(fields) -> Callable[[exp.Column], Callable]:
    def resolve(col: exp.Column):
        try:
            i = resolve_field(fields, col)
        except KeyError as e:
            raise PlanEvalError(str(e)) from None
        return lambda row: row[i]
    return resolve


def _agg_state(func: exp.AggFunc):
    """(func name, argument expression or None) of a supported aggregate (the one table:
    :func:`superop.synth.dsl.accumulator_call`)."""
    try:
        return accumulator_call(func)
    except NoAccumulator as e:
        raise PlanEvalError(str(e)) from None


def sample_moment(name: str, nn: list):
    """stddev_samp / var_samp of the non-NULL values ``nn`` as Spark computes them
    (CentralMomentAgg: Welford's update in DOUBLE; NULL for fewer than 2 values)."""
    n, mean, m2 = 0, 0.0, 0.0
    for x in nn:
        n += 1
        delta = float(x) - mean
        dn = delta / n
        mean += dn
        m2 += delta * (delta - dn)
    return moment_value(name, n, m2)


def moment_value(name: str, n: int, m2: float):
    """The final value of the (count, M2) state: NULL below 2 values (Spark 3+)."""
    if n < 2:
        return None
    var = m2 / (n - 1)
    return math.sqrt(var) if name == "stddev_samp" else var


def aggregate_values(name: str, vals: list):
    if name in ("max_by", "min_by"):
        # vals = (payload, ordering) pairs: NULL orderings skipped, a tie keeps the later
        # row (Spark's MaxBy/MinBy update)
        best, out = None, None
        for pay, o in vals:
            if o is not None and (best is None or (o >= best if name == "max_by" else o <= best)):
                best, out = o, pay
        return out
    if name == "count_star":
        return len(vals)
    nn = [v for v in vals if v is not None]
    if name == "count":
        return len(nn)
    if name == "count_distinct":
        return len(set(nn))
    if not nn:
        return None
    if name == "sum":
        s = nn[0]
        for v in nn[1:]:
            s = s + v
        return s
    if name == "avg":
        s = nn[0]
        for v in nn[1:]:
            s = s + v
        return s / len(nn)
    if name in ("stddev_samp", "var_samp"):
        return sample_moment(name, nn)
    if name == "min":
        return min(nn)
    if name == "max":
        return max(nn)
    raise PlanEvalError(name)


def eval_plan(node: Node, tables: Optional[dict] = None, bind: Optional[dict] = None) -> list[tuple]:
    tables = {k.lower(): v for k, v in (tables or {}).items()}
    bind = bind or {}
    memo: dict[int, list[tuple]] = {}

    def go(n: Node) -> list[tuple]:
        if id(n) in bind:
            return list(bind[id(n)])
        if id(n) in memo:
            return memo[id(n)]
        r = _eval(n, go, tables)
        memo[id(n)] = r
        return r

    try:
        return go(node)
    except EvalError as e:
        raise PlanEvalError(str(e)) from None


def _eval(n: Node, go, tables) -> list[tuple]:
    if isinstance(n, Scan):
        if n.table not in tables:
            raise PlanEvalError(f"no rows given for table {n.table}")
        return list(tables[n.table])
    if isinstance(n, Select):
        p = compile_expr(n.predicate, _resolver(n.child.fields))
        return [r for r in go(n.child) if truth(p(r))]
    if isinstance(n, Project):
        fs = [compile_expr(e, _resolver(n.child.fields)) for e, _ in n.items]
        return [tuple(f(r) for f in fs) for r in go(n.child)]
    if isinstance(n, Rename):
        idx = [n.child.fields.index(f) if f in n.child.fields else resolve_field(n.child.fields, f.column())
               for f, _ in n.mapping]
        return [tuple(r[i] for i in idx) for r in go(n.child)]
    if isinstance(n, Sort):
        return go(n.child)  # bags: order is irrelevant
    if isinstance(n, UnionAll):
        out: list[tuple] = []
        for c in n.inputs:
            out.extend(go(c))
        return out
    if isinstance(n, Aggregate):
        return _aggregate(n, go(n.child))
    if isinstance(n, Join):
        return _join(n, go(n.left), go(n.right))
    raise PlanEvalError(f"{n.op} is not evaluated by the reference evaluator")


def _aggregate(n: Aggregate, rows: list[tuple]) -> list[tuple]:
    res = _resolver(n.child.fields)
    keyf = [compile_expr(k, res) for k in n.keys]
    groups: dict[tuple, list[tuple]] = {}
    for r in rows:
        groups.setdefault(tuple(f(r) for f in keyf), []).append(r)
    if not n.keys and not groups:
        groups[()] = []                    # a global aggregate has one row even on no input
    # env for items: (first row of the group, list of aggregate values)
    specs: list[tuple[str, Optional[Callable]]] = []

    def agg(func: exp.AggFunc):
        name, arg = _agg_state(func)
        i = len(specs)
        specs.append((name, compile_expr(arg, res) if arg is not None else None))
        return lambda env: env[1][i]

    def item_res(col):
        f = res(col)
        return lambda env: None if env[0] is None else f(env[0])

    items = [compile_expr(e, item_res, agg) for e, _ in n.items]
    out = []
    for _, grows in groups.items():
        vals = [aggregate_values(name, [a(r) if a is not None else 1 for r in grows])
                for name, a in specs]
        env = (grows[0] if grows else None, vals)
        out.append(tuple(f(env) for f in items))
    return out


def _join(n: Join, left: list[tuple], right: list[tuple]) -> list[tuple]:
    lf, rf = n.left.fields, n.right.fields
    both = lf + rf
    conds = []
    for a, b in n.equi:
        conds.append(exp.EQ(this=a.copy(), expression=b.copy()))
    # equi expressions resolve against their own side; residual against both
    leq = [compile_expr(a, _resolver(lf)) for a, _ in n.equi]
    req = [compile_expr(b, _resolver(rf)) for _, b in n.equi]
    resid = compile_expr(n.residual, _resolver(both)) if n.residual is not None else None
    nl, nr = len(lf), len(rf)

    def match(l, r) -> bool:
        for fa, fb in zip(leq, req):
            x, y = fa(l), fb(r)
            if x is None or y is None or x != y:
                return False
        return resid is None or truth(resid(l + r))

    kind = n.kind
    out: list[tuple] = []
    rmatched = [False] * len(right)
    for l in left:
        hit = False
        for j, r in enumerate(right):
            if match(l, r):
                hit = True
                rmatched[j] = True
                if kind in ("inner", "left", "right", "full", "cross"):
                    out.append(l + r)
                elif kind == "semi":
                    break
        if kind == "semi" and hit:
            out.append(l)
        elif kind == "anti" and not hit:
            out.append(l)
        elif kind in ("left", "full") and not hit:
            out.append(l + (None,) * nr)
    if kind in ("right", "full"):
        for j, r in enumerate(right):
            if not rmatched[j]:
                out.append((None,) * nl + r)
    return out
