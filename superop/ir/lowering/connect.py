"""A Spark Connect DataFrame's plan -> the plan IR.

Input: the client-side protobuf ``Relation`` (``pyspark.sql.connect.proto``, what
``df._plan.plan(client)`` builds), read duck-typed. Nothing in it is resolved: columns are
names (maybe tied to a DataFrame's plan id), functions are Spark SQL names, tables are
names the server resolves when the plan runs. This module resolves them the way Spark's
analyzer does — every relation's output is a list of attributes, each with its name, the
qualifiers it can be referred to by (a table's name, a ``df.alias``) and the plan ids of
the DataFrames whose output holds it — and builds the IR with the same
:class:`~.frames.FrameBuilder` as the classic front end. What only the server knows (a
leaf's columns and types, what a table name resolves to) comes from the caller's
``facts``; a ``spark.sql`` relation is lowered from its SQL text with the caller's schema
source.

==============================================  =============================================
Relation                                        IR
==============================================  =============================================
``read`` (a table name), ``read`` of files,     ``Scan`` of a bound leaf
``local_relation``, ``range``
``sql`` (no parameters)                         the query's own IR (``superop.ir.lower``)
``project``, ``with_columns``, ``drop``,        ``Project`` / ``Rename``
``with_columns_renamed``, ``to_df``
``filter``, ``aggregate`` (GROUP BY),           ``Select``, ``Aggregate``, ``Join`` (USING:
``join``, ``set_op`` (UNION [ALL] [BY NAME]),   the key columns first), ``UnionAll``,
``sort`` (global), ``limit``, ``deduplicate``   ``Sort``, ``Limit``, ``Aggregate``
(every column)
``subquery_alias``                              (a qualifier for names)
anything else                                   ``Opaque`` leaf bound to that relation
==============================================  =============================================
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from sqlglot import exp

from ..lower import lower
from ..nodes import Aggregate, Field, Limit, Select, Sort, UnionAll
from ..schema import SchemaSource
from .connect_exprs import ConnectExprs, identifier_parts
from .frames import Built, FactsOf, FrameBuilder, FrameLowered, LeafFacts, Path, Unsure, no_facts

_JOINS = {1: "inner", 2: "full", 3: "left", 4: "right", 5: "anti", 6: "semi", 7: "cross"}
_UNARY = {"filter", "project", "aggregate", "sort", "limit", "subquery_alias", "with_columns",
          "with_columns_renamed", "drop", "to_df", "deduplicate"}


def relation_children(rel: Any) -> list[Any]:
    """The input relations of a ``Relation``, in field order (the order paths count)."""
    kind = rel.WhichOneof("rel_type")
    if kind is None:
        return []
    msg = getattr(rel, kind)
    out = []
    for f in msg.DESCRIPTOR.fields:
        if f.message_type is None or f.message_type.name != "Relation":
            continue
        v = getattr(msg, f.name)
        if not hasattr(v, "WhichOneof"):         # a repeated field
            out.extend(v)
        elif msg.HasField(f.name):
            out.append(v)
    return out


def lower_connect(rel: Any, names: Sequence[str], facts: FactsOf = no_facts,
                  schema: Optional[SchemaSource] = None, case_sensitive: bool = False,
                  token: str = "") -> FrameLowered:
    """Lower a Connect ``Relation``; ``names`` = the DataFrame's columns (its schema)."""
    lw = ConnectLowering(facts, schema, case_sensitive, token)
    root = lw.lower(rel, ())
    if len(root.cols) != len(names):
        raise Unsure("the plan's output does not match the DataFrame's schema")
    return lw.b.finish(root.built, list(names))


@dataclass(frozen=True)
class Col:
    attr: int
    name: str
    quals: frozenset[str] = frozenset()


@dataclass
class Rel:
    built: Built
    cols: list[Col]


