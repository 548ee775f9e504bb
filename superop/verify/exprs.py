"""Expressions (sqlglot) -> :class:`~superop.verify.values.V`, with Spark's NULL and error
semantics.

Errors as outcomes. Under ANSI mode (Spark 4's default) a partial expression raises:
integral and decimal/double division and remainder by zero, integer overflow of + - * and
unary minus / abs (by the operands' bit width), CAST overflow (to a narrower integer) and
invalid CAST of a string to a number. ``V.err`` is the condition under which evaluating the
value raises. Evaluation order is Spark's interpreted order, which decides whether a
sub-expression is evaluated at all:
* a binary operator evaluates its left operand, and its right one only when the left is
  not NULL (division and remainder evaluate the divisor first);
* AND evaluates its right operand only when the left is not FALSE, OR only when it is
  not TRUE; CASE / IF / COALESCE / IN evaluate lazily, left to right;
* an operand that is the literal NULL folds the operator to NULL (Spark's NullPropagation)
  before anything is evaluated.
Without ANSI mode division/remainder by zero is NULL and overflow wraps (not modelled:
``Unsupported`` is not raised, the value is the mathematical one — see the README).

Uninterpreted functions. A call of a function sqlglot does not know (``exp.Anonymous``)
is encoded only when its name is declared in :func:`encoding` ``(functions={name: kind})``:
its value, NULL-ness and error are uninterpreted functions of the arguments' (normalized)
values and NULL flags. The template proofs use them for edge predicates and projections;
everywhere else an unknown function stays ``Unsupported``.
"""
from __future__ import annotations

import contextvars
import datetime as _dt
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional

import z3
from sqlglot import exp

from ..ir.dialect import DIALECT
from ..ir.parameters import is_parameter_arithmetic, nullable_parameter, parameter_type
from .result import Unsupported
from .values import (
    EPOCH,
    FALSE,
    NULL,
    TRUE,
    V,
    any_err,
    common_kind,
    common_width,
    const,
    fresh,
    int_width,
    is_false,
    is_true,
    ite,
    kind_of_type,
    lt,
    not_distinct,
    out_of_range,
    sort_of,
)


# ---------------------------------------------------------------------------
# Encoding settings (per thread of control)
# ---------------------------------------------------------------------------
@dataclass
class Encoding:
    """``ansi``: partial expressions raise (Spark 4 default) instead of yielding NULL.
    ``abstract_nonlinear``: x*y and x/y of two non-constants become uninterpreted functions
    (sound for ``unsat``; check.py re-decides a ``sat`` exactly). ``functions``: declared
    uninterpreted functions, name -> result kind. ``opaque_used``: an aggregate's value was
    left uninterpreted (stddev_samp / var_samp of their moments, ``superop.verify.folds``):
    a difference the solver finds may not be real (``check`` re-decides it concretely).
    ``side``: true facts about such values (the exact encoding's definition of the
    statistic) that a caller adds to its query (``check.check_outcomes`` does)."""
    ansi: bool = True
    abstract_nonlinear: bool = False
    functions: dict = field(default_factory=dict)
    nonlinear_used: bool = False
    opaque_used: bool = False
    side: list = field(default_factory=list)
    exact_moments: bool = False      # stddev/var defined (side facts) even when abstracting
    # literals a proof quantifies over: literal SQL text (a number) -> its symbolic value,
    # the same wherever the literal occurs (``ProofInstance.parameters``)
    parameters: dict = field(default_factory=dict)


_ENC: contextvars.ContextVar[Optional[Encoding]] = contextvars.ContextVar("superop_encoding", default=None)
_DEFAULT = Encoding()


def current() -> Encoding:
    return _ENC.get() or _DEFAULT


