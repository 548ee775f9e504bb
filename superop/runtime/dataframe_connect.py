"""A Spark Connect DataFrame as IR, and DataFrames of its leaves (no py4j: the client's plan).

The plan is the client-side protobuf ``Relation`` the DataFrame would send
(``df._plan.plan(client)``); :func:`superop.ir.lowering.connect.lower_connect` lowers it.
What only the server knows is asked here, per leaf: a table name's resolution (temp views
first, then the current catalog — the session's :class:`~superop.ir.schema.SparkCatalogSchema`,
the same the SQL path uses), a leaf's columns (``DataFrame.schema`` of that relation). A
leaf is bound back as a DataFrame of that very relation (a copy of the message): the
rewritten DataFrame reads exactly what the original reads.
"""
from __future__ import annotations

import hashlib
from typing import Any

from ..ir.lowering.connect import lower_connect, relation_children
from ..ir.lowering.frames import FrameLowered, LeafFacts, Path
from ..ir.names import TableName
from ..ir.schema import SparkCatalogSchema


def lower_connect_frame(spark: Any, df: Any, token: str = "") -> tuple[FrameLowered, Any]:
    """(the lowered plan, the ``Relation`` it came from)."""
    rel = df._plan.plan(spark.client)
    schema = SparkCatalogSchema(spark)
    low = lower_connect(rel, df.columns, facts=_Facts(spark, rel, schema), schema=schema,
                        case_sensitive=schema.case_sensitive, token=token)
    return low, rel


def sub_relation(rel: Any, path: Path) -> Any:
    for i in path:
        rel = relation_children(rel)[i]
    return rel


def connect_leaf_frame(spark: Any, rel: Any, path: Path) -> Any:
    """A DataFrame of the relation at ``path`` (a copy of it: its plan ids stay)."""
    # the Connect client needs the optional `connect` extra (grpcio): imported only on a
    # Connect session, which has it
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
    from pyspark.sql.connect.plan import CachedRelation
    sub = sub_relation(rel, path)
    copy = type(sub)()
    copy.CopyFrom(sub)
    return ConnectDataFrame(CachedRelation(copy), spark)


class _Facts:
    """:data:`superop.ir.lowering.frames.FactsOf` over a Connect plan."""

    def __init__(self, spark: Any, rel: Any, schema: SparkCatalogSchema):
        self.spark, self.rel, self.schema = spark, rel, schema

    def __call__(self, path: Path, kind: str) -> LeafFacts:
        sub = sub_relation(self.rel, path)
        if kind == "table":
            info = self.schema.resolve(TableName.parse(sub.read.named_table.unparsed_identifier))
            if info is None:
                return LeafFacts()
            return LeafFacts(table=info.identity, volatile=info.volatile,
                             output=tuple((c, t, 0) for c, t in info.columns))
        cols = tuple((f.name, f.dataType.simpleString(), 0)
                     for f in connect_leaf_frame(self.spark, self.rel, path).schema.fields)
        if kind == "path":
            src = sub.read.data_source
            paths = list(src.paths)
            table = (str(src.format).lower(), paths[0]) if src.format and len(paths) == 1 and \
                not len(src.options) and not src.schema else ()
            return LeafFacts(table=table, output=cols)
        if kind == "local":
            key = hashlib.sha256(sub.local_relation.SerializeToString()).hexdigest()[:20]
            return LeafFacts(key=key, output=cols)
        return LeafFacts(output=cols)
