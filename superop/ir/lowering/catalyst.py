"""A classic session's DataFrame plan -> the plan IR.

Input: Catalyst's logical plan as ``TreeNode.toJSON()`` writes it — the analyzed plan
with cached fragments already substituted (``QueryExecution.withCachedData``), so that a
cached DataFrame is read from its cache. Why JSON: it is Catalyst's own stable
serialization (every node with its class and constructor fields, every attribute with its
expression id and type), produced in one JVM call, and it carries exactly what the IR
needs — unlike ``treeString``, which prints strings and dates without quotes (the
event-log lowering, :mod:`superop.mining.physical`, has to refuse those).

=================================================  ======================================
Catalyst                                           IR
=================================================  ======================================
``Project``                                        ``Project`` (bare columns: ``Rename``)
``Filter``                                         ``Select``
``Aggregate``                                      ``Aggregate``
``Join`` (inner/left/right/full/semi/anti/cross)   ``Join`` (``=`` conjuncts -> equi keys)
``Union``                                          ``UnionAll``
``Window``                                         ``Window``
``Sort`` (global), ``GlobalLimit(LocalLimit)``     ``Sort``, ``Limit``
``Deduplicate``/``Distinct`` of every column        ``Aggregate`` without functions
``SubqueryAlias``                                  (nothing: columns are attributes)
``WithCTE`` / ``CTERelationRef``                   the definition lowered once, shared
``View``, catalog ``LogicalRelation``,             ``Scan`` of the table (its resolved name)
``HiveTableRelation``
a path read, ``LocalRelation``, ``InMemoryRelation``  ``Scan`` of a bound leaf
(cached), checkpointed ``LogicalRDD``, ``Range``
anything else (UDFs, ``Generate``, ``Expand``,      ``Opaque`` leaf bound to that sub-plan
``Sample``, hints, repartitioning, RDDs, ...)
=================================================  ======================================

Pure: the JSON in, a :class:`~.frames.FrameLowered` out; what only the JVM knows about a
leaf (its semantic hash, a path read's location) comes from the caller's ``facts``.
"""
from __future__ import annotations

import json
from typing import Any, Optional, Sequence

from sqlglot import exp

from ..nodes import Field, Limit, Select, Sort, UnionAll
from .catalyst_exprs import ExprLowering, JNode, expr_id, tree
from .frames import (Built, FactsOf, FrameBuilder, FrameLowered, LeafFacts, Path, Unsure, no_facts,
                     simple_type)

_JOINS = {"Inner": "inner", "LeftOuter": "left", "RightOuter": "right", "FullOuter": "full",
          "LeftSemi": "semi", "LeftAnti": "anti", "Cross": "cross"}
_PASS = {"Filter", "Sort", "GlobalLimit", "LocalLimit", "SubqueryAlias", "Deduplicate", "Distinct",
         "Repartition", "RepartitionByExpression", "ResolvedHint", "Sample", "Offset", "Tail"}


def lower_catalyst(plan_json: str, facts: FactsOf = no_facts, token: str = "") -> FrameLowered:
    """Lower a Catalyst logical plan (``toJSON``). Never raises for a plan it does not
    understand: those sub-plans become Opaque leaves (with reasons); raises
    :class:`~.frames.Unsure` only when not even the root can be bound."""
    root = tree(json.loads(plan_json))
    lw = CatalystLowering(facts, token)
    built = lw.lower(root, ())
    names = [c for c, _, _ in lw.output(root, ())]
    if len(names) != len(built.attrs):
        raise Unsure("the plan's output does not match its lowering")
    return lw.b.finish(built, names)


