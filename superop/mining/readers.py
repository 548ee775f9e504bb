"""Log readers: query-history files (JSON Lines / CSV / Parquet), tables, Spark event logs.

:func:`open_log` reads a file or directory on any filesystem Spark reads (plain paths, ``file:``,
``hdfs:``, ``s3a:``, ``abfss:``...) or a table, and returns a Spark DataFrame with LOG_COLUMNS.
A directory may mix formats: each file is read by its own. Bad rows are never fatal: they carry
an ``error`` reason (``malformed_json``, ``missing_statement_text``, ...) and are counted later;
a file that cannot be read at all is skipped and listed with its reason. Parsing runs inside
Spark (mapInPandas / applyInPandas), never as a driver loop over rows.
"""
from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Iterator, Optional

import pandas as pd

from ..errors import SuperopError
from ..storage import filesystem
from .eventlog import read_eventlog
from .logframe import LOG_COLUMNS, typed_frame

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


_EMPTY_ROW: dict = {c: None for c, _ in LOG_COLUMNS}


def canonical_row(rec: dict, cols: dict[str, str]) -> dict:
    """One source record (dict) -> a LOG_COLUMNS dict with an ``error`` reason if bad."""
    out = _EMPTY_ROW.copy()        # runs once per log row: a copy, not a comprehension
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
    user = rec.get(cols.get("executed_by", "\0"))
    out["executed_by"] = None if user is None else str(user)
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
                    # raw bytes (see _read_jsonl): a line that is not UTF-8 is malformed
                    rec = json.loads(bytes(line).decode("utf-8") if not isinstance(line, str)
                                     else line)
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
# Sources: files on any filesystem Spark reads, or a table
# --------------------------------------------------------------------------------------------
from ..storage import basename  # noqa: E402  (paths and URIs alike)

TABLE_PREFIX = "table:"
_EVENT_PREFIXES = ("events_", "app-", "local-", "application_", "eventlog_v2")
_SPARK_CODECS = (".zstd", ".zst", ".lz4", ".snappy", ".lzf")
_COMPRESSED = (".gz", ".bz2", ".deflate")
_TEXT_FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".csv": "csv",
                 ".tsv": "csv", ".parquet": "parquet"}


def table_source(name: str) -> str:
    """How a table log is named where a path is expected (``superop mine --log-table``)."""
    return TABLE_PREFIX + name


def source_table(log: str) -> Optional[str]:
    """The table name of a ``table:NAME`` log, None for a path."""
    s = str(log)
    return s[len(TABLE_PREFIX):] if s.startswith(TABLE_PREFIX) else None


@dataclass
class Unreadable:
    file: str
    reason: str          # unknown_format, corrupt_file, no_statement_text_column, ...
    detail: str = ""


@dataclass
class LogRead:
    """The log as one DataFrame plus what was (not) read, per file."""
    df: object
    files_by_format: dict = dc_field(default_factory=dict)
    unreadable: list = dc_field(default_factory=list)

    def summary(self) -> dict:
        by: dict[str, int] = {}
        for u in self.unreadable:
            by[u.reason] = by.get(u.reason, 0) + 1
        return {"read": sum(self.files_by_format.values()),
                "by_format": dict(sorted(self.files_by_format.items())),
                "unreadable": dict(sorted(by.items())),
                "unreadable_files": [{"file": u.file, "reason": u.reason, "detail": u.detail}
                                     for u in self.unreadable[:100]]}


