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
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from .. import families
from ..families import Covers, Side, first_match
from .records import MinedCandidate, Outcome, OutcomeStatus, Support

log = logging.getLogger(__name__)

DEFAULTS = {"k": 2, "K": 4, "synth_timeout_s": 60.0, "verify_timeout_s": 20.0}


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


def content_hash(path: str | os.PathLike) -> str:
    """sha256 over the log's bytes (every file of a directory, in name order)."""
    p = Path(path)
    h = hashlib.sha256()
    files = sorted(x for x in p.rglob("*") if x.is_file()) if p.is_dir() else [p]
    for f in files:
        h.update(f.name.encode())
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return "sha256:" + h.hexdigest()


class _Tracker:
    """MLflow parent/child runs through the client API (no global active-run state, so
    the job can run inside other code)."""

    def __init__(self, uri: str, experiment: str, artifact_root: Optional[str]):
        from mlflow.tracking import MlflowClient
        for name in ("mlflow", "alembic", "sqlalchemy"):
            logging.getLogger(name).setLevel(logging.ERROR)
        self.uri = uri
        self.client = MlflowClient(tracking_uri=uri)
        e = self.client.get_experiment_by_name(experiment)
        self.exp_id = e.experiment_id if e is not None else \
            self.client.create_experiment(experiment, artifact_location=artifact_root)
        self.parent = None

    def start(self, name: str, parent: Optional[str] = None) -> str:
        tags = {"mlflow.parentRunId": parent} if parent else {}
        return self.client.create_run(self.exp_id, run_name=name, tags=tags).info.run_id

    def params(self, rid: str, d: dict) -> None:
        for k, v in d.items():
            self.client.log_param(rid, k, str(v)[:500])

    def metrics(self, rid: str, d: dict) -> None:
        for k, v in d.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                self.client.log_metric(rid, k, float(v))

    def artifact(self, rid: str, path: Path, sub: Optional[str] = None) -> None:
        self.client.log_artifact(rid, str(path), sub)

    def end(self, rid: str, ok: bool = True) -> None:
        self.client.set_terminated(rid, "FINISHED" if ok else "FAILED")


def _progress(enabled: bool, msg: str) -> None:
    if enabled:
        print(f"[nightly] {msg}", file=sys.stderr, flush=True)


def synthesize_candidate(cand: MinedCandidate | dict, schema: dict, K: int, synth_timeout_s: float,
                         verify_timeout_s: float, synth_fn: Optional[Callable] = None) -> Outcome:
    """Synthesize + verify one mined candidate. Never raises: a crash is an outcome."""
    from ..ir import lower, to_sql
    c = cand if isinstance(cand, MinedCandidate) else MinedCandidate.from_row(cand)
    out = Outcome(candidate=c.candidate_id, family=c.family, shape=c.shape, sql=c.example_sql,
                  join_kind=c.join_kind or None,
                  support=Support(c.templates, c.executions, c.cost_share, c.join_kind),
                  template_ids=list(c.template_ids))
    t0 = time.perf_counter()
    try:
        low = lower(c.example_sql, schema)
        if not low.fully_lowered:
            out.status, out.reason = OutcomeStatus.UNSUPPORTED, "; ".join(low.opaque_reasons)
            return out
        m = first_match(low.plan, finished=True)
        # Synthesize for the diamond itself (the part a rule replaces), not the whole
        # example query around it; its SQL is what the certificate re-checks.
        target = low.plan
        if m is not None:
            target = m.root
            out.sql = to_sql(m.root, keep_shared=True)   # a shared view stays ONE CTE
        if synth_fn is None:
            from ..synth.synthesizer import synthesize as synth_fn
        res = synth_fn(target, schema=schema, K=K, timeout_s=synth_timeout_s,
                       verify_timeout_s=verify_timeout_s)
        out.status, out.reason, out.streaming = OutcomeStatus(res.status), res.reason, res.streaming
        out.checked_by, out.candidates_tried = res.checked_by, res.candidates_tried
        out.verifier, out.counterexample = res.verifier, res.counterexample
        if res.program is not None:
            out.program, out.pseudo_code, out.memory = res.program.to_json(), res.program.pretty(), res.program.memory
        if m is not None:
            from ..rules_out.generalize import edges_from_shape, merge_edges
            # what the certificate covers is read off the certified SQL, exactly as
            # `superop verify` re-derives it; the σ/π/ρ as written in the log are kept
            # for the report
            again = first_match(lower(out.sql, schema).plan)
            if again is not None:
                point = families.get(again.family).point(again)
                out.edges = [list(e) for e in point.edges]
                out.edges_written = merge_edges(out.edges, edges_from_shape(c.shape, again.family))
                out.aggregates, out.branches = list(point.aggregates), point.branches
                out.agg_side, out.join_kind = point.agg_side, again.join_kind
    except Exception as e:  # one candidate never kills the run
        out.status, out.reason = OutcomeStatus.CRASHED, f"{type(e).__name__}: {e}"
        out.traceback = traceback.format_exc(limit=5)
    out.seconds = round(time.perf_counter() - t0, 3)
    return out