@contextmanager
def encoding(**settings) -> Iterator[Encoding]:
    """Encode under these settings (inheriting the unset ones from the enclosing block)."""
    outer = current()
    enc = Encoding(ansi=settings.get("ansi", outer.ansi),
                   abstract_nonlinear=settings.get("abstract_nonlinear", outer.abstract_nonlinear),
                   exact_moments=settings.get("exact_moments", outer.exact_moments),
                   functions={**outer.functions, **{k.lower(): v for k, v in
                                                    (settings.get("functions") or {}).items()}},
                   parameters={**outer.parameters, **(settings.get("parameters") or {})})
    token = _ENC.set(enc)
    try:
        yield enc
    finally:
        _ENC.reset(token)
        outer.nonlinear_used |= enc.nonlinear_used
        outer.opaque_used |= enc.opaque_used
        if outer is not _DEFAULT:
            outer.side.extend(enc.side)


class Ctx:
    """Resolves column references (and, inside an Aggregate, aggregate calls)."""

    def __init__(self, col: Callable[[exp.Column], V],
                 aggf: Optional[Callable[[exp.Expression], V]] = None):
        self.col = col
        self.aggf = aggf


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _date_days(s: str) -> int:
    try:
        return (_dt.date.fromisoformat(s.strip()) - EPOCH).days
    except ValueError:
        raise Unsupported(f"date literal {s!r}") from None


def _lazy2(a: V, b: V, own: z3.BoolRef = FALSE) -> z3.BoolRef:
    """Error of a binary operator that evaluates ``b`` only when ``a`` is not NULL and
    raises (``own``) only when both are non-NULL."""
    return z3.Or(a.err, z3.And(z3.Not(a.null), z3.Or(b.err, z3.And(z3.Not(b.null), own))))


def bool3(op: str, a: V, b: V) -> V:
    """SQL AND / OR (three-valued), with Spark's short-circuit error semantics."""
    ta, tb, fa, fb = is_true(a), is_true(b), is_false(a), is_false(b)
    if op == "and":
        t, f = z3.And(ta, tb), z3.Or(fa, fb)
        err = z3.Or(a.err, z3.And(z3.Not(fa), b.err))
    else:
        t, f = z3.Or(ta, tb), z3.And(fa, fb)
        err = z3.Or(a.err, z3.And(z3.Not(ta), b.err))
    return V(t, z3.And(z3.Not(t), z3.Not(f)), "bool", err)


def cmp(cls, a: V, b: V) -> V:
    """=, <>, <, >, <=, >= (NULL if either side is NULL)."""
    if a.v is None or b.v is None:
        return V(FALSE, TRUE, "bool")
    k = common_kind([a, b])
    x, y = a.val(k), b.val(k)
    if cls is exp.EQ:
        r = x == y
    elif cls is exp.NEQ:
        r = x != y
    elif cls is exp.LT:
        r = lt(x, y, k)
    elif cls is exp.GT:
        r = lt(y, x, k)
    elif cls is exp.LTE:
        r = z3.Not(lt(y, x, k))
    elif cls is exp.GTE:
        r = z3.Not(lt(x, y, k))
    else:  # pragma: no cover
        raise Unsupported(cls.__name__)
    return V(r, z3.Or(a.null, b.null), "bool", _lazy2(a, b))


def _is_num(x) -> bool:
    return z3.is_int_value(x) or z3.is_rational_value(x)


def _uf(op: str, k: str):
    current().nonlinear_used = True
    srt = z3.IntSort() if k in ("int", "date") else z3.RealSort()
    return z3.Function(f"{op}!{k}", srt, srt, srt)


