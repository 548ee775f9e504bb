"""The nightly mining job: query log -> templates -> IR -> recurring sub-plans -> candidates.

    from superop.mining.job import run_mining
    res = run_mining("superop/workloads/data/query_log.jsonl.gz", "out/")
    res.candidates          # pandas DataFrame, also out/candidates.parquet
    res.summary             # dict, also out/summary.json

Phases (all Spark; Python runs inside mapInPandas / applyInPandas):
  read       plan the log DataFrame (format detection; nothing is scanned yet)
  normalize  ONE Spark pass over the log: parse rows (bad rows carry an error reason) and
             normalize literals -> template id per row in the same mapInPandas, then one
             aggregation gives per template: executions, summed duration / bytes, an example
  analyze    per template (mapInPandas): lower to the IR, Merkle fingerprints of every
             sub-plan, candidate / near-miss detection, example SQL via ``to_sql``
  aggregate  recurring sub-plans and candidates grouped by variant (family, join kind,
             shape) with support and cost share, selected by recurring cost (default) or by
             >= k distinct templates (see ``select`` below)
  write      candidates.parquet, near_misses.parquet, recurring.parquet, summary.json (atomic)
  mlflow     params, metrics, summary + candidates as artifacts

MLflow: MLFLOW_TRACKING_URI wins; otherwise a local SQLite store ``sqlite:///<out>/mlflow.db``
with artifacts under ``<out>/mlartifacts`` — the run stays with the output it describes and
needs no server (MLflow's own default, ./mlruns or ./mlflow.db, depends on the caller's cwd).
"""
from __future__ import annotations

import hashlib
import io
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pandas as pd

from ..errors import SuperopError
from ..families import names as family_names
from ..ir.schema import schema_from_spark
from ..sparkutil import get_spark, prepare_executors
from ..storage import OutputSet, local_path
from ..tracking import Tracker, store_for
from ..tracking import tracking_uri_for as uri_for
from ..workloads.loggen import mining_schema
from .analyze import ANALYSIS_DDL, make_mapper
from .detect import skeleton
from .normalize import normalize, statement_kind, template_id
from .readers import SUCCESS, open_log
from .selection import MIN_COST_SHARE, MIN_EXECUTIONS, ROUTES, Selection

MALFORMED_REASONS = {"malformed_json", "not_a_json_object", "missing_statement_text",
                     "bad_statement_text_type", "bad_numeric_field", "malformed_csv",
                     "malformed_event", "unreadable_event_log"}

CANDIDATE_COLUMNS = ["candidate_id", "family", "join_kind", "shape", "shape_counts", "skeleton",
                     "n_inputs", "agg", "input_tables", "example_sql", "example_shape",
                     "example_template_id", "templates",
                     "executions", "cost_ms", "cost_share", "read_bytes", "shuffle_bytes",
                     "distinct_subplans", "template_ids", "premises", "route", "instances",
                     "lineage_fingerprints"]

@dataclass
class MiningResult:
    out_dir: Path
    summary: dict
    candidates: pd.DataFrame
    near_misses: pd.DataFrame
    recurring: pd.DataFrame
    mlflow_run_id: Optional[str] = None


def candidate_id(family: str, join_kind: str, shape: str, premises: str = "") -> str:
    """Stable across runs and logs: a hash of the variant key (its declared-key premises
    only when it has some: every other id is unchanged)."""
    key = f"{family}|{join_kind}|{shape}" + (f"|{premises}" if premises else "")
    h = hashlib.blake2b(key.encode(), digest_size=5).hexdigest()
    return f"{family}-{h}"