def file_format(name: str, path: str = "", head: Optional[bytes] = None) -> Optional[str]:
    """A file's log format from its name, else from its first bytes (None: unknown)."""
    n = name.lower()
    if n.endswith(".inprogress"):
        n = n[: -len(".inprogress")]
    if n.startswith(_EVENT_PREFIXES) or "eventlog_v2_" in path or n.endswith(_SPARK_CODECS):
        return "spark-eventlog"
    base = n
    for c in _COMPRESSED:
        if base.endswith(c):
            base = base[: -len(c)]
            break
    for ext, fmt in _TEXT_FORMATS.items():
        if base.endswith(ext):
            return fmt
    if head is None:
        return None
    if head.startswith(b"PAR1"):
        return "parquet"
    if n.endswith(".gz") or head[:2] == b"\x1f\x8b":
        import zlib
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head)
        except zlib.error:
            return None
    text = head.lstrip()
    first = text.split(b"\n", 1)[0]
    line = _text_line(first, whole=len(first) < len(text))
    if line is None:
        return None
    if line.startswith("{") and line[1:].lstrip()[:1] in ('"', "}"):
        return "spark-eventlog" if '"Event"' in line else "jsonl"
    return "csv" if ("," in line or "\t" in line) and line.isprintable() else None


def _text_line(first: bytes, whole: bool) -> Optional[str]:
    """The head's first line as text, None for binary. A line cut by the head's size may
    end inside a multi-byte character: only that tail is forgiven."""
    try:
        return first.decode("utf-8")
    except UnicodeDecodeError as e:
        if whole or e.reason != "unexpected end of data":
            return None
        return first[: e.start].decode("utf-8")


def _list(fs, path: str):
    if not fs.exists(path):
        raise SuperopError(f"log not found: {path}")
    files = fs.list_files(path)
    if not files:
        raise SuperopError(f"log directory is empty: {path}")
    return files


def _format_of(fs, f) -> Optional[str]:
    fmt = file_format(f.name, f.path)
    if fmt is None and f.size > 0:
        try:
            fmt = file_format(f.name, f.path, fs.head(f.path))
        except Exception:
            return None
    return fmt


def read_log(spark, path: str, fmt: str = "auto", column_map: Optional[dict] = None,
             post=None, post_ddl: Optional[str] = None):
    """The log as a DataFrame with LOG_COLUMNS (see :func:`open_log`)."""
    return open_log(spark, path, fmt, column_map, post, post_ddl).df


def open_log(spark, path: str, fmt: str = "auto", column_map: Optional[dict] = None,
             post=None, post_ddl: Optional[str] = None) -> LogRead:
    """Read a log: a file or directory on any filesystem Spark reads (local path, ``file:``,
    ``hdfs:``, ``s3a:``, ``abfss:``...; ``_SUCCESS``, ``.crc`` and other hidden files are
    skipped) or a table (``table:NAME``, see :func:`table_source`).

    Each file is read by its own format (``fmt`` forces one for all). A file that cannot be
    read — unknown format, a corrupt or truncated compressed file, a CSV without a statement
    text column, a parquet file Spark cannot open — is recorded in ``LogRead.unreadable``
    with its reason and the rest is mined; only a log with no readable file at all is an
    error. ``post`` (pandas -> pandas, producing ``post_ddl``) is applied to every batch
    inside the same Python worker pass."""
    ddl = post_ddl if post is not None else LOG_DDL
    if fmt not in FORMATS:
        raise SuperopError(f"unknown log format {fmt!r}; use one of {', '.join(FORMATS)}")
    column_map = column_map or {}
    table = source_table(path)
    if table is not None:
        return LogRead(_read_table(spark, table, column_map, post, ddl), {"table": 1}, [])
    fs = filesystem(path, spark)
    files = _list(fs, path)
    groups: dict[str, list] = {}
    bad: list[Unreadable] = []
    for f in files:
        ff = fmt if fmt != "auto" else _format_of(fs, f)
        if ff is None:
            bad.append(Unreadable(f.path, "unknown_format", "not JSON Lines, CSV, Parquet or "
                                                            "a Spark event log"))
        else:
            groups.setdefault(ff, []).append(f)
    parts = []
    used: dict[str, int] = {}
    for ff, fl in groups.items():
        df, n, why = _READERS[ff](spark, fs, fl, column_map, post, ddl)
        bad.extend(why)
        if df is not None:
            parts.append(df)
            used[ff] = n
    if not parts:
        detail = "; ".join(f"{basename(u.file)}: {u.detail or u.reason}" for u in bad[:3])
        raise SuperopError(f"no readable log file in {path}: {detail}")
    return LogRead(_union(parts), used, bad)