def arith(cls, a: V, b: V) -> V:
    if a.v is None or b.v is None:
        return NULL   # NullPropagation: folded before evaluation
    k = common_kind([a, b])
    if k not in ("int", "real"):
        raise Unsupported(f"arithmetic on {k}")
    ansi = current().ansi
    abstract = current().abstract_nonlinear
    null = z3.Or(a.null, b.null)
    if cls is exp.Div:  # Spark: / yields double (decimal for decimals); x/0 raises (ANSI) or is NULL
        x, y = a.val("real"), b.val("real")
        q = _uf("div", "real")(x, y) if abstract and not _is_num(y) else x / y
        zero = y == 0
        val = z3.If(zero, z3.RealVal(0), q)
        if ansi:
            return V(val, null, "real", _lazy2(b, a, zero))
        return V(val, z3.Or(null, zero), "real", _lazy2(b, a))
    x, y = a.val(k), b.val(k)
    w = common_width([a, b]) if k == "int" else None
    if cls is exp.Mod:
        if k != "int":
            raise Unsupported(f"operator % on {k}")
        # Spark's % takes the sign of the dividend; x % 0 raises (ANSI) or is NULL
        ay = z3.If(y >= 0, y, -y)
        r = z3.If(x >= 0, x % ay, -((-x) % ay))
        zero = y == 0
        val = z3.If(zero, z3.IntVal(0), r)
        if ansi:
            return V(val, null, k, _lazy2(b, a, zero), w)
        return V(val, z3.Or(null, zero), k, _lazy2(b, a), w)
    if cls is exp.Mul and abstract and not (_is_num(x) or _is_num(y)):
        r = _uf("mul", k)(x, y)
    elif cls is exp.Add:
        r = x + y
    elif cls is exp.Sub:
        r = x - y
    elif cls is exp.Mul:
        r = x * y
    else:
        raise Unsupported(f"operator {cls.__name__} on {k}")
    own = out_of_range(r, w) if (ansi and k == "int") else FALSE
    return V(r, null, k, _lazy2(a, b, own), w)


def _cast_str_to_number(x: V, k: str, w: Optional[int], safe: bool) -> V:
    """CAST(string AS int/double): which strings parse, and to what, is left uninterpreted
    (Spark trims blanks, accepts signs, ...); an invalid string raises under ANSI and is
    NULL otherwise (and always for TRY_CAST)."""
    srt = sort_of(k)
    parse = z3.Function(f"cast!str!{k}", z3.StringSort(), srt)
    valid = z3.Function(f"cast!str!{k}!valid", z3.StringSort(), z3.BoolSort())
    s = x.normalized("str")
    val = parse(s)
    bad = z3.Or(z3.Not(valid(s)), out_of_range(val, w))
    if current().ansi and not safe:
        return V(val, x.null, k, z3.Or(x.err, z3.And(z3.Not(x.null), bad)), w)
    return V(val, z3.Or(x.null, bad), k, x.err, w)


def cast(x: V, to: exp.DataType, safe: bool = False) -> V:
    """CAST (``safe``: TRY_CAST, which yields NULL instead of raising)."""
    t = to.sql(dialect=DIALECT).lower()
    k = kind_of_type(t)
    w = int_width(t) if k == "int" else None
    if x.v is None:
        return V(None, TRUE, k, x.err)
    if k == x.kind and k != "int":
        return x
    if k == "int" and x.kind == "int":
        r = x.v
    elif k == "real" and x.kind == "int":
        return V(z3.ToReal(x.v), x.null, k, x.err)
    elif k == "int" and x.kind == "real":  # truncation toward zero
        r = z3.If(x.v >= 0, z3.ToInt(x.v), -z3.ToInt(-x.v))
    elif k in ("int", "real") and x.kind == "str":
        return _cast_str_to_number(x, k, w, safe)
    else:
        raise Unsupported(f"cast {x.kind} -> {t}")
    over = out_of_range(r, w)
    if safe or not current().ansi:
        # TRY_CAST yields NULL on overflow; non-ANSI CAST wraps around (not modelled: Unsupported
        # would lose every query with a cast, so the overflowing value is kept mathematically)
        null = z3.Or(x.null, over) if safe else x.null
        return V(r, null, k, x.err, w)
    return V(r, x.null, k, z3.Or(x.err, z3.And(z3.Not(x.null), over)), w)


def _uninterpreted(e: exp.Anonymous, ctx: Ctx) -> V:
    name = str(e.this).lower()
    kind = current().functions.get(name)
    if kind is None:
        raise Unsupported(f"function {e.sql(dialect=DIALECT)}")
    args = [ev(a, ctx) for a in e.expressions]
    sorts, terms = [], []
    for a in args:
        ak = a.kind or "int"
        sorts += [sort_of(ak), z3.BoolSort()]
        terms += [a.normalized(ak), a.null]
    sig = "_".join(a.kind or "null" for a in args)
    fv = z3.Function(f"uf!{name}!{sig}", *sorts, sort_of(kind))
    fn = z3.Function(f"uf!{name}!{sig}!null", *sorts, z3.BoolSort())
    fe = z3.Function(f"uf!{name}!{sig}!err", *sorts, z3.BoolSort())
    if not args:
        return V(z3.Const(f"uf!{name}", sort_of(kind)), z3.Bool(f"uf!{name}!null"), kind,
                 z3.Bool(f"uf!{name}!err"))
    # every argument is evaluated (a function call is strict)
    return V(fv(*terms), fn(*terms), kind, z3.Or(any_err(args), fe(*terms)))