def _certificate(o: Outcome, schema: dict, K: int, verify_timeout_s: float) -> Optional[dict]:
    """The bounded certificate of one verified pattern, in superop.verify's self-contained
    form (it carries the sub-query SQL, schema and program, so `superop verify` re-checks
    it with nothing else)."""
    from ..synth.dsl import Program
    from ..verify.certificate import bounded_certificate
    from ..verify.result import Result
    v = o.verifier or {}
    if not o.verified or v.get("status") != "verified" or not o.program:
        return None
    r = Result(v["status"], method=v.get("method", "bounded"), K=v.get("K", K),
               seconds=float(v.get("seconds") or 0.0), reason=v.get("reason", ""))
    cert = bounded_certificate(o.sql, schema, Program.from_json(o.program), r,
                               timeout_ms=int(verify_timeout_s * 1000))
    if o.edges is not None:
        cert["covers"] = Covers.make(o.family, join_kinds=[o.join_kind] if o.join_kind else [],
                                     branches=o.branches, agg_side=o.agg_side, aggregates=o.aggregates,
                                     edges=o.edges).to_json()
    return cert


def _template_proofs(timeout_ms: int = 20000):
    """Unbounded (inductive) proofs of the template instances a rule's members need (the
    family says which: ``Family.proof_params``), each certificate with what it covers."""
    from ..verify.certificate import prove_and_certify

    def proofs(skeleton: tuple, members: list) -> list[dict]:
        fam = families.get(skeleton[0])
        aggs = sorted({a for m in members for a in m.aggregates})
        out = []
        for p in fam.proof_params(skeleton, aggs):
            try:
                cert = prove_and_certify(fam.name, timeout_ms=timeout_ms, **p)
            except Exception as e:  # a failing proof means "bounded only", never "verified"
                log.warning("template proof %s %s failed: %s", fam.name, p, e)
                return []
            cert["covers"] = fam.proof_covers(p).to_json()
            out.append(cert)
        return out
    return proofs


