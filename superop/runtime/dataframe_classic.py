"""A classic session's DataFrame as IR, and DataFrames of its leaves (through py4j).

The plan read is ``QueryExecution.withCachedData``: the analyzed plan with every fragment
the session has cached replaced by its ``InMemoryRelation``, so a cached DataFrame stays a
read of its cache. :func:`superop.ir.lowering.catalyst.lower_catalyst` lowers its JSON; what
only the JVM knows about a leaf (Spark's semantic hash of it, a path read's format and
location, whether a view's definition is volatile, the output of a node the JSON does not
list) is read here, per leaf, on demand. A leaf is bound back as the DataFrame of that
very plan node (``Dataset.ofRows``): the rewritten DataFrame reads exactly the same data.
"""
from __future__ import annotations

import re
from typing import Any

from pyspark.sql import DataFrame

from ..ir.lowering.catalyst import lower_catalyst
from ..ir.lowering.frames import FrameLowered, LeafFacts, Path, Unsure
from ..ir.schema import plan_volatility

# try_cast / try_sum / try_avg serialize like their plain forms (the JSON drops the eval mode)
_TRY = re.compile(r"\btry_[a-z_]+\(", re.IGNORECASE)


def lower_classic(df: Any, token: str = "") -> tuple[FrameLowered, Any]:
    """(the lowered plan, the JVM plan it came from)."""
    qe = df._jdf.queryExecution()
    try:
        plan = qe.withCachedData()
    except Exception:  # noqa: BLE001 - an older Spark: the analyzed plan (no cache substitution)
        plan = qe.analyzed()
    if _TRY.search(plan.treeString()):
        raise Unsure("a try_* expression (its eval mode is not in the plan's JSON)")
    return lower_catalyst(plan.toJSON(), facts=_Facts(plan), token=token), plan


def node_at(plan: Any, path: Path) -> Any:
    for i in path:
        plan = plan.children().apply(i)
    return plan


def leaf_frame(spark: Any, plan: Any, path: Path) -> Any:
    """The DataFrame of the plan node at ``path`` (the leaf as the original reads it)."""
    node = node_at(plan, path)
    jvm = spark._jvm
    jdf = jvm.org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, node)
    return DataFrame(jdf, spark)


def replan(spark: Any, df: Any) -> Any:
    """A DataFrame of ``df``'s plan with a query execution of its own: once ``df`` ran, its
    adaptive plan prints its final form next to the initial one (twice the exchanges)."""
    jdf = spark._jvm.org.apache.spark.sql.classic.Dataset.ofRows(
        spark._jsparkSession, df._jdf.queryExecution().analyzed())
    return DataFrame(jdf, spark)


class _Facts:
    """:data:`superop.ir.lowering.frames.FactsOf` over a JVM plan."""

    def __init__(self, plan: Any):
        self.plan = plan

    def __call__(self, path: Path, kind: str) -> LeafFacts:
        node = node_at(self.plan, path)
        if kind == "output":
            return LeafFacts(output=tuple(_output(node)))
        key = str(node.semanticHash())
        if kind == "path":
            return LeafFacts(key=key, table=_path_name(node))
        if kind == "view":
            kids = node.children()
            return LeafFacts(key=key, volatile=plan_volatility(kids.apply(0)) if kids.size() else "")
        return LeafFacts(key=key)


def _output(node: Any) -> list[tuple[str, str, int]]:
    out = node.output()
    cols = []
    for i in range(out.size()):
        a = out.apply(i)
        cols.append((str(a.name()), str(a.dataType().simpleString()), int(a.exprId().id())))
    return cols


def _path_name(node: Any) -> tuple[str, ...]:
    """``(format, path)`` of a file relation read by one path — the name the event-log
    lowering gives the same read (``parquet.`file:/...```); () otherwise."""
    try:
        rel = node.relation()
        paths = rel.location().rootPaths()
        if paths.size() != 1:
            return ()
        return (str(rel.fileFormat().shortName()).lower(), str(paths.apply(0).toString()))
    except Exception:  # noqa: BLE001 - not a file relation: no name
        return ()