class Progress:
    """Phase lines on stderr (default: when it is a terminal) and seconds per phase."""

    def __init__(self, enabled: Optional[bool] = None):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.seconds: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str, note: str = ""):
        # one whole line per phase when it ends (a log file is read line by line)
        t0 = time.perf_counter()
        try:
            yield
        finally:
            dt = time.perf_counter() - t0
            self.seconds[name] = round(self.seconds.get(name, 0.0) + dt, 3)
            if self.enabled:
                print(f"[mine] {name:<10} {note} ({dt:.1f} s)".replace("  (", " ("),
                      file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
def _normalizer(include_failed: bool):
    """pandas batch of LOG_COLUMNS -> NORM_DDL: template id per row, or the skip reason."""
    cache: dict[str, tuple[str, str]] = {}

    def norm(pdf: pd.DataFrame) -> pd.DataFrame:
        tids, reasons = [], []
        for text, err, status in zip(pdf["statement_text"], pdf["error"],
                                     pdf["execution_status"]):
            if isinstance(err, str) and err:
                tids.append(None)
                reasons.append(err)
                continue
            if not include_failed and str(status or "").strip().lower() not in SUCCESS:
                tids.append(None)
                reasons.append("failed_statement")
                continue
            hit = cache.get(text)
            if hit is None:
                t = normalize(text)
                kind = statement_kind(t)
                hit = (template_id(t), "") if kind == "query" else (None, kind)
                if len(cache) < 50_000:       # exact repeats (dashboards) skip the regex
                    cache[text] = hit
            tids.append(hit[0])
            reasons.append(hit[1])
        return pd.DataFrame({"template_id": tids, "reason": reasons,
                             "statement_text": pdf["statement_text"],
                             "duration_ms": pdf["duration_ms"], "read_bytes": pdf["read_bytes"],
                             "shuffle_bytes": pdf["shuffle_bytes"]})
    return norm


NORM_DDL = ("template_id string, reason string, statement_text string, "
            "duration_ms double, read_bytes double, shuffle_bytes double")


def run_mining(log_path, out_dir, fmt: str = "auto", schema: Optional[dict] = None,
               k: Optional[int] = None, spark=None, mlflow_run: bool = True,
               column_map: Optional[dict] = None, include_failed: bool = False,
               progress: Optional[bool] = None, master: Optional[str] = None,
               experiment: str = "superop-mining", min_cost_share: float = MIN_COST_SHARE,
               min_executions: int = MIN_EXECUTIONS, outputs=None) -> MiningResult:
    """Mine ``log_path`` and write the outputs to ``out_dir`` (see module doc).

    ``schema``: {"table": {"column": "type"}}; None = the paper's tables + TPC-H
    (:func:`superop.workloads.loggen.mining_schema`); "spark" = the session's catalog.
    Selection (:class:`Selection`): by default a sub-plan recurs (and a candidate variant is
    reported) when its queries ran >= ``min_executions`` times and cost >= ``min_cost_share``
    of the log; with ``k`` when it is seen in >= k distinct templates.
    Raises SuperopError when the log as a whole is unusable.

    ``out_dir``: a local path or any Hadoop filesystem URI. The outputs of a run appear
    there together or not at all (:class:`superop.storage.OutputSet`); a caller that passes
    its own ``outputs`` set (the nightly job) commits it itself, with its other outputs."""
    if k is not None and k < 1:
        raise SuperopError(f"k must be >= 1, got {k}")
    if not 0.0 <= min_cost_share <= 1.0:
        raise SuperopError(f"min_cost_share must be in [0, 1], got {min_cost_share}")
    if min_executions < 1:
        raise SuperopError(f"min_executions must be >= 1, got {min_executions}")
    sel = Selection(k, min_cost_share, min_executions)
    out = Path(local_path(str(out_dir))) if local_path(str(out_dir)) is not None else str(out_dir)
    prog = Progress(progress)
    if spark is None:
        spark = get_spark(app_name="superop-mine", master=master)
    prepare_executors(spark)        # superop and its executor modules on a cluster's executors
    own_outputs = outputs is None
    if schema is None:
        schema = mining_schema()
    elif schema == "spark":          # the tables and views of the session's catalog
        schema = schema_from_spark(spark)
    t_start = time.perf_counter()

    log = _read_and_normalize(spark, log_path, fmt, column_map, include_failed, prog)
    found = _analyze_and_aggregate(spark, log, schema, sel, prog)
    cands, near = _tables(found.grouped, sel, log.total_cost)
    summary = _summary(log_path, fmt, k, sel, log, found, cands, near)
    if own_outputs:
        outputs = OutputSet(str(out_dir), spark)
    run_id = None
    try:
        with prog.phase("write", str(out)):
            _write_outputs(outputs, summary, cands, near, found.recurring, prog, t_start)
        if mlflow_run:
            with prog.phase("mlflow"):
                run_id = _log_mlflow(outputs.staged_dir(), summary, cands, log_path, fmt, k,
                                     experiment, out)
            summary["mlflow_run_id"] = run_id
            summary["seconds_by_phase"] = dict(prog.seconds)
            outputs.write_json("summary.json", summary)
        if own_outputs:
            outputs.commit()
    finally:
        if own_outputs:
            outputs.discard()
    return MiningResult(out, summary, cands, near, found.recurring, run_id)


@dataclass
class _LogTotals:
    """The read and normalize phases' result: the per-template aggregate (a cached Spark
    DataFrame: executions, cost, bytes, an example per template id and skip reason) and
    the log's totals by reason ("" = a usable query)."""
    log_read: Any                                  # readers.LogRead: the files read, by format
    per_template: Any                              # pyspark DataFrame
    by_reason: dict[str, tuple[int, float]]        # reason -> (rows, summed duration ms)
    n_templates: int
    queries_read: int
    usable: int
    malformed: int
    total_cost: float


@dataclass
class _Found:
    """The analyze and aggregate phases' result: per (status, reason) the templates and
    executions, the recurring sub-plans, and the findings grouped by variant."""
    status_rows: list
    recurring: pd.DataFrame
    grouped: pd.DataFrame


def _read_and_normalize(spark, log_path, fmt: str, column_map: Optional[dict], include_failed: bool,
                        prog: Progress) -> _LogTotals:
    """ONE Spark pass over the log: rows parsed and normalized to template ids, then
    aggregated per template. Raises SuperopError when the log is empty or every row is
    malformed."""
    from pyspark.sql import functions as F
    with prog.phase("read", str(log_path)):
        # lazily planned: reading, parsing and normalization run in the next phase's job
        log_read = open_log(spark, str(log_path), fmt, column_map,
                            post=_normalizer(include_failed), post_ddl=NORM_DDL)
        norm = log_read.df
    with prog.phase("normalize"):
        per_template = norm.groupBy("template_id", "reason").agg(
            F.count(F.lit(1)).alias("executions"),
            F.sum("duration_ms").alias("cost_ms"),
            F.sum("read_bytes").alias("read_bytes"),
            F.sum("shuffle_bytes").alias("shuffle_bytes"),
            F.min("statement_text").alias("example")).cache()
        reason_rows = per_template.groupBy("reason").agg(
            F.sum("executions").alias("n"), F.sum("cost_ms").alias("cost"),
            F.count(F.lit(1)).alias("groups")).collect()
        by_reason = {r["reason"]: (int(r["n"]), float(r["cost"] or 0.0)) for r in reason_rows}
        n_templates = sum(int(r["groups"]) for r in reason_rows if r["reason"] == "")
    queries_read = sum(n for n, _ in by_reason.values())
    if queries_read == 0:
        per_template.unpersist()
        raise SuperopError(f"the log {log_path} is empty")
    usable = by_reason.get("", (0, 0.0))[0]
    malformed = sum(n for r, (n, _) in by_reason.items() if r in MALFORMED_REASONS)
    if usable == 0 and malformed == queries_read:
        per_template.unpersist()
        raise SuperopError(f"no usable row in {log_path}: all {queries_read} rows are malformed "
                           f"({', '.join(sorted(r for r in by_reason if r))})")
    total_cost = sum(c for r, (_, c) in by_reason.items()
                     if r not in MALFORMED_REASONS and r != "failed_statement")
    return _LogTotals(log_read, per_template, by_reason, n_templates, queries_read, usable, malformed,
                      total_cost)


def _analyze_and_aggregate(spark, log: _LogTotals, schema, sel: Selection, prog: Progress) -> _Found:
    """Per template (mapInPandas) the IR, fingerprints, candidates and near-misses; then
    the recurring sub-plans and the findings grouped by variant with their support."""
    from pyspark.sql import functions as F

    per_template, n_templates, total_cost = log.per_template, log.n_templates, log.total_cost
    with prog.phase("analyze"):
        templates = per_template.filter(F.col("reason") == "").drop("reason")
        parts = max(1, min(64, spark.sparkContext.defaultParallelism * 2, n_templates))
        analysis = templates.select("template_id", "example").repartition(parts, "template_id") \
            .mapInPandas(make_mapper(schema), ANALYSIS_DDL).cache()
        analysis.count()
    with prog.phase("aggregate"):
        stats = templates.select("template_id", "executions", "cost_ms", "read_bytes",
                                 "shuffle_bytes")
        a = analysis.join(F.broadcast(stats) if n_templates < 200_000 else stats, "template_id")
        status_rows = a.filter(F.col("row_kind") == "status").groupBy("status", "reason").agg(
            F.count(F.lit(1)).alias("templates"), F.sum("executions").alias("executions")).collect()
        recurring = (a.filter(F.col("row_kind") == "subplan").groupBy("fingerprint").agg(
            F.countDistinct("template_id").alias("templates"),
            F.sum("executions").alias("executions"), F.sum("cost_ms").alias("cost_ms"),
            F.first("op").alias("op"), F.first("shape").alias("shape"),
            F.max("plan_nodes").alias("plan_nodes"),
            F.min("template_id").alias("example_template_id"))
            .filter(sel.recurs(total_cost)).toPandas())
        # near-misses of one shape but different reasons stay apart, and candidates of one
        # shape under different declared-key premises (each needs its own proof)
        variant = ["status", "family", "join_kind", "shape", "reason", "premises"]
        fnd = a.filter(F.col("row_kind") == "finding")
        # one row per (template, variant): a template with the same variant twice counts once
        fnd = fnd.groupBy("template_id", *variant).agg(
            F.first("executions").alias("executions"), F.first("cost_ms").alias("cost_ms"),
            F.first("read_bytes").alias("read_bytes"),
            F.first("shuffle_bytes").alias("shuffle_bytes"),
            F.collect_set("fingerprint").alias("fps"),
            F.collect_set("instance").alias("instances"),
            F.collect_set("lineage").alias("lfps"),
            F.max(F.struct("n_inputs", "agg", "inputs", "shape_counts", "example_sql",
                           "example_shape"))
            .alias("ex"))
        # would this template alone recur by cost? (decides the candidate's route)
        fnd = fnd.withColumn("alone", sel.cost_rule(total_cost).cast("int"))
        grouped = fnd.groupBy(*variant).agg(
            F.max("alone").alias("single_recurs"),
            F.countDistinct("template_id").alias("templates"),
            F.sum("executions").alias("executions"), F.sum("cost_ms").alias("cost_ms"),
            F.sum("read_bytes").alias("read_bytes"), F.sum("shuffle_bytes").alias("shuffle_bytes"),
            F.array_distinct(F.flatten(F.collect_list("fps"))).alias("fps"),
            F.array_distinct(F.flatten(F.collect_list("instances"))).alias("instances"),
            F.array_distinct(F.flatten(F.collect_list("lfps"))).alias("lfps"),
            F.max(F.struct("executions", "template_id", "ex")).alias("best"),
            F.sort_array(F.collect_set("template_id")).alias("template_ids")).toPandas()
        analysis.unpersist()
        per_template.unpersist()
    return _Found(status_rows, recurring, grouped)


def _summary(log_path, fmt: str, k: Optional[int], sel: Selection, log: _LogTotals, found: _Found,
             cands: pd.DataFrame, near: pd.DataFrame) -> dict:
    """summary.json (its phase seconds are filled in when the outputs are written)."""
    by_reason = log.by_reason
    skipped: dict[str, int] = {r: n for r, (n, _) in by_reason.items() if r}
    lowered = 0
    partly_opaque = 0
    for r in found.status_rows:
        if r["status"] == "skipped":
            skipped[r["reason"]] = skipped.get(r["reason"], 0) + int(r["executions"])
        else:
            lowered += int(r["templates"])
            if r["reason"] == "partly_opaque":
                partly_opaque += int(r["templates"])
    return {
        "log": str(log_path), "format": fmt, "k": k, "selection": sel.as_dict(),
        "queries_read": log.queries_read,
        "malformed": log.malformed,
        "queries_mined": log.usable - sum(n for r, n in skipped.items() if r not in by_reason),
        "skipped_by_reason": dict(sorted(skipped.items())),
        "templates": log.n_templates,
        "templates_lowered": lowered,
        "templates_partly_opaque": partly_opaque,
        "recurring_subplans": int(len(found.recurring)),
        "candidates": int(len(cands)),
        "candidates_by_family": {f: int((cands["family"] == f).sum()) for f in family_names()},
        "candidates_by_route": {r: int((cands["route"] == r).sum()) for r in ROUTES},
        "near_misses": int(len(near)),
        "near_misses_by_reason": {str(r): int(n) for r, n in
                                  near.groupby("reason")["executions"].count().items()}
        if len(near) else {},
        "total_cost_ms": log.total_cost,
        "candidate_cost_share": float(cands["cost_share"].sum()) if len(cands) else 0.0,
        "seconds_by_phase": {},
        "files": log.log_read.summary(),     # files read per format, unreadable ones by reason
    }


def _tables(g: pd.DataFrame, sel: Selection, total_cost: float
            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows_c, rows_n = [], []
    for r in g.to_dict("records"):
        best = r["best"]
        ex = best["ex"]
        base = {
            "family": r["family"], "join_kind": r["join_kind"] or "", "shape": r["shape"],
            "shape_counts": ex["shape_counts"], "skeleton": skeleton(r["shape"]),
            "n_inputs": int(ex["n_inputs"] or 0), "example_shape": ex["example_shape"] or "",
            "agg": ex["agg"] or "", "input_tables": ex["inputs"] or "",
            "example_sql": ex["example_sql"] or "", "example_template_id": best["template_id"],
            "templates": int(r["templates"]), "executions": int(r["executions"]),
            "cost_ms": float(r["cost_ms"] or 0.0),
            "cost_share": float(r["cost_ms"] or 0.0) / total_cost if total_cost else 0.0,
            "read_bytes": float(r["read_bytes"] or 0.0),
            "shuffle_bytes": float(r["shuffle_bytes"] or 0.0),
            "distinct_subplans": len(r["fps"]), "template_ids": list(r["template_ids"]),
            "lineage_fingerprints": sorted(r["lfps"]),
            "premises": r.get("premises") or "",
            # the candidate's instance in each template (canonical, JSON): the nightly job
            # certifies every one
            "instances": sorted(str(x) for x in (r.get("instances") if r.get("instances") is not None else [])),
        }
        if r["status"] == "candidate":
            if sel.keeps(base["templates"], base["executions"], base["cost_share"]):
                rows_c.append(dict(base, candidate_id=candidate_id(r["family"], base["join_kind"],
                                                                   r["shape"], base["premises"]),
                                   route=sel.route(base["templates"],
                                                   bool(r.get("single_recurs") or 0))))
        else:
            rows_n.append(dict(base, reason=r["reason"]))
    cands = pd.DataFrame(rows_c, columns=CANDIDATE_COLUMNS)
    near = pd.DataFrame(rows_n, columns=[c for c in CANDIDATE_COLUMNS
                                         if c not in ("candidate_id", "route")] + ["reason"])
    cands = cands.sort_values(["cost_share", "candidate_id"], ascending=[False, True],
                              ignore_index=True)
    near = near.sort_values(["executions", "shape"], ascending=[False, True], ignore_index=True)
    return cands, near


def _parquet_bytes(df: pd.DataFrame) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), buf)
    return buf.getvalue()