# -- per-format readers: (spark, fs, files, column_map, post, ddl) -> (df|None, n, unreadable)
def _read_jsonl(spark, fs, files, column_map, post, ddl):
    from pyspark.sql import functions as F
    paths, bad = _readable_text(spark, [f.path for f in files])
    if not paths:
        return None, 0, bad
    # bytes, not strings: Spark keeps a line's bytes as they are, and a line that is not
    # UTF-8 must become a counted malformed row, not a failed Arrow conversion
    lines = spark.read.text(paths).select(F.col("value").cast("binary").alias("value"))
    return lines.mapInPandas(_jsonl_mapper(column_map, post), ddl), len(paths), bad


def _read_csv(spark, fs, files, column_map, post, ddl):
    from pyspark.sql.types import StringType, StructField, StructType
    paths, bad = _readable_text(spark, [f.path for f in files])
    by_header: dict[tuple, list[str]] = {}
    for p in paths:
        try:
            header = _csv_header(fs, p)
        except SuperopError as e:
            bad.append(Unreadable(p, "no_csv_header", str(e)))
            continue
        by_header.setdefault(tuple(header), []).append(p)
    parts = []
    n = 0
    for header, group in by_header.items():
        try:
            cols = resolve_columns(list(header), column_map)
            _require_text(cols, header, basename(group[0]))
        except SuperopError as e:
            bad.extend(Unreadable(p, "no_statement_text_column", str(e)) for p in group)
            continue
        schema = StructType([StructField(c, StringType()) for c in header]
                            + [StructField("_corrupt_record", StringType())])
        df = (spark.read.option("header", True).option("multiLine", True).option("escape", '"')
              .option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", "_corrupt_record")
              .schema(schema).csv(group))
        parts.append(df.mapInPandas(_records_mapper(cols, post), ddl))
        n += len(group)
    return _union(parts), n, bad


def _read_parquet(spark, fs, files, column_map, post, ddl):
    paths = [f.path for f in files]
    bad: list[Unreadable] = []
    try:
        df = spark.read.parquet(*paths)
    except Exception:
        # find the files Spark cannot open, one by one (only on this rare path)
        ok = []
        for p in paths:
            try:
                _ = spark.read.parquet(p).schema   # opening the footer is the check
                ok.append(p)
            except Exception as e:
                bad.append(Unreadable(p, "corrupt_file", _error_line(e)))
        if not ok:
            return None, 0, bad
        paths = ok
        df = spark.read.parquet(*paths)
    try:
        return _records_df(df, column_map, post, ddl, paths[0]), len(paths), bad
    except SuperopError as e:
        return None, 0, bad + [Unreadable(p, "no_statement_text_column", str(e)) for p in paths]


def _read_eventlog(spark, fs, files, column_map, post, ddl):
    df = read_eventlog(spark, [f.path for f in files])
    if post is not None:   # event rows are few (one per execution): a second pass is cheap
        df = df.mapInPandas(lambda it: (post(p) for p in it), ddl)
    return df, len(files), []


_READERS = {"jsonl": _read_jsonl, "csv": _read_csv, "parquet": _read_parquet,
            "spark-eventlog": _read_eventlog}


def _read_table(spark, name: str, column_map, post, ddl):
    try:
        df = spark.table(name)
    except Exception as e:
        raise SuperopError(f"log table not found: {name} ({_error_line(e)})") from None
    return _records_df(df, column_map, post, ddl, name)


def _records_df(df, column_map, post, ddl, where):
    from pyspark.sql import functions as F
    cols = resolve_columns(df.columns, column_map)
    _require_text(cols, df.columns, where)
    keep = sorted(set(cols.values()))
    df = df.select(*[F.col(f"`{c}`").cast("string").alias(c) if c != cols.get("duration_ms")
                     else F.col(f"`{c}`") for c in keep])
    return df.mapInPandas(_records_mapper(cols, post), ddl)


def _union(parts):
    if not parts:
        return None
    df = parts[0]
    for p in parts[1:]:
        df = df.unionByName(p)
    return df


