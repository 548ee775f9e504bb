"""Log readers: query-history tables (JSON Lines / CSV / Parquet) and Spark event logs.

Every reader returns a Spark DataFrame with LOG_COLUMNS. Bad rows are never fatal: they carry
an ``error`` reason (``malformed_json``, ``missing_statement_text``, ...) and are counted later.
Parsing runs inside Spark (mapInPandas / applyInPandas), never as a driver loop over rows.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator, Optional

import pandas as pd

from ..errors import SuperopError

LOG_COLUMNS = [
    ("statement_id", "string"), ("statement_text", "string"), ("start_time", "string"),
    ("duration_ms", "double"), ("executed_by", "string"), ("execution_status", "string"),
    ("read_bytes", "double"), ("shuffle_bytes", "double"), ("error", "string"),
]
LOG_DDL = ", ".join(f"{c} {t}" for c, t in LOG_COLUMNS)

# canonical column -> accepted source names (case-insensitive), Databricks first, then
# Snowflake QUERY_HISTORY, BigQuery INFORMATION_SCHEMA.JOBS, Redshift/Trino-ish spellings.
ALIASES = {
    "statement_id": ["statement_id", "query_id", "job_id", "queryid", "id", "execution_id"],
    "statement_text": ["statement_text", "query_text", "query", "sql_text", "sql", "statement",
                       "querytext"],
    "start_time": ["start_time", "starttime", "creation_time", "start"],
    "end_time": ["end_time", "endtime", "end"],
    "duration_ms": ["total_duration_ms", "duration_ms", "total_elapsed_time",
                    "execution_duration_ms", "elapsed_time_ms", "elapsed_ms", "duration"],
    "executed_by": ["executed_by", "user_name", "user_email", "user", "executed_as"],
    "execution_status": ["execution_status", "status", "state", "query_status"],
    "read_bytes": ["read_bytes", "bytes_scanned", "total_bytes_processed", "bytes_read",
                   "read_io_bytes"],
    "shuffle_bytes": ["shuffle_bytes", "shuffle_read_bytes", "bytes_shuffled",
                      "bytes_written_to_result", "shuffle_write_bytes"],
}
SUCCESS = {"", "finished", "success", "succeeded", "ok", "completed", "done", "none"}

FORMATS = ("auto", "jsonl", "csv", "parquet", "spark-eventlog")


def resolve_columns(available: list[str], column_map: Optional[dict] = None) -> dict[str, str]:
    """canonical name -> source column name, honoring ``column_map`` overrides."""
    low = {c.lower(): c for c in available}
    out: dict[str, str] = {}
    column_map = {k: v for k, v in (column_map or {}).items()}
    for canon, names in ALIASES.items():
        if canon in column_map or (canon == "duration_ms" and "total_duration_ms" in column_map):
            src = column_map.get(canon) or column_map.get("total_duration_ms")
            if src.lower() not in low:
                raise SuperopError(f"column map: {canon}={src} but the log has no column {src!r}")
            out[canon] = low[src.lower()]
            continue
        for n in names:
            if n in low:
                out[canon] = low[n]
                break
    return out


def parse_column_map(text: Optional[str]) -> dict[str, str]:
    """'statement_text=QUERY_TEXT,duration_ms=TOTAL_ELAPSED_TIME' -> dict."""
    if not text:
        return {}
    out = {}
    for part in text.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise SuperopError(f"bad --column-map entry {part!r} (want canonical=source)")
        k, v = part.split("=", 1)
        k = k.strip().lower()
        if k == "total_duration_ms":
            k = "duration_ms"
        if k not in ALIASES:
            raise SuperopError(f"--column-map: unknown column {k!r}; known: {sorted(ALIASES)}")
        out[k] = v.strip()
    return out


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


# --------------------------------------------------------------------------------------------
# Row canonicalization (shared by JSONL / CSV / Parquet), runs inside Spark workers
# --------------------------------------------------------------------------------------------
def _num(v) -> Optional[float]:
    if v is None or (isinstance(v, float) and v != v):
        return None
    if isinstance(v, bool):
        raise ValueError("bool")
    if isinstance(v, (int, float)):
        return float(v)
    s = str(v).strip()
    if not s:
        return None
    return float(s)


def _ts_ms(v) -> Optional[float]:
    if v is None or v == "":
        return None
    if isinstance(v, (int, float)):
        return float(v) * (1000.0 if v < 1e11 else 1.0)
    try:
        return pd.Timestamp(v).value / 1e6
    except Exception:
        return None


def canonical_row(rec: dict, cols: dict[str, str]) -> dict:
    """One source record (dict) -> a LOG_COLUMNS dict with an ``error`` reason if bad."""
    out = {c: None for c, _ in LOG_COLUMNS}
    text = rec.get(cols.get("statement_text", "\0"))
    if text is None or (isinstance(text, float) and text != text):
        out["error"] = "missing_statement_text"
        return out
    if not isinstance(text, str):
        out["error"] = "bad_statement_text_type"
        return out
    out["statement_text"] = text
    sid = rec.get(cols.get("statement_id", "\0"))
    out["statement_id"] = None if sid is None else str(sid)
    st = rec.get(cols.get("start_time", "\0"))
    out["start_time"] = None if st is None else str(st)
    out["executed_by"] = (lambda u: None if u is None else str(u))(rec.get(cols.get("executed_by", "\0")))
    status = rec.get(cols.get("execution_status", "\0"))
    out["execution_status"] = "" if status is None else str(status)
    try:
        dur = _num(rec.get(cols.get("duration_ms", "\0")))
        if dur is None and "end_time" in cols and "start_time" in cols:
            a, b = _ts_ms(st), _ts_ms(rec.get(cols["end_time"]))
            dur = (b - a) if a is not None and b is not None else None
        out["duration_ms"] = dur
        out["read_bytes"] = _num(rec.get(cols.get("read_bytes", "\0")))
        out["shuffle_bytes"] = _num(rec.get(cols.get("shuffle_bytes", "\0")))
    except (TypeError, ValueError):
        out["error"] = "bad_numeric_field"
    return out


def _jsonl_mapper(column_map: dict, post=None):
    def parse(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        cache: dict[tuple, dict] = {}
        for pdf in batches:
            rows = []
            for line in pdf["value"]:
                if line is None or not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except (ValueError, RecursionError):
                    rows.append({"error": "malformed_json"})
                    continue
                if not isinstance(rec, dict):
                    rows.append({"error": "not_a_json_object"})
                    continue
                key = tuple(rec)
                cols = cache.get(key)
                if cols is None:
                    try:
                        cols = cache[key] = resolve_columns(list(rec), column_map)
                    except SuperopError:
                        cols = cache[key] = {}
                rows.append(canonical_row(rec, cols))
            yield _post(typed_frame(rows, LOG_COLUMNS), post)
    return parse


def _post(pdf: pd.DataFrame, post):
    # the job's per-row step (normalization) runs in the same Python pass as parsing:
    # one Arrow round trip instead of two chained mapInPandas
    return post(pdf) if post is not None else pdf


def _records_mapper(cols: dict[str, str], post=None):
    def parse(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for pdf in batches:
            corrupt = pdf["_corrupt_record"] if "_corrupt_record" in pdf else None
            rows = []
            for i, rec in enumerate(pdf.to_dict("records")):
                if corrupt is not None and isinstance(corrupt.iloc[i], str):
                    rows.append({"error": "malformed_csv"})
                    continue
                rows.append(canonical_row(rec, cols))
            yield _post(typed_frame(rows, LOG_COLUMNS), post)
    return parse


# --------------------------------------------------------------------------------------------
def detect_format(path: str) -> str:
    p = Path(path)
    if not p.exists():
        raise SuperopError(f"log not found: {path}")
    files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file()
                                           and not f.name.startswith((".", "_")))
    if not files:
        raise SuperopError(f"log directory is empty: {path}")
    names = [f.name.lower() for f in files]
    if any(n.endswith(".parquet") for n in names):
        return "parquet"
    if any(n.endswith((".csv", ".csv.gz")) for n in names):
        return "csv"
    if any(n.endswith((".jsonl", ".jsonl.gz", ".ndjson", ".json", ".json.gz")) for n in names):
        return "jsonl"
    if any(re.search(r"\.(zstd|zst|lz4|snappy|lzf)(\.inprogress)?$", n) or n.startswith(
            ("events_", "app-", "local-", "application_", "eventlog_v2")) for n in names) \
            or any("eventlog_v2_" in str(f) for f in files):
        return "spark-eventlog"
    head = files[0].read_bytes()[:4096].lstrip()
    if head.startswith(b"{"):
        first = head.split(b"\n", 1)[0]
        return "spark-eventlog" if b'"Event"' in first else "jsonl"
    return "csv"


def read_log(spark, path: str, fmt: str = "auto", column_map: Optional[dict] = None,
             post=None, post_ddl: Optional[str] = None):
    """The log as a DataFrame with LOG_COLUMNS (see module doc). ``post`` (pandas -> pandas,
    producing ``post_ddl``) is applied to every batch inside the same Python worker pass."""
    ddl = post_ddl if post is not None else LOG_DDL
    if fmt not in FORMATS:
        raise SuperopError(f"unknown log format {fmt!r}; use one of {', '.join(FORMATS)}")
    if not Path(path).exists():
        raise SuperopError(f"log not found: {path}")
    if fmt == "auto":
        fmt = detect_format(path)
    column_map = column_map or {}
    if fmt == "jsonl":
        lines = spark.read.text(_data_files(path, (".jsonl", ".json", ".ndjson", ".gz")))
        return lines.mapInPandas(_jsonl_mapper(column_map, post), ddl)
    if fmt == "csv":
        files = _data_files(path, (".csv", ".gz"))
        header = _csv_header(files[0])
        cols = resolve_columns(header, column_map)
        _require_text(cols, header, path)
        from pyspark.sql.types import StringType, StructField, StructType
        schema = StructType([StructField(c, StringType()) for c in header]
                            + [StructField("_corrupt_record", StringType())])
        df = (spark.read.option("header", True).option("multiLine", True).option("escape", '"')
              .option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", "_corrupt_record")
              .schema(schema).csv(files))
        return df.mapInPandas(_records_mapper(cols, post), ddl)
    if fmt == "parquet":
        try:
            df = spark.read.parquet(path)
        except Exception as e:
            raise SuperopError(f"cannot read parquet log {path}: {str(e).splitlines()[0][:200]}") from None
        cols = resolve_columns(df.columns, column_map)
        _require_text(cols, df.columns, path)
        keep = sorted(set(cols.values()))
        from pyspark.sql import functions as F
        df = df.select(*[F.col(f"`{c}`").cast("string").alias(c) if c != cols.get("duration_ms")
                         else F.col(f"`{c}`") for c in keep])
        return df.mapInPandas(_records_mapper(cols, post), ddl)
    from .eventlog import read_eventlog
    df = read_eventlog(spark, path)
    if post is not None:   # event rows are few (one per execution): a second pass is cheap
        df = df.mapInPandas(lambda it: (post(p) for p in it), ddl)
    return df


def _require_text(cols: dict, available, path) -> None:
    if "statement_text" not in cols:
        raise SuperopError(f"{path}: no statement text column among {list(available)[:12]} "
                           f"(use --column-map statement_text=<column>)")


def _data_files(path: str, suffixes: tuple) -> list[str]:
    p = Path(path)
    if p.is_file():
        return [str(p)]
    files = sorted(str(f) for f in p.rglob("*") if f.is_file()
                   and not f.name.startswith((".", "_")) and f.name.lower().endswith(suffixes))
    if not files:
        raise SuperopError(f"no log files with suffix {'/'.join(suffixes)} under {path}")
    return files


def _csv_header(path: str) -> list[str]:
    import csv
    import gzip
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="", errors="replace") as f:
        row = next(csv.reader(f), None)
    if not row:
        raise SuperopError(f"CSV log {path} has no header line")
    return row