class _Scope:
    """Name resolution over one operator's input (:class:`.connect_exprs.Names`)."""

    def __init__(self, lw: "ConnectLowering", inputs: Sequence[Rel], env: Optional[dict[int, Field]] = None):
        self.lw = lw
        self.cols = [c for r in inputs for c in r.cols]
        self.env = env if env is not None else {a: f for r in inputs for a, f in r.built.env.items()}

    def _field(self, c: Col) -> exp.Column:
        f = self.env.get(c.attr)
        if f is None:
            raise Unsure(f"column {c.name} is not an input")
        return f.column()

    def column(self, parts: list[str], plan_id: Optional[int]) -> exp.Column:
        eq = self.lw.eq
        if plan_id is not None:
            hits = [c for occ in self.lw.plans.get(plan_id, []) for c in occ
                    if eq(c.name, parts[-1]) and any(c.attr == x.attr for x in self.cols)]
            if len({c.attr for c in hits}) != 1 or len(parts) > 2:
                raise Unsure(f"column {'.'.join(parts)} of plan {plan_id} is ambiguous or missing")
            return self._field(hits[0])
        name = parts[-1]
        if len(parts) == 1:
            hits = [c for c in self.cols if eq(c.name, name)]
        elif len(parts) == 2:
            hits = [c for c in self.cols if eq(c.name, name) and any(eq(q, parts[0]) for q in c.quals)]
        else:
            raise Unsure(f"a column reference of {len(parts)} parts")
        if len({c.attr for c in hits}) != 1:
            raise Unsure(f"column {'.'.join(parts)} is ambiguous or missing (or a struct field)")
        return self._field(hits[0])

    def star(self, target: str, plan_id: Optional[int]) -> list[exp.Column]:
        return [self._field(c) for c in self.stars(target)]

    def stars(self, target: str) -> list[Col]:
        if not target:
            return list(self.cols)
        q = identifier_parts(target.rstrip(".*").rstrip("."))[-1]
        out = [c for c in self.cols if any(self.lw.eq(x, q) for x in c.quals)]
        if not out:
            raise Unsure(f"{target}: no such qualifier")
        return out


