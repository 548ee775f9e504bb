"""SQL -> plan IR: the entry points (parse, qualify, lower).

Parses, qualifies against a schema and lowers SELECT / WHERE / GROUP BY / HAVING,
derived tables, CTEs, every join kind, UNION ALL, DISTINCT, ORDER BY / LIMIT and
window functions (:mod:`superop.ir.lowering` holds one module per seam). A (sub)query
that cannot be lowered becomes an :class:`Opaque` node carrying its SQL — lowering never
raises for valid Spark SQL over known tables.
"""
from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError
from sqlglot.optimizer.qualify import qualify

from ..errors import SqlError
from .dialect import DIALECT, dialect
from .lowering import Lowerer
from .lowering.generators import expand_generators
from .lowering.exprs import columns_outside_queries
from .names import TableName, ident
from .nodes import (Limit, Node, Opaque, Rename, Scan, UnionAll, expressions_of, intern,
                    resolve_field, walk)
from .schema import TableInfo, schema_source
from .subquery_types import record_subquery_types


def parse(sql: str) -> exp.Expr:
    try:
        stmts = [s for s in sqlglot.parse(sql, dialect=DIALECT) if s is not None]
    except ParseError as e:
        first = str(e).splitlines()[0] if str(e) else "parse error"
        raise SqlError(f"cannot parse SQL: {first}") from None
    if len(stmts) != 1:
        raise SqlError(f"expected one SQL statement, got {len(stmts)}")
    if not isinstance(stmts[0], exp.Query):
        raise SqlError(f"not a query: {stmts[0].key.upper()} statements are not supported")
    return stmts[0]


@dataclass
class Qualified:
    """A parsed query qualified against a schema source: ``ast`` has every column
    qualified and every FROM table aliased, table names exactly as written; ``tables``
    maps each table name (normalized parts) to what it resolved to."""
    ast: exp.Query
    tables: dict[tuple[str, ...], TableInfo]
    case_sensitive: bool


def qualified(sql: str, schema: object) -> exp.Query:
    """Parse and qualify (columns get table qualifiers, every projection an alias)."""
    return qualify_query(sql, schema).ast


def qualify_query(sql: str, schema: object) -> Qualified:
    """Parse ``sql``, resolve its tables with the schema source (see
    :mod:`superop.ir.schema`) and qualify it with sqlglot.

    sqlglot's schema wants one nesting depth for every table, while a query mixes ``t``,
    ``db.t`` and ``cat.db.t``; and it would identify tables by their last part. So every
    table reference is renamed to a private key (one per distinct written name) for the
    qualification and renamed back afterwards — the AST keeps the user's names."""
    tree = expand_generators(parse(sql))
    src = schema_source(schema)
    cs = src.case_sensitive
    keys: dict[tuple[str, ...], str] = {}
    written: dict[str, tuple[TableName, TableInfo]] = {}
    for t in list(tree.find_all(exp.Table)):
        try:
            name = TableName.from_table(t)
        except ValueError:
            continue                       # a table function or other FROM expression
        if len(name.parts) == 1 and src.norm(name.name) in _visible_ctes(t, src.norm):
            continue
        info = src.resolve(name)
        if info is None:
            raise SqlError(f"unknown table: {name}")
        norm = name.normalized(cs)
        key = keys.get(norm)
        if key is None:
            key = keys[norm] = f"__so_t{len(keys)}"
            written[key] = (name, info)
        if t.args.get("alias") is None:     # Spark's implicit alias: the table's own name
            t.set("alias", exp.TableAlias(this=ident(name.name, name.quoted[-1])))
        _dequalify_columns(t, name, src.norm)
        for k in ("catalog", "db"):
            t.set(k, None)
        t.set("this", exp.to_identifier(key))
    mapping: dict[str, object] = {k: dict(info.columns) for k, (_, info) in written.items()}
    try:
        ast = qualify(tree, schema=mapping, dialect=dialect(cs), identify=False,
                      quote_identifiers=False)
    except SqlglotError as e:
        raise SqlError(f"cannot resolve SQL: {_unkey(str(e).splitlines()[0], written)}") from None
    tables: dict[tuple[str, ...], TableInfo] = {}
    for t in ast.find_all(exp.Table):
        hit = written.get(t.name) if not t.args.get("db") else None
        if hit is None:
            continue
        name, info = hit
        back = name.to_table()
        for k in ("catalog", "db", "this"):
            t.set(k, back.args.get(k))
        tables[name.normalized(cs)] = info
    if not isinstance(ast, exp.Query):  # pragma: no cover - parse() checked it
        raise SqlError("not a query")
    return Qualified(ast, tables, cs)


def _unkey(msg: str, written: dict[str, tuple[TableName, TableInfo]]) -> str:
    for k, (name, _) in written.items():
        msg = msg.replace(k, name.sql())
    return msg


