"""Spark Connect expressions (``pyspark.sql.connect.proto`` ``Expression`` messages) ->
sqlglot expressions.

A Connect client sends *unresolved* expressions: column names (optionally tied to the
plan id of the DataFrame they were taken from, ``df["a"]``), function calls by their
Spark SQL name, operators by their symbol, SQL fragments (``F.expr``, ``filter("b > 0")``).
The server resolves them exactly as it resolves SQL text, so a call becomes the same call
in SQL (``count(*)``, ``rank()``, ``coalesce(...)``, ...) and columns become the IR fields
the caller's :class:`Names` resolves them to. What has no SQL form here — a UDF defined
inline, a lambda, a sub-query, an explicit ANSI/LEGACY cast mode, struct field access —
raises :class:`~.frames.Unsure`. Messages are read duck-typed: this module imports no
protobuf code.
"""
from __future__ import annotations

import re
from typing import Any, Optional, Protocol

from sqlglot import exp

from ..dialect import parse_one
from .frames import Unsure, call, count_star, literal, null_test, paren, sql_type

_BINARY: dict[str, type[exp.Expr]] = {
    "==": exp.EQ, "<=>": exp.NullSafeEQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE,
    "+": exp.Add, "-": exp.Sub, "*": exp.Mul, "/": exp.Div, "%": exp.Mod, "and": exp.And,
    "or": exp.Or, "like": exp.Like, "rlike": exp.RegexpLike, "ilike": exp.ILike,
}
_RANKING = {"rank", "dense_rank", "row_number", "percent_rank", "cume_dist", "ntile"}
_TYPES = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint", "float": "float",
          "double": "double", "string": "string", "boolean": "boolean", "date": "date",
          "timestamp": "timestamp", "timestamp_ntz": "timestamp_ntz", "binary": "binary"}


class Names(Protocol):
    """Resolves a column reference of the current operator's input."""

    def column(self, parts: list[str], plan_id: Optional[int]) -> exp.Column: ...

    def star(self, target: str, plan_id: Optional[int]) -> list[exp.Column]: ...


def identifier_parts(text: str) -> list[str]:
    """``x.`a.b``` -> ``["x", "a.b"]`` (Spark's multi-part identifier syntax)."""
    parts, cur, i, quoted = [], "", 0, False
    while i < len(text):
        ch = text[i]
        if ch == "`":
            if quoted and i + 1 < len(text) and text[i + 1] == "`":
                cur += "`"
                i += 2
                continue
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    if quoted:
        raise Unsure(f"identifier {text!r}")
    parts.append(cur)
    return parts


def type_of(t: Any) -> str:
    """A ``DataType`` message's Spark simple type name."""
    kind = t.WhichOneof("kind")
    if kind == "decimal":
        return f"decimal({t.decimal.precision},{t.decimal.scale})"
    if kind in _TYPES:
        return _TYPES[kind]
    if kind == "unparsed":
        return str(t.unparsed.data_type_string)
    raise Unsure(f"type {kind}")



