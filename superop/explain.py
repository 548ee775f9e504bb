"""What Spark itself plans for a query, read from ``EXPLAIN COST`` text.

One code path for classic and Spark Connect sessions: the plan is read as the string
``spark.sql("EXPLAIN COST <query>")`` returns (a command both APIs run eagerly, nothing of
the query runs), and the output schema from ``DataFrame.schema``. No ``df._jdf``.

``EXPLAIN COST`` prints two trees of the same query execution, with the same expression
ids (``a#12``):

* the optimized logical plan, every node with Spark's ``Statistics(sizeInBytes=..,
  rowCount=..)`` (rowCount from ANALYZE TABLE statistics when ``spark.sql.cbo.enabled``,
  else size only);
* the physical plan — with adaptive execution the ``AdaptiveSparkPlan isFinalPlan=false``
  wrapper over the initial plan, which already holds every exchange EnsureRequirements
  inserted (subquery plans are printed inside it too).

Counting exchanges: ``Exchange`` (ShuffleExchangeExec) is a shuffle; ``ReusedExchange`` is
NOT a new shuffle (Spark reads an exchange it already runs — its form of the paper's Spool);
``BroadcastExchange`` is reported but is not a shuffle.

What the operators cost is :mod:`superop.runtime.plan_cost`'s job (``superop.runtime.plan``
plans a query with Spark and prices it); this module only parses text, so every layer
may read Spark's plans.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator, Optional

SHUFFLE = "Exchange"
REUSED = "ReusedExchange"
BROADCAST = "BroadcastExchange"
SCANS = ("FileScan", "Scan", "BatchScan", "LocalTableScan", "InMemoryTableScan", "RowDataSourceScan",
         "Range", "RDDScan", "ExternalRDDScan")


# ---------------------------------------------------------------------------
# tree text
# ---------------------------------------------------------------------------
@dataclass
class Node:
    """One operator line of a Spark tree string."""
    name: str
    text: str                      # the whole line after the tree glyphs (name + arguments)
    children: list = field(default_factory=list)
    rows: Optional[float] = None   # logical plans: Spark's rowCount statistic
    size: Optional[float] = None   # logical plans: Spark's sizeInBytes statistic

    def walk(self) -> Iterator["Node"]:
        stack = [self]
        while stack:
            n = stack.pop()
            yield n
            stack.extend(reversed(n.children))

    @property
    def args(self) -> str:
        return self.text[len(self.name):].strip()


_GLYPH = re.compile(r"^(?P<pre>(?:   |:  )*)(?P<mark>[+:]- )?(?P<body>.*)$")
_CODEGEN = re.compile(r"^\*\(\d+\) ")
_NAME = re.compile(r"^(\w+)")
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50,
          "EiB": 1 << 60}
_STATS = re.compile(r",? ?Statistics\(sizeInBytes=(?P<size>[\d.E+\-]+)\s*(?P<unit>[KMGTPE]?i?B)?"
                    r"(?:, rowCount=(?P<rows>[\d.E+\-]+))?[^)]*\)\s*$")


def parse_tree(text: str) -> Optional[Node]:
    """The tree of a Spark ``treeString`` (one node per line; children indented 3 columns)."""
    root: Optional[Node] = None
    stack: list[tuple[int, Node]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _GLYPH.match(line)
        body = _CODEGEN.sub("", m.group("body").strip())
        nm = _NAME.match(body)
        if nm is None:
            continue
        depth = len(m.group("pre")) // 3 + 1 if m.group("mark") else 0
        node = Node(nm.group(1), body)
        st = _STATS.search(body)
        if st is not None:
            node.text = body[:st.start()]
            node.size = float(st.group("size")) * _UNITS.get(st.group("unit") or "B", 1)
            node.rows = float(st.group("rows")) if st.group("rows") else None
        if depth == 0 or root is None:
            if root is None:
                root = node
                stack = [(0, node)]
            continue
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if not stack:          # malformed indentation: attach to the root
            stack = [(0, root)]
        stack[-1][1].children.append(node)
        stack.append((depth, node))
    return root


def sections(explain: str) -> dict[str, str]:
    """``== Title ==`` sections of EXPLAIN output."""
    out: dict[str, str] = {}
    cur = None
    buf: list[str] = []
    for line in explain.splitlines():
        m = re.match(r"^== (.+?) ==\s*$", line)
        if m:
            if cur is not None:
                out[cur] = "\n".join(buf).strip("\n")
            cur, buf = m.group(1), []
        elif cur is not None:
            buf.append(line)
    if cur is not None:
        out[cur] = "\n".join(buf).strip("\n")
    return out


# ---------------------------------------------------------------------------
# the plan of one query
# ---------------------------------------------------------------------------
@dataclass
class PlanInfo:
    exchanges: int = 0
    reused: int = 0
    broadcasts: int = 0
    cost: float = 0.0                  # the cost model's estimate (superop.runtime.plan_cost)
    shuffled_bytes: float = 0.0        # the cost model's estimate of the bytes all shuffles move
    pushed_filters: list = field(default_factory=list)   # one string per file scan
    tree: str = ""                     # the physical plan text
    columns: list = field(default_factory=list)
    types: list = field(default_factory=list)
    physical: Optional[Node] = None
    logical: Optional[Node] = None
    estimate: Optional[object] = None  # superop.runtime.plan_cost.PlanCost
    explain: str = ""                  # the whole EXPLAIN COST text

    def to_json(self) -> dict:
        out = {"exchanges": self.exchanges, "reused_exchanges": self.reused,
               "broadcast_exchanges": self.broadcasts, "cost": self.cost,
               "shuffled_bytes": self.shuffled_bytes, "pushed_filters": list(self.pushed_filters)}
        if self.estimate is not None:
            out["cost_terms"] = self.estimate.terms()
        return out


_PUSHED = re.compile(r"PushedFilters: (\[.*?\])(?:, \w+:|$)")


def explain_text(spark, sql: str) -> str:
    """``EXPLAIN COST`` of ``sql`` as a string (classic and Connect alike)."""
    return spark.sql("EXPLAIN COST " + sql).collect()[0][0]


def parse_explain(text: str) -> PlanInfo:
    """Exchanges, PushedFilters and both trees of ``EXPLAIN COST`` output."""
    sec = sections(text)
    phys_text = sec.get("Physical Plan", "")
    info = PlanInfo(tree=phys_text, explain=text)
    info.physical = parse_tree(phys_text)
    info.logical = parse_tree(sec.get("Optimized Logical Plan", ""))
    if info.physical is None:
        raise ValueError("EXPLAIN COST printed no physical plan: "
                         + (text.strip().splitlines() or ["(empty)"])[0][:200])
    for n in info.physical.walk():
        if n.name == SHUFFLE:
            info.exchanges += 1
        elif n.name == REUSED:
            info.reused += 1
        elif n.name == BROADCAST:
            info.broadcasts += 1
        elif n.name in SCANS:
            m = _PUSHED.search(n.text)
            if m is not None:
                info.pushed_filters.append(m.group(1))
    return info