def _int_literal(txt: str) -> V:
    n = int(txt)
    w = 32 if -(1 << 31) <= n < (1 << 31) else 64
    return const(z3.IntVal(n), "int", w)


def _unary_int(x: V, r: z3.ArithRef, own_if_int: z3.BoolRef) -> V:
    own = own_if_int if (current().ansi and x.kind == "int" and x.width is not None) else FALSE
    return V(r, x.null, x.kind, z3.Or(x.err, z3.And(z3.Not(x.null), own)), x.width)


# ---------------------------------------------------------------------------
# the evaluator
# ---------------------------------------------------------------------------
def ev(e: exp.Expression, ctx: Ctx) -> V:
    if isinstance(e, (exp.Paren, exp.Alias)):
        return ev(e.this, ctx)
    if isinstance(e, exp.Column):
        if isinstance(e.this, exp.Star):
            raise Unsupported("* in expression")
        return ctx.col(e)
    if isinstance(e, exp.AggFunc):
        if ctx.aggf is None:
            raise Unsupported(f"aggregate {e.sql()} outside an aggregate")
        return ctx.aggf(e)
    if isinstance(e, exp.Literal):
        return _ev_literal(e)
    if isinstance(e, exp.Placeholder):
        return _ev_parameter(e)
    if isinstance(e, exp.Boolean):
        return const(z3.BoolVal(bool(e.this)), "bool")
    if isinstance(e, exp.Null):
        return NULL
    if isinstance(e, exp.And):
        return bool3("and", ev(e.this, ctx), ev(e.expression, ctx))
    if isinstance(e, exp.Or):
        return bool3("or", ev(e.this, ctx), ev(e.expression, ctx))
    if isinstance(e, exp.Not):
        return _ev_not(e, ctx)
    if type(e) in (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE):
        return cmp(type(e), ev(e.this, ctx), ev(e.expression, ctx))
    if isinstance(e, (exp.NullSafeEQ, exp.NullSafeNEQ)):
        a, b = ev(e.this, ctx), ev(e.expression, ctx)
        eq = not_distinct(a, b)
        return V(eq if isinstance(e, exp.NullSafeEQ) else z3.Not(eq), FALSE, "bool",
                 z3.Or(a.err, b.err))
    if isinstance(e, exp.Is):
        return _ev_is(e, ctx)
    if type(e) in (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod):
        return _premised(e, arith(type(e), ev(e.this, ctx), ev(e.expression, ctx)))
    if isinstance(e, (exp.Neg, exp.Abs)):
        return _premised(e, _ev_sign(e, ctx))
    if isinstance(e, (exp.Greatest, exp.Least)):
        return _ev_extremum(e, ctx)
    if isinstance(e, exp.Case):
        return _ev_case(e, ctx)
    if isinstance(e, exp.If):
        f = ev(e.args["false"], ctx) if e.args.get("false") is not None else NULL
        return _choose(ev(e.this, ctx), ev(e.args["true"], ctx), f)
    if isinstance(e, exp.Coalesce):
        vals = [ev(a, ctx) for a in [e.this] + list(e.expressions)]
        out = vals[-1]
        for x in reversed(vals[:-1]):
            # the next argument is evaluated only when this one is NULL
            out = _lazy_pick(x, out)
        return out
    if isinstance(e, exp.In):
        return _ev_in(e, ctx)
    if isinstance(e, exp.Between):
        x = ev(e.this, ctx)
        return bool3("and", cmp(exp.GTE, x, ev(e.args["low"], ctx)),
                     cmp(exp.LTE, x, ev(e.args["high"], ctx)))
    if isinstance(e, (exp.Cast, exp.TryCast)):
        return _ev_cast(e, ctx)
    if isinstance(e, (exp.Upper, exp.Lower)):
        return _ev_case_fold(e, ctx)
    if isinstance(e, exp.Anonymous):
        return _uninterpreted(e, ctx)
    raise Unsupported(f"expression {type(e).__name__}: {e.sql(dialect=DIALECT)}")