def _readable_text(spark, paths: list[str]) -> tuple[list[str], list[Unreadable]]:
    """Drop the compressed files Spark cannot decompress (truncated or corrupt): one
    JVM-only pass over the compressed files (no Python rows), repeated without a file each
    time one fails — plain text files need no check (a bad line is a counted bad row)."""
    compressed = [p for p in paths if p.lower().endswith(_COMPRESSED)]
    bad: list[Unreadable] = []
    todo = list(compressed)
    with _quiet_task_errors(spark):       # a failed file is reported here, with its name
        while todo:
            try:
                spark.read.text(todo).selectExpr("sum(length(value))").collect()
                break
            except Exception as e:
                failed = _failed_file(e, todo)
                if failed is None:
                    raise
                todo.remove(failed)
                bad.append(Unreadable(failed, "corrupt_file", _error_line(e, cause=True)))
    dropped = {u.file for u in bad}
    return [p for p in paths if p not in dropped], bad


class _quiet_task_errors:
    """Silence the JVM's task-failure log lines for the checks whose failures we report."""
    NAMES = ("org.apache.spark.executor.Executor", "org.apache.spark.scheduler.TaskSetManager",
             "org.apache.spark.scheduler.TaskSchedulerImpl")

    def __init__(self, spark):
        self.spark = spark
        self.old: list = []

    def __enter__(self):
        try:
            jvm = self.spark._jvm
            self.cfg = jvm.org.apache.logging.log4j.core.config.Configurator
            lm = jvm.org.apache.logging.log4j.LogManager
            for n in self.NAMES:
                self.old.append((n, lm.getLogger(n).getLevel()))
                self.cfg.setLevel(n, jvm.org.apache.logging.log4j.Level.OFF)
        except Exception:          # Spark Connect or another logging backend: leave it
            self.old = []
        return self

    def __exit__(self, *exc):
        for n, level in self.old:
            self.cfg.setLevel(n, level)


def _failed_file(e: Exception, candidates: list[str]) -> Optional[str]:
    """The file Spark names in a FAILED_READ_FILE error, among ``candidates``."""
    m = re.search(r"while reading file (\S+?)\.?\s", str(e))
    if not m:
        return None
    named = _file_key(m.group(1))
    return next((c for c in candidates if _file_key(c) == named), None)


def _file_key(p: str) -> tuple[str, str]:
    """(host, path) of a path or URI: ``file:/x``, ``file:///x`` and ``/x`` are one file."""
    from urllib.parse import unquote, urlparse
    u = urlparse(str(p))
    sch = u.scheme if len(u.scheme) > 1 else ""
    host = "" if sch in ("", "file") and u.netloc in ("", "localhost") else u.netloc
    path = unquote(u.path if sch else str(p))
    return (f"{sch if sch != 'file' else ''}:{host}", "/" + path.lstrip("/"))


def _error_line(e: Exception, cause: bool = False) -> str:
    """One line for a Java/Spark error: the root cause (``EOFException: Unexpected end of
    input stream``) when asked and present, else the first line."""
    s = str(e)
    if cause:
        causes = re.findall(r"Caused by: ([\w.$]+): ?([^\n]*)", s)
        if causes:
            cls, msg = causes[-1]
            return f"{cls.rsplit('.', 1)[-1]}: {msg}"[:200]
    return (s.splitlines()[0] if s else type(e).__name__)[:200]


def _require_text(cols: dict, available, path) -> None:
    if "statement_text" not in cols:
        raise SuperopError(f"{path}: no statement text column among {list(available)[:12]} "
                           f"(use --column-map statement_text=<column>)")


def _csv_header(fs, path: str) -> list[str]:
    import csv
    import zlib
    head = fs.head(path, 1 << 16)
    if path.lower().endswith(".gz"):
        head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head)
    text = head.decode("utf-8", errors="replace")
    row = next(csv.reader(io.StringIO(text.split("\n", 1)[0])), None)
    if not row:
        raise SuperopError(f"CSV log {basename(path)} has no header line")
    return row
