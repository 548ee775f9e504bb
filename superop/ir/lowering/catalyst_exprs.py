"""Catalyst expressions (as ``TreeNode.toJSON`` serializes them) -> sqlglot expressions.

``toJSON`` writes a tree as its nodes in pre-order, each with its class, ``num-children``
and its constructor fields (a child field holds the child's index among the node's
children). :func:`tree` rebuilds it; :class:`ExprLowering` translates the expression
classes the IR models — attributes (by expression id, through the caller's environment),
literals, casts, arithmetic, comparisons, boolean logic, CASE/IF/COALESCE, a few scalar
functions, aggregate functions (with DISTINCT) and window functions with their frames —
into the same sqlglot nodes a query's lowering produces. Anything else (a UDF, a
sub-query, a LIKE whose escape character the JSON does not carry, ``try_*`` forms the
JSON cannot tell from the plain ones...) raises :class:`~.frames.Unsure`: never guessed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from sqlglot import exp

from .frames import Env, Unsure, call, count_star, literal, null_test, paren, sql_type


@dataclass
class JNode:
    """One node of a serialized Catalyst tree: its class's simple name, its fields and
    its children."""
    cls: str
    data: dict[str, Any]
    kids: list["JNode"] = field(default_factory=list)

    def child_at(self, key: str) -> "JNode":
        i = self.data.get(key)
        if not isinstance(i, int) or not 0 <= i < len(self.kids):
            raise Unsure(f"{self.cls}: no child {key}")
        return self.kids[i]

    def children_at(self, key: str) -> list["JNode"]:
        idx = self.data.get(key) or []
        if not isinstance(idx, list) or not all(isinstance(i, int) and 0 <= i < len(self.kids) for i in idx):
            raise Unsure(f"{self.cls}: no children {key}")
        return [self.kids[i] for i in idx]

    def obj(self, key: str) -> str:
        """A Scala object field (``{"object": "...Inner$"}``) by its simple name."""
        v = self.data.get(key)
        if isinstance(v, dict) and isinstance(v.get("object"), str):
            return str(v["object"]).rsplit(".", 1)[-1].rstrip("$")
        raise Unsure(f"{self.cls}: field {key}")


def tree(nodes: list[dict[str, Any]]) -> JNode:
    """The tree of a pre-order node list (``toJSON``'s format)."""
    pos = 0

    def go() -> JNode:
        nonlocal pos
        if pos >= len(nodes):
            raise Unsure("truncated plan JSON")
        d = nodes[pos]
        pos += 1
        cls = str(d.get("class", "")).rsplit(".", 1)[-1]
        n = JNode(cls, d)
        for _ in range(int(d.get("num-children", 0))):
            n.kids.append(go())
        return n

    root = go()
    if pos != len(nodes):
        raise Unsure("trailing nodes in plan JSON")
    return root


def expr_id(d: dict[str, Any]) -> int:
    e = d.get("exprId")
    if not isinstance(e, dict) or not isinstance(e.get("id"), int):
        raise Unsure("an expression without an id")
    return int(e["id"])



_BINARY: dict[str, type[exp.Expr]] = {
    "Add": exp.Add, "Subtract": exp.Sub, "Multiply": exp.Mul, "Divide": exp.Div,
    "Remainder": exp.Mod, "IntegralDivide": exp.IntDiv, "EqualTo": exp.EQ,
    "EqualNullSafe": exp.NullSafeEQ, "LessThan": exp.LT, "LessThanOrEqual": exp.LTE,
    "GreaterThan": exp.GT, "GreaterThanOrEqual": exp.GTE, "And": exp.And, "Or": exp.Or,
}
# scalar functions whose Catalyst children are the SQL call's arguments, in order
_CALLS = {"Upper": "upper", "Lower": "lower", "Length": "length", "Abs": "abs", "Coalesce": "coalesce",
          "Greatest": "greatest", "Least": "least", "Concat": "concat", "Substring": "substring",
          "If": "if", "Pmod": "pmod", "Sqrt": "sqrt", "Signum": "signum",
          "Rand": "rand", "Randn": "randn", "Uuid": "uuid",
          "MonotonicallyIncreasingID": "monotonically_increasing_id",
          "SparkPartitionID": "spark_partition_id", "InputFileName": "input_file_name"}
# aggregate functions (inside AggregateExpression): children are the call's arguments
_AGGREGATES = {"Count": "count", "Sum": "sum", "Min": "min", "Max": "max", "Average": "avg",
               "StddevPop": "stddev_pop", "StddevSamp": "stddev_samp", "VariancePop": "var_pop",
               "VarianceSamp": "var_samp", "CollectList": "collect_list", "CollectSet": "collect_set",
               "MaxBy": "max_by", "MinBy": "min_by", "BoolAnd": "bool_and", "BoolOr": "bool_or",
               "CountIf": "count_if", "AnyValue": "any_value"}
_RANKING = {"Rank": "rank", "DenseRank": "dense_rank", "RowNumber": "row_number",
            "PercentRank": "percent_rank", "CumeDist": "cume_dist"}
_SUBQUERIES = {"ScalarSubquery", "Exists", "InSubquery", "ListQuery", "LateralSubquery",
               "OuterReference"}


class ExprLowering:
    """Translates serialized Catalyst expressions over an environment (expression id ->
    the IR field that carries it)."""

    def __init__(self) -> None:
        self._dispatch: dict[str, Callable[[JNode, Env], exp.Expr]] = {
            "AttributeReference": self._attr, "Alias": lambda n, env: self.expr(n.kids[0], env),
            "Literal": self._literal, "Cast": self._cast, "Not": self._not,
            "UnaryMinus": lambda n, env: exp.Neg(this=paren(self.expr(n.kids[0], env))),
            "UnaryPositive": lambda n, env: self.expr(n.kids[0], env),
            "IsNull": lambda n, env: null_test(self.expr(n.kids[0], env)),
            "IsNotNull": lambda n, env: null_test(self.expr(n.kids[0], env), negated=True),
            "In": self._in, "CaseWhen": self._case, "AggregateExpression": self._aggregate,
            "WindowExpression": self._window, "SortOrder": self._order,
        }

    def expr(self, n: JNode, env: Env) -> exp.Expr:
        if n.cls in _BINARY:
            a, b = (self.expr(k, env) for k in n.kids)
            return _BINARY[n.cls](this=paren(a), expression=paren(b))
        f = self._dispatch.get(n.cls)
        if f is not None:
            return f(n, env)
        if n.cls in _CALLS:
            return call(_CALLS[n.cls], [self.expr(k, env) for k in n.kids])
        if n.cls in _SUBQUERIES:
            raise Unsure("a sub-query in an expression")
        if "UDF" in n.cls or "UDAF" in n.cls:
            raise Unsure(f"a user-defined function ({n.cls})")
        raise Unsure(f"expression {n.cls}")

    def of(self, nodes: list[dict[str, Any]], env: Env) -> exp.Expr:
        """One serialized expression (a pre-order node list)."""
        return self.expr(tree(nodes), env)

    # -- leaves -----------------------------------------------------------------------
    @staticmethod
    def _attr(n: JNode, env: Env) -> exp.Expr:
        f = env.get(expr_id(n.data))
        if f is None:
            raise Unsure(f"attribute {n.data.get('name')}#{expr_id(n.data)} is not an input of the operator")
        return f.column()

    @staticmethod
    def _literal(n: JNode, env: Env) -> exp.Expr:
        v = n.data.get("value")
        return literal(None if v is None else str(v), n.data.get("dataType"))

    def _cast(self, n: JNode, env: Env) -> exp.Expr:
        return exp.Cast(this=self.expr(n.kids[0], env), to=sql_type(n.data.get("dataType")))

    def _not(self, n: JNode, env: Env) -> exp.Expr:
        return exp.Not(this=paren(self.expr(n.kids[0], env)))

    def _in(self, n: JNode, env: Env) -> exp.Expr:
        value = n.child_at("value")
        items = n.children_at("list")
        return exp.In(this=paren(self.expr(value, env)), expressions=[self.expr(i, env) for i in items])

    def _case(self, n: JNode, env: Env) -> exp.Expr:
        kids = [self.expr(k, env) for k in n.kids]
        has_else = n.data.get("elseValue") is not None
        pairs = kids[:-1] if has_else else kids
        if len(pairs) % 2:
            raise Unsure("CASE WHEN with an odd number of branch expressions")
        ifs = [exp.If(this=pairs[i], true=pairs[i + 1]) for i in range(0, len(pairs), 2)]
        return exp.Case(ifs=ifs, default=kids[-1] if has_else else None)

    # -- aggregates and windows -------------------------------------------------------
    def _aggregate(self, n: JNode, env: Env) -> exp.Expr:
        if len(n.kids) != 1:
            raise Unsure("an aggregate with a FILTER clause")
        if n.obj("mode") != "Complete":
            raise Unsure("a partial aggregate")
        fn = n.kids[0]
        distinct = bool(n.data.get("isDistinct"))
        if fn.cls in ("First", "Last"):
            ignore = bool(fn.data.get("ignoreNulls"))
            args = [self.expr(fn.kids[0], env)] + ([exp.true()] if ignore else [])
            return call(fn.cls.lower(), args, distinct)
        name = _AGGREGATES.get(fn.cls)
        if name is None:
            raise Unsure(f"aggregate function {fn.cls}")
        out = call(name, [self.expr(k, env) for k in fn.kids], distinct)
        return out if distinct else count_star(out)

    def _order(self, n: JNode, env: Env) -> exp.Expr:
        desc = n.obj("direction") == "Descending"
        nulls_first = n.obj("nullOrdering") == "NullsFirst"
        return exp.Ordered(this=self.expr(n.kids[0], env), desc=desc, nulls_first=nulls_first)

    def _window(self, n: JNode, env: Env) -> exp.Expr:
        fn_node, spec = n.child_at("windowFunction"), n.child_at("windowSpec")
        if spec.cls != "WindowSpecDefinition":
            raise Unsure(f"window spec {spec.cls}")
        ranking = fn_node.cls in _RANKING
        if ranking:
            fn = call(_RANKING[fn_node.cls], [])
        elif fn_node.cls == "AggregateExpression":
            fn = self._aggregate(fn_node, env)
        else:
            raise Unsure(f"window function {fn_node.cls}")
        part = [self.expr(k, env) for k in spec.children_at("partitionSpec")]
        order = [self.expr(k, env) for k in spec.children_at("orderSpec")]
        frame = self._frame(spec.child_at("frameSpecification"), bool(order), ranking)
        w = exp.Window(this=fn, partition_by=part or None, over="OVER")
        if order:
            w.set("order", exp.Order(expressions=order))
        if frame is not None:
            w.set("spec", frame)
        return w

    @staticmethod
    def _frame(f: JNode, ordered: bool, ranking: bool) -> Optional[exp.Expr]:
        """The frame as SQL, or None where it is the function's default (ranking
        functions have a fixed frame; an aggregate's default depends on the ORDER BY)."""
        if f.cls == "UnspecifiedFrame$" or ranking:
            return None
        if f.cls != "SpecifiedWindowFrame" or len(f.kids) != 2:
            raise Unsure(f"window frame {f.cls}")
        kind = {"RowFrame": "ROWS", "RangeFrame": "RANGE"}.get(f.obj("frameType"))
        if kind is None:
            raise Unsure("window frame type")
        lo, hi = (_bound(k) for k in f.kids)
        default = (("RANGE", ("UNBOUNDED", "PRECEDING"), ("CURRENT ROW", None)) if ordered else
                   ("ROWS", ("UNBOUNDED", "PRECEDING"), ("UNBOUNDED", "FOLLOWING")))
        if (kind, lo, hi) == default or (not ordered and (lo, hi) == default[1:]):
            return None
        return exp.WindowSpec(kind=kind, start=lo[0], start_side=lo[1], end=hi[0], end_side=hi[1])


def _bound(k: JNode) -> tuple[Any, Optional[str]]:
    if k.cls == "UnboundedPreceding$":
        return ("UNBOUNDED", "PRECEDING")
    if k.cls == "UnboundedFollowing$":
        return ("UNBOUNDED", "FOLLOWING")
    if k.cls == "CurrentRow$":
        return ("CURRENT ROW", None)
    if k.cls == "Literal" and str(k.data.get("value", "")).lstrip("-").isdigit():
        v = int(str(k.data["value"]))
        return (exp.Literal.number(abs(v)), "PRECEDING" if v < 0 else "FOLLOWING")
    raise Unsure(f"window frame bound {k.cls}")