class ConnectLowering:
    def __init__(self, facts: FactsOf, schema: Optional[SchemaSource], case_sensitive: bool, token: str):
        self.b = FrameBuilder(token)
        self.facts = facts
        self.schema = schema
        self.case_sensitive = case_sensitive
        self.plans: dict[int, list[list[Col]]] = {}
        self._ids = itertools.count(1)

    def eq(self, a: str, b: str) -> bool:
        return a == b if self.case_sensitive else a.lower() == b.lower()

    def new(self, name: str, quals: frozenset[str] = frozenset()) -> Col:
        return Col(next(self._ids), name, quals)

    # -- dispatch -------------------------------------------------------------------------
    def lower(self, rel: Any, path: Path) -> Rel:
        try:
            out = self._lower(rel, path)
        except Unsure as u:
            out = self._opaque(rel, path, str(u))
        if rel.HasField("common") and rel.common.HasField("plan_id"):
            self.plans.setdefault(int(rel.common.plan_id), []).append(out.cols)
        return out

    def _lower(self, rel: Any, path: Path) -> Rel:
        kind = rel.WhichOneof("rel_type")
        method = getattr(self, "_op_" + str(kind), None)
        if method is None:
            raise Unsure(f"relation {kind}")
        out: Rel = method(getattr(rel, kind), rel, path)
        return out

    def kid(self, rel: Any, path: Path, i: int = 0) -> Rel:
        kids = relation_children(rel)
        if len(kids) <= i:
            raise Unsure("a relation without its input")
        return self.lower(kids[i], path + (i,))

    def exprs(self, *inputs: Rel) -> ConnectExprs:
        return ConnectExprs(_Scope(self, inputs))

    def _opaque(self, rel: Any, path: Path, why: str) -> Rel:
        cols = [(n, t, next(self._ids)) for n, t, _ in self.facts(path, "output").output]
        built = self.b.opaque_leaf(path, cols, f"{rel.WhichOneof('rel_type')}: {why}")
        return Rel(built, [Col(a, n) for n, _, a in cols])

    # -- leaves -----------------------------------------------------------------------
    def _leaf(self, path: Path, kind: str, name: str, identity: tuple[str, ...] = (),
              facts: Optional[LeafFacts] = None) -> Rel:
        facts = facts or self.facts(path, kind)
        cols = [(n, t, next(self._ids)) for n, t, _ in facts.output]
        ident = identity or facts.table or ("", f"__{kind}", facts.key)
        if not facts.output or not ident or not ident[-1]:
            raise Unsure(f"a {kind} leaf Spark gave no columns or identity for")
        built = self.b.table_leaf(path, kind, tuple(p.lower() for p in ident), name, cols, facts)
        quals = frozenset({name}) if kind == "table" else frozenset()
        return Rel(built, [Col(a, n, quals) for n, _, a in cols])

    def _op_read(self, m: Any, rel: Any, path: Path) -> Rel:
        if m.is_streaming:
            raise Unsure("a streaming read")
        if m.WhichOneof("read_type") == "named_table":
            if len(m.named_table.options):
                raise Unsure("a table read with options")
            parts = identifier_parts(m.named_table.unparsed_identifier)
            return self._leaf(path, "table", parts[-1])
        return self._leaf(path, "path", "files")

    def _op_local_relation(self, m: Any, rel: Any, path: Path) -> Rel:
        return self._leaf(path, "local", "local")

    def _op_range(self, m: Any, rel: Any, path: Path) -> Rel:
        parts = (m.start, m.end, m.step, m.num_partitions if m.HasField("num_partitions") else "")
        return self._leaf(path, "range", "range", ("", "__range", ":".join(map(str, parts))))

    def _op_sql(self, m: Any, rel: Any, path: Path) -> Rel:
        if len(m.args) or len(m.pos_args) or len(m.named_arguments) or len(m.pos_arguments):
            raise Unsure("a parameterized SQL query")
        if self.schema is None:
            raise Unsure("an SQL query and no schema source to resolve it")
        node = self.b.share(lower(m.query, self.schema).plan)
        fields = node.fields
        if len(set(fields)) != len(fields):
            raise Unsure("an SQL query whose output names repeat")
        cols = [self.new(f.name) for f in fields]
        return Rel(Built(node, tuple(c.attr for c in cols), {c.attr: f for c, f in zip(cols, fields)}), cols)

    # -- unary operators ------------------------------------------------------------------
    def _op_subquery_alias(self, m: Any, rel: Any, path: Path) -> Rel:
        child = self.kid(rel, path)
        q = frozenset({str(m.alias)})
        return Rel(child.built, [Col(c.attr, c.name, q) for c in child.cols])

    def _op_filter(self, m: Any, rel: Any, path: Path) -> Rel:
        child = self.kid(rel, path)
        pred = self.exprs(child).expr(m.condition)
        b = child.built
        return Rel(Built(self.b.share(Select(b.node, pred)), b.attrs, b.env), child.cols)

    def _items(self, child: Rel, exprs: Sequence[Any]) -> list[tuple[exp.Expr, Col]]:
        """Each output expression with its column: a bare reference keeps its attribute
        (and qualifiers), anything else is a new one; ``*`` expands."""
        x = self.exprs(child)
        scope = _Scope(self, [child])
        out: list[tuple[exp.Expr, Col]] = []
        for e in exprs:
            kind = e.WhichOneof("expr_type")
            if kind == "unresolved_star":
                out += [(scope._field(c), c) for c in scope.stars(e.unresolved_star.unparsed_target)]
                continue
            tree = x.expr(e)
            col = next((c for c in child.cols if isinstance(tree, exp.Column)
                        and child.built.env.get(c.attr) == Field(_qual(tree), tree.name)), None)
            if kind == "unresolved_attribute" and col is not None:
                out.append((tree, col))
            else:
                out.append((tree, self.new(x.name_of(e))))
        return out

    def _project_rel(self, child: Rel, items: list[tuple[exp.Expr, Col]]) -> Rel:
        """A projection as Spark's analyzer plans it: window functions computed by a ω
        below it, aggregate functions (no GROUP BY) making it a global γ."""
        wins = [w for e, _ in items for w in _outer(e, exp.Window)]
        if wins:
            cols = [(w, self.new(f"_w{i}")) for i, w in enumerate(wins)]
            built = self.b.window(child.built, [(w, c.name, c.attr) for w, c in cols])
            by_sql: dict[str, exp.Expr] = {w.sql(): built.env[c.attr].column() for w, c in cols}
            items = [(_replace(e, exp.Window, by_sql), c) for e, c in items]
            child = Rel(built, child.cols + [c for _, c in cols])
        if any(_outer(e, exp.AggFunc) for e, _ in items):
            built = self.b.aggregate(child.built, [], [(e, c.name, c.attr) for e, c in items])
            return Rel(built, [c for _, c in items])
        built = self.b.project(child.built, [(e, c.name, c.attr) for e, c in items])
        return Rel(built, [c for _, c in items])

    def _op_project(self, m: Any, rel: Any, path: Path) -> Rel:
        child = self.kid(rel, path)
        return self._project_rel(child, self._items(child, m.expressions))

    def _op_with_columns(self, m: Any, rel: Any, path: Path) -> Rel:
        child = self.kid(rel, path)
        x = self.exprs(child)
        scope = _Scope(self, [child])
        items: list[tuple[exp.Expr, Col]] = [(scope._field(c), c) for c in child.cols]
        for a in m.aliases:
            if len(a.name) != 1:
                raise Unsure("a multi-name alias")
            e, col = x.expr(a.expr), self.new(str(a.name[0]))
            at = next((i for i, (_, c) in enumerate(items) if self.eq(c.name, col.name)), None)
            if at is None:
                items.append((e, col))
            else:
                items[at] = (e, col)
        return self._project_rel(child, items)

    def _op_with_columns_renamed(self, m: Any, rel: Any, path: Path) -> Rel:
        child = self.kid(rel, path)
        renames = [(str(k), str(v)) for k, v in m.rename_columns_map.items()]
        renames += [(str(r.col_name), str(r.new_col_name)) for r in m.renames]
        scope = _Scope(self, [child])
        items: list[tuple[exp.Expr, Col]] = []
        for c in child.cols:
            new = next((v for k, v in renames if self.eq(k, c.name)), None)
            items.append((scope._field(c), c if new is None else self.new(new)))
        return self._project_rel(child, items)

    def _op_to_df(self, m: Any, rel: Any, path: Path) -> Rel:
        child = self.kid(rel, path)
        if len(m.column_names) != len(child.cols):
            raise Unsure("toDF with another number of names")
        scope = _Scope(self, [child])
        items: list[tuple[exp.Expr, Col]] = [(scope._field(c), self.new(str(n)))
                                               for c, n in zip(child.cols, m.column_names)]
        return self._project_rel(child, items)

    def _op_drop(self, m: Any, rel: Any, path: Path) -> Rel:
        child = self.kid(rel, path)
        scope = _Scope(self, [child])
        gone = {c.attr for c in child.cols for n in m.column_names if self.eq(c.name, str(n))}
        for e in m.columns:
            f = self.exprs(child).expr(e)
            gone |= {c.attr for c in child.cols if child.built.env.get(c.attr) == Field(_qual(f), f.name)}
        kept: list[tuple[exp.Expr, Col]] = [(scope._field(c), c) for c in child.cols if c.attr not in gone]
        return self._project_rel(child, kept)

    def _op_aggregate(self, m: Any, rel: Any, path: Path) -> Rel:
        if int(m.group_type) != 1:
            raise Unsure("ROLLUP, CUBE, PIVOT or GROUPING SETS")
        child = self.kid(rel, path)
        x = self.exprs(child)
        keys = [x.expr(g.alias.expr if g.WhichOneof("expr_type") == "alias" else g) for g in m.grouping_expressions]
        items = self._items(child, list(m.grouping_expressions)) + self._items(child, list(m.aggregate_expressions))
        built = self.b.aggregate(child.built, keys, [(e, c.name, c.attr) for e, c in items])
        return Rel(built, [c for _, c in items])

    def _op_deduplicate(self, m: Any, rel: Any, path: Path) -> Rel:
        child = self.kid(rel, path)
        names = [str(n) for n in m.column_names]
        if not m.all_columns_as_keys and {n.lower() for n in names} != {c.name.lower() for c in child.cols}:
            raise Unsure("dropDuplicates on a subset of the columns")
        scope = _Scope(self, [child])
        cols: list[exp.Expr] = [scope._field(c) for c in child.cols]
        built = self.b.aggregate(child.built, cols, [(e, c.name, c.attr) for e, c in zip(cols, child.cols)])
        return Rel(built, child.cols)

    def _op_sort(self, m: Any, rel: Any, path: Path) -> Rel:
        if not m.is_global:
            raise Unsure("a sort within partitions")
        child = self.kid(rel, path)
        x = self.exprs(child)
        order = tuple(o for o in (x.expr(e) for e in m.order) if isinstance(o, exp.Ordered))
        if len(order) != len(m.order):
            raise Unsure("a sort order")
        b = child.built
        return Rel(Built(self.b.share(Sort(b.node, order)), b.attrs, b.env), child.cols)

    def _op_limit(self, m: Any, rel: Any, path: Path) -> Rel:
        child = self.kid(rel, path)
        b = child.built
        return Rel(Built(self.b.share(Limit(b.node, int(m.limit))), b.attrs, b.env), child.cols)

    # -- joins and unions -----------------------------------------------------------------
    def _op_join(self, m: Any, rel: Any, path: Path) -> Rel:
        kind = _JOINS.get(int(m.join_type))
        if kind is None or m.HasField("join_data_type"):
            raise Unsure("a join type")
        left, right = self.kid(rel, path, 0), self.kid(rel, path, 1)
        using = [str(u) for u in m.using_columns]
        if using:
            return self._using(left, right, kind, using)
        cond = m.join_condition if m.HasField("join_condition") else None

        def on(env: dict[int, Field]) -> Optional[exp.Expr]:
            # resolved over the sides as the join re-qualified them (a self-join's two
            # sides carry the same fields until then)
            return None if cond is None else ConnectExprs(_Scope(self, [left, right], env)).expr(cond)
        built = self.b.join(left.built, right.built, kind, on)
        cols = left.cols if kind in ("semi", "anti") else left.cols + right.cols
        return Rel(built, cols)

    def _using(self, left: Rel, right: Rel, kind: str, using: list[str]) -> Rel:
        def key(r: Rel, n: str) -> Col:
            hits = [c for c in r.cols if self.eq(c.name, n)]
            if len(hits) != 1:
                raise Unsure(f"USING column {n} is ambiguous or missing")
            return hits[0]
        lk, rk = [key(left, n) for n in using], [key(right, n) for n in using]
        pairs = list(zip(lk, rk))
        built = self.b.join(left.built, right.built, kind, lambda env: _conj(
            [exp.EQ(this=env[a.attr].column(), expression=env[b.attr].column()) for a, b in pairs]))
        scope = _Scope(self, [Rel(built, left.cols + right.cols)])
        items: list[tuple[exp.Expr, Col]] = []
        for a, b in pairs:
            if kind == "full":
                items.append((exp.func("coalesce", scope._field(a), scope._field(b)), self.new(a.name)))
            else:
                items.append((scope._field(b if kind == "right" else a), b if kind == "right" else a))
        keys = {c.attr for c in lk + rk}
        rest = [c for c in left.cols if c.attr not in keys]
        if kind not in ("semi", "anti"):
            rest += [c for c in right.cols if c.attr not in keys]
        items += [(scope._field(c), c) for c in rest]
        return self._project_rel(Rel(built, left.cols + right.cols), items)

    def _op_set_op(self, m: Any, rel: Any, path: Path) -> Rel:
        if int(m.set_op_type) != 2 or m.allow_missing_columns:
            raise Unsure("INTERSECT, EXCEPT or a union allowing missing columns")
        left, right = self.kid(rel, path, 0), self.kid(rel, path, 1)
        if m.by_name:
            scope = _Scope(self, [right])
            order: list[tuple[exp.Expr, Col]] = []
            for c in left.cols:
                hits = [r for r in right.cols if self.eq(r.name, c.name)]
                if len(hits) != 1:
                    raise Unsure(f"unionByName: column {c.name}")
                order.append((scope._field(hits[0]), hits[0]))
            right = self._project_rel(right, order)
        if len(left.cols) != len(right.cols):
            raise Unsure("a union of inputs of different widths")
        # bag union is associative: nested unions flattened, as the server's Dataset.union
        # does (CombineUnions) and as a classic session's analyzed plan shows them
        parts = tuple(x for k in (left.built.node, right.built.node)
                      for x in (k.inputs if m.is_all and isinstance(k, UnionAll) and k.qualifier is None
                                else (k,)))
        node = self.b.share(UnionAll(parts))
        env = {c.attr: Field(None, f.name) for c, f in zip(left.cols, node.fields)}
        out = Rel(Built(node, tuple(c.attr for c in left.cols), env), [Col(c.attr, c.name) for c in left.cols])
        if m.is_all:
            return out
        scope = _Scope(self, [out])
        cols = [scope._field(c) for c in out.cols]
        agg = self.b.share(Aggregate(node, tuple(cols), tuple((e, f.name) for e, f in zip(cols, node.fields))))
        return Rel(Built(agg, out.built.attrs, env), out.cols)


def _outer(e: exp.Expr, kind: type[exp.Expr]) -> list[exp.Expr]:
    """The nodes of ``kind`` in ``e`` not inside another one (nor inside a window)."""
    out: list[exp.Expr] = []
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, kind):
            out.append(x)
        elif not isinstance(x, exp.Window):
            stack.extend(x.iter_expressions())
    return out


def _replace(e: exp.Expr, kind: type[exp.Expr], by_sql: dict[str, exp.Expr]) -> exp.Expr:
    if isinstance(e, kind) and e.sql() in by_sql:
        return by_sql[e.sql()].copy()

    def fix(n: exp.Expr) -> exp.Expr:
        return by_sql[n.sql()].copy() if isinstance(n, kind) and n.sql() in by_sql else n
    return e.transform(fix)


def _qual(e: exp.Expr) -> Optional[str]:
    t = e.args.get("table")
    return str(t.name) if t is not None else None


def _conj(parts: list[exp.Expr]) -> Optional[exp.Expr]:
    out: Optional[exp.Expr] = None
    for p in parts:
        out = p if out is None else exp.and_(out, p, copy=False)
    return out

