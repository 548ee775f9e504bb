"""The plan IR: one home for the relational operator tree every stage speaks.

    from superop.ir import lower, to_sql, render, shape
"""
from .nodes import (JOIN_KINDS, Aggregate, Field, Join, Limit, Node, Opaque, Project, Rename, Scan,
                    Select, Sort, UnionAll, Window, binary_unions, expressions_of, intern,
                    is_fully_modeled, parents, replace, resolve_field, shared_nodes, walk)
from .render import describe, render, shape
from .lower import Lowered, lower, lower_ast, parse, qualified
from .generate import to_ast, to_sql
from .schema import load_schema, normalize_schema, schema_from_spark

__all__ = [n for n in dir() if not n.startswith("_")]
