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
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from .. import families
from ..families import Side, first_match
from .records import MinedCandidate, Outcome, OutcomeStatus, Support

log = logging.getLogger(__name__)

# k=None: candidates are selected by recurring cost (superop.mining.selection documents the
# threshold); an int selects the classic way, seen in >= k distinct templates
# min_bound: when Z3 times out at K rows, the candidate (and its certificate) is checked again
# at K-1, ... down to min_bound rows; the certificate records the bound it holds for, and a
# timeout at every bound stays "unknown"
DEFAULTS: dict = {"k": None, "K": 4, "min_bound": 3, "synth_timeout_s": 60.0, "verify_timeout_s": 20.0}


def timed_out(verifier: Optional[dict]) -> bool:
    """Z3 gave up (``unknown`` from a timeout), as opposed to a refutation or a refusal."""
    v = verifier or {}
    return v.get("status") == "unknown" and "timeout" in str(v.get("reason") or "")


def bounds(K: int, min_bound: int) -> list[int]:
    """The bounds tried, largest first: K, then down to min_bound after a timeout."""
    return list(range(K, min(K, max(1, min_bound)) - 1, -1))


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
    from ..mining.readers import source_table
    from ..storage import filesystem, local_path
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
        # example query around it; its SQL is what the certificate re-checks. A source that
        # is not a table (a join with dimensions, a union) is read as one table of its
        # columns: the program reads the source's rows, and a check for every such table
        # covers the rows the source produces — unless the family needs what the source
        # computes to recognize the sub-plan (a neighbour self-join's ranked view
        # establishes the row numbers its program assumes): then the sub-plan is kept whole
        # and the synthesizer's family route reads the source as a table under those
        # preconditions.
        target, tschema = low.plan, schema
        if m is not None:
            from ..families.kit.diamond import over_source, single_input_base
            from ..ir import Scan
            target = m.root
            src = None if isinstance(m.source, Scan) else over_source(m.root, m.source)
            again_src = None if src is None else first_match(src[0], finished=True)
            if src is None or again_src is None or again_src.family != m.family:
                # the family recognizes the sub-plan by what its source computes (a
                # ranked view's row numbers): cut below that instead, where the source's
                # chain of one-input operators meets the join/union/scan it reads
                base = single_input_base(m.source)
                src = None if base is m.source else over_source(m.root, base)
                again_src = None if src is None else first_match(src[0], finished=True)
            if src is not None and again_src is not None and again_src.family == m.family:
                target, tschema = src
                out.schema = tschema
            out.sql = to_sql(target)
            out.example_sql = c.example_sql     # what the runtime rewrites (certified)
        if synth_fn is None:
            from ..synth.synthesizer import synthesize as synth_fn
        res = synth_fn(target, schema=tschema, K=K, timeout_s=synth_timeout_s,
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
            again = first_match(lower(out.sql, tschema).plan)
            if again is not None:
                point = families.get(again.family).point(again)
                out.edges = [list(e) for e in point.edges]
                out.edges_written = merge_edges(out.edges, edges_from_shape(c.shape, again.family))
                out.aggregates, out.branches = list(point.aggregates), point.branches
                out.agg_side, out.join_kind = point.agg_side, again.join_kind
                out.variant = point.variant
                out.premises = list(point.premises)
    except Exception as e:  # one candidate never kills the run
        out.status, out.reason = OutcomeStatus.CRASHED, f"{type(e).__name__}: {e}"
        out.traceback = traceback.format_exc(limit=5)
    out.seconds = round(time.perf_counter() - t0, 3)
    return out


def synthesize_at_bounds(cand: MinedCandidate | dict, schema: dict, ks: list[int], synth_timeout_s: float,
                         verify_timeout_s: float, synth_fn: Optional[Callable] = None) -> Outcome:
    """:func:`synthesize_candidate` at the first bound of ``ks``; again at the next one only
    while Z3 timed out. The outcome says which bounds timed out; its verifier records the
    bound its verdict holds for."""
    given_up: list[int] = []
    o = synthesize_candidate(cand, schema, ks[0], synth_timeout_s, verify_timeout_s, synth_fn)
    for k in ks[1:]:
        if o.status is not OutcomeStatus.UNKNOWN or not timed_out(o.verifier):
            break
        given_up.append(int((o.verifier or {}).get("K") or k + 1))
        o = synthesize_candidate(cand, schema, k, synth_timeout_s, verify_timeout_s, synth_fn)
    if given_up:
        o.reason = f"{o.reason}; Z3 timed out at K={', '.join(map(str, given_up))} rows first"
    return o


def _certificate(o: Outcome, schema: dict, K: int, verify_timeout_s: float,
                 min_bound: int = DEFAULTS["min_bound"]) -> Optional[dict]:
    """The bounded certificate of one verified pattern: about the program the RUNTIME builds
    for it (``build_program`` of the matched diamond) at the bound the synthesis stage verified
    at, at most K (lower, down to ``min_bound``, only after a Z3 timeout), with how the SQL the runtime
    emits is covered (``emitted_sql``). The synthesizer's program and its verification stay
    in synthesis.json as the synthesis stage's evidence; they are not the certificate."""
    if not o.verified:
        return None
    # at most the bound the synthesis stage verified at; lower only after a Z3 timeout
    top = min(K, int((o.verifier or {}).get("K") or K))
    for k in bounds(top, min_bound):
        cert = _certificate_at(o, schema, k, verify_timeout_s)
        if cert is None or not timed_out(cert):
            return cert
    return cert


def _certificate_at(o: Outcome, schema: dict, K: int, verify_timeout_s: float) -> Optional[dict]:
    from ..verify.certificate import check_and_certify
    cert = None
    # the example query as mined (the runtime rewrites its match in place); else its match's
    # sub-query alone (over its source read as one table) when the example reads more than
    # the encoder models
    tries = [(o.example_sql, schema), (o.sql, o.schema or schema)]
    for sql, sch in tries:
        if not sql:
            continue
        try:
            cert = check_and_certify(sql, sch, K=K, timeout_ms=int(verify_timeout_s * 1000))
        except Exception as e:  # e.g. the template refuses the pattern: nothing the runtime would run
            log.warning("no certificate for %s: %s", o.candidate, e)
            continue
        if cert["status"] != "unsupported":
            return cert
    return cert


def pattern_of(o: Outcome, schema: dict, K: int, verify_timeout_s: float,
               min_bound: int = DEFAULTS["min_bound"]):
    """The generalization stage's pattern of one verified outcome, with its certificate
    (None for an outcome that is not verified or has no recorded point)."""
    from ..rules_out.generalize import Pattern
    if not o.verified or o.edges is None or o.support is None:
        return None
    return Pattern(
        candidate_id=o.candidate, family=o.family, shape=o.shape, sql=o.sql,
        edges=o.edges, edges_written=o.edges_written, join_kind=o.join_kind,
        branches=o.branches, agg_side=Side(o.agg_side) if o.agg_side else None,
        aggregates=o.aggregates, variant=o.variant, premises=list(o.premises), memory=o.memory or "streaming",
        program=o.program, pseudo_code=o.pseudo_code,
        certificate=_certificate(o, schema, K, verify_timeout_s, min_bound),
        distinct_queries=o.support.templates, executions=o.support.executions,
        cost_share=o.support.cost_share, template_ids=o.template_ids)


def template_proofs(timeout_ms: int = 20000):
    """Unbounded (inductive) proofs of the template instances a rule's members need (the
    family says which: ``Family.proofs_for``), each certificate with what its instance
    covers."""
    from ..verify.certificate import prove_and_certify

    def proofs(skeleton: tuple, members: list) -> list[dict]:
        fam = families.get(skeleton[0])
        aggs = sorted({a for m in members for a in m.aggregates})
        out = []
        for inst in fam.proofs_for(skeleton, aggs):
            try:
                out.append(prove_and_certify(inst, timeout_ms=timeout_ms))
            except Exception as e:  # a failing proof means "bounded only", never "verified"
                log.warning("template proof %s failed: %s", inst.name, e)
                return []
        return out
    return proofs


def run_nightly(log_path, out_dir, fmt: str = "auto", schema: Optional[dict] = None,
                k: Optional[int] = DEFAULTS["k"], K: int = DEFAULTS["K"],
                min_bound: int = DEFAULTS["min_bound"], synth_timeout_s: float = DEFAULTS["synth_timeout_s"],
                verify_timeout_s: float = DEFAULTS["verify_timeout_s"], spark=None,
                master: Optional[str] = None, column_map: Optional[dict] = None,
                progress: Optional[bool] = None, register: bool = True,
                max_candidates: Optional[int] = None, synth_fn: Optional[Callable] = None,
                experiment: str = "superop-nightly", min_cost_share: Optional[float] = None,
                min_executions: Optional[int] = None, include_failed: bool = False,
                share_window_s: Optional[float] = 300.0,
                share_max_windows: int = 20, share_budget_s: Optional[float] = 60.0) -> NightlyResult:
    """Run the nightly job on ``log_path`` into ``out_dir``. Selection of the mined candidates
    (:class:`superop.mining.selection.Selection`): by recurring cost unless ``k`` is set;
    ``min_cost_share`` / ``min_executions`` default to the documented thresholds. ``share_window_s``: the log
    windows in which work sharing across queries (``superop.share``) would have paid are
    reported (None: not computed); ``share_max_windows`` (the largest windows are kept) and
    ``share_budget_s`` (no new window is planned after it) bound that step's work."""
    from ..mining.job import run_mining
    from ..mining.selection import MIN_COST_SHARE, MIN_EXECUTIONS, Selection
    from ..storage import OutputSet, local_path
    from ..tracking import Tracker, store_for
    from ..rules_out.catalog import make_catalog, write_catalog
    from ..rules_out.generalize import generalize
    from ..rules_out.report import to_html, to_markdown

    local = local_path(str(out_dir))
    out = Path(local) if local is not None else str(out_dir)
    show = sys.stderr.isatty() if progress is None else progress
    _T0[0] = time.perf_counter()
    if schema is None:
        from ..workloads.loggen import mining_schema
        schema = mining_schema()
    if spark is None:
        from ..sparkutil import get_spark
        spark = get_spark(app_name="superop-nightly", master=master)
    # every output of this run is staged and appears in out_dir together, at the very end
    outputs = OutputSet(str(out_dir), spark)
    staged = outputs.staged_dir
    try:
        tr = Tracker(store_for(out_dir), experiment)
    except BaseException:
        outputs.discard()
        raise
    uri = tr.uri
    if min_cost_share is None:
        min_cost_share = MIN_COST_SHARE
    if min_executions is None:
        min_executions = MIN_EXECUTIONS
    selection = {"k": k, "min_cost_share": min_cost_share, "min_executions": min_executions}
    params = {"log": str(log_path), "format": fmt, **selection, "K": K, "min_bound": min_bound,
              "synth_timeout_s": synth_timeout_s, "verify_timeout_s": verify_timeout_s,
              "max_candidates": max_candidates}
    metrics: dict = {}
    ok = False
    parent = None
    try:
        parent = tr.start(f"nightly-{Path(str(log_path).rstrip('/')).name}")
        tr.params(parent, params)
        log_hash = content_hash(log_path, spark)
        tr.dataset(parent, digest=log_hash, columns=_log_columns(), **_dataset_of(log_path))
        # -- mine ---------------------------------------------------------------------
        t = time.perf_counter()
        _progress(show, "mine: reading and mining the log")
        child = tr.start("mine", parent)
        tr.params(child, {"log": str(log_path), "format": fmt, **selection})
        tr.dataset(child, digest=log_hash, columns=_log_columns(), **_dataset_of(log_path))
        mres = run_mining(log_path, out, fmt=fmt, schema=schema, k=k, spark=spark,
                          mlflow_run=False, column_map=column_map, progress=show, master=master,
                          outputs=outputs, min_cost_share=min_cost_share, min_executions=min_executions,
                          include_failed=include_failed)
        s = mres.summary
        m = {k2: s.get(k2) for k2 in ("queries_read", "malformed", "templates",
                                      "recurring_subplans", "candidates", "near_misses")}
        # how the candidates recur: one template run many times, many templates, or both
        m.update({f"candidates_{r}": n for r, n in s.get("candidates_by_route", {}).items()})
        m["seconds"] = round(time.perf_counter() - t, 3)
        m["unreadable_files"] = sum((s.get("files") or {}).get("unreadable", {}).values())
        _progress(show, f"mine: {m['queries_read']} queries read ({m['malformed']} malformed, "
                        f"{m['unreadable_files']} unreadable files), {m['candidates']} candidates, "
                        f"{m['near_misses']} near-misses ({m['seconds']:.1f} s)")
        tr.metrics(child, m)
        for f in ("summary.json", "candidates.parquet", "near_misses.parquet"):
            tr.artifact(child, staged() / f, "mining")
        tr.end(child)
        metrics.update({f"mine_{a}": b for a, b in m.items()})
        metrics.update({a: b for a, b in m.items() if a != "seconds"})

        # -- sharing opportunities (advisory: a failure is reported, never aborts) ------------
        sharing = None
        if share_window_s is not None:
            from ..share.opportunities import log_sharing_report
            from ..sparkutil import get_spark
            t = time.perf_counter()
            _progress(show, "share: sharing opportunities in the log's windows")
            child = tr.start("share", parent)
            tr.params(child, {"window_s": share_window_s, "max_windows": share_max_windows,
                              "budget_s": share_budget_s})
            sharing = log_sharing_report(spark or get_spark(app_name="superop-nightly", master=master),
                                         str(log_path), window_seconds=share_window_s, fmt=fmt,
                                         column_map=column_map, schema=schema,
                                         timeout_ms=int(verify_timeout_s * 1000), max_windows=share_max_windows,
                                         time_budget_s=share_budget_s)
            if sharing.error:
                log.warning("sharing opportunities not computed: %s", sharing.error)
            share_m = {"windows": sharing.windows, "windows_examined": sharing.examined,
                       "opportunities": len(sharing.opportunities), "paying": len(sharing.paying),
                       "seconds": round(time.perf_counter() - t, 3)}
            tr.metrics(child, share_m)
            tr.end(child, not sharing.error)
            metrics.update(sharing_windows=sharing.windows, sharing_paying=len(sharing.paying),
                           share_seconds=share_m["seconds"])

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
            outcomes.append(synthesize_at_bounds(row, schema, bounds(K, min_bound), synth_timeout_s,
                                                 verify_timeout_s, synth_fn))
        by: dict[str, int] = {}
        for o in outcomes:
            by[o.status.value] = by.get(o.status.value, 0) + 1
        synth_m = {"candidates": len(rows),
                   "synthesized": sum(1 for o in outcomes if o.program),
                   "no_program": by.get("no_program", 0), "crashed": by.get("crashed", 0),
                   "unsupported": by.get("unsupported", 0),
                   "seconds": round(time.perf_counter() - t, 3)}
        _progress(show, f"synthesize + verify: {synth_m['synthesized']}/{len(rows)} programs, "
                        f"{by.get('verified', 0)} verified, {by.get('refuted', 0)} refuted, "
                        f"{by.get('unknown', 0)} unknown ({synth_m['seconds']:.1f} s)")
        tr.metrics(child, synth_m)
        outputs.write_json("synthesis.json", [o.to_json() for o in outcomes])
        tr.artifact(child, staged() / "synthesis.json")
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
        patterns = [p for o in outcomes
                    if (p := pattern_of(o, schema, K, verify_timeout_s, min_bound)) is not None]
        rules, rejected = generalize(patterns, template_proofs(int(verify_timeout_s * 1000)))
        gen_m = {"patterns": len(patterns), "rules": len(rules), "rejected": len(rejected),
                 "seconds": round(time.perf_counter() - t, 3)}
        _progress(show, f"generalize: {len(patterns)} patterns -> {len(rules)} rules, "
                        f"{len(rejected)} rejected ({gen_m['seconds']:.1f} s)")
        tr.metrics(child, gen_m)
        tr.end(child)
        metrics.update(patterns=len(patterns), rules=len(rules), generalize_seconds=gen_m["seconds"])

        # -- export --------------------------------------------------------------------------
        t = time.perf_counter()
        child = tr.start("export", parent)
        source = {"log": str(log_path), "window": s.get("window"), "content_hash": log_hash}
        catalog = make_catalog(rules, source=source)
        if sharing is not None:
            catalog["sharing_opportunities"] = sharing.to_json()
        catalog_report = {
            "queries_read": s.get("queries_read"), "malformed": s.get("malformed"),
            "templates": s.get("templates"), "candidates": s.get("candidates"),
            "selection": Selection(k, min_cost_share, min_executions).describe(),
            **{f"candidates_{r}": n for r, n in (s.get("candidates_by_route") or {}).items()},
            "verified": ver_m["verified"], "refuted": ver_m["refuted"], "unknown": ver_m["unknown"],
            "no_program": synth_m["no_program"], "crashed": synth_m["crashed"], "rules": len(rules)}
        if sharing is not None:
            catalog_report["sharing_windows_paying"] = len(sharing.paying)
        not_admitted = [{"candidate": o.candidate, "shape": o.shape,
                         "reason": f"{o.status.value}: {o.reason}"[:300]}
                        for o in outcomes if not o.verified]
        not_admitted += [{"candidate": r.pattern.candidate_id, "shape": r.pattern.shape, "reason": r.reason}
                         for r in rejected]
        cat_file = staged() / "catalog.json"
        written = write_catalog(cat_file, catalog, require_verified=True)
        outputs.write_bytes("catalog.json", cat_file.read_bytes())
        full = dict(written, report=catalog_report, rejected=not_admitted)
        outputs.write_text("report.md", to_markdown(full))
        outputs.write_text("report.html", to_html(full))
        for f in ("catalog.json", "report.md", "report.html", "synthesis.json"):
            tr.artifact(child, staged() / f, "catalog" if f == "catalog.json" else None)
        # the catalog as an MLflow pyfunc model of this run (and a registered version)
        from ..rules_out.registry import log_catalog_model, register_catalog_model
        model = log_catalog_model(cat_file, schema, {
            "report_md": str(staged() / "report.md"), "report_html": str(staged() / "report.html")})
        exp_m = {"rules": len(rules), "seconds": round(time.perf_counter() - t, 3)}
        tr.metrics(child, exp_m)
        tr.end(child)
        metrics["export_seconds"] = exp_m["seconds"]

        version = None
        if register:
            version = register_catalog_model(model.model_uri, written, uri, run_id=parent)
        tr.metrics(parent, {k2: v for k2, v in metrics.items() if isinstance(v, (int, float))})
        tr.artifact(parent, staged() / "report.html")
        tr.artifact(parent, staged() / "report.md")
        # Everything succeeded: only now does the new output set replace the previous one.
        outputs.commit(last=["catalog.json"])
        _progress(show, f"export: catalog of {len(rules)} rules written to {out_dir}"
                        + (f", registered as version {version}" if version else ""))
        ok = True
        final = (lambda n: out / n) if isinstance(out, Path) else outputs.final
        return NightlyResult(out, final("catalog.json"), final("report.md"), written, outcomes,
                             metrics, parent, uri, version)
    finally:
        if parent is not None:
            tr.end(parent, ok)
        else:
            tr.close()
        outputs.discard()


def _dataset_of(log_path) -> dict:
    from ..mining.readers import source_table
    table = source_table(str(log_path))
    if table:
        return {"name": table, "table": table}
    return {"name": Path(str(log_path).rstrip("/")).name or str(log_path), "path": str(log_path)}


def _log_columns():
    from ..mining.readers import LOG_COLUMNS
    return LOG_COLUMNS