class ConnectExprs:
    def __init__(self, names: Names):
        self.names = names

    def expr(self, e: Any) -> exp.Expr:
        kind = e.WhichOneof("expr_type")
        f = getattr(self, "_" + str(kind), None)
        if f is None:
            raise Unsure(f"expression {kind}")
        out: exp.Expr = f(getattr(e, kind))
        return out

    # -- leaves -----------------------------------------------------------------------
    def _unresolved_attribute(self, a: Any) -> exp.Expr:
        if a.is_metadata_column:
            raise Unsure("a metadata column")
        pid = a.plan_id if a.HasField("plan_id") else None
        return self.names.column(identifier_parts(a.unparsed_identifier), pid)

    def _expression_string(self, s: Any) -> exp.Expr:
        try:
            tree = parse_one(s.expression)
        except Exception:
            raise Unsure("an SQL expression sqlglot cannot parse") from None
        if any(isinstance(n, (exp.Query, exp.Lambda)) for n in tree.walk()):
            raise Unsure("a sub-query or lambda in an SQL expression")

        def fix(n: exp.Expr) -> exp.Expr:
            if isinstance(n, exp.Column):
                parts = [p.name for p in n.parts]
                return self.names.column(parts, None)
            return n
        return count_star(tree.transform(fix))

    def _literal(self, lit: Any) -> exp.Expr:
        kind = lit.WhichOneof("literal_type")
        if kind == "null":
            return literal(None, type_of(lit.null) if lit.null.WhichOneof("kind") != "null" else "void")
        if kind == "decimal":
            p = lit.decimal.precision if lit.decimal.HasField("precision") else None
            s = lit.decimal.scale if lit.decimal.HasField("scale") else None
            text = lit.decimal.value
            if p is None or s is None:
                return exp.Literal.number(text)
            return literal(text, f"decimal({p},{s})")
        if kind in ("float", "double"):
            return literal(repr(float(getattr(lit, kind))), kind)
        if kind == "boolean":
            return literal("true" if lit.boolean else "false", "boolean")
        if kind in ("byte", "short", "integer", "long", "string"):
            return literal(str(getattr(lit, kind)), _TYPES[kind])
        raise Unsure(f"a {kind} literal")

    def _alias(self, a: Any) -> exp.Expr:
        if len(a.name) != 1:
            raise Unsure("a multi-name alias")
        return self.expr(a.expr)

    def _cast(self, c: Any) -> exp.Expr:
        mode = int(c.eval_mode)
        if mode not in (0, 3):          # UNSPECIFIED (the session's mode) or TRY
            raise Unsure("a cast with an explicit ANSI/LEGACY mode")
        to = sql_type(c.type_str) if c.WhichOneof("cast_to_type") == "type_str" else sql_type(type_of(c.type))
        return exp.TryCast(this=self.expr(c.expr), to=to) if mode == 3 else \
            exp.Cast(this=self.expr(c.expr), to=to)

    def _sort_order(self, o: Any) -> exp.Expr:
        desc = int(o.direction) == 2
        nulls = int(o.null_ordering)
        nulls_first = (not desc) if nulls == 0 else nulls == 1
        return exp.Ordered(this=self.expr(o.child), desc=desc, nulls_first=nulls_first)

    # -- calls ------------------------------------------------------------------------
    def _unresolved_function(self, f: Any) -> exp.Expr:
        name = str(f.function_name)
        args = list(f.arguments)
        if name == "count" and len(args) == 1 and args[0].WhichOneof("expr_type") == "unresolved_star" \
                and not f.is_distinct:
            return exp.Count(this=exp.Star(), big_int=True)
        xs = [self.expr(a) for a in args]
        low = name.lower()
        if name in _BINARY and len(xs) == 2 and not f.is_distinct:
            return _BINARY[name](this=paren(xs[0]), expression=paren(xs[1]))
        if low == "not" and len(xs) == 1:
            return exp.Not(this=paren(xs[0]))
        if low == "negative" and len(xs) == 1:
            return exp.Neg(this=paren(xs[0]))
        if low in ("isnull", "isnotnull") and len(xs) == 1:
            return null_test(xs[0], negated=low == "isnotnull")
        if low == "in" and xs:
            return exp.In(this=paren(xs[0]), expressions=xs[1:])
        if low == "when":
            return _case(xs)
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", low):
            raise Unsure(f"operator {name}")
        out = call(low, xs, bool(f.is_distinct))
        return out if f.is_distinct else count_star(out)

    def _call_function(self, f: Any) -> exp.Expr:
        return call(str(f.function_name).lower(), [self.expr(a) for a in f.arguments])

    def _unresolved_star(self, s: Any) -> exp.Expr:
        raise Unsure("a * outside count(*) or a select list")

    def _window(self, w: Any) -> exp.Expr:
        fn_msg = w.window_function
        fname = fn_msg.unresolved_function.function_name.lower() \
            if fn_msg.WhichOneof("expr_type") == "unresolved_function" else ""
        fn = self.expr(fn_msg)
        part = [self.expr(p) for p in w.partition_spec]
        order = [self._sort_order(o) for o in w.order_spec]
        out = exp.Window(this=fn, partition_by=part or None, over="OVER")
        if order:
            out.set("order", exp.Order(expressions=order))
        if w.HasField("frame_spec") and int(w.frame_spec.frame_type) != 0 and fname not in _RANKING:
            out.set("spec", self._frame(w.frame_spec, bool(order)))
        return out

    def _frame(self, f: Any, ordered: bool) -> Optional[exp.Expr]:
        kind = {1: "ROWS", 2: "RANGE"}[int(f.frame_type)]
        lo, hi = self._bound(f.lower, "PRECEDING"), self._bound(f.upper, "FOLLOWING")
        default = (("RANGE", ("UNBOUNDED", "PRECEDING"), ("CURRENT ROW", None)) if ordered else
                   ("ROWS", ("UNBOUNDED", "PRECEDING"), ("UNBOUNDED", "FOLLOWING")))
        if (kind, lo, hi) == default:
            return None
        return exp.WindowSpec(kind=kind, start=lo[0], start_side=lo[1], end=hi[0], end_side=hi[1])

    def _bound(self, b: Any, side: str) -> tuple[Any, Optional[str]]:
        which = b.WhichOneof("boundary")
        if which == "current_row":
            return ("CURRENT ROW", None)
        if which == "unbounded":
            return ("UNBOUNDED", side)
        if which == "value":
            v = self.expr(b.value)
            text = v.sql() if isinstance(v, (exp.Literal, exp.Neg)) else ""
            if re.fullmatch(r"-?\s*\d+", text or ""):
                n = int(text.replace(" ", ""))
                return (exp.Literal.number(abs(n)), "PRECEDING" if n < 0 else "FOLLOWING")
        raise Unsure("a window frame bound")

    # -- output names -----------------------------------------------------------------
    def name_of(self, e: Any) -> str:
        """The name Spark gives an unaliased output expression (best effort: a wrong
        guess only makes a later reference by that name fail to resolve)."""
        kind = e.WhichOneof("expr_type")
        if kind == "alias":
            return str(e.alias.name[0])
        if kind == "unresolved_attribute":
            return identifier_parts(e.unresolved_attribute.unparsed_identifier)[-1]
        if kind == "unresolved_function":
            f = e.unresolved_function
            op = str(f.function_name)
            if op in _BINARY and len(f.arguments) == 2:
                a, b = (self.name_of(x) for x in f.arguments)
                sym = "=" if op == "==" else op.upper() if op.isalpha() else op
                return f"({a} {sym} {b})"
            args = ", ".join("1" if x.WhichOneof("expr_type") == "unresolved_star" else self.name_of(x)
                             for x in f.arguments)
            return f"{f.function_name}({'DISTINCT ' if f.is_distinct else ''}{args})"
        if kind == "literal":
            return self.expr(e).sql()
        return self.expr(e).sql()


def _case(xs: list[exp.Expr]) -> exp.Expr:
    pairs, default = (xs, None) if len(xs) % 2 == 0 else (xs[:-1], xs[-1])
    ifs = [exp.If(this=pairs[i], true=pairs[i + 1]) for i in range(0, len(pairs), 2)]
    return exp.Case(ifs=ifs, default=default)