def _write_outputs(outputs, summary, cands, near, recurring, prog, t_start) -> None:
    outputs.write_bytes("candidates.parquet", _parquet_bytes(cands))
    outputs.write_bytes("near_misses.parquet", _parquet_bytes(near))
    outputs.write_bytes("recurring.parquet", _parquet_bytes(recurring))
    summary["seconds_by_phase"] = dict(prog.seconds)
    summary["seconds_total"] = round(time.perf_counter() - t_start, 3)
    outputs.write_json("summary.json", summary)


def tracking_uri_for(out) -> str:
    return uri_for(out)


def _log_mlflow(files: Path, summary: dict, cands: pd.DataFrame, log_path, fmt, k,
                experiment: str, out=None) -> str:
    """One run (fluent API, see superop.tracking) in the store of ``out`` (default: ``files``,
    the local directory holding the outputs to log as artifacts)."""
    tr = Tracker(store_for(out if out is not None else files), experiment)
    rid = tr.start(f"mine-{Path(str(log_path)).name}")
    ok = False
    try:
        tr.params(rid, {"log": str(log_path), "format": fmt, "k": k,
                        "templates": summary["templates"],
                        "selection": summary.get("selection", {}).get("mode")})
        m = {key: float(summary.get(key) or 0) for key in (
            "queries_read", "malformed", "queries_mined", "templates", "recurring_subplans",
            "candidates", "near_misses", "candidate_cost_share", "seconds_total")}
        m.update({f"candidates_{fam}": n for fam, n in summary["candidates_by_family"].items()})
        m.update({f"candidates_route_{route}": n
                  for route, n in summary.get("candidates_by_route", {}).items()})
        m.update({f"seconds_{ph}": s for ph, s in summary["seconds_by_phase"].items()})
        tr.metrics(rid, m)
        for f in ("summary.json", "candidates.parquet", "near_misses.parquet"):
            tr.artifact(rid, Path(files) / f)
        ok = True
    finally:
        tr.end(rid, ok)
    return rid
