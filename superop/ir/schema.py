"""Table schemas in sqlglot's mapping form: {"table": {"column": "spark type"}}."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import SchemaError


def load_schema(path: str | Path) -> dict[str, dict[str, str]]:
    p = Path(path)
    if not p.is_file():
        raise SchemaError(f"schema file not found: {p}")
    try:
        data = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise SchemaError(f"schema file {p} is not valid JSON: {e.msg} (line {e.lineno})") from None
    return normalize_schema(data, str(p))


def normalize_schema(data, where: str = "schema") -> dict[str, dict[str, str]]:
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise SchemaError(f"{where}: expected {{\"table\": {{\"column\": \"type\"}}}}")
    out: dict[str, dict[str, str]] = {}
    for table, cols in data.items():
        out[str(table).lower()] = {str(c).lower(): str(t).lower() for c, t in cols.items()}
    return out


def schema_from_spark(spark, tables: list[str] | None = None) -> dict[str, dict[str, str]]:
    """Schema of the tables/views visible in a SparkSession's current catalog."""
    names = tables if tables is not None else [t.name for t in spark.catalog.listTables()]
    out: dict[str, dict[str, str]] = {}
    for name in names:
        st = spark.table(name).schema
        out[name.lower()] = {f.name.lower(): f.dataType.simpleString() for f in st.fields}
    return out
