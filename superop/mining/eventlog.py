"""Spark event logs -> log rows (one per root SQL execution).

Accepts a single event-log file, an ``eventlog_v2_<app>`` rolling directory, or a directory
holding many of them. Codecs as Spark writes them: plain JSON lines, zstd (Spark 4's default),
lz4 (lz4-java ``LZ4BlockOutputStream`` framing) and snappy (snappy-java ``SnappyOutputStream``
framing); the codec comes from the file suffix, falling back to magic bytes.

Per execution: the SQL text where Spark records it — the execution ``description`` when it is
SQL (Thrift server / ``setJobDescription``) or the ``spark.job.description`` job property —
the physical plan tree (``sparkPlanInfo``: node count, exchanges), the wall time
(SQLExecutionStart -> End) and, from the task metrics of the execution's jobs, executor run
time, bytes read and shuffle bytes written. Executions without SQL text (DataFrame API calls)
carry their formatted physical plan instead (``physicalPlanDescription``, prefixed with
:data:`superop.mining.physical.PLAN_MARKER`), which the analysis lowers to the IR with
:mod:`superop.mining.physical`; DataFrame commands (saveAsTable, writes) are counted under
``non_query:dataframe_command``, executions with neither text nor plan under ``no_sql_text``.
Files of one application are parsed together in one task (``applyInPandas`` grouped by
application), since rolled files split an execution's events.
"""
from __future__ import annotations

import io
import json
import re
import struct
from pathlib import Path

import pandas as pd

from ..errors import SuperopError
from .normalize import normalize
from .physical import PLAN_MARKER, is_command
from .logframe import LOG_COLUMNS, typed_frame

EVENT_COLUMNS = LOG_COLUMNS + [("app_id", "string"), ("executor_run_ms", "double"),
                               ("plan_nodes", "int"), ("exchanges", "int")]
EVENT_DDL = ", ".join(f"{c} {t}" for c, t in EVENT_COLUMNS)

_SUFFIX = re.compile(r"\.(zstd|zst|lz4|snappy|lzf)$")


def codec_of(name: str, head: bytes) -> str:
    n = name[:-len(".inprogress")] if name.endswith(".inprogress") else name
    m = _SUFFIX.search(n)
    if m:
        return {"zst": "zstd"}.get(m.group(1), m.group(1))
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return "zstd"
    if head.startswith(b"LZ4Block"):
        return "lz4"
    if head.startswith(b"\x82SNAPPY\x00"):
        return "snappy"
    return "none"


def decompress(data: bytes, codec: str) -> bytes:
    """Whole-file decompression; a truncated tail (an in-progress log) keeps what decoded."""
    if codec == "none":
        return data
    if codec == "zstd":
        import zstandard
        out = io.BytesIO()
        try:
            with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data),
                                                            read_across_frames=True) as r:
                while True:
                    chunk = r.read(1 << 20)
                    if not chunk:
                        break
                    out.write(chunk)
        except zstandard.ZstdError:
            pass
        return out.getvalue()
    if codec == "lz4":
        import lz4.block
        out, i = [], 0
        while i + 21 <= len(data) and data[i:i + 8] == b"LZ4Block":
            token = data[i + 8]
            clen, dlen, _check = struct.unpack_from("<iii", data, i + 9)
            body = data[i + 21:i + 21 + clen]
            i += 21 + clen
            if dlen == 0:
                continue
            if len(body) < clen:
                break
            method = token & 0xF0
            out.append(body if method == 0x10 else
                       lz4.block.decompress(body, uncompressed_size=dlen))
        return b"".join(out)
    if codec == "snappy":
        import cramjam
        if not data.startswith(b"\x82SNAPPY\x00"):
            return bytes(cramjam.snappy.decompress(data))   # standard framing
        out, i = [], 16
        while i + 4 <= len(data):
            (n,) = struct.unpack_from(">i", data, i)
            chunk = data[i + 4:i + 4 + n]
            i += 4 + n
            if len(chunk) < n:
                break
            out.append(bytes(cramjam.snappy.decompress_raw(chunk)))
        return b"".join(out)
    raise ValueError(f"unsupported event-log codec {codec}")


def _walk_plan(info) -> tuple[int, int]:
    nodes = exch = 0
    stack = [info] if isinstance(info, dict) else []
    while stack:
        n = stack.pop()
        nodes += 1
        if "Exchange" in str(n.get("nodeName", "")):
            exch += 1
        stack.extend(c for c in n.get("children", []) if isinstance(c, dict))
    return nodes, exch


_SQL_WORDS = ("select", "with", "from", "values", "table", "insert", "create", "merge",
              "update", "delete", "set", "explain", "cache", "drop", "alter")


def _looks_like_sql(s) -> bool:
    """A description that is a statement (not a call site such as 'collect at x.py:13')."""
    if not isinstance(s, str) or not s.strip():
        return False
    t = normalize(s[:4000])
    return t.split(" ", 1)[0].lstrip("(") in _SQL_WORDS and not re.search(r" at \S+:\d+$", t)