def run_nightly(log_path, out_dir, fmt: str = "auto", schema: Optional[dict] = None,
                k: int = DEFAULTS["k"], K: int = DEFAULTS["K"],
                synth_timeout_s: float = DEFAULTS["synth_timeout_s"],
                verify_timeout_s: float = DEFAULTS["verify_timeout_s"], spark=None,
                master: Optional[str] = None, column_map: Optional[dict] = None,
                progress: Optional[bool] = None, register: bool = True,
                max_candidates: Optional[int] = None, synth_fn: Optional[Callable] = None,
                experiment: str = "superop-nightly") -> NightlyResult:
    from ..cliutil import atomic_write_json, atomic_write_text
    from ..mining.job import run_mining, tracking_uri_for
    from ..rules_out.catalog import make_catalog, write_catalog
    from ..rules_out.generalize import Pattern, generalize
    from ..rules_out.report import to_markdown

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    show = sys.stderr.isatty() if progress is None else progress
    if schema is None:
        from ..workloads.loggen import mining_schema
        schema = mining_schema()
    uri = tracking_uri_for(out)
    art = None if os.environ.get("MLFLOW_TRACKING_URI") else (out.resolve() / "mlartifacts").as_uri()
    tr = _Tracker(uri, experiment, art)
    parent = tr.start(f"nightly-{Path(str(log_path)).name}")
    params = {"log": str(log_path), "format": fmt, "k": k, "K": K,
              "synth_timeout_s": synth_timeout_s, "verify_timeout_s": verify_timeout_s,
              "max_candidates": max_candidates}
    tr.params(parent, params)
    metrics: dict = {}
    ok = False
    try:
        # -- mine ---------------------------------------------------------------------
        t = time.perf_counter()
        _progress(show, "mine: reading and mining the log")
        child = tr.start("mine", parent)
        tr.params(child, {"log": str(log_path), "format": fmt, "k": k})
        mres = run_mining(log_path, out, fmt=fmt, schema=schema, k=k, spark=spark,
                          mlflow_run=False, column_map=column_map, progress=show, master=master)
        s = mres.summary
        m = {k2: s.get(k2) for k2 in ("queries_read", "malformed", "templates",
                                      "recurring_subplans", "candidates", "near_misses")}
        m["seconds"] = round(time.perf_counter() - t, 3)
        tr.metrics(child, m)
        for f in ("summary.json", "candidates.parquet", "near_misses.parquet"):
            tr.artifact(child, out / f, "mining")
        tr.end(child)
        metrics.update({f"mine_{a}": b for a, b in m.items()})
        metrics.update({a: b for a, b in m.items() if a != "seconds"})

        # -- synthesize + verify ------------------------------------------------------------
        rows = [MinedCandidate.from_row(r) for r in mres.candidates.to_dict("records")]
        if max_candidates is not None:
            rows = rows[:max_candidates]
        t = time.perf_counter()
        child = tr.start("synthesize", parent)
        tr.params(child, {"K": K, "synth_timeout_s": synth_timeout_s, "candidates": len(rows)})
        outcomes = []
        for i, row in enumerate(rows, 1):
            _progress(show, f"synthesize {i}/{len(rows)} {row.candidate_id} {row.shape}")
            outcomes.append(synthesize_candidate(row, schema, K, synth_timeout_s, verify_timeout_s, synth_fn))
        by: dict[str, int] = {}
        for o in outcomes:
            by[o.status.value] = by.get(o.status.value, 0) + 1
        synth_m = {"candidates": len(rows),
                   "synthesized": sum(1 for o in outcomes if o.program),
                   "no_program": by.get("no_program", 0), "crashed": by.get("crashed", 0),
                   "unsupported": by.get("unsupported", 0),
                   "seconds": round(time.perf_counter() - t, 3)}
        tr.metrics(child, synth_m)
        atomic_write_json(out / "synthesis.json", [o.to_json() for o in outcomes])
        tr.artifact(child, out / "synthesis.json")
        tr.end(child)
        child = tr.start("verify", parent)
        ver_m = {"verified": by.get("verified", 0), "refuted": by.get("refuted", 0),
                 "unknown": by.get("unknown", 0),
                 "seconds": round(sum((o.verifier or {}).get("seconds") or 0 for o in outcomes), 3)}
        tr.params(child, {"K": K, "verify_timeout_s": verify_timeout_s})
        tr.metrics(child, ver_m)
        tr.end(child)
        metrics.update(synthesized=synth_m["synthesized"], no_program=synth_m["no_program"],
                       crashed=synth_m["crashed"], verified=ver_m["verified"],
                       refuted=ver_m["refuted"], unknown=ver_m["unknown"],
                       synthesize_seconds=synth_m["seconds"], verify_seconds=ver_m["seconds"])

        # -- generalize ------------------------------------------------------------------------
        t = time.perf_counter()
        child = tr.start("generalize", parent)
        patterns = []
        for o in outcomes:
            if not o.verified or o.edges is None or o.support is None:
                continue
            patterns.append(Pattern(
                candidate_id=o.candidate, family=o.family, shape=o.shape, sql=o.sql,
                edges=o.edges, edges_written=o.edges_written, join_kind=o.join_kind,
                branches=o.branches, agg_side=Side(o.agg_side) if o.agg_side else None,
                aggregates=o.aggregates, memory=o.memory or "streaming", program=o.program,
                pseudo_code=o.pseudo_code, certificate=_certificate(o, schema, K, verify_timeout_s),
                distinct_queries=o.support.templates, executions=o.support.executions,
                cost_share=o.support.cost_share, template_ids=o.template_ids))
        rules, rejected = generalize(patterns, _template_proofs(int(verify_timeout_s * 1000)))
        gen_m = {"patterns": len(patterns), "rules": len(rules), "rejected": len(rejected),
                 "seconds": round(time.perf_counter() - t, 3)}
        tr.metrics(child, gen_m)
        tr.end(child)
        metrics.update(patterns=len(patterns), rules=len(rules), generalize_seconds=gen_m["seconds"])

        # -- export --------------------------------------------------------------------------
        t = time.perf_counter()
        child = tr.start("export", parent)
        source = {"log": str(log_path), "window": s.get("window"), "content_hash": content_hash(log_path)}
        catalog = make_catalog(rules, source=source)
        catalog_report = {
            "queries_read": s.get("queries_read"), "malformed": s.get("malformed"),
            "templates": s.get("templates"), "candidates": s.get("candidates"),
            "verified": ver_m["verified"], "refuted": ver_m["refuted"], "unknown": ver_m["unknown"],
            "no_program": synth_m["no_program"], "crashed": synth_m["crashed"], "rules": len(rules)}
        not_admitted = [{"candidate": o.candidate, "shape": o.shape,
                         "reason": f"{o.status.value}: {o.reason}"[:300]}
                        for o in outcomes if not o.verified]
        not_admitted += [{"candidate": r.pattern.candidate_id, "shape": r.pattern.shape, "reason": r.reason}
                         for r in rejected]
        staged = out / ".catalog.staged.json"
        written = write_catalog(staged, catalog, require_verified=True)
        report = to_markdown(dict(written, report=catalog_report, rejected=not_admitted))
        # Everything succeeded: only now replace the previous catalog and report.
        atomic_write_text(out / "report.md", report)
        os.replace(staged, out / "catalog.json")
        for f in ("catalog.json", "report.md", "synthesis.json"):
            tr.artifact(child, out / f, "catalog" if f == "catalog.json" else None)
        exp_m = {"rules": len(rules), "seconds": round(time.perf_counter() - t, 3)}
        tr.metrics(child, exp_m)
        tr.end(child)
        metrics["export_seconds"] = exp_m["seconds"]

        version = None
        if register:
            from ..rules_out.registry import register_catalog
            run = tr.client.get_run(child)
            version = register_catalog(child, run.info.artifact_uri.rstrip("/") + "/catalog", uri)
        tr.metrics(parent, {k2: v for k2, v in metrics.items() if isinstance(v, (int, float))})
        tr.artifact(parent, out / "catalog.json")
        tr.artifact(parent, out / "report.md")
        ok = True
        return NightlyResult(out, out / "catalog.json", out / "report.md", written, outcomes,
                             metrics, parent, uri, version)
    finally:
        tr.end(parent, ok)
        staged = out / ".catalog.staged.json"
        if staged.exists():
            staged.unlink()
