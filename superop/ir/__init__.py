"""The plan IR: one home for the relational operator tree every stage speaks.

    from superop.ir import lower, to_sql, render, shape
"""
from .dialect import DIALECT
from .generate import to_ast, to_sql, translate_columns
from .lower import Lowered, Qualified, lower, lower_ast, parse, qualified, qualify_query
from .names import TableName
from .nodes import (JOIN_KINDS, Aggregate, Field, GroupingAggregate, Join, Limit, Node, Opaque, Project, Rename, Scan,
                    Select, Sort, UnionAll, Window, binary_unions, expressions_of, intern,
                    is_fully_modeled, parents, replace, resolve_field, shared_nodes, walk)
from .render import describe, render, shape
from .reasons import ReasonCode
from .safety import BlockReason, Blocker, blocking_reason
from .schema import (DictSchema, SchemaSource, SparkCatalogSchema, TableInfo, load_schema,
                     normalize_schema, schema_from_spark, schema_source)

__all__ = [
    "DIALECT", "to_ast", "to_sql", "translate_columns", "Lowered", "Qualified", "lower",
    "lower_ast", "parse", "qualified", "qualify_query", "TableName", "JOIN_KINDS", "Aggregate",
    "Field", "GroupingAggregate", "Join", "Limit", "Node", "Opaque", "Project", "Rename", "Scan", "Select", "Sort",
    "UnionAll", "Window", "binary_unions", "expressions_of", "intern", "is_fully_modeled",
    "parents", "replace", "resolve_field", "shared_nodes", "walk", "describe", "render", "shape",
    "ReasonCode", "BlockReason", "Blocker", "blocking_reason", "DictSchema", "SchemaSource",
    "SparkCatalogSchema", "TableInfo", "load_schema", "normalize_schema", "schema_from_spark",
    "schema_source",
]
