"""The query log as the mining job reads it: its columns (LOG_COLUMNS) and pandas frames
typed like the Spark DDL, shared by every reader (query-history files, event logs)."""
from __future__ import annotations

import pandas as pd

LOG_COLUMNS = [
    ("statement_id", "string"), ("statement_text", "string"), ("start_time", "string"),
    ("duration_ms", "double"), ("executed_by", "string"), ("execution_status", "string"),
    ("read_bytes", "double"), ("shuffle_bytes", "double"), ("error", "string"),
]


def typed_frame(rows: list[dict], columns: list[tuple[str, str]]) -> pd.DataFrame:
    """A pandas frame whose dtypes match the Spark DDL even when a column is all null (pandas
    would make it float64 NaN, which Arrow cannot turn into a string column)."""
    pdf = pd.DataFrame(rows, columns=[c for c, _ in columns])
    for c, t in columns:
        col = pdf[c]
        if t == "string":
            pdf[c] = col.astype(object).where(col.notna(), None)
        elif t == "double":
            pdf[c] = pd.to_numeric(col, errors="coerce").astype("float64")
        elif t in ("int", "bigint"):
            pdf[c] = pd.to_numeric(col, errors="coerce").astype("Int64" if t == "bigint"
                                                                else "Int32")
    return pdf