def _ev_literal(e: exp.Literal) -> V:
    if e.is_string:
        return const(z3.StringVal(e.this), "str")
    txt = e.this
    param = current().parameters.get(txt)
    if param is not None:       # a literal the proof quantifies over
        return param
    try:
        return _int_literal(txt)
    except ValueError:
        try:
            return const(z3.RealVal(txt), "real")
        except Exception:
            raise Unsupported(f"literal {txt}") from None


def _premised(e: exp.Expression, v: V) -> V:
    """Integer arithmetic of parameters alone does not overflow: a premise of a parametric
    certificate (``superop.ir.parameters.arithmetic_in_range``, which the runtime checks
    on the literals it binds), added as a side fact of the encoding."""
    enc = current()
    if enc is not _DEFAULT and is_parameter_arithmetic(e):
        enc.side.append(z3.Not(v.err))
    return v


def _ev_parameter(e: exp.Placeholder) -> V:
    """A typed parameter (``superop.ir.parameters``): a free non-NULL value of its type (a
    sub-query's value: a free real or NULL), the same variable wherever the name occurs —
    the check holds for every value of it."""
    name = str(e.this or "")
    typ = parameter_type(name)
    if typ is None:
        raise Unsupported(f"placeholder :{name} (not a typed parameter)")
    kind, width = typ
    # a sub-query's value may be NULL: the same free NULL flag wherever the name occurs
    null = fresh("bool", f"paramnull!{name}") if nullable_parameter(name) else FALSE
    return V(fresh(kind, f"param!{name}"), null, kind, FALSE, width)


def _ev_not(e: exp.Not, ctx: Ctx) -> V:
    x = ev(e.this, ctx)
    if x.v is None:
        return V(FALSE, TRUE, "bool", x.err)
    if x.kind != "bool":
        raise Unsupported("NOT of non-boolean")
    return V(z3.Not(x.v), x.null, "bool", x.err)


def _ev_is(e: exp.Is, ctx: Ctx) -> V:
    x = ev(e.this, ctx)
    rhs = e.expression
    if isinstance(rhs, exp.Null):
        return V(x.null, FALSE, "bool", x.err)
    if isinstance(rhs, exp.Boolean):
        return V(is_true(x) if rhs.this else is_false(x), FALSE, "bool", x.err)
    raise Unsupported(f"IS {rhs.sql()}")


def _ev_sign(e: exp.Expression, ctx: Ctx) -> V:
    """-x and ABS(x): an int result out of its type's range raises under ANSI."""
    x = ev(e.this, ctx)
    if x.v is None:
        return NULL
    if isinstance(e, exp.Neg):
        if x.kind not in ("int", "real"):
            raise Unsupported("negation of non-number")
        return _unary_int(x, -x.v, out_of_range(-x.v, x.width))
    if x.kind not in ("int", "real"):
        raise Unsupported("abs of non-number")
    r = z3.If(x.v >= 0, x.v, -x.v)
    return _unary_int(x, r, out_of_range(r, x.width))


def _ev_extremum(e: exp.Expression, ctx: Ctx) -> V:
    """GREATEST / LEAST, as Spark: the greatest/least non-NULL argument; NULL only if every
    argument is NULL; every argument is evaluated."""
    allv = [ev(a, ctx) for a in [e.this] + list(e.expressions)]
    vals = [x for x in allv if x.v is not None]
    if not vals:
        return V(None, TRUE, None, any_err(allv))
    k = common_kind(vals)
    if k not in ("int", "real", "date"):
        raise Unsupported(f"{type(e).__name__.upper()} over {k}")
    w = common_width(vals) if k == "int" else None
    vals = [V(x.val(k), x.null, k, FALSE, w) for x in vals]
    out = vals[0]
    for x in vals[1:]:
        better = lt(out.v, x.v, k) if isinstance(e, exp.Greatest) else lt(x.v, out.v, k)
        out = ite(out.null, x, ite(x.null, out, ite(better, x, out)))
    return V(out.v, out.null, k, any_err(allv), w)


