"""Z3 encodings of the plan IR and of the super-operator DSL over ONE shared vocabulary.

Vocabulary
----------
* :class:`V` – one SQL value: ``v`` (a Z3 term of the value's sort, or None for an untyped
  NULL literal), ``null`` (a Z3 Bool) and ``kind`` in int | real | str | bool | date.
  Types: int/bigint/... -> Int, double/float/decimal -> Real, string -> String,
  boolean -> Bool, date -> Int (days since 1970-01-01).
* :class:`Rel` – a bounded symbolic bag: a list of rows, each ``(present, [V...])``. A row
  takes part in the bag iff ``present``; duplicates are separate rows, so multiplicities
  are counted, never collapsed (bag semantics).
* Predicates use SQL three-valued logic: a boolean V with ``null`` = UNKNOWN; σ, join
  conditions and guards keep a row only when the predicate is TRUE (``is_true``).

One encoder per IR operator (:class:`PlanEncoder`) and one for the DSL
(:class:`ProgramEncoder`) both read the same base-table rows, so a model of the solver
is one concrete input table on which both sides are evaluated.

Modelling choices (stated, because they bound what "verified" means):
* Integers are mathematical integers (no overflow); doubles are exact reals (no
  rounding). Division by zero yields NULL (Spark's non-ANSI behaviour); with ANSI mode
  Spark raises instead, so such inputs are outside the model.
* AVG divides by the group's count with a case split over 1..K, which keeps the
  arithmetic linear (exact because counts never exceed K).
* Window aggregates are modelled for whole-partition frames and the default RANGE frame
  under ORDER BY. Everything else (string functions, LIKE, ranking functions, ROWS
  frames, LIMIT, opaque SQL, integer DIV, ...)
  raises :class:`Unsupported`.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import z3
from sqlglot import exp

from ..ir.dialect import DIALECT
from ..ir.nodes import (Aggregate, Join, Limit, Node, Opaque, Project, Rename, Scan, Select, Sort,
                        UnionAll, Window, resolve_field)
from ..synth.dsl import STREAMING, Program
from .result import Unsupported

EPOCH = _dt.date(1970, 1, 1)
FALSE, TRUE = z3.BoolVal(False), z3.BoolVal(True)


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------
def kind_of_type(t: str) -> str:
    t = t.lower().strip()
    if t in ("int", "integer", "bigint", "long", "smallint", "tinyint", "short", "byte"):
        return "int"
    if t in ("double", "float", "real") or t.startswith("decimal") or t.startswith("numeric"):
        return "real"
    if t in ("string", "text") or t.startswith("varchar") or t.startswith("char"):
        return "str"
    if t in ("boolean", "bool"):
        return "bool"
    if t == "date":
        return "date"
    raise Unsupported(f"column type {t!r} is not modelled")


def fresh(kind: str, name: str) -> z3.ExprRef:
    if kind in ("int", "date"):
        return z3.Int(name)
    if kind == "real":
        return z3.Real(name)
    if kind == "str":
        return z3.String(name)
    if kind == "bool":
        return z3.Bool(name)
    raise Unsupported(kind)


def default(kind: str) -> z3.ExprRef:
    return {"int": z3.IntVal(0), "date": z3.IntVal(0), "real": z3.RealVal(0),
            "str": z3.StringVal(""), "bool": FALSE}[kind]


@dataclass
class V:
    v: Optional[z3.ExprRef]
    null: z3.BoolRef
    kind: Optional[str]          # None only for an untyped NULL literal

    def val(self, kind: str) -> z3.ExprRef:
        """The value coerced to ``kind`` (NULL literals get a dummy value)."""
        if self.v is None:
            return default(kind)
        if kind == self.kind or (kind in ("int", "date") and self.kind in ("int", "date")):
            return self.v
        if kind == "real" and self.kind in ("int", "date"):
            return z3.ToReal(self.v)
        raise Unsupported(f"cannot combine {self.kind} with {kind}")


NULL = V(None, TRUE, None)


def const(v: z3.ExprRef, kind: str) -> V:
    return V(v, FALSE, kind)


def is_true(b: V) -> z3.BoolRef:
    if b.v is None:
        return FALSE
    if b.kind != "bool":
        raise Unsupported(f"predicate of type {b.kind}")
    return z3.And(z3.Not(b.null), b.v)


def is_false(b: V) -> z3.BoolRef:
    if b.v is None:
        return FALSE
    return z3.And(z3.Not(b.null), z3.Not(b.v))


def common_kind(vals: Sequence[V]) -> Optional[str]:
    kinds = {x.kind for x in vals if x.kind is not None}
    if not kinds:
        return None
    if len(kinds) == 1:
        return kinds.pop()
    if kinds <= {"int", "real"}:
        return "real"
    if kinds <= {"int", "date"}:
        return "date"
    raise Unsupported(f"mixed types {sorted(kinds)}")


def not_distinct(a: V, b: V) -> z3.BoolRef:
    """NULL-safe equality (GROUP BY / partition / bag semantics: NULL equals NULL)."""
    if a.v is None or b.v is None:
        return z3.And(a.null, b.null)
    try:
        k = common_kind([a, b])
        eq = a.val(k) == b.val(k)
    except Unsupported:
        eq = FALSE   # values of unrelated types are never equal
    return z3.Or(z3.And(a.null, b.null), z3.And(z3.Not(a.null), z3.Not(b.null), eq))


def rows_not_distinct(a: Sequence[V], b: Sequence[V]) -> z3.BoolRef:
    if len(a) != len(b):
        return FALSE
    return z3.And(*[not_distinct(x, y) for x, y in zip(a, b)]) if a else TRUE


def ite(c: z3.BoolRef, a: V, b: V) -> V:
    k = common_kind([a, b])
    if k is None:
        return NULL
    return V(z3.If(c, a.val(k), b.val(k)), z3.If(c, a.null, b.null), k)


def _lt(x: z3.ExprRef, y: z3.ExprRef, kind: str) -> z3.BoolRef:
    if kind == "bool":   # FALSE < TRUE
        return z3.And(z3.Not(x), y)
    return x < y


# ---------------------------------------------------------------------------
# Aggregates over (membership, value) lists: SQL NULL and empty-group rules
# ---------------------------------------------------------------------------
def agg_count_star(members: Sequence[z3.BoolRef]) -> V:
    return const(z3.Sum([z3.If(m, 1, 0) for m in members]) if members else z3.IntVal(0), "int")


def _nn(m, x: V):
    return z3.And(m, z3.Not(x.null)) if x.v is not None else FALSE


def agg(func: str, pairs: Sequence[tuple[z3.BoolRef, V]], K: int) -> V:
    """func in count | sum | min | max | avg | count_distinct (count_star: agg_count_star)."""
    if func == "count":
        return agg_count_star([_nn(m, x) for m, x in pairs])
    if func == "count_distinct":
        terms = []
        for j, (m, x) in enumerate(pairs):
            seen = [z3.And(_nn(pairs[k][0], pairs[k][1]), not_distinct(pairs[k][1], x))
                    for k in range(j)]
            terms.append(z3.And(_nn(m, x), z3.Not(z3.Or(*seen)) if seen else TRUE))
        return agg_count_star(terms)
    k = common_kind([x for _, x in pairs])
    if k is None:  # aggregate of NULL literals only
        return NULL if func != "count" else const(z3.IntVal(0), "int")
    some = z3.Or(*[_nn(m, x) for m, x in pairs]) if pairs else FALSE
    if func in ("sum", "avg"):
        if k not in ("int", "real"):
            raise Unsupported(f"{func} over {k}")
        s = z3.Sum([z3.If(_nn(m, x), x.val(k), default(k)) for m, x in pairs])
        if func == "sum":
            return V(s, z3.Not(some), k)
        cnt = z3.Sum([z3.If(_nn(m, x), 1, 0) for m, x in pairs])
        rs = z3.ToReal(s) if k == "int" else s
        # exact, linear division: the count is one of 1..len(pairs)
        avg = z3.RealVal(0)
        for c in range(len(pairs), 0, -1):
            avg = z3.If(cnt == c, rs / c, avg)
        return V(avg, z3.Not(some), "real")
    if func in ("min", "max"):
        cur_v, cur_n = default(k), TRUE
        for m, x in pairs:
            if x.v is None:
                continue
            xv = x.val(k)
            better = _lt(xv, cur_v, k) if func == "min" else _lt(cur_v, xv, k)
            take = z3.And(_nn(m, x), z3.Or(cur_n, better))
            cur_v = z3.If(take, xv, cur_v)
            cur_n = z3.And(cur_n, z3.Not(_nn(m, x)))
        return V(cur_v, cur_n, k)
    raise Unsupported(f"aggregate {func}")


# ---------------------------------------------------------------------------
# Expressions (sqlglot -> V)
# ---------------------------------------------------------------------------
class Ctx:
    """Resolves column references (and, inside an Aggregate, aggregate calls)."""

    def __init__(self, col: Callable[[exp.Column], V],
                 aggf: Optional[Callable[[exp.Expression], V]] = None):
        self.col = col
        self.aggf = aggf


def _date_days(s: str) -> int:
    try:
        return (_dt.date.fromisoformat(s.strip()) - EPOCH).days
    except ValueError:
        raise Unsupported(f"date literal {s!r}") from None


def _bool3(op: str, a: V, b: V) -> V:
    ta, tb, fa, fb = is_true(a), is_true(b), is_false(a), is_false(b)
    if op == "and":
        t, f = z3.And(ta, tb), z3.Or(fa, fb)
    else:
        t, f = z3.Or(ta, tb), z3.And(fa, fb)
    return V(t, z3.And(z3.Not(t), z3.Not(f)), "bool")


def _cmp(cls, a: V, b: V) -> V:
    if a.v is None or b.v is None:
        return V(FALSE, TRUE, "bool")
    k = common_kind([a, b])
    x, y = a.val(k), b.val(k)
    if cls is exp.EQ:
        r = x == y
    elif cls is exp.NEQ:
        r = x != y
    elif cls is exp.LT:
        r = _lt(x, y, k)
    elif cls is exp.GT:
        r = _lt(y, x, k)
    elif cls is exp.LTE:
        r = z3.Not(_lt(y, x, k))
    elif cls is exp.GTE:
        r = z3.Not(_lt(x, y, k))
    else:  # pragma: no cover
        raise Unsupported(cls.__name__)
    return V(r, z3.Or(a.null, b.null), "bool")


# Nonlinear arithmetic (x*y, x/y of two columns) makes Z3 slow or incomplete. When this
# flag is set, such terms become uninterpreted functions: an "unsat" (no difference for
# ANY interpretation) is then still a sound "verified"; a "sat" may be spurious and must be
# re-checked with the exact encoding (check.py does).
ABSTRACT_NONLINEAR = [False]
NONLINEAR_USED = [False]


def _is_num(x) -> bool:
    return z3.is_int_value(x) or z3.is_rational_value(x)


def _uf(op: str, k: str):
    NONLINEAR_USED[0] = True
    srt = z3.IntSort() if k in ("int", "date") else z3.RealSort()
    return z3.Function(f"{op}!{k}", srt, srt, srt)


def _arith(cls, a: V, b: V) -> V:
    if a.v is None or b.v is None:
        return NULL
    k = common_kind([a, b])
    if k not in ("int", "real"):
        raise Unsupported(f"arithmetic on {k}")
    null = z3.Or(a.null, b.null)
    if cls is exp.Div:  # Spark: / always yields double; x/0 -> NULL (non-ANSI)
        x, y = a.val("real"), b.val("real")
        q = _uf("div", "real")(x, y) if ABSTRACT_NONLINEAR[0] and not _is_num(y) else x / y
        return V(z3.If(y == 0, z3.RealVal(0), q), z3.Or(null, y == 0), "real")
    x, y = a.val(k), b.val(k)
    if cls is exp.Mul and ABSTRACT_NONLINEAR[0] and not (_is_num(x) or _is_num(y)):
        return V(_uf("mul", k)(x, y), null, k)
    if cls is exp.Add:
        return V(x + y, null, k)
    if cls is exp.Sub:
        return V(x - y, null, k)
    if cls is exp.Mul:
        return V(x * y, null, k)
    if cls is exp.Mod and k == "int":
        # Spark's % takes the sign of the dividend; x % 0 -> NULL
        r = z3.If(x >= 0, x % z3.If(y >= 0, y, -y), -((-x) % z3.If(y >= 0, y, -y)))
        return V(z3.If(y == 0, z3.IntVal(0), r), z3.Or(null, y == 0), k)
    raise Unsupported(f"operator {cls.__name__} on {k}")


def _cast(x: V, to: exp.DataType) -> V:
    t = to.sql(dialect=DIALECT).lower()
    k = kind_of_type(t)
    if x.v is None:
        return V(None, TRUE, k)
    if k == x.kind or (k == "int" and x.kind == "int"):
        return x
    if k == "real" and x.kind == "int":
        return V(z3.ToReal(x.v), x.null, k)
    if k == "int" and x.kind == "real":  # truncation toward zero
        return V(z3.If(x.v >= 0, z3.ToInt(x.v), -z3.ToInt(-x.v)), x.null, k)
    raise Unsupported(f"cast {x.kind} -> {t}")


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
        if e.is_string:
            return const(z3.StringVal(e.this), "str")
        txt = e.this
        try:
            return const(z3.IntVal(int(txt)), "int")
        except ValueError:
            try:
                return const(z3.RealVal(txt), "real")
            except Exception:
                raise Unsupported(f"literal {txt}") from None
    if isinstance(e, exp.Boolean):
        return const(z3.BoolVal(bool(e.this)), "bool")
    if isinstance(e, exp.Null):
        return NULL
    if isinstance(e, exp.And):
        return _bool3("and", ev(e.this, ctx), ev(e.expression, ctx))
    if isinstance(e, exp.Or):
        return _bool3("or", ev(e.this, ctx), ev(e.expression, ctx))
    if isinstance(e, exp.Not):
        x = ev(e.this, ctx)
        if x.v is None:
            return V(FALSE, TRUE, "bool")
        if x.kind != "bool":
            raise Unsupported("NOT of non-boolean")
        return V(z3.Not(x.v), x.null, "bool")
    if type(e) in (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE):
        return _cmp(type(e), ev(e.this, ctx), ev(e.expression, ctx))
    if isinstance(e, exp.NullSafeEQ):
        return const(not_distinct(ev(e.this, ctx), ev(e.expression, ctx)), "bool")
    if isinstance(e, exp.NullSafeNEQ):
        return const(z3.Not(not_distinct(ev(e.this, ctx), ev(e.expression, ctx))), "bool")
    if isinstance(e, exp.Is):
        x = ev(e.this, ctx)
        rhs = e.expression
        if isinstance(rhs, exp.Null):
            return const(x.null, "bool")
        if isinstance(rhs, exp.Boolean):
            return const(is_true(x) if rhs.this else is_false(x), "bool")
        raise Unsupported(f"IS {rhs.sql()}")
    if type(e) in (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod):
        return _arith(type(e), ev(e.this, ctx), ev(e.expression, ctx))
    if isinstance(e, exp.Neg):
        x = ev(e.this, ctx)
        if x.v is None:
            return NULL
        if x.kind not in ("int", "real"):
            raise Unsupported("negation of non-number")
        return V(-x.v, x.null, x.kind)
    if isinstance(e, exp.Abs):
        x = ev(e.this, ctx)
        if x.v is None:
            return NULL
        if x.kind not in ("int", "real"):
            raise Unsupported("abs of non-number")
        return V(z3.If(x.v >= 0, x.v, -x.v), x.null, x.kind)
    if isinstance(e, (exp.Greatest, exp.Least)):
        # Spark: the greatest/least non-NULL argument; NULL only if every argument is NULL
        vals = [ev(a, ctx) for a in [e.this] + list(e.expressions)]
        vals = [x for x in vals if x.v is not None]
        if not vals:
            return NULL
        k = common_kind(vals)
        if k not in ("int", "real", "date"):
            raise Unsupported(f"{type(e).__name__.upper()} over {k}")
        vals = [V(x.val(k), x.null, k) for x in vals]
        out = vals[0]
        for x in vals[1:]:
            better = _lt(out.v, x.v, k) if isinstance(e, exp.Greatest) else _lt(x.v, out.v, k)
            out = ite(out.null, x, ite(x.null, out, ite(better, x, out)))
        return out
    if isinstance(e, exp.Case):
        if e.this is not None:
            raise Unsupported("CASE <expr> WHEN (simple CASE)")
        out = ev(e.args["default"], ctx) if e.args.get("default") is not None else NULL
        for w in reversed(e.args.get("ifs") or []):
            out = ite(is_true(ev(w.this, ctx)), ev(w.args["true"], ctx), out)
        return out
    if isinstance(e, exp.If):
        f = ev(e.args["false"], ctx) if e.args.get("false") is not None else NULL
        return ite(is_true(ev(e.this, ctx)), ev(e.args["true"], ctx), f)
    if isinstance(e, exp.Coalesce):
        args = [e.this] + list(e.expressions)
        vals = [ev(a, ctx) for a in args]
        out = vals[-1]
        for x in reversed(vals[:-1]):
            out = ite(z3.Not(x.null), x, out)
        return out
    if isinstance(e, exp.In):
        if e.args.get("query") is not None or e.args.get("unnest") is not None:
            raise Unsupported("IN (subquery)")
        x = ev(e.this, ctx)
        out = V(FALSE, FALSE, "bool")
        for it in e.expressions:
            out = _bool3("or", out, _cmp(exp.EQ, x, ev(it, ctx)))
        return out
    if isinstance(e, exp.Between):
        x = ev(e.this, ctx)
        return _bool3("and", _cmp(exp.GTE, x, ev(e.args["low"], ctx)),
                      _cmp(exp.LTE, x, ev(e.args["high"], ctx)))
    if isinstance(e, (exp.Cast, exp.TryCast)):
        inner = e.this
        to = e.args["to"]
        if isinstance(inner, exp.Literal) and inner.is_string and to.this == exp.DataType.Type.DATE:
            return const(z3.IntVal(_date_days(inner.this)), "date")
        return _cast(ev(inner, ctx), to)
    raise Unsupported(f"expression {type(e).__name__}: {e.sql(dialect=DIALECT)}")


# ---------------------------------------------------------------------------
# Relations
# ---------------------------------------------------------------------------
@dataclass
class Rel:
    rows: list[tuple[z3.BoolRef, list[V]]]


class Table:
    """The bounded symbolic base table: K rows of (present, values)."""

    def __init__(self, name: str, columns: Sequence[tuple[str, str]], K: int, tag: str = ""):
        self.name = name
        self.columns = list(columns)
        self.kinds = [kind_of_type(t) for _, t in columns]
        self.K = K
        self.rows: list[tuple[z3.BoolRef, list[V]]] = []
        for i in range(K):
            p = z3.Bool(f"{tag}{name}!{i}!present")
            vals = [V(fresh(k, f"{tag}{name}!{i}!{c}"), z3.Bool(f"{tag}{name}!{i}!{c}!null"), k)
                    for (c, _), k in zip(columns, self.kinds)]
            self.rows.append((p, vals))

    def rel(self) -> Rel:
        return Rel(list(self.rows))

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


_AGG_NAMES = {exp.Sum: "sum", exp.Min: "min", exp.Max: "max", exp.Avg: "avg"}


class PlanEncoder:
    """Encodes an IR sub-plan over ONE base table (every Scan of it reads the same rows)."""

    def __init__(self, table: Table):
        self.table = table
        self.K = table.K
        self.memo: dict[int, Rel] = {}

    def encode(self, node: Node) -> Rel:
        r = self.memo.get(id(node))
        if r is None:
            fn = getattr(self, "_" + type(node).__name__.lower(), None)
            if fn is None:
                raise Unsupported(f"operator {node.op} is not modelled")
            r = fn(node)
            self.memo[id(node)] = r
        return r

    # -- leaves / unary ----------------------------------------------------
    def _scan(self, n: Scan) -> Rel:
        if n.table != self.table.name:
            raise Unsupported(f"sub-plan reads a second table {n.table!r}")
        if [c for c, _ in n.columns] != [c for c, _ in self.table.columns]:
            raise Unsupported(f"scan columns of {n.table} differ from the table's")
        return self.table.rel()

    def _opaque(self, n: Opaque) -> Rel:
        raise Unsupported(f"opaque SQL ({n.reason or 'not lowered'})")

    def _row_ctx(self, fields, vals) -> Ctx:
        def col(c: exp.Column) -> V:
            try:
                return vals[resolve_field(fields, c)]
            except KeyError as err:
                raise Unsupported(str(err)) from None
        return Ctx(col)

    def _select(self, n: Select) -> Rel:
        child = self.encode(n.child)
        f = n.child.fields
        return Rel([(z3.And(p, is_true(ev(n.predicate, self._row_ctx(f, vals)))), vals)
                    for p, vals in child.rows])

    def _project(self, n: Project) -> Rel:
        child = self.encode(n.child)
        f = n.child.fields
        return Rel([(p, [ev(x, self._row_ctx(f, vals)) for x, _ in n.items]) for p, vals in child.rows])

    def _rename(self, n: Rename) -> Rel:
        child = self.encode(n.child)
        f = n.child.fields
        idx = []
        for fld, _ in n.mapping:
            try:
                idx.append(resolve_field(f, fld.column()))
            except KeyError as err:
                raise Unsupported(str(err)) from None
        return Rel([(p, [vals[i] for i in idx]) for p, vals in child.rows])

    def _sort(self, n: Sort) -> Rel:
        return self.encode(n.child)   # ORDER BY does not change the bag

    def _limit(self, n: Limit) -> Rel:
        raise Unsupported("LIMIT is not modelled (order-dependent)")

    def _window(self, n: Window) -> Rel:
        """Aggregate window functions over PARTITION BY with the whole partition as frame
        (no ORDER BY) or, with ORDER BY and no explicit frame, Spark's default RANGE frame
        (all rows up to the current row's peers). ROWS frames depend on the order of ties
        and ranking functions are not modelled."""
        child = self.encode(n.child)
        f = n.child.fields
        rows = child.rows
        ctxs = [self._row_ctx(f, vals) for _, vals in rows]
        cols = []
        for w, _name in n.items:
            w = w.this if isinstance(w, exp.Alias) else w
            if not isinstance(w, exp.Window) or not isinstance(w.this, exp.AggFunc):
                raise Unsupported(f"window item {w.sql(dialect=DIALECT)}")
            spec = w.args.get("spec")
            order = w.args.get("order")
            if spec is not None and not (order is None and str(spec.args.get("start")).upper() == "UNBOUNDED"
                                         and str(spec.args.get("end")).upper() == "UNBOUNDED"):
                raise Unsupported(f"window frame {spec.sql(dialect=DIALECT)}")
            parts = [[ev(k, c) for k in (w.args.get("partition_by") or [])] for c in ctxs]
            ords = []
            for o in (order.expressions if order is not None else []):
                desc = bool(o.args.get("desc"))
                nf = o.args.get("nulls_first")
                nf = (not desc) if nf is None else bool(nf)
                ords.append((desc, nf, [ev(o.this, c) for c in ctxs]))
            out = []
            for i in range(len(rows)):
                members = []
                for j in range(len(rows)):
                    m = z3.And(rows[j][0], rows_not_distinct(parts[j], parts[i]))
                    if ords:
                        m = z3.And(m, self._at_or_before(ords, j, i))
                    members.append(m)
                out.append(self._agg_call(w.this, members, ctxs))
            cols.append(out)
        return Rel([(p, list(vals) + [c[i] for c in cols]) for i, (p, vals) in enumerate(rows)])

    @staticmethod
    def _at_or_before(ords, j: int, i: int) -> z3.BoolRef:
        """Row j precedes row i or is its peer under ORDER BY ``ords`` (RANGE frame)."""
        tail = TRUE
        for desc, nf, vals in reversed(ords):
            a, b = vals[j], vals[i]
            if a.v is None or b.v is None:
                raise Unsupported("ORDER BY a NULL literal")
            k = common_kind([a, b])
            lt = _lt(b.val(k), a.val(k), k) if desc else _lt(a.val(k), b.val(k), k)
            both = z3.And(z3.Not(a.null), z3.Not(b.null))
            nulls = z3.And(a.null, z3.Not(b.null)) if nf else z3.And(z3.Not(a.null), b.null)
            tail = z3.Or(nulls, z3.And(both, lt), z3.And(not_distinct(a, b), tail))
        return tail

    # -- aggregate ---------------------------------------------------------
    def _aggregate(self, n: Aggregate) -> Rel:
        child = self.encode(n.child)
        f = n.child.fields
        rows = child.rows
        ctxs = [self._row_ctx(f, vals) for _, vals in rows]
        keys = [[ev(k, c) for k in n.keys] for c in ctxs]
        if not n.keys:  # global aggregate: exactly one row, also over empty input
            reps = [(TRUE, [p for p, _ in rows], ctxs[0] if ctxs else None)]
        else:
            firsts = first_of_group(rows, keys)
            reps = [(firsts[i], members_of(rows, keys, i), ctxs[i]) for i in range(len(rows))]
        out = []
        for present, members, rep_ctx in reps:
            def aggf(a: exp.Expression, members=members) -> V:
                return self._agg_call(a, members, ctxs)

            def col(c: exp.Column, rep_ctx=rep_ctx) -> V:
                if not n.keys:
                    raise Unsupported(f"column {c.sql()} outside an aggregate in a global aggregate")
                return rep_ctx.col(c)
            ctx = Ctx(col, aggf)
            out.append((present, [ev(x, ctx) for x, _ in n.items]))
        return Rel(out)

    def _agg_call(self, a: exp.Expression, members, ctxs) -> V:
        if isinstance(a, exp.Count):
            arg = a.this
            if arg is None or isinstance(arg, exp.Star):
                return agg_count_star(members)
            if isinstance(arg, exp.Distinct):
                if len(arg.expressions) != 1:
                    raise Unsupported("COUNT(DISTINCT a, b)")
                return agg("count_distinct", [(m, ev(arg.expressions[0], c))
                                              for m, c in zip(members, ctxs)], self.K)
            return agg("count", [(m, ev(arg, c)) for m, c in zip(members, ctxs)], self.K)
        name = _AGG_NAMES.get(type(a))
        if name is None:
            raise Unsupported(f"aggregate {a.sql(dialect=DIALECT)}")
        arg = a.this
        if isinstance(arg, exp.Distinct):
            raise Unsupported(f"{name.upper()}(DISTINCT ...)")
        return agg(name, [(m, ev(arg, c)) for m, c in zip(members, ctxs)], self.K)

    # -- multi-input -------------------------------------------------------
    def _join(self, n: Join) -> Rel:
        L, R = self.encode(n.left), self.encode(n.right)
        f = n.left.fields + n.right.fields
        nl, nr = len(n.left.fields), len(n.right.fields)

        def match(lv, rv) -> z3.BoolRef:
            ctx = self._row_ctx(f, lv + rv)
            conds = [_cmp(exp.EQ, ev(a, ctx), ev(b, ctx)) for a, b in n.equi]
            if n.residual is not None:
                conds.append(ev(n.residual, ctx))
            out = V(TRUE, FALSE, "bool")
            for c in conds:
                out = _bool3("and", out, c)
            return is_true(out)

        M = [[z3.And(lp, rp, match(lv, rv)) for rp, rv in R.rows] for lp, lv in L.rows]
        nulls_l = [NULL] * nl
        nulls_r = [NULL] * nr
        if n.kind == "semi":
            return Rel([(z3.Or(*M[i]) if M[i] else FALSE, lv) for i, (_, lv) in enumerate(L.rows)])
        if n.kind == "anti":
            return Rel([(z3.And(lp, z3.Not(z3.Or(*M[i]))) if M[i] else lp, lv)
                        for i, (lp, lv) in enumerate(L.rows)])
        if n.kind == "cross":
            return Rel([(z3.And(lp, rp), lv + rv) for lp, lv in L.rows for rp, rv in R.rows])
        out = [(M[i][j], lv + rv) for i, (_, lv) in enumerate(L.rows) for j, (_, rv) in enumerate(R.rows)]
        if n.kind in ("left", "full"):
            for i, (lp, lv) in enumerate(L.rows):
                out.append((z3.And(lp, z3.Not(z3.Or(*M[i]))) if M[i] else lp, lv + nulls_r))
        if n.kind in ("right", "full"):
            for j, (rp, rv) in enumerate(R.rows):
                col = [M[i][j] for i in range(len(L.rows))]
                out.append((z3.And(rp, z3.Not(z3.Or(*col))) if col else rp, nulls_l + rv))
        return Rel(out)

    def _unionall(self, n: UnionAll) -> Rel:
        out = []
        width = len(n.inputs[0].fields)
        for c in n.inputs:
            r = self.encode(c)
            if len(c.fields) != width:
                raise Unsupported("UNION ALL of inputs with different widths")
            out.extend(r.rows)
        return Rel(out)


# ---------------------------------------------------------------------------
# The DSL
# ---------------------------------------------------------------------------
class ProgramEncoder:
    """Encodes a super-operator program over the same base-table rows.

    Partitions are represented by their first present row (like GROUP BY). A sort is
    encoded as a precedence relation; ties are broken by row index, which loses nothing
    because the solver chooses the rows in every order (the plan side is order-free)."""

    def __init__(self, table: Table, program: Program):
        self.t = table
        self.p = program
        self.K = table.K

    def _row(self, vals) -> Callable[[str], V]:
        def get(name: str) -> V:
            return vals[self.t.col_index(name)]
        return get

    def _precedes(self, j: int, i: int) -> z3.BoolRef:
        """Row j is at or before row i in the partition's sort order."""
        rows = self.t.rows
        tail = z3.BoolVal(j <= i)
        for sk in reversed(self.p.sort):
            a = rows[j][1][self.t.col_index(sk.column)]
            b = rows[i][1][self.t.col_index(sk.column)]
            k = a.kind
            lt = _lt(a.v, b.v, k) if sk.ascending else _lt(b.v, a.v, k)
            both = z3.And(z3.Not(a.null), z3.Not(b.null))
            null_first = z3.And(a.null, z3.Not(b.null)) if sk.nulls_first else z3.And(z3.Not(a.null), b.null)
            before = z3.Or(null_first, z3.And(both, lt))
            tail = z3.Or(before, z3.And(not_distinct(a, b), tail))
        return tail

    def encode(self) -> Rel:
        p, rows, K = self.p, self.t.rows, self.K
        key_idx = [self.t.col_index(k) for k in p.keys]
        keys = [[vals[i] for i in key_idx] for _, vals in rows]
        row_ctx = [self._ctx(vals, keys[i], {}, {}) for i, (_, vals) in enumerate(rows)]

        def guard(g, ctx) -> z3.BoolRef:
            return TRUE if g is None else is_true(ev(g, ctx))

        acc_guard = [[guard(a.guard, c) for c in row_ctx] for a in p.accumulators]
        acc_arg = [[ev(a.arg, c) if a.arg is not None else None for c in row_ctx] for a in p.accumulators]
        flag_guard = [[guard(f.guard, c) for c in row_ctx] for f in p.flags]

        def fold(members) -> tuple[dict, dict]:
            accs, flags = {}, {}
            for ai, a in enumerate(p.accumulators):
                ms = [z3.And(m, acc_guard[ai][j]) for j, m in enumerate(members)]
                if a.func == "count_star":
                    accs[a.name] = agg_count_star(ms)
                else:
                    accs[a.name] = agg(a.func, list(zip(ms, acc_arg[ai])), K)
            for fi, f in enumerate(p.flags):
                flags[f.name] = const(z3.Or(*[z3.And(m, flag_guard[fi][j])
                                              for j, m in enumerate(members)]), "bool")
            return accs, flags

        firsts = first_of_group(rows, keys) if p.keys else [z3.BoolVal(i == 0) for i in range(K)]
        out = []
        finals = []
        for i in range(K):
            members = members_of(rows, keys, i) if p.keys else [r[0] for r in rows]
            finals.append((members, fold(members)))
        # partition emits: once per partition, final values
        if p.partition_emits:
            for i in range(K):
                if not p.keys and i > 0:
                    break
                accs, flags = finals[i][1]
                # a keyless program has exactly one partition (the whole table), even empty
                present = firsts[i] if p.keys else TRUE
                ctx = self._ctx(None, keys[i], accs, flags)
                for em in p.partition_emits:
                    out.append((z3.And(present, guard(em.guard, ctx)), [ev(o, ctx) for o in em.outputs]))
        # neighbours (nb.*): the row at the row's sort position + offset (superop.verify.neighbours)
        nbs = self._neighbours([finals[i][0] for i in range(K)]) if p.neighbours else [None] * K
        # row emits: once per present row; running (streaming) or final (buffering) values
        if p.row_emits:
            for i, (pi, vals) in enumerate(rows):
                members = finals[i][0]
                if p.memory == STREAMING:
                    members = [z3.And(m, self._precedes(j, i)) for j, m in enumerate(members)]
                    accs, flags = fold(members)
                else:
                    accs, flags = finals[i][1]
                ctx = self._ctx(vals, keys[i], accs, flags, nbs[i])
                for em in p.row_emits:
                    out.append((z3.And(pi, guard(em.guard, ctx)), [ev(o, ctx) for o in em.outputs]))
        return Rel(out)

    def _neighbours(self, members) -> list:
        from .neighbours import neighbour_values, positions
        rows = self.t.rows
        pos = positions(rows, members, lambda j, i: self._precedes(j, i))
        args = [[ev(nb.arg, self._ctx(vals, [], {}, {})) for _, vals in rows] for nb in self.p.neighbours]
        return neighbour_values(self.p, rows, members, pos, args)

    def _ctx(self, vals, keyvals, accs, flags, nbs=None) -> Ctx:
        t, keys = self.t, self.p.keys

        def col(c: exp.Column) -> V:
            ns, name = (c.table or "row").lower(), c.name
            if ns == "nb":
                if nbs is None or name not in nbs:
                    raise Unsupported(f"unknown neighbour nb.{name}")
                return nbs[name]
            if ns == "row":
                if vals is None:
                    raise Unsupported(f"row.{name} used in a partition emit")
                return vals[t.col_index(name)]
            if ns == "key":
                if name not in keys:
                    raise Unsupported(f"key.{name} is not a partition key")
                return keyvals[keys.index(name)]
            if ns == "acc":
                if name not in accs:
                    raise Unsupported(f"unknown accumulator acc.{name}")
                return accs[name]
            if ns == "flag":
                if name not in flags:
                    raise Unsupported(f"unknown flag flag.{name}")
                return flags[name]
            raise Unsupported(f"unknown namespace {ns}")
        return Ctx(col)


# ---------------------------------------------------------------------------
# Bag comparison
# ---------------------------------------------------------------------------
_witness_seq = [0]


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
    _witness_seq[0] += 1
    w = []
    for c in range(width):
        kind = common_kind([v[c] for _, v in rows]) or "int"
        name = f"witness!{_witness_seq[0]}!{c}"
        w.append(V(fresh(kind, name), z3.Bool(name + "!null"), kind))

    def count(rel: Rel) -> z3.ArithRef:
        return z3.Sum([z3.If(z3.And(p, rows_not_distinct(v, w)), 1, 0) for p, v in rel.rows]) \
            if rel.rows else z3.IntVal(0)
    return count(a) != count(b)


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