def parse_events(app_id: str, texts: list[str]) -> list[dict]:
    """Event-log lines of one application -> one row per root SQL execution."""
    execs: dict[int, dict] = {}
    root_of: dict[int, int] = {}
    stage_exec: dict[int, int] = {}
    bad = 0
    for text in texts:
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                e = json.loads(line)
            except ValueError:
                bad += 1
                continue
            ev = str(e.get("Event", ""))
            if ev.endswith("SparkListenerSQLExecutionStart"):
                eid = int(e.get("executionId", -1))
                root = int(e.get("rootExecutionId", eid))
                root_of[eid] = root
                nodes, exch = _walk_plan(e.get("sparkPlanInfo"))
                execs[eid] = {"start": e.get("time"), "desc": e.get("description"),
                              "plan": e.get("physicalPlanDescription"),
                              "nodes": nodes, "exch": exch, "end": None, "err": "",
                              "run": 0.0, "read": 0.0, "shuffle": 0.0, "jobdesc": None}
            elif ev.endswith("SparkListenerSQLExecutionEnd"):
                x = execs.get(int(e.get("executionId", -1)))
                if x is not None:
                    x["end"] = e.get("time")
                    x["err"] = e.get("errorMessage") or ""
            elif ev == "SparkListenerJobStart":
                props = e.get("Properties") or {}
                eid = props.get("spark.sql.execution.id")
                if eid is None:
                    continue
                eid = int(eid)
                for sid in e.get("Stage IDs", []):
                    stage_exec[int(sid)] = eid
                x = execs.get(eid)
                if x is not None and props.get("spark.job.description") and not x["jobdesc"]:
                    x["jobdesc"] = props["spark.job.description"]
            elif ev == "SparkListenerTaskEnd":
                eid = stage_exec.get(int(e.get("Stage ID", -1)))
                x = execs.get(root_of.get(eid, eid)) if eid is not None else None
                m = e.get("Task Metrics") or {}
                if x is None or not m:
                    continue
                x["run"] += float(m.get("Executor Run Time", 0) or 0)
                x["read"] += float((m.get("Input Metrics") or {}).get("Bytes Read", 0) or 0)
                x["shuffle"] += float((m.get("Shuffle Write Metrics") or {})
                                      .get("Shuffle Bytes Written", 0) or 0)
    rows = []
    for eid, x in sorted(execs.items()):
        if root_of.get(eid, eid) != eid:
            continue                      # a nested execution: its cost went to the root
        text = x["desc"] if _looks_like_sql(x["desc"]) else x["jobdesc"]
        error = None
        if not text:
            plan = x["plan"] if isinstance(x["plan"], str) and x["plan"].strip() else None
            if plan is None:
                error = "no_sql_text"
            elif is_command(plan):
                error = "non_query:dataframe_command"
            else:
                text = PLAN_MARKER + plan
        dur = (float(x["end"]) - float(x["start"])) if x["end"] and x["start"] else None
        rows.append({
            "statement_id": f"{app_id}:{eid}", "statement_text": text,
            "start_time": None if x["start"] is None else
            pd.Timestamp(int(x["start"]), unit="ms", tz="UTC").isoformat(),
            "duration_ms": dur, "executed_by": None,
            "execution_status": "FAILED" if x["err"] else ("FINISHED" if x["end"] else "RUNNING"),
            "read_bytes": x["read"], "shuffle_bytes": x["shuffle"],
            "error": error,
            "app_id": app_id, "executor_run_ms": x["run"], "plan_nodes": x["nodes"],
            "exchanges": x["exch"]})
    rows += [{"error": "malformed_event", "app_id": app_id}] * bad
    return rows


def _app_and_order(path: str) -> tuple[str, int]:
    p = Path(path)
    m = re.match(r"events_(\d+)_(.+?)(\.\w+)?(\.inprogress)?$", p.name)
    if m and p.parent.name.startswith("eventlog_v2_"):
        return p.parent.name[len("eventlog_v2_"):], int(m.group(1))
    name = p.name[:-len(".inprogress")] if p.name.endswith(".inprogress") else p.name
    return _SUFFIX.sub("", name), 0


def event_files(path: str) -> list[str]:
    p = Path(path)
    if p.is_file():
        return [str(p)]
    out = []
    for f in sorted(p.rglob("*")):
        if not f.is_file() or f.name.startswith((".", "appstatus_")) or f.name.endswith(".crc"):
            continue
        out.append(str(f))
    if not out:
        raise SuperopError(f"no event-log files under {path}")
    return out


def _parse_group(pdf: pd.DataFrame) -> pd.DataFrame:
    paths = list(pdf["path"])
    contents = list(pdf["content"])
    order = sorted(range(len(paths)), key=lambda i: _app_and_order(paths[i])[1])
    app = _app_and_order(paths[order[0]])[0]
    texts, rows = [], []
    for i in order:
        name = paths[i].rsplit("/", 1)[-1]
        data = bytes(contents[i])
        try:
            codec = codec_of(name, data[:16])
            texts.append(decompress(data, codec).decode("utf-8", "replace"))
        except Exception:
            rows.append({"error": "unreadable_event_log", "app_id": app})
    rows += parse_events(app, texts)
    return typed_frame(rows, EVENT_COLUMNS)


def read_eventlog(spark, path: str, with_metrics: bool = False):
    """Event log(s) under ``path`` (or a list of files, any filesystem) as a DataFrame of
    LOG_COLUMNS (+ event columns if asked)."""
    from pyspark.sql import functions as F
    files = path if isinstance(path, list) else event_files(path)
    df = spark.read.format("binaryFile").load(files)
    # group key: the application (rolling dir name, or file name without codec suffix)
    app = F.when(F.col("path").rlike(r"/eventlog_v2_[^/]+/events_"),
                 F.regexp_extract("path", r"/eventlog_v2_([^/]+)/", 1)) \
        .otherwise(F.regexp_replace(F.regexp_extract("path", r"([^/]+)$", 1),
                                    r"(\.(zstd|zst|lz4|snappy|lzf))?(\.inprogress)?$", ""))
    out = df.select(app.alias("app"), "path", "content").groupBy("app") \
        .applyInPandas(_parse_group, EVENT_DDL)
    return out if with_metrics else out.select(*[c for c, _ in LOG_COLUMNS])