def _ev_case(e: exp.Case, ctx: Ctx) -> V:
    # simple CASE x WHEN v THEN ..: x evaluated once, each x = v in turn (a NULL x or v
    # matches nothing: the ELSE branch), as Spark's CaseKeyWhen
    base = ev(e.this, ctx) if e.this is not None else None
    out = ev(e.args["default"], ctx) if e.args.get("default") is not None else NULL
    for w in reversed(e.args.get("ifs") or []):
        c = ev(w.this, ctx) if base is None else cmp(exp.EQ, base, ev(w.this, ctx))
        out = _choose(c, ev(w.args["true"], ctx), out)
    if base is not None:
        out = V(out.v, out.null, out.kind, z3.Or(base.err, out.err), out.width)
    return out


def _ev_in(e: exp.In, ctx: Ctx) -> V:
    if e.args.get("query") is not None or e.args.get("unnest") is not None:
        raise Unsupported("IN (subquery)")
    x = ev(e.this, ctx)
    items = [ev(it, ctx) for it in e.expressions]
    # evaluated left to right until an item equals x (Spark's In.eval)
    t, f, err = FALSE, TRUE, FALSE
    for it in reversed(items):
        c = cmp(exp.EQ, x, it)
        hit = is_true(c)
        t = z3.Or(hit, z3.And(z3.Not(hit), t))
        f = z3.And(is_false(c), f)
        err = z3.Or(it.err, z3.And(z3.Not(hit), err))
    out = V(t, z3.And(z3.Not(t), z3.Not(f)), "bool")
    if x.v is None:
        return V(FALSE, TRUE, "bool", x.err)
    return V(out.v, z3.Or(x.null, out.null), "bool", z3.Or(x.err, z3.And(z3.Not(x.null), err)))


def _ev_cast(e: exp.Expression, ctx: Ctx) -> V:
    inner = e.this
    to = e.args["to"]
    if isinstance(inner, exp.Literal) and inner.is_string and to.this == exp.DataType.Type.DATE:
        return const(z3.IntVal(_date_days(inner.this)), "date")
    # sqlglot's Spark dialect parses CAST as TryCast (Spark 3's non-ANSI CAST); only an
    # explicit TRY_CAST carries safe=True. Under ANSI a CAST raises on bad input.
    safe = bool(e.args.get("safe"))
    return cast(ev(inner, ctx), to, safe)


def _ev_case_fold(e: exp.Expression, ctx: Ctx) -> V:
    # a total, deterministic string -> string function (NULL in, NULL out; no error):
    # uninterpreted, so a proof holds for every such function (Fig. 15's Simplified())
    x = ev(e.this, ctx)
    if x.v is None:
        return NULL
    if x.kind != "str":
        raise Unsupported(f"{e.sql(dialect=DIALECT)} of a {x.kind}")
    f = z3.Function(f"str!{type(e).__name__.lower()}", z3.StringSort(), z3.StringSort())
    return V(f(x.normalized("str")), x.null, "str", x.err)


def _choose(c: V, a: V, b: V) -> V:
    """CASE WHEN c THEN a ELSE b: ``a`` is evaluated only when c is TRUE, ``b`` otherwise."""
    out = ite(is_true(c), a, b)
    return V(out.v, out.null, out.kind, z3.Or(c.err, out.err), out.width)


def _lazy_pick(x: V, rest: V) -> V:
    """COALESCE step: x if not NULL, else rest (evaluated only then)."""
    out = ite(z3.Not(x.null), x, rest)
    return V(out.v, out.null, out.kind, z3.Or(x.err, z3.And(x.null, rest.err)), out.width)


def guard_holds(g: Optional[exp.Expression], ctx: Ctx) -> tuple[z3.BoolRef, z3.BoolRef]:
    """(the guard is TRUE, evaluating it raises); a missing guard is TRUE."""
    if g is None:
        return TRUE, FALSE
    x = ev(g, ctx)
    return is_true(x), x.err
