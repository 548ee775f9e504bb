"""Spark physical plans (event logs of DataFrame programs) -> the plan IR, for mining only.

A DataFrame execution has no SQL text; its ``SparkListenerSQLExecutionStart`` event carries
the physical plan, as a tree (``sparkPlanInfo``) and as the formatted description
(``physicalPlanDescription``: the tree with operator ids, then per operator its Output /
Input / Keys / Functions / Results / Condition / join keys). This module parses the
formatted description (it names every attribute with its expression id, ``a#14``, and gives
aggregate functions and results, which ``sparkPlanInfo``'s one-line strings abbreviate) and
lowers it bottom-up:

=========================================  ===============================================
physical operator                          IR
=========================================  ===============================================
``Scan <format> <catalog.db.table>``        ``Scan(table)`` (one node per table per plan,
(FileScan, BatchScan)                       columns = union of the columns read; a path read
                                            is the table ``<format>.`<path>```), under an
                                            identity ``Rename`` per occurrence (a FROM alias)
``Filter``                                  ``Select``
``Project``                                 ``Project``
final ``HashAggregate`` /                   one ``Aggregate`` with the final functions; only
``ObjectHashAggregate`` / ``SortAggregate``  a final over its partial (``partial_*``), or a
over its partial                            complete aggregate; other stage mixes (DISTINCT
                                            aggregates) -> Opaque
``SortMergeJoin``, ``BroadcastHashJoin``,   ``Join(kind, equi = left/right keys, residual =
``ShuffledHashJoin``,                       join condition)``; ExistenceJoin -> Opaque
``BroadcastNestedLoopJoin``,
``CartesianProduct``
``Union``                                   ``UnionAll``
``GlobalLimit`` / ``CollectLimit``          ``Limit``
``Exchange``, ``BroadcastExchange``,        skipped (they move rows, they do not change the
``Sort`` (local), ``AdaptiveSparkPlan``,    bag)
``ColumnarToRow``, ``InputAdapter``,
``AQEShuffleRead``, query stages,
``LocalLimit``, ``WholeStageCodegen``
anything else (Window, TakeOrderedAndProject,  ``Opaque`` over the whole sub-tree, with the
Python UDFs, Generate, Expand, ...)        operator as the reason
=========================================  ===============================================

Expressions are parsed conservatively: every ``name#id`` must be an attribute of the
operator's input (else the operator is Opaque), and the text must be free of what Spark
prints ambiguously — unquoted string / date literals (``d#17 = read``, ``2000-01-01``),
subqueries, unknown functions — otherwise the operator is Opaque. Never a wrong IR: an
Opaque node only hides structure, a wrong node would invent it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from sqlglot import exp

from ..ir import Aggregate, Join, Limit, Node, Opaque, Project, Rename, Scan, Select, UnionAll
from ..ir.dialect import parse_one
from ..ir.lower import Lowered
from ..ir.lowering.frames import count_star, null_test
from ..ir.nodes import Field, intern

PLAN_MARKER = "-- superop: spark physical plan (DataFrame execution, no SQL text)\n"

SKIPPED = {"AdaptiveSparkPlan", "Exchange", "ShuffleExchange", "BroadcastExchange",
           "ColumnarToRow", "RowToColumnar", "InputAdapter", "WholeStageCodegen",
           "AQEShuffleRead", "CustomShuffleReader", "ShuffleQueryStage", "BroadcastQueryStage",
           "TableCacheQueryStage", "LocalLimit", "Coalesce", "CometColumnarToRow"}
FILE_FORMATS = {"parquet", "orc", "csv", "json", "text", "avro", "delta", "iceberg"}
AGGREGATES = {"HashAggregate", "ObjectHashAggregate", "SortAggregate"}
JOINS = {"SortMergeJoin", "BroadcastHashJoin", "ShuffledHashJoin", "BroadcastNestedLoopJoin",
         "CartesianProduct"}
JOIN_TYPES = {"inner": "inner", "leftouter": "left", "rightouter": "right",
              "fullouter": "full", "leftsemi": "semi", "leftanti": "anti", "cross": "cross"}
COMMANDS = re.compile(r"^(Execute\s|\w*Command\b|AppendData|OverwriteByExpression|"
                      r"OverwritePartitionsDynamic|WriteFiles|CreateTable|ReplaceTable|"
                      r"DropTable|SetCatalogAndNamespace|ShowTables)")
# functions Spark prints that sqlglot does not know as typed expressions: its null tests
# (isnotnull(x) on every join key it infers), lowered to SQL's IS [NOT] NULL
_ALLOWED_ANON = {"isnotnull", "isnull"}
_ATTR = re.compile(r"#(\d+)L?")
_TREE = re.compile(r"^(?P<indent>[\s:|+\-]*?)(?P<star>\*\s)?(?P<name>[A-Za-z].*?)\s\((?P<id>\d+)\)$")
_HEAD = re.compile(r"^\((?P<id>\d+)\)\s(?P<name>.+?)(\s\[codegen id : \d+\])?$")
_TYPES = {"int": "int", "integer": "int", "bigint": "bigint", "long": "bigint",
          "smallint": "smallint", "short": "smallint", "tinyint": "tinyint", "byte": "tinyint",
          "string": "string", "double": "double", "float": "float", "boolean": "boolean",
          "date": "date", "timestamp": "timestamp", "binary": "binary"}


class _Unsure(Exception):
    """The operator cannot be lowered with certainty (-> Opaque with this reason)."""


@dataclass
class PNode:
    id: int
    name: str                      # as in the tree, e.g. "Scan parquet spark_catalog.db.t"
    children: list["PNode"] = field(default_factory=list)
    details: dict[str, str] = field(default_factory=dict)

    @property
    def op(self) -> str:
        return self.name.split(" ", 1)[0]


def is_command(description: str) -> bool:
    """The execution writes or changes the catalog (saveAsTable, INSERT, ...): no query."""
    tree = _tree_lines(description)
    return bool(tree) and bool(COMMANDS.match(tree[0][2]))


def _tree_lines(description: str) -> list[tuple[int, int, str]]:
    """(depth column, operator id, name) per line of the plan tree."""
    text = description.split("== Physical Plan ==", 1)[-1]
    out = []
    for line in text.strip("\n").splitlines():
        if not line.strip():
            break
        m = _TREE.match(line.rstrip())
        if not m:
            continue
        out.append((len(m.group("indent")), int(m.group("id")), m.group("name").strip()))
    return out


def parse_description(description: str) -> Optional[PNode]:
    """The formatted physical plan (``physicalPlanDescription``) as a tree of PNodes."""
    text = description.split("== Physical Plan ==", 1)[-1]
    text = text.split("===== Subqueries =====", 1)[0]
    lines = _tree_lines(description)
    if not lines:
        return None
    details: dict[int, dict[str, str]] = {}
    cur: Optional[dict] = None
    for raw in text.splitlines():
        m = _HEAD.match(raw.strip())
        if m and raw.startswith("("):
            cur = details.setdefault(int(m.group("id")), {"_name": m.group("name")})
            continue
        if cur is None or ":" not in raw:
            continue
        k, v = raw.split(":", 1)
        k = re.sub(r"\s*\[\d+\]\s*$", "", k).strip()
        cur[k] = v.strip()
    root: Optional[PNode] = None
    stack: list[tuple[int, PNode]] = []
    for depth, oid, name in lines:
        node = PNode(oid, name, [], details.get(oid, {}))
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            stack[-1][1].children.append(node)
        else:
            root = node
        stack.append((depth, node))
    return root


def _scan_info(n: PNode) -> tuple[str, list[tuple[str, int, str]]]:
    """(table, [(column, expression id, type)]) of a file / catalog table scan."""
    if "ReadSchema" not in n.details:
        raise _Unsure("not a file or catalog table scan")
    if n.op == "BatchScan":
        table = n.name.split(" ", 1)[1].strip() if " " in n.name else ""
    else:
        parts = n.name.split(" ", 2)             # Scan <format> [<table>]
        if len(parts) < 2 or parts[1].lower() not in FILE_FORMATS:
            raise _Unsure("not a file or catalog table scan")
        table = parts[2].strip() if len(parts) > 2 else ""
        if not table:                            # a path read: Spark's own `format`.`path`
            m = re.search(r"\[([^\[\],]+)\]$", n.details.get("Location", ""))
            if not m:
                raise _Unsure("a scan of several paths")
            table = f"{parts[1].lower()}.`{m.group(1).strip()}`"
    if not table:
        raise _Unsure("a scan without a table name")
    types = _struct_types(n.details["ReadSchema"])
    out = []
    for item in _split_list(n.details.get("Output", "")):
        name, eid = _attr(item)
        if name not in types:
            raise _Unsure(f"no type for column {name}")
        out.append((name, eid, types[name]))
    if not out:
        raise _Unsure("a scan without output")
    return table, out


def _split_list(s: str) -> list[str]:
    """``[a#1, count(1)#2L AS n#3L]`` -> items, split on top-level commas."""
    s = s.strip()
    if s.startswith("[") and s.endswith("]"):
        s = s[1:-1]
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _attr(item: str) -> tuple[str, int]:
    """``count(1)#29L`` -> ("count(1)", 29)."""
    m = re.match(r"^(.*)#(\d+)L?$", item.strip())
    if not m:
        raise _Unsure(f"not an attribute: {item[:60]}")
    return m.group(1), int(m.group(2))


Env = dict[int, Field]


class _Lowerer:
    def __init__(self, schema: Optional[dict] = None):
        self.schema = {k.lower(): v for k, v in (schema or {}).items()}
        self.reasons: list[str] = []
        self.tables: dict[str, dict[str, str]] = {}        # table -> column -> type
        self.scans: dict[str, Scan] = {}
        self.scan_no = 0
        self.ops: dict[int, tuple[Node, Env]] = {}

    # -- expressions ------------------------------------------------------------------
    def expr(self, text: str, env: Env, extra: Optional[dict[str, exp.Expression]] = None
             ) -> exp.Expression:
        """Spark's printed expression over ``env`` as a sqlglot expression, or _Unsure.
        ``extra``: exact printed sub-texts (aggregate attributes such as ``sum(s#18)#21L``)
        and the expressions they stand for."""
        holes: dict[str, exp.Expression] = {}
        for j, (sub_text, e) in enumerate(sorted((extra or {}).items(),
                                                 key=lambda kv: -len(kv[0]))):
            if sub_text in text:
                holes[f"__x{j}"] = e
                text = text.replace(sub_text, f" __x{j} ")
        if re.search(r"\d{4}-\d{2}-\d{2}", text):
            raise _Unsure("a date/timestamp literal")
        if re.search(r"(?i)\b(subquery|scalar-subquery|exists#|outer\()", text):
            raise _Unsure("a subquery in an expression")
        out, pos = [], 0
        for m in _ATTR.finditer(text):
            i = int(m.group(1))
            if i not in env:
                raise _Unsure(f"attribute #{i} is not an input of the operator")
            f = env[i]
            before = text[pos:m.start()]
            if not before.endswith(f.name):
                raise _Unsure("attribute text does not match its name")
            key = f"__a{i}"
            holes[key] = _column(f)
            out += [before[: len(before) - len(f.name)], f" {key} "]
            pos = m.end()
        src = "".join(out) + text[pos:]
        try:
            e = parse_one(src)
        except Exception:
            raise _Unsure("unparsable expression") from None
        for node in e.walk():
            if isinstance(node, exp.Column) and node.name not in holes:
                raise _Unsure("an unquoted literal or unknown name")
            if isinstance(node, exp.Anonymous) and str(node.this).lower() not in _ALLOWED_ANON:
                raise _Unsure(f"function {node.this}")
            if isinstance(node, (exp.Subquery, exp.Select)):
                raise _Unsure("a subquery in an expression")

        def fill(n):
            if isinstance(n, exp.Column) and not n.table and n.name in holes:
                return holes[n.name].copy()
            return n

        def null_tests(n):
            if isinstance(n, exp.Anonymous) and str(n.this).lower() in _ALLOWED_ANON and len(n.expressions) == 1:
                return null_test(n.expressions[0], negated=str(n.this).lower() == "isnotnull")
            return n
        # count(1) is how Spark prints count(*): fold it as a query's COUNT(*) folds
        return count_star(e.transform(fill).transform(null_tests))

    # -- operators --------------------------------------------------------------------
    def lower(self, n: PNode) -> tuple[Node, Env]:
        try:
            res = self._lower(n)
        except _Unsure as u:
            res = self._opaque(n, str(u))
        self.ops[n.id] = res
        return res

    def _opaque(self, n: PNode, why: str) -> tuple[Node, Env]:
        self.reasons.append(f"{n.op}: {why}")
        out = n.details.get("Output")
        env: Env = {}
        names: list[str] = []
        if out:
            try:
                for item in _split_list(out):
                    name, eid = _attr(item.split(" AS ")[-1])
                    env[eid] = Field(None, name)
                    names.append(name)
            except _Unsure:
                env, names = {}, []
        body = _canonical(n)
        return Opaque(body, tuple(names), f"physical {n.op}: {why}"), env

    def _lower(self, n: PNode) -> tuple[Node, Env]:
        op = n.op
        if op in SKIPPED or (op == "Sort" and not _global_sort(n)):
            if len(n.children) != 1:
                raise _Unsure(f"{op} with {len(n.children)} inputs")
            return self.lower(n.children[0])
        if op == "ReusedExchange":
            return self._reused(n)
        if op in ("Scan", "FileScan", "BatchScan"):
            return self._scan(n)
        if op == "Filter":
            child, env = self.lower(n.children[0])
            return Select(child, self.expr(n.details.get("Condition", ""), env)), env
        if op == "Project":
            child, env = self.lower(n.children[0])
            return self._project(child, env, n.details.get("Output", ""))
        if op in AGGREGATES:
            return self._aggregate(n)
        if op in JOINS:
            return self._join(n)
        if op == "Union":
            kids = [self.lower(c) for c in n.children]
            if len(kids) < 2:
                raise _Unsure("union of one input")
            first = kids[0][1]
            env = {eid: Field(None, f.name) for eid, f in first.items()}
            return UnionAll(tuple(k for k, _ in kids)), env
        if op in ("GlobalLimit", "CollectLimit"):
            m = re.match(r"^\s*(\d+)", n.details.get("Arguments", ""))
            if not m:
                raise _Unsure("limit without a count")
            child, env = self.lower(n.children[0])
            return Limit(child, int(m.group(1))), env
        raise _Unsure("operator not modelled")

    def _scan(self, n: PNode) -> tuple[Node, Env]:
        table, out = _scan_info(n)
        scan = self.scan_of(table)
        self.scan_no += 1
        q = f"s{self.scan_no}"            # one qualifier per occurrence (a FROM alias)
        env = {eid: Field(q, name) for name, eid, _ in out}
        return Rename(scan, tuple((f, f.name) for f in scan.fields), q), env

    def collect_tables(self, root: PNode) -> None:
        """Every column read of every table in the plan, before lowering: a table is ONE
        Scan node per plan (the shared input of a diamond), whatever columns each read."""
        stack = [root]
        while stack:
            n = stack.pop()
            stack.extend(n.children)
            if n.op in ("Scan", "BatchScan"):
                try:
                    table, out = _scan_info(n)
                except _Unsure:
                    continue
                cols = self.tables.setdefault(table, {})
                for name, _, t in out:
                    cols.setdefault(name, t)

    def scan_of(self, table: str) -> Scan:
        if table not in self.scans:
            cols = self.tables[table]
            known = self.schema.get(table.lower()) or \
                self.schema.get(table.lower().rsplit(".", 1)[-1])
            order = ([c for c in known if c in cols] + sorted(c for c in cols if c not in known)
                     if known else sorted(cols))
            self.scans[table] = Scan(table, tuple((c, cols[c]) for c in order))
        return self.scans[table]

    def _project(self, child: Node, env: Env, output: str) -> tuple[Node, Env]:
        items, new_env = [], {}
        for item in _split_list(output):
            if " AS " in item:
                body, alias = item.rsplit(" AS ", 1)
                name, eid = _attr(alias)
                e = self.expr(body, env)
            else:
                name, eid = _attr(item)
                e = self.expr(item, env)
            items.append((e, name))
            new_env[eid] = Field(None, name)
        if not items:
            raise _Unsure("a projection without output")
        return Project(child, tuple(items)), new_env

    def _aggregate(self, n: PNode) -> tuple[Node, Env]:
        funcs = _split_list(n.details.get("Functions", ""))
        if any(f.startswith(("partial_", "merge_")) for f in funcs):
            raise _Unsure("a partial aggregate without its final stage")
        below = n.children[0] if n.children else None
        while below is not None and (below.op in SKIPPED or (below.op == "Sort"
                                                             and not _global_sort(below))):
            below = below.children[0] if len(below.children) == 1 else None
        partial = None
        if below is not None and below.op in AGGREGATES:
            pf = _split_list(below.details.get("Functions", ""))
            # its own partial stage: partial_* functions, or (a GROUP BY without functions,
            # DISTINCT) the same keys below an exchange; else another aggregate's result
            if any(f.startswith(("partial_", "merge_")) for f in pf) or (
                    not pf and not funcs and "Exchange" in _ops_between(n, below)
                    and below.details.get("Keys") == n.details.get("Keys")):
                partial = below
        if partial is not None:
            pf = _split_list(partial.details.get("Functions", ""))
            if not all(f.startswith("partial_") for f in pf) or len(pf) != len(funcs):
                raise _Unsure("aggregate stages other than partial + final (DISTINCT?)")
            if partial.details.get("Keys") != n.details.get("Keys"):
                raise _Unsure("partial and final aggregates group differently")
            src = partial.children[0]
        else:
            src = n.children[0]
        child, env = self.lower(src)
        keys = [self.expr(k, env) for k in _split_list(n.details.get("Keys", ""))]
        agg_attrs = _split_list(n.details.get("Aggregate Attributes", ""))
        if len(agg_attrs) != len(funcs):
            raise _Unsure("aggregate attributes do not match the functions")
        extra = {a: self.expr(f, env) for a, f in zip(agg_attrs, funcs)}
        key_attrs = {}
        for k in _split_list(n.details.get("Keys", "")):
            try:
                key_attrs[_attr(k)[1]] = True
            except _Unsure:
                pass
        items, new_env = [], {}
        for r in _split_list(n.details.get("Results", "")):
            if " AS " in r:
                body, alias = r.rsplit(" AS ", 1)
                name, eid = _attr(alias)
            else:
                body = r
                name, eid = _attr(r)
            e = self.expr(body, {i: f for i, f in env.items() if i in key_attrs}, extra)
            items.append((e, name))
            new_env[eid] = Field(None, name)
        if not items:
            raise _Unsure("an aggregate without results")
        return Aggregate(child, tuple(keys), tuple(items)), new_env

    def _join(self, n: PNode) -> tuple[Node, Env]:
        if len(n.children) != 2:
            raise _Unsure("a join without two inputs")
        jt = n.details.get("Join type", "").replace(" ", "").lower()
        if not jt:
            jt = "cross" if n.op in ("CartesianProduct", "BroadcastNestedLoopJoin") else ""
        kind = JOIN_TYPES.get(jt)
        if kind is None:
            raise _Unsure(f"join type {jt or '?'}")
        (lp, lenv), (rp, renv) = self.lower(n.children[0]), self.lower(n.children[1])
        lk = _split_list(n.details.get("Left keys", ""))
        rk = _split_list(n.details.get("Right keys", ""))
        if len(lk) != len(rk):
            raise _Unsure("unequal key lists")
        # the two sides get their own qualifiers so that equal names stay apart
        lq, rq = f"j{n.id}l", f"j{n.id}r"
        lp, lenv = _requalify(lp, lenv, lq)
        rp, renv = _requalify(rp, renv, rq)
        equi = tuple((self.expr(a, lenv), self.expr(b, renv)) for a, b in zip(lk, rk))
        cond = n.details.get("Join condition", "None")
        both = {**lenv, **renv}
        residual = None if cond in ("None", "") else self.expr(cond, both)
        if kind == "cross" and equi:
            kind = "inner"
        env = dict(lenv) if kind in ("semi", "anti") else both
        return Join(lp, rp, kind, equi, residual), env

    def _reused(self, n: PNode) -> tuple[Node, Env]:
        m = re.search(r"Reuses operator id:\s*(\d+)", n.details.get("_name", "") + n.name)
        if not m or int(m.group(1)) not in self.ops:
            raise _Unsure("reused exchange of an unknown operator")
        node, env = self.ops[int(m.group(1))]
        out = [_attr(i) for i in _split_list(n.details.get("Output", ""))]
        if len(out) != len(env):
            raise _Unsure("reused exchange with another arity")
        return node, {eid: f for (_, eid), f in zip(out, env.values())}


def _requalify(node: Node, env: Env, q: str) -> tuple[Node, Env]:
    """An identity Rename that sets qualifier ``q`` on every output field."""
    fields = node.fields
    mapping = tuple((f, f.name) for f in fields)
    if len({f.name for f in fields}) != len(fields):
        return node, env            # duplicate names below: keep the inner qualifiers
    new = {eid: Field(q, f.name) for eid, f in env.items()}
    return Rename(node, mapping, q), new


def _column(f: Field) -> exp.Column:
    """A column reference to ``f`` (names such as ``avg(b)`` are quoted identifiers)."""
    return exp.Column(this=exp.to_identifier(f.name),
                      table=exp.to_identifier(f.qualifier) if f.qualifier else None)


def _ops_between(top: PNode, bottom: PNode) -> list[str]:
    out, x = [], top.children[0] if top.children else None
    while x is not None and x is not bottom:
        out.append(x.op)
        x = x.children[0] if len(x.children) == 1 else None
    return out


def _global_sort(n: PNode) -> bool:
    return bool(re.search(r"\],\s*true", n.details.get("Arguments", "")))


def _struct_types(rs: str) -> dict[str, str]:
    m = re.match(r"^struct<(.*)>$", rs.strip())
    if not m:
        return {}
    out = {}
    for part in _split_list(m.group(1).replace("<", "(").replace(">", ")")):
        if ":" not in part:
            continue
        name, t = part.split(":", 1)
        t = t.strip().lower().replace("(", "<").replace(")", ">") if "decimal" not in t \
            else t.strip().lower()
        out[name.strip()] = _TYPES.get(t, t)
    return out


def _canonical(n: PNode) -> str:
    """The sub-tree as text without expression ids (equal computations, equal text)."""
    parts = []

    def go(x: PNode, d: int):
        det = "; ".join(f"{k}: {v}" for k, v in sorted(x.details.items()) if k != "_name")
        det = re.sub(r"plan_id=\d+", "plan_id", _ATTR.sub("", det))
        parts.append("  " * d + x.name + " {" + det + "}")
        for c in x.children:
            go(c, d + 1)
    go(n, 0)
    return "/* spark physical plan */\n" + "\n".join(parts)


def lower_physical(description: str, schema: Optional[dict] = None) -> Lowered:
    """Lower a formatted physical plan (``physicalPlanDescription``). Never raises for a
    plan it does not understand: those parts are Opaque, with reasons."""
    root = parse_description(description)
    if root is None:
        why = "no physical plan tree"
        return Lowered(Opaque(description[:2000], (), why), None, [why])
    lw = _Lowerer(schema)
    lw.collect_tables(root)
    plan, _ = lw.lower(root)
    return Lowered(intern(plan), None, lw.reasons)
