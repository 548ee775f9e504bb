"""The whole nightly job: mine → synthesize → verify → generalize → export.

One MLflow parent run with a child run per stage (params, metrics, artifacts). A stage
failure on one candidate (solver timeout, synthesizer crash) marks that candidate and the
run goes on; a failure of a whole stage aborts the run *before* anything replaces the
previous ``catalog.json`` — the catalog and report are written atomically at the very end.
The new catalog is registered in the MLflow Model Registry with the alias ``candidate``
(see :mod:`superop.rules_out.registry` for promotion to ``production``).
"""
from __future__ import annotations

import hashlib
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from ..mining.job import run_mining
from ..mining.logframe import LOG_COLUMNS
from ..mining.near_misses import recurring_near_misses
from ..mining.readers import source_table
from ..mining.selection import MIN_COST_SHARE, MIN_EXECUTIONS, Selection
from ..rules_out.catalog import make_catalog, write_catalog
from ..rules_out.examples import rule_examples
from ..rules_out.generalize import generalize
from ..rules_out.registry import log_catalog_model, register_catalog_model
from ..rules_out.report import to_html, to_markdown
from ..rules_out.signing import Signer, signing_key
from ..rules_out.trust import sign_fresh
from ..share.opportunities import log_sharing_report
from ..sparkutil import get_spark
from ..storage import OutputSet, filesystem, local_path
from ..tracking import Tracker, store_for
from ..workloads.loggen import mining_schema
from .candidates import MIN_BOUND, bounds, synthesize_at_bounds
from .certificates import pattern_of, spark_types, template_proofs
from .records import MinedCandidate, Outcome

log = logging.getLogger(__name__)

# k=None: candidates are selected by recurring cost (superop.mining.selection documents the
# threshold); an int selects the classic way, seen in >= k distinct templates
# min_bound: when Z3 times out at K rows, the candidate (and its certificate) is checked again
# at K-1, ... down to min_bound rows; the certificate records the bound it holds for, and a
# timeout at every bound stays "unknown"
DEFAULTS: dict = {"k": None, "K": 4, "min_bound": MIN_BOUND, "synth_timeout_s": 60.0, "verify_timeout_s": 20.0,
                   "parametric_timeout_s": 120.0}


@dataclass
class NightlyResult:
    out_dir: Path
    catalog_path: Optional[Path]
    report_path: Optional[Path]
    catalog: Optional[dict]
    outcomes: list[Outcome] = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    mlflow_run_id: Optional[str] = None
    tracking_uri: Optional[str] = None
    registered_version: Optional[str] = None


