"""The rule catalog as an MLflow pyfunc model.

    model = mlflow.pyfunc.load_model("models:/superop-catalog@production")
    model.predict(["SELECT ..."])        # a DataFrame: sql, changed, applied, explanation, error

Input: SQL text (a list of strings, a string, or a one-column DataFrame). Output: one row per
query — ``sql`` (the rewritten SQL, or the input unchanged), ``changed``, ``applied`` (ids of
the rules applied), ``explanation`` (why, or why not) and ``error`` (what prevented a rewrite,
empty when none).

``predict`` needs no SparkSession: it is the catalog's structural rewrite
(:func:`superop.runtime.rewriter.rewrite_structural` — the same matching, certificates and
SQL generation as the runtime, without Spark's benefit gate, which needs the tables). The
schema it resolves columns with is the model's ``schema.json`` artifact: the schema the
nightly job mined and verified with. A caller whose tables are elsewhere passes its own as
``params={"schema_json": '{"table": {"column": "type"}}'}``. A query that cannot be
rewritten — unknown table or column, unparsable SQL, no rule matches — comes back
unchanged with ``changed=False`` and the reason; ``predict`` never raises for one query.

Production Spark jobs use the runtime (``SuperOpSession(spark, "models:/...")``), which
loads the same ``catalog.json`` artifact and adds the benefit gate.
"""
from __future__ import annotations

import json
from pathlib import Path

import mlflow.pyfunc

from ..ir.dialect import pretty_sql
from ..rewrite.rewriter import Rewriter, rewrite_structural
from .catalog import load_catalog

CODE_PATH = Path(__file__).with_name("pyfunc_model.py")   # models-from-code entry
OUTPUT_COLUMNS = ("sql", "changed", "applied", "explanation", "error")


def signature():
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, DataType, ParamSchema, ParamSpec, Schema
    from mlflow.types.schema import Array
    inputs = Schema([ColSpec(DataType.string)])          # unnamed: a list of SQL strings works
    outputs = Schema([ColSpec(DataType.string, "sql"), ColSpec(DataType.boolean, "changed"),
                      ColSpec(Array(DataType.string), "applied"),
                      ColSpec(DataType.string, "explanation"), ColSpec(DataType.string, "error")])
    params = ParamSchema([ParamSpec("schema_json", DataType.string, "")])
    return ModelSignature(inputs=inputs, outputs=outputs, params=params)


class CatalogModel(mlflow.pyfunc.PythonModel):
    """Artifacts: ``catalog`` (catalog.json), ``schema`` (schema.json); ``report`` files ride
    along for people. Loading validates the catalog (schema, checksum, certificates)."""

    # the explicit signature describes the input; MLflow's type-hint validation (and its
    # warning that predict() has no type hints) is not wanted
    _skip_type_hint_validation = True

    def load_context(self, context) -> None:
        self.catalog = load_catalog(context.artifacts["catalog"])
        self.rewriter = Rewriter(self.catalog)
        path = context.artifacts.get("schema")
        self.schema = json.loads(Path(path).read_text()) if path else {}

    def predict(self, context, model_input, params=None):
        import pandas as pd
        schema = self.schema
        extra = (params or {}).get("schema_json") or ""
        if extra:
            schema = json.loads(extra)
        rows = [self._one(sql, schema) for sql in _queries(model_input)]
        return pd.DataFrame(rows, columns=list(OUTPUT_COLUMNS))

    def _one(self, sql, schema: dict) -> dict:
        if not isinstance(sql, str) or not sql.strip():
            return {"sql": sql, "changed": False, "applied": [], "explanation": "not rewritten",
                    "error": "empty input"}
        try:
            r = rewrite_structural(self.rewriter, sql, schema)
        except Exception as e:         # one bad query never fails the batch
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            return {"sql": sql, "changed": False, "applied": [],
                    "explanation": f"not rewritten: {msg}", "error": msg}
        return {"sql": _pretty(r.sql) if r.changed else r.sql, "changed": r.changed,
                "applied": list(r.applied), "explanation": r.explanation, "error": r.error or ""}


def _queries(model_input) -> list:
    if isinstance(model_input, str):
        return [model_input]
    if hasattr(model_input, "iloc"):            # DataFrame (what a list becomes) or Series
        col = model_input.iloc[:, 0] if getattr(model_input, "ndim", 1) == 2 else model_input
        return list(col)
    return list(model_input)


def _pretty(sql: str) -> str:
    try:
        return pretty_sql(sql)
    except Exception:          # formatting is cosmetic: never lose the rewrite over it
        return sql