def _visible_ctes(node: exp.Expr, norm: Callable[[str], str]) -> set[str]:
    """Names of the CTEs in scope at ``node``: those of every enclosing WITH, where a
    CTE body sees only the CTEs defined before it (and itself when recursive)."""
    out: set[str] = set()
    prev: exp.Expr = node
    p = node.parent
    while p is not None:
        if isinstance(p, exp.Query):
            w = p.args.get("with_") or p.args.get("with")
            if isinstance(w, exp.With):
                ctes = list(w.expressions)
                if prev is w:
                    # came from inside a CTE body: find which one
                    inner = node
                    while inner.parent is not w:
                        inner = inner.parent  # type: ignore[assignment]
                    i = ctes.index(inner) if inner in ctes else len(ctes)
                    upto = i + 1 if w.args.get("recursive") else i
                    out |= {norm(c.alias_or_name) for c in ctes[:upto]}
                else:
                    out |= {norm(c.alias_or_name) for c in ctes}
        prev = p
        p = p.parent
    return out


def _dequalify_columns(t: exp.Table, name: TableName, norm: Callable[[str], str]) -> None:
    """``db.t.col`` / ``cat.db.t.col`` -> ``alias.col`` for columns of the nearest SELECT
    that reads ``t`` (sqlglot's qualification only knows the alias)."""
    sel = t.find_ancestor(exp.Select)
    if sel is None or len(name.parts) < 2:
        return
    alias = t.alias
    target = tuple(norm(p) for p in name.parts)
    for c in sel.find_all(exp.Column):
        if not c.args.get("db"):
            continue
        parts = tuple(norm(str(c.args[k].name)) for k in ("catalog", "db", "table")
                      if c.args.get(k) is not None)
        if len(parts) >= 2 and target[-len(parts):] == parts:
            c.set("catalog", None)
            c.set("db", None)
            c.set("table", exp.to_identifier(alias))


@dataclass
class Lowered:
    plan: Node
    ast: exp.Query                        # the qualified AST
    opaque_reasons: list[str] = field(default_factory=list)

    @property
    def fully_lowered(self) -> bool:
        return not self.opaque_reasons


def lower(sql: str, schema: object) -> Lowered:
    """Lower one Spark SQL query. ``schema`` is a :class:`~superop.ir.schema.SchemaSource`,
    a SparkSession (resolution as Spark does it, case sensitivity from its conf) or the
    mapping form ``{"table": {"column": "type"}}`` (case-insensitive; keys may be
    qualified). Raises SqlError only for unparsable SQL and unknown tables/columns;
    everything else that is unmodeled becomes Opaque."""
    return lower_ast(qualify_query(sql, schema))


_LOWERED: "OrderedDict[tuple[str, str], Lowered]" = OrderedDict()
_LOWERED_MAX = 512
_LOWERED_LOCK = threading.Lock()


def lower_fixed(sql: str, schema: dict[str, Any]) -> Lowered:
    """:func:`lower` over a fixed mapping schema, remembered per process (a pure function
    of the two; plans are immutable — callers must not modify the returned AST). What the
    certificate checks lower several times over: the same instance SQL in each check."""
    key = (sql, json.dumps(schema, sort_keys=True, default=str))
    with _LOWERED_LOCK:
        hit = _LOWERED.get(key)
        if hit is not None:
            _LOWERED.move_to_end(key)
            return hit
    low = lower(sql, schema)
    with _LOWERED_LOCK:
        _LOWERED[key] = low
        while len(_LOWERED) > _LOWERED_MAX:
            _LOWERED.popitem(last=False)
    return low


def lower_ast(q: Qualified) -> Lowered:
    lw = Lowerer(q.tables, q.case_sensitive)
    ast = q.ast
    plan = intern(lw.query(ast, {}))
    bad = unresolved(plan)
    if bad:
        # Never hand out a plan whose expressions do not resolve (generation would
        # fail on it): the whole query is carried through as SQL instead.
        why = f"lowering error: unresolved column {bad}"
        body = ast.copy()
        return Lowered(Opaque(body.sql(dialect=DIALECT), tuple(ast.named_selects), why), ast,
                       lw.reasons + [why])
    record_subquery_types(plan, q.tables, q.case_sensitive)
    return Lowered(plan, ast, lw.reasons)


def unresolved(plan: Node) -> str | None:
    """The first column reference (outside nested queries) that does not resolve
    against its node's input fields, or None when the plan is consistent."""
    for n in walk(plan):
        if isinstance(n, (Scan, Opaque, UnionAll, Limit)):
            continue
        fields = n.input_fields()
        if isinstance(n, Rename):
            cols = [f.column() for f, _ in n.mapping]
        else:
            cols = [c for e in expressions_of(n) for c in columns_outside_queries(e)]
        for c in cols:
            try:
                resolve_field(fields, c)
            except KeyError:
                return c.sql(dialect=DIALECT)
    return None


# ---------------------------------------------------------------------------