def content_hash(path, spark=None) -> str:
    """The log's identity for the catalog's ``source`` and the MLflow dataset digest:
    sha256 over the bytes of every file (name order) of a local log; for a log on a Hadoop
    filesystem, sha256 over its listing (path and size of every file) — reading the whole
    log back through the driver would cost more than mining it; for a table, sha256 over
    the files it reads."""
    h = hashlib.sha256()
    table = source_table(str(path))
    if table is not None:       # a table: the files it reads now (none for a view)
        for f in sorted(spark.table(table).inputFiles()):
            h.update(f"{f}\n".encode())
        return "table-files-sha256:" + h.hexdigest()
    loc = local_path(str(path))
    if loc is not None and Path(loc).exists():
        p = Path(loc)
        files = sorted(x for x in p.rglob("*") if x.is_file()) if p.is_dir() else [p]
        for f in files:
            h.update(f.name.encode())
            with open(f, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
        return "sha256:" + h.hexdigest()
    for f in filesystem(str(path), spark).list_files(str(path)):
        h.update(f"{f.path}\0{f.size}\n".encode())
    return "listing-sha256:" + h.hexdigest()


def _progress(enabled: bool, msg: str) -> None:
    """One line per stage/step on stderr, with the elapsed time since the job started
    (also when stderr is not a terminal: a scheduled run's log shows where it is)."""
    if enabled:
        print(f"[nightly {time.perf_counter() - _T0[0]:6.1f}s] {msg}", file=sys.stderr, flush=True)


_T0 = [time.perf_counter()]


def run_nightly(log_path, out_dir, fmt: str = "auto", schema: Optional[dict] = None,
                k: Optional[int] = DEFAULTS["k"], K: int = DEFAULTS["K"],
                min_bound: int = DEFAULTS["min_bound"], synth_timeout_s: float = DEFAULTS["synth_timeout_s"],
                verify_timeout_s: float = DEFAULTS["verify_timeout_s"],
                parametric_timeout_s: float = DEFAULTS["parametric_timeout_s"], spark=None,
                master: Optional[str] = None, column_map: Optional[dict] = None,
                progress: Optional[bool] = None, register: bool = True,
                max_candidates: Optional[int] = None, synth_fn: Optional[Callable] = None,
                experiment: str = "superop-nightly", min_cost_share: Optional[float] = None,
                min_executions: Optional[int] = None, include_failed: bool = False,
                share_window_s: Optional[float] = 300.0,
                share_max_windows: int = 20, share_budget_s: Optional[float] = 60.0,
                signer: Optional[Signer] = None) -> NightlyResult:
    """Run the nightly job on ``log_path`` into ``out_dir``. Selection of the mined candidates
    (:class:`superop.mining.selection.Selection`): by recurring cost unless ``k`` is set;
    ``min_cost_share`` / ``min_executions`` default to the documented thresholds. ``share_window_s``: the log
    windows in which work sharing across queries (``superop.share``) would have paid are
    reported (None: not computed); ``share_max_windows`` (the largest windows are kept) and
    ``share_budget_s`` (no new window is planned after it) bound that step's work.
    ``signer``: the key the catalog is signed with (default ``signing.signing_key()``)."""

    signer = signer or signing_key()      # a missing key fails before Spark starts
    local = local_path(str(out_dir))
    out = Path(local) if local is not None else str(out_dir)
    show = sys.stderr.isatty() if progress is None else progress
    _T0[0] = time.perf_counter()
    if schema is None:
        schema = mining_schema()
    if spark is None:
        spark = get_spark(app_name="superop-nightly", master=master)
    # every output of this run is staged and appears in out_dir together, at the very end
    outputs = OutputSet(str(out_dir), spark)
    try:
        tr = Tracker(store_for(out_dir), experiment)
    except BaseException:
        outputs.discard()
        raise
    job = _Job(log_path=log_path, out_dir=out_dir, out=out, fmt=fmt, schema=schema, spark=spark, master=master,
               column_map=column_map, show=show, tr=tr, outputs=outputs, k=k,
               min_cost_share=MIN_COST_SHARE if min_cost_share is None else min_cost_share,
               min_executions=MIN_EXECUTIONS if min_executions is None else min_executions,
               include_failed=include_failed, K=K, min_bound=min_bound, synth_timeout_s=synth_timeout_s,
               verify_timeout_s=verify_timeout_s, parametric_timeout_s=parametric_timeout_s,
               max_candidates=max_candidates, synth_fn=synth_fn,
               register=register, signer=signer)
    params = {"log": str(log_path), "format": fmt, **job.selection(), "K": K, "min_bound": min_bound,
              "synth_timeout_s": synth_timeout_s, "verify_timeout_s": verify_timeout_s,
              "parametric_timeout_s": parametric_timeout_s,
              "max_candidates": max_candidates}
    ok = False
    parent = None
    try:
        parent = job.parent = tr.start(f"nightly-{Path(str(log_path).rstrip('/')).name}")
        tr.params(parent, params)
        job.log_hash = content_hash(log_path, spark)
        tr.dataset(parent, digest=job.log_hash, columns=_log_columns(), **_dataset_of(log_path))
        mined = _mine(job)
        sharing = None
        if share_window_s is not None:
            sharing = _share(job, share_window_s, share_max_windows, share_budget_s)
        syn = _synthesize(job, mined)
        rules, rejected = _generalize(job, syn.outcomes)
        result = _export(job, mined, syn, rules, rejected, sharing)
        ok = True
        return result
    finally:
        if parent is not None:
            tr.end(parent, ok)
        else:
            tr.close()
        outputs.discard()


@dataclass
class _Job:
    """One nightly run's settings and handles, as every stage reads them; ``metrics``
    collects what the stages measured for the parent run."""
    log_path: Any
    out_dir: Any
    out: Any                    # Path of a local out_dir, else its URI
    fmt: str
    schema: dict
    spark: Any
    master: Optional[str]
    column_map: Optional[dict]
    show: bool
    tr: Any                     # superop.tracking.Tracker
    outputs: Any                # superop.storage.OutputSet
    k: Optional[int]
    min_cost_share: float
    min_executions: int
    include_failed: bool
    K: int
    min_bound: int
    synth_timeout_s: float
    verify_timeout_s: float
    parametric_timeout_s: float
    max_candidates: Optional[int]
    synth_fn: Optional[Callable]
    register: bool
    signer: Optional[Signer] = None   # signs the catalog (its certificates were just proved)
    parent: str = ""
    log_hash: str = ""
    metrics: dict = field(default_factory=dict)

    def selection(self) -> dict:
        return {"k": self.k, "min_cost_share": self.min_cost_share, "min_executions": self.min_executions}


@dataclass
class _Mined:
    """The mining stage's summary, candidates (a pandas DataFrame of CANDIDATE_COLUMNS) and
    near-misses (a pandas DataFrame)."""
    summary: dict
    candidates: Any
    near_misses: Any


@dataclass
class _Synthesized:
    """The synthesize and verify stages' outcomes and metrics."""
    outcomes: list[Outcome]
    by_status: dict[str, int]
    synth_m: dict
    ver_m: dict


def _mine(job: _Job) -> _Mined:
    """The mining stage (its child run, metrics and artifacts)."""
    tr = job.tr
    t = time.perf_counter()
    _progress(job.show, "mine: reading and mining the log")
    child = tr.start("mine", job.parent)
    tr.params(child, {"log": str(job.log_path), "format": job.fmt, **job.selection()})
    tr.dataset(child, digest=job.log_hash, columns=_log_columns(), **_dataset_of(job.log_path))
    mres = run_mining(job.log_path, job.out, fmt=job.fmt, schema=job.schema, k=job.k, spark=job.spark,
                      mlflow_run=False, column_map=job.column_map, progress=job.show, master=job.master,
                      outputs=job.outputs, min_cost_share=job.min_cost_share,
                      min_executions=job.min_executions, include_failed=job.include_failed)
    s = mres.summary
    m = {k2: s.get(k2) for k2 in ("queries_read", "malformed", "templates",
                                  "recurring_subplans", "candidates", "near_misses")}
    # how the candidates recur: one template run many times, many templates, or both
    m.update({f"candidates_{r}": n for r, n in s.get("candidates_by_route", {}).items()})
    m["seconds"] = round(time.perf_counter() - t, 3)
    m["unreadable_files"] = sum((s.get("files") or {}).get("unreadable", {}).values())
    _progress(job.show, f"mine: {m['queries_read']} queries read ({m['malformed']} malformed, "
                        f"{m['unreadable_files']} unreadable files), {m['candidates']} candidates, "
                        f"{m['near_misses']} near-misses ({m['seconds']:.1f} s)")
    tr.metrics(child, m)
    for f in ("summary.json", "candidates.parquet", "near_misses.parquet"):
        tr.artifact(child, job.outputs.staged_dir() / f, "mining")
    tr.end(child)
    job.metrics.update({f"mine_{a}": b for a, b in m.items()})
    job.metrics.update({a: b for a, b in m.items() if a != "seconds"})
    return _Mined(s, mres.candidates, mres.near_misses)


def _share(job: _Job, window_s: float, max_windows: int, budget_s: Optional[float]):
    """Sharing opportunities in the log's windows (advisory: a failure is reported, never
    aborts the run)."""
    tr = job.tr
    t = time.perf_counter()
    _progress(job.show, "share: sharing opportunities in the log's windows")
    child = tr.start("share", job.parent)
    tr.params(child, {"window_s": window_s, "max_windows": max_windows, "budget_s": budget_s})
    sharing = log_sharing_report(job.spark or get_spark(app_name="superop-nightly", master=job.master),
                                 str(job.log_path), window_seconds=window_s, fmt=job.fmt,
                                 column_map=job.column_map, schema=job.schema,
                                 timeout_ms=int(job.verify_timeout_s * 1000), max_windows=max_windows,
                                 time_budget_s=budget_s)
    if sharing.error:
        log.warning("sharing opportunities not computed: %s", sharing.error)
    share_m = {"windows": sharing.windows, "windows_examined": sharing.examined,
               "opportunities": len(sharing.opportunities), "paying": len(sharing.paying),
               "seconds": round(time.perf_counter() - t, 3)}
    tr.metrics(child, share_m)
    tr.end(child, not sharing.error)
    job.metrics.update(sharing_windows=sharing.windows, sharing_paying=len(sharing.paying),
                       share_seconds=share_m["seconds"])
    return sharing


def _synthesize(job: _Job, mined: _Mined) -> _Synthesized:
    """The synthesize + verify stages: every selected candidate at the bounds, then the
    two child runs and synthesis.json."""
    tr, staged = job.tr, job.outputs.staged_dir
    rows = [MinedCandidate.from_row(r) for r in mined.candidates.to_dict("records")]
    if job.max_candidates is not None:
        rows = rows[:job.max_candidates]
    t = time.perf_counter()
    child = tr.start("synthesize", job.parent)
    tr.params(child, {"K": job.K, "synth_timeout_s": job.synth_timeout_s, "candidates": len(rows)})
    outcomes = []
    for i, row in enumerate(rows, 1):
        _progress(job.show, f"synthesize {i}/{len(rows)} {row.candidate_id} {row.shape}")
        outcomes.append(synthesize_at_bounds(row, job.schema, bounds(job.K, job.min_bound), job.synth_timeout_s,
                                             job.verify_timeout_s, job.synth_fn))
    by: dict[str, int] = {}
    for o in outcomes:
        by[o.status.value] = by.get(o.status.value, 0) + 1
    synth_m = {"candidates": len(rows),
               "synthesized": sum(1 for o in outcomes if o.program),
               "no_program": by.get("no_program", 0), "crashed": by.get("crashed", 0),
               "unsupported": by.get("unsupported", 0),
               "seconds": round(time.perf_counter() - t, 3)}
    _progress(job.show, f"synthesize + verify: {synth_m['synthesized']}/{len(rows)} programs, "
                        f"{by.get('verified', 0)} verified, {by.get('refuted', 0)} refuted, "
                        f"{by.get('unknown', 0)} unknown ({synth_m['seconds']:.1f} s)")
    tr.metrics(child, synth_m)
    job.outputs.write_json("synthesis.json", [o.to_json() for o in outcomes])
    tr.artifact(child, staged() / "synthesis.json")
    tr.end(child)
    child = tr.start("verify", job.parent)
    ver_m = {"verified": by.get("verified", 0), "refuted": by.get("refuted", 0),
             "unknown": by.get("unknown", 0),
             "seconds": round(sum((o.verifier or {}).get("seconds") or 0 for o in outcomes), 3)}
    tr.params(child, {"K": job.K, "verify_timeout_s": job.verify_timeout_s})
    tr.metrics(child, ver_m)
    tr.end(child)
    job.metrics.update(synthesized=synth_m["synthesized"], no_program=synth_m["no_program"],
                       crashed=synth_m["crashed"], verified=ver_m["verified"],
                       refuted=ver_m["refuted"], unknown=ver_m["unknown"],
                       synthesize_seconds=synth_m["seconds"], verify_seconds=ver_m["seconds"])
    return _Synthesized(outcomes, by, synth_m, ver_m)


def _generalize(job: _Job, outcomes: list[Outcome]) -> tuple[list, list]:
    """The generalization stage: the verified outcomes' patterns (with their certificates)
    into rules; (rules, rejected patterns)."""
    tr = job.tr
    t = time.perf_counter()
    child = tr.start("generalize", job.parent)
    made: dict[str, dict] = {}    # parametric certificates: one proof serves every instance of a form
    patterns = [p for o in outcomes
                if (p := pattern_of(o, job.schema, job.K, job.verify_timeout_s, job.min_bound,
                                    spark_types(job.spark), job.parametric_timeout_s, made)) is not None]
    rules, rejected = generalize(patterns, template_proofs(int(job.verify_timeout_s * 1000)))
    gen_m = {"patterns": len(patterns), "rules": len(rules), "rejected": len(rejected),
             "seconds": round(time.perf_counter() - t, 3)}
    _progress(job.show, f"generalize: {len(patterns)} patterns -> {len(rules)} rules, "
                        f"{len(rejected)} rejected ({gen_m['seconds']:.1f} s)")
    tr.metrics(child, gen_m)
    tr.end(child)
    job.metrics.update(patterns=len(patterns), rules=len(rules), generalize_seconds=gen_m["seconds"])
    return rules, rejected


def _export(job: _Job, mined: _Mined, syn: _Synthesized, rules: list, rejected: list, sharing) -> NightlyResult:
    """The export stage: catalog, reports, the MLflow model and its registered version,
    then the whole output set replaces the previous one."""
    tr, outputs, staged = job.tr, job.outputs, job.outputs.staged_dir
    t = time.perf_counter()
    child = tr.start("export", job.parent)
    s = mined.summary
    source = {"log": str(job.log_path), "window": s.get("window"), "content_hash": job.log_hash}
    catalog = make_catalog(rules, source=source)
    # for the report: what query authors could change, and what each rule does to its example
    catalog["near_misses"] = recurring_near_misses(
        mined.near_misses, Selection(job.k, job.min_cost_share, job.min_executions))
    catalog["rule_examples"] = rule_examples(catalog, job.schema, job.spark)
    if sharing is not None:
        catalog["sharing_opportunities"] = sharing.to_json()
    catalog_report = {
        "queries_read": s.get("queries_read"), "malformed": s.get("malformed"),
        "templates": s.get("templates"), "candidates": s.get("candidates"),
        "selection": Selection(job.k, job.min_cost_share, job.min_executions).describe(),
        **{f"candidates_{r}": n for r, n in (s.get("candidates_by_route") or {}).items()},
        "verified": syn.ver_m["verified"], "refuted": syn.ver_m["refuted"], "unknown": syn.ver_m["unknown"],
        "no_program": syn.synth_m["no_program"], "crashed": syn.synth_m["crashed"], "rules": len(rules)}
    if sharing is not None:
        catalog_report["sharing_windows_paying"] = len(sharing.paying)
    not_admitted = [{"candidate": o.candidate, "shape": o.shape,
                     "reason": f"{o.status.value}: {o.reason}"[:300]}
                    for o in syn.outcomes if not o.verified]
    not_admitted += [{"candidate": r.pattern.candidate_id, "shape": r.pattern.shape, "reason": r.reason}
                     for r in rejected]
    cat_file = staged() / "catalog.json"
    written = write_catalog(cat_file, sign_fresh(catalog, job.signer or signing_key()), require_verified=True)
    outputs.write_bytes("catalog.json", cat_file.read_bytes())
    full = dict(written, report=catalog_report, rejected=not_admitted)
    outputs.write_text("report.md", to_markdown(full))
    outputs.write_text("report.html", to_html(full))
    for f in ("catalog.json", "report.md", "report.html", "synthesis.json"):
        tr.artifact(child, staged() / f, "catalog" if f == "catalog.json" else None)
    # the catalog as an MLflow pyfunc model of this run (and a registered version)
    model = log_catalog_model(cat_file, job.schema, {
        "report_md": str(staged() / "report.md"), "report_html": str(staged() / "report.html")})
    exp_m = {"rules": len(rules), "seconds": round(time.perf_counter() - t, 3)}
    tr.metrics(child, exp_m)
    tr.end(child)
    job.metrics["export_seconds"] = exp_m["seconds"]

    version = None
    if job.register:
        version = register_catalog_model(model.model_uri, written, tr.uri, run_id=job.parent)
    tr.metrics(job.parent, {k2: v for k2, v in job.metrics.items() if isinstance(v, (int, float))})
    tr.artifact(job.parent, staged() / "report.html")
    tr.artifact(job.parent, staged() / "report.md")
    # Everything succeeded: only now does the new output set replace the previous one.
    outputs.commit(last=["catalog.json"])
    _progress(job.show, f"export: catalog of {len(rules)} rules written to {job.out_dir}"
                        + (f", registered as version {version}" if version else ""))
    out = job.out
    final = (lambda n: out / n) if isinstance(out, Path) else outputs.final
    return NightlyResult(out, final("catalog.json"), final("report.md"), written, syn.outcomes,
                         job.metrics, job.parent, tr.uri, version)


def _dataset_of(log_path) -> dict:
    table = source_table(str(log_path))
    if table:
        return {"name": table, "table": table}
    return {"name": Path(str(log_path).rstrip("/")).name or str(log_path), "path": str(log_path)}


def _log_columns():
    return LOG_COLUMNS
