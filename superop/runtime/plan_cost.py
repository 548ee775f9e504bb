"""The benefit gate's cost model: what a physical plan costs, from Spark's statistics.

Every estimate starts from Spark's own numbers in ``EXPLAIN COST`` (plan.py): the size
and, after ANALYZE TABLE, the row count of every relation a scan reads (with
``analyze_tables`` the session also reads the row counts and column NDVs that ANALYZE
stored, see :class:`TableStats`), and — when ``spark.sql.cbo.enabled`` — the row count
Spark estimates for a filter or an aggregate. Rows then flow bottom-up through the
physical operators (a filter keeps a default fraction of its rows unless Spark's CBO
says otherwise; a partial aggregate emits at most a few copies of each group before
its exchange; a join emits about as many rows as its larger side, except a self-join of
one relation's rows on the same columns, which emits its pairs: |L|·|R| / max(NDV), see
:meth:`_Estimator._self_join_pairs`) and each operator adds what it does with them:

========================  ============================================================
feature                   what
========================  ============================================================
``scan_bytes``            rows × width of the columns every scan reads
``shuffle_bytes``         rows × width that every shuffle exchange writes and reads
``broadcast_bytes``       rows × width of every broadcast
``sort_rows``             rows every Sort sorts (a window or sort-merge join sorts all)
``agg_rows``              rows every hash/sort aggregate consumes (partial and final)
``join_rows``             rows both sides of every join feed it
``window_rows``           rows a Window operator buffers and evaluates
``window_order_rows``     rows a Window with an ORDER BY evaluates (its sort on the order
                          keys after the partition keys, a frame per row)
``generate_rows``         rows a Generate (``inline``) explodes
``stages``                shuffle and broadcast exchanges and scalar sub-query jobs
                          (scheduling, task start-up)
========================  ============================================================

``cost = QUERY_S + Σ constant × feature`` estimates seconds on the machine the constants
were fitted on (:data:`superop.runtime.calibration.CONSTANTS`, fitted by
``benchmarks/cost_calibration.py`` against the micro benchmark's measured times). This
module estimates; :mod:`superop.runtime.cost` compares two estimates and decides.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Optional, Protocol

from ..explain import BROADCAST, REUSED, SCANS, SHUFFLE, SUBQUERY, Node, PlanInfo
from .calibration import CONSTANTS, FEATURES, CostConstants
from .plan_text import ATTR, attr_ids, bracket, named_outputs, split_top, strip_parens, window_orders

_TYPE_WIDTH = {"boolean": 1, "tinyint": 1, "byte": 1, "smallint": 2, "short": 2, "int": 4, "integer": 4,
               "date": 4, "bigint": 8, "long": 8, "float": 4, "double": 8, "timestamp": 8,
               "timestamp_ntz": 8, "string": 20, "binary": 20}


def type_width(t: str) -> float:
    t = t.strip().lower()
    if t in _TYPE_WIDTH:
        return _TYPE_WIDTH[t]
    if t.startswith("decimal"):
        m = re.match(r"decimal\((\d+)", t)
        return 8 if m and int(m.group(1)) <= 18 else 16
    if t.startswith(("varchar", "char")):
        return 20
    return CONSTANTS.default_width * 2   # arrays, maps, structs


# ---------------------------------------------------------------------------
# statistics beyond the plan (ANALYZE TABLE results)
# ---------------------------------------------------------------------------
# Spark's sizeInBytes of a relation it knows nothing about (spark.sql.defaultSizeInBytes,
# Long.MaxValue: "8.0 EiB" in EXPLAIN COST); any size this large is that default
UNKNOWN_SIZE = float(2 ** 62)
UNKNOWN_SIZE_TEXT = "8 EiB"


class TableStats(Protocol):
    """Statistics ANALYZE TABLE stored, by table name as Spark prints it in a scan."""

    def rows(self, table: str) -> Optional[float]: ...

    def ndv(self, table: str, column: str) -> Optional[float]: ...


# ---------------------------------------------------------------------------
# the estimate
# ---------------------------------------------------------------------------
@dataclass
class PlanCost:
    features: dict
    total: float
    constants: CostConstants = CONSTANTS
    uses_cbo: bool = False       # a filter/aggregate row count came from Spark's CBO
    notes: list = field(default_factory=list)
    missing_stats: list = field(default_factory=list)   # relations Spark has no size for

    def terms(self) -> dict:
        """Seconds per feature (plus the fixed part)."""
        c = self.constants
        out = {"query": c.query_s}
        for f, k in FEATURES.items():
            out[f] = self.features.get(f, 0.0) * getattr(c, k)
        return out

    def to_json(self) -> dict:
        return {"total": self.total, "features": dict(self.features), "terms": self.terms(),
                "uses_cbo": self.uses_cbo}


def selectivity(cond: str, c: CostConstants = CONSTANTS) -> float:
    """Default selectivity of a filter condition as Spark prints it (System R style)."""
    cond = strip_parens(cond)
    ors = split_top(cond, " OR ")
    if len(ors) > 1:
        keep = 1.0
        for p in ors:
            keep *= 1.0 - selectivity(p, c)
        return 1.0 - keep
    ands = split_top(cond, " AND ")
    if len(ands) > 1:
        out = 1.0
        for p in ands:
            out *= selectivity(p, c)
        return out
    a = cond
    if a.startswith("isnotnull("):
        return 1.0
    if a.startswith("isnull("):
        return c.sel_null
    if a.startswith("NOT "):
        return 1.0 - selectivity(a[4:], c)
    if a.startswith("coalesce(") and a.endswith(", false)"):
        return selectivity(a[len("coalesce("):-len(", false)")], c)
    if a in ("true",):
        return 1.0
    if a in ("false", "null"):
        return 0.0
    if " IN (" in a or a.startswith("In("):
        n = a.count(",") + 1
        return min(1.0, n * c.sel_eq)
    if " = " in a or " <=> " in a:
        return c.sel_eq
    if any(op in a for op in (" < ", " > ", " <= ", " >= ")):
        return c.sel_range
    return c.sel_other


@dataclass
class _Est:
    rows: float
    cols: list            # attribute ids in output order
    raw: bool = False     # the rows of one scan, through filters and projections only


_JOIN_SOURCE = re.compile(r"Location: \w+\(\d+ paths?\)\[([^\],]+)")


class _Estimator:
    def __init__(self, info: PlanInfo, stats: Optional[TableStats], c: CostConstants):
        self.c = c
        self.stats = stats
        self.f = {k: 0.0 for k in FEATURES}
        self.width: dict[str, float] = {}
        self.uses_cbo = False
        self.notes: list[str] = []
        self.missing: list[str] = []
        self.groups: dict[frozenset, float] = {}
        self.scan_table: dict[str, tuple[str, str]] = {}   # attr id -> (table, column)
        self.scan_source: dict[str, tuple[str, str]] = {}  # attr id -> (table or files, column)
        self.exchange_rows: dict[str, float] = {}
        # logical statistics, by what identifies the physical node
        self.rel_by_id: dict[str, Node] = {}
        self.filter_rows: dict[str, float] = {}
        self.agg_rows_by_keys: dict[frozenset, float] = {}
        if info.logical is not None:
            for n in info.logical.walk():
                if not n.children:
                    for i in attr_ids(bracket(n.text) or n.text):
                        self.rel_by_id[i] = n
                elif n.name == "Filter" and n.rows is not None:
                    self.filter_rows[n.args] = n.rows
                elif n.name == "Aggregate" and n.rows is not None:
                    keys = bracket(n.text)
                    if keys is not None:
                        self.agg_rows_by_keys[frozenset(attr_ids(keys))] = n.rows

    def w(self, cols) -> float:
        return self.c.row_overhead + sum(self.width.get(i, self.c.default_width) for i in cols)

    # -- per operator ------------------------------------------------------------------
    def visit(self, n: Node) -> _Est:
        kids = [self.visit(k) for k in n.children]
        name = n.name
        first = kids[0] if kids else _Est(1.0, [])
        if name in SCANS or (name.startswith("Scan") and not kids):
            return self.scan(n)
        if name == "Filter":
            cond = n.args
            if cond in self.filter_rows:
                self.uses_cbo = True
                return replace(first, rows=min(first.rows, self.filter_rows[cond]))
            return replace(first, rows=first.rows * selectivity(cond, self.c))
        if name in ("Project", "TakeOrderedAndProject"):
            items = bracket(n.text) if name == "Project" else None
            cols = named_outputs(items) if items is not None else first.cols
            rows = first.rows
            if name == "TakeOrderedAndProject":
                m = re.search(r"limit=(\d+)", n.text)
                rows = min(rows, float(m.group(1))) if m else rows
                self.f["sort_rows"] += first.rows
            return _Est(rows, cols, raw=first.raw and name == "Project")
        if name == SHUFFLE:
            self.f["stages"] += 1
            self.f["shuffle_bytes"] += first.rows * self.w(first.cols)
            self.exchange_rows[n.args] = first.rows
            return first
        if name == BROADCAST:
            self.f["stages"] += 1
            self.f["broadcast_bytes"] += first.rows * self.w(first.cols)
            return first
        if name == SUBQUERY:
            # a scalar sub-query runs as a job of its own before the query's (scheduled,
            # its tasks started, its result collected): a stage's overhead. Copies Spark
            # reuses are ReusedSubquery leaves, so each distinct plan is charged once.
            self.f["stages"] += 1
            return first
        if name == REUSED:
            cols = attr_ids(bracket(n.text) or "")
            ref = n.text.split("], ", 1)[-1]
            rows = next((r for a, r in self.exchange_rows.items() if ref.endswith(a)), None)
            if rows is None:
                self.notes.append("a reused exchange's rows are unknown (taken as 1)")
            return _Est(rows or 1.0, cols)
        if name == "Sort":
            self.f["sort_rows"] += first.rows
            return first
        if name in ("HashAggregate", "ObjectHashAggregate", "SortAggregate"):
            return self.aggregate(n, first)
        if name in ("SortMergeJoin", "ShuffledHashJoin", "BroadcastHashJoin", "BroadcastNestedLoopJoin",
                    "CartesianProduct"):
            return self.join(n, kids)
        if name == "Window":
            self.f["window_rows"] += first.rows
            if window_orders(n.text):
                self.f["window_order_rows"] += first.rows
            cols = first.cols + named_outputs(bracket(n.text) or "")
            return _Est(first.rows, cols)
        if name == "WindowGroupLimit":
            return self.group_limit(n, first)
        if name == "Generate":
            self.f["generate_rows"] += first.rows
            fan = max(1, n.text.count("struct("))
            outs = attr_ids(n.text.rsplit("[", 1)[-1]) if "[" in n.text else []
            return _Est(first.rows * fan, first.cols + outs)
        if name == "Union":
            return _Est(sum(k.rows for k in kids), first.cols)
        if name == "Expand":
            projections = max(1, bracket(n.text).count("], [") + 1) if bracket(n.text) else 2
            return replace(first, rows=first.rows * projections)
        if name in ("GlobalLimit", "LocalLimit", "CollectLimit", "Limit"):
            m = re.search(r"(\d+)", n.args)
            return replace(first, rows=min(first.rows, float(m.group(1)))) if m else first
        if len(kids) > 1:
            return _Est(sum(k.rows for k in kids), first.cols)
        return first

    def scan(self, n: Node) -> _Est:
        body = n.text
        cols_text = bracket(body) or ""
        ids = attr_ids(cols_text)
        names = [m.group(1) for m in ATTR.finditer(cols_text)]
        types = {}
        m = re.search(r"ReadSchema: struct<(.*)>", body)
        if m:
            for part in split_top(m.group(1)):
                if ":" in part:
                    k, t = part.split(":", 1)
                    types[k.strip("`").lower()] = t
        for i, nm in zip(ids, names):
            if nm.lower() in types:
                self.width[i] = type_width(types[nm.lower()])
        tm = re.match(r"^\w+(?: \w+)? ([\w.`]+)\[", body)
        table = tm.group(1) if tm else None
        loc = _JOIN_SOURCE.search(body)
        source = table or (loc.group(1) if loc else None)
        for i, nm in zip(ids, names):
            if table:
                self.scan_table[i] = (table, nm)
            if source:
                self.scan_source[i] = (source, nm.lower())
        rel = next((self.rel_by_id[i] for i in ids if i in self.rel_by_id), None)
        rows = None
        if table and self.stats is not None:
            rows = self.stats.rows(table)
        if rows is None and rel is not None and rel.rows is not None:
            rows = rel.rows
        if rel is not None and rel.size is not None and rel.size >= UNKNOWN_SIZE and rows is None:
            name = table or n.name
            if name not in self.missing:
                self.missing.append(name)
        if rows is None and rel is not None and rel.size is not None:
            all_ids = attr_ids(bracket(rel.text) or "")
            width = self.w(all_ids or ids)
            columnar = any(x in rel.text for x in (" parquet", " orc")) or "Format: Parquet" in body \
                or "Format: ORC" in body
            rows = rel.size * (self.c.columnar_expansion if columnar else 1.0) / width
        if rows is None:
            m2 = re.search(r"Range \((\d+), (\d+), step=(\d+)", body)
            rows = (int(m2.group(2)) - int(m2.group(1))) / max(1, int(m2.group(3))) if m2 else 1.0
            if not m2:
                self.notes.append(f"no statistics for {n.name}: 1 row assumed")
        self.f["scan_bytes"] += rows * self.w(ids)
        return _Est(rows, ids, raw=True)

    def _groups(self, keys: list[str], rows: float) -> float:
        k = frozenset(keys)
        if not keys:
            return 1.0
        if k in self.groups:
            return min(rows, self.groups[k]) if rows else self.groups[k]
        g = None
        if k in self.agg_rows_by_keys:
            g = self.agg_rows_by_keys[k]
            self.uses_cbo = True
        elif self.stats is not None and all(i in self.scan_table for i in keys):
            nd = [self.stats.ndv(*self.scan_table[i]) for i in keys]
            if all(x is not None for x in nd):
                g = math.prod(nd)
        if g is None:
            g = max(1.0, rows * self.c.group_ratio)
        g = max(1.0, min(g, rows)) if rows else g
        self.groups[k] = g
        return g

    def aggregate(self, n: Node, child: _Est) -> _Est:
        m = re.match(r"^\w+\(keys=\[(.*?)\], functions=\[(.*)\], output=\[(.*)\]\)", n.text)
        if m is None:
            self.f["agg_rows"] += child.rows
            return replace(child, rows=max(1.0, child.rows * self.c.group_ratio))
        keys, funcs, output = attr_ids(m.group(1)), m.group(2), m.group(3)
        self.f["agg_rows"] += child.rows
        cols = named_outputs(output)
        partial = "partial_" in funcs or (not funcs.strip() and n.children
                                          and n.children[0].name != SHUFFLE)
        g = self._groups(keys, child.rows)
        if partial and keys:
            return _Est(min(child.rows, g * self.c.partial_copies), cols)
        return _Est(min(child.rows, g) if keys else 1.0, cols)

    def group_limit(self, n: Node, child: _Est) -> _Est:
        """``WindowGroupLimit [keys], [order], rank(..), k, Partial|Final``: keeps the first
        ``k`` rows (ties kept: about ``k`` per group) of every group it sees. The Partial one
        runs before the exchange in every map task, so — like a partial aggregate — it emits
        about ``partial_copies`` × k rows per group; the Final one k rows per group. The
        number of groups is the one an aggregate on the same keys would have (CBO, NDV from
        ANALYZE, else ``group_ratio``), shared with the Final/Window above it."""
        self.f["agg_rows"] += child.rows
        keys = attr_ids(bracket(n.text) or "")
        m = re.search(r"\)\s*,\s*(\d+)\s*,\s*(Partial|Final)", n.text)
        k = float(m.group(1)) if m else 1.0
        final = bool(m and m.group(2) == "Final")
        g = self._groups(keys, child.rows)
        keep = g * k * (1.0 if final or not keys else self.c.partial_copies)
        return replace(child, rows=max(1.0, min(child.rows, keep)))

    def join(self, n: Node, kids: list[_Est]) -> _Est:
        left, right = (kids + [_Est(1.0, []), _Est(1.0, [])])[:2]
        self.f["join_rows"] += left.rows + right.rows
        t = n.text
        if "LeftSemi" in t or "LeftAnti" in t or "ExistenceJoin" in t:
            return _Est(left.rows, left.cols)
        if n.name in ("BroadcastNestedLoopJoin", "CartesianProduct") and "Inner" not in t \
                and "Outer" not in t:
            return _Est(left.rows * right.rows, left.cols + right.cols)
        rows = max(left.rows, right.rows)
        pairs = self._self_join_pairs(n, left, right)
        return _Est(max(rows, pairs or 0.0), left.cols + right.cols)

    def _self_join_pairs(self, n: Node, left: _Est, right: _Est) -> Optional[float]:
        """The pairs of an inner equi-join of one relation's rows with themselves on the same
        columns (``ws1.order = ws2.order``, both sides scans through filters and projections):
        |L|·|R| / max(NDV), times the residual condition's selectivity; the NDV is the one an
        aggregate on the same keys gets (ANALYZE, CBO, else ``group_ratio`` of the rows).
        Every other join keeps the larger side's rows: without statistics a foreign-key join
        cannot be told from a many-to-many one, and an aggregate's or a window's output may
        well be unique on the keys. A self-join on a column that is the table's key is
        priced too high here unless ANALYZE gave its NDV."""
        if n.name not in ("SortMergeJoin", "ShuffledHashJoin", "BroadcastHashJoin") or ", Inner" not in n.text:
            return None
        parts = split_top(n.args)
        if len(parts) < 3:
            return None
        lk, rk = attr_ids(parts[0]), attr_ids(parts[1])
        if not lk or len(lk) != len(rk):
            return None
        if any(a not in self.scan_source or self.scan_source.get(a) != self.scan_source.get(b)
               for a, b in zip(lk, rk)):
            return None
        if not (left.raw and right.raw):
            return None
        ndv = max(self._groups(lk, left.rows), self._groups(rk, right.rows), 1.0)
        residual = next((p for p in parts[3:] if attr_ids(p)), None)
        sel = selectivity(residual, self.c) if residual else 1.0
        return left.rows * right.rows / ndv * sel


def estimate(info: PlanInfo, stats: Optional[TableStats] = None,
             constants: Optional[CostConstants] = None) -> PlanCost:
    """The cost model's estimate for a parsed plan (plan.parse_explain)."""
    c = constants or CONSTANTS
    e = _Estimator(info, stats, c)
    if info.physical is not None:
        e.visit(info.physical)
    total = c.query_s + sum(e.f[f] * getattr(c, k) for f, k in FEATURES.items())
    return PlanCost(features=e.f, total=total, constants=c, uses_cbo=e.uses_cbo, notes=e.notes,
                    missing_stats=e.missing)


def with_constants(cost: PlanCost, c: CostConstants) -> PlanCost:
    """The same features priced with other constants (calibration)."""
    total = c.query_s + sum(cost.features.get(f, 0.0) * getattr(c, k) for f, k in FEATURES.items())
    return PlanCost(features=dict(cost.features), total=total, constants=c, uses_cbo=cost.uses_cbo,
                    notes=list(cost.notes), missing_stats=list(cost.missing_stats))