class CatalystLowering:
    def __init__(self, facts: FactsOf, token: str = ""):
        self.b = FrameBuilder(token)
        self.x = ExprLowering()
        self.facts = facts
        self._ctes: dict[int, tuple[JNode, Path]] = {}
        self._cte_built: dict[int, Built] = {}

    # -- dispatch -----------------------------------------------------------------------
    def lower(self, n: JNode, path: Path) -> Built:
        try:
            return self._lower(n, path)
        except Unsure as u:
            return self.b.opaque_leaf(path, self.output(n, path), f"{n.cls}: {u}")

    def _lower(self, n: JNode, path: Path) -> Built:
        if n.cls == "SubqueryAlias":
            return self.lower(n.kids[0], path + (0,))
        method = getattr(self, "_op_" + n.cls, None)
        if method is not None:
            out: Built = method(n, path)
            return out
        leaf = self._leaf(n, path)
        if leaf is not None:
            return leaf
        raise Unsure("operator not modelled")

    def kid(self, n: JNode, path: Path, i: int = 0) -> Built:
        if len(n.kids) <= i:
            raise Unsure(f"{n.cls} without input {i}")
        return self.lower(n.kids[i], path + (i,))

    def exprs(self, arrays: Any, env: dict[int, Field]) -> list[exp.Expr]:
        if not isinstance(arrays, list):
            raise Unsure("expected a list of expressions")
        return [self.x.of(a, env) for a in arrays]

    def named(self, arrays: Any, env: dict[int, Field]) -> list[tuple[exp.Expr, str, int]]:
        """(expression, name, attribute) of each named output expression."""
        out = []
        for a in arrays if isinstance(arrays, list) else []:
            t = tree(a)
            if t.cls not in ("Alias", "AttributeReference"):
                raise Unsure(f"an output expression {t.cls}")
            out.append((self.x.expr(t, env), str(t.data.get("name")), expr_id(t.data)))
        return out

    # -- unary operators ------------------------------------------------------------------
    def _op_Project(self, n: JNode, path: Path) -> Built:
        child = self.kid(n, path)
        return self.b.project(child, self.named(n.data.get("projectList"), child.env))

    def _op_Filter(self, n: JNode, path: Path) -> Built:
        child = self.kid(n, path)
        cond = n.data.get("condition")
        pred = self.x.of(cond, child.env) if isinstance(cond, list) else None
        if pred is None:
            raise Unsure("a filter without a condition")
        return Built(self.b.share(Select(child.node, pred)), child.attrs, child.env)

    def _op_Aggregate(self, n: JNode, path: Path) -> Built:
        child = self.kid(n, path)
        keys = self.exprs(n.data.get("groupingExpressions"), child.env)
        return self.b.aggregate(child, keys, self.named(n.data.get("aggregateExpressions"), child.env))

    def _distinct(self, child: Built) -> Built:
        cols = [child.field_of(a).column() for a in child.attrs]
        names = [child.field_of(a).name for a in child.attrs]
        return self.b.aggregate(child, cols, list(zip(cols, names, child.attrs)))

    def _op_Distinct(self, n: JNode, path: Path) -> Built:
        return self._distinct(self.kid(n, path))

    def _op_Deduplicate(self, n: JNode, path: Path) -> Built:
        child = self.kid(n, path)
        keys = [expr_id(tree(k).data) for k in n.data.get("keys") or []]
        if sorted(keys) != sorted(child.attrs):
            # dropDuplicates(subset) keeps an arbitrary row per key: not a function of the input
            raise Unsure("dropDuplicates on a subset of the columns")
        return self._distinct(child)

    def _op_Window(self, n: JNode, path: Path) -> Built:
        child = self.kid(n, path)
        return self.b.window(child, self.named(n.data.get("windowExpressions"), child.env))

    def _op_Sort(self, n: JNode, path: Path) -> Built:
        if not n.data.get("global"):
            raise Unsure("a sort within partitions")
        child = self.kid(n, path)
        order = self.exprs(n.data.get("order"), child.env)
        if not all(isinstance(o, exp.Ordered) for o in order):
            raise Unsure("a sort order")
        node = self.b.share(Sort(child.node, tuple(o for o in order if isinstance(o, exp.Ordered))))
        return Built(node, child.attrs, child.env)

    def _op_GlobalLimit(self, n: JNode, path: Path) -> Built:
        limit = _int_literal(n.data.get("limitExpr"))
        inner = n.kids[0] if n.kids else None
        if inner is None or inner.cls != "LocalLimit" or _int_literal(inner.data.get("limitExpr")) != limit:
            raise Unsure("a limit without its local limit")
        child = self.kid(inner, path + (0,))
        return Built(self.b.share(Limit(child.node, limit)), child.attrs, child.env)

    # -- multi-input operators ------------------------------------------------------------
    def _op_Join(self, n: JNode, path: Path) -> Built:
        kind = _JOINS.get(n.obj("joinType"))
        if kind is None:
            raise Unsure(f"join type {n.obj('joinType')}")
        hint = n.data.get("hint")
        if isinstance(hint, dict) and any(hint.get(k) for k in ("leftHint", "rightHint")):
            raise Unsure("a join hint")
        left, right = self.kid(n, path, 0), self.kid(n, path, 1)
        cond = n.data.get("condition")
        return self.b.join(left, right, kind, lambda env: self.x.of(cond, env) if isinstance(cond, list) else None)

    def _op_Union(self, n: JNode, path: Path) -> Built:
        if n.data.get("byName") or n.data.get("allowMissingCol"):
            raise Unsure("a union by name that the analyzer did not resolve")
        kids = [self.kid(n, path, i) for i in range(len(n.kids))]
        if len(kids) < 2 or len({len(k.attrs) for k in kids}) != 1:
            raise Unsure("a union of inputs of different widths")
        node = self.b.share(UnionAll(tuple(k.node for k in kids)))
        first = kids[0]
        return Built(node, first.attrs, {a: Field(None, f.name) for a, f in zip(first.attrs, node.fields)})

    def _op_WithCTE(self, n: JNode, path: Path) -> Built:
        for i in n.data.get("cteDefs") or []:
            d = n.kids[i]
            if d.cls != "CTERelationDef" or d.data.get("recursive"):
                raise Unsure("a recursive CTE")
            self._ctes[int(d.data.get("id", -1))] = (d, path + (i,))
        return self.kid(n, path, int(n.data.get("plan", 0)))

    def _op_CTERelationRef(self, n: JNode, path: Path) -> Built:
        cte = int(n.data.get("cteId", -1))
        if cte not in self._ctes or n.data.get("recursive"):
            raise Unsure("a reference to an unknown CTE")
        if cte not in self._cte_built:
            d, dpath = self._ctes[cte]
            self._cte_built[cte] = self.kid(d, dpath)
        body = self._cte_built[cte]
        attrs = [a for _, _, a in self._attrs(n.data.get("output"))]
        if len(attrs) != len(body.attrs):
            raise Unsure("a CTE reference of another width")
        return Built(body.node, tuple(attrs), {a: body.field_of(b) for a, b in zip(attrs, body.attrs)})

    # -- leaves ---------------------------------------------------------------------------
    def _leaf(self, n: JNode, path: Path) -> Optional[Built]:
        if n.cls == "View":
            return self._view(n, path)
        if n.cls in ("LogicalRelation", "HiveTableRelation"):
            meta = n.data.get("catalogTable") if n.cls == "LogicalRelation" else n.data.get("tableMeta")
            if isinstance(meta, dict) and isinstance(meta.get("identifier"), dict):
                ident = _identifier(meta["identifier"], temp=False)
                return self._table(n, path, "table", ident, ident[-1], self._attrs(n.data.get("output")))
            facts = self.facts(path, "path")
            if not facts.table:
                raise Unsure("a relation without a name")
            return self._table(n, path, "path", facts.table, "files", self._attrs(n.data.get("output")), facts)
        kinds = {"LocalRelation": "local", "InMemoryRelation": "cached", "Range": "range"}
        if n.cls == "LogicalRDD":
            if not n.data.get("fromCheckpoint"):
                raise Unsure("an RDD of unknown lineage (its determinism is unknown)")
            kinds["LogicalRDD"] = "checkpoint"
        if n.cls in kinds:
            kind = kinds[n.cls]
            facts = self.facts(path, kind)
            key = facts.key or (f"{n.data.get('start')}:{n.data.get('end')}:{n.data.get('step')}:"
                                f"{n.data.get('numSlices')}" if kind == "range" else "")
            if not key:
                raise Unsure(f"a {kind} leaf Spark gave no identity for")
            return self._table(n, path, kind, ("", f"__{kind}", key), kind, self._attrs(n.data.get("output")),
                               facts)
        return None

    def _view(self, n: JNode, path: Path) -> Built:
        desc = n.data.get("desc") or {}
        ident = desc.get("identifier") if isinstance(desc, dict) else None
        if not isinstance(ident, dict):
            raise Unsure("a view without a name")
        fields = ((desc.get("schema") or {}).get("fields") or []) if isinstance(desc, dict) else []
        ids = [a for _, _, a in self.output(n.kids[0], path + (0,))] if n.kids else []
        if len(ids) != len(fields):
            raise Unsure("a view whose schema does not match its plan")
        cols = [(str(f.get("name")), simple_type(f.get("type")), a) for f, a in zip(fields, ids)]
        identity = _identifier(ident, temp=bool(n.data.get("isTempView")))
        return self._table(n, path, "view", identity, identity[-1], cols)

    def _table(self, n: JNode, path: Path, kind: str, identity: tuple[str, ...], name: str,
               cols: Sequence[tuple[str, str, int]], facts: Optional[LeafFacts] = None) -> Built:
        facts = facts if facts is not None else self.facts(path, kind)
        typed = [(c, simple_type(t), a) for c, t, a in cols]
        return self.b.table_leaf(path, kind, tuple(p.lower() for p in identity), name, typed, facts)

    # -- outputs --------------------------------------------------------------------------
    @staticmethod
    def _attrs(arrays: Any) -> list[tuple[str, str, int]]:
        out = []
        for a in arrays if isinstance(arrays, list) else []:
            t = tree(a)
            if t.cls != "AttributeReference":
                raise Unsure("an output that is not an attribute")
            out.append((str(t.data.get("name")), str(t.data.get("dataType")), expr_id(t.data)))
        return out

    def output(self, n: JNode, path: Path) -> list[tuple[str, str, int]]:
        """(name, type, attribute) of a plan node's output: read from the JSON where the
        node lists it, else from the caller's facts (Spark's ``output``)."""
        try:
            return self._json_output(n, path)
        except Unsure:
            cols = list(self.facts(path, "output").output)
            if not cols:
                raise
            return cols

    def _json_output(self, n: JNode, path: Path) -> list[tuple[str, str, int]]:
        if isinstance(n.data.get("output"), list):
            return self._attrs(n.data["output"])
        if n.cls in _PASS and n.kids:
            return self.output(n.kids[0], path + (0,))
        if n.cls in ("Project", "Aggregate"):
            key = "projectList" if n.cls == "Project" else "aggregateExpressions"
            out = []
            for a in n.data.get(key) or []:
                t = tree(a)
                if t.cls not in ("Alias", "AttributeReference"):
                    raise Unsure("an output expression")
                out.append((str(t.data.get("name")), str(t.data.get("dataType", "")), expr_id(t.data)))
            return out
        if n.cls == "Window" and n.kids:
            wins = [(str(tree(a).data.get("name")), "", expr_id(tree(a).data))
                    for a in n.data.get("windowExpressions") or []]
            return self.output(n.kids[0], path + (0,)) + wins
        if n.cls == "Join" and len(n.kids) == 2:
            left = self.output(n.kids[0], path + (0,))
            if _JOINS.get(n.obj("joinType")) in ("semi", "anti"):
                return left
            return left + self.output(n.kids[1], path + (1,))
        if n.cls == "Union" and n.kids:
            return self.output(n.kids[0], path + (0,))
        if n.cls == "WithCTE":
            return self.output(n.kids[int(n.data.get("plan", 0))], path + (int(n.data.get("plan", 0)),))
        if n.cls == "View" and n.kids:
            return self.output(n.kids[0], path + (0,))
        raise Unsure(f"the output of {n.cls}")


def _identifier(ident: dict[str, Any], temp: bool) -> tuple[str, ...]:
    """A table identifier as the IR's identity (``superop.ir.schema``: ``""`` first for
    the session's temp views)."""
    table = ident.get("table")
    if not isinstance(table, str):
        raise Unsure("a table identifier")
    parts = [p for p in (ident.get("catalog"), ident.get("database")) if isinstance(p, str)]
    if temp:
        return ("",) + tuple(parts) + (table,)
    return tuple(parts) + (table,)


def _int_literal(arrays: Any) -> int:
    if isinstance(arrays, list) and len(arrays) == 1 and isinstance(arrays[0], dict):
        d = arrays[0]
        if str(d.get("class", "")).endswith(".Literal") and str(d.get("value", "")).isdigit():
            return int(str(d["value"]))
    raise Unsure("a limit that is not a literal")
