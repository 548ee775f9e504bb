"""The nightly job end to end on a small generated log: real Spark mining, real
synthesis + Z3, generalization, the catalog, MLflow parent/child runs and registry."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from superop import families
from superop.rules_out.catalog import load_catalog


@pytest.fixture(scope="module")
def small_log(tmp_path_factory) -> Path:
    from superop.workloads.loggen import write_log
    p = tmp_path_factory.mktemp("log") / "log.jsonl"
    write_log(p, n_queries=400, seed=3, truth_path=p.with_suffix(".truth.json"))
    return p


@pytest.fixture(scope="module")
def nightly(spark, small_log, tmp_path_factory, seed_mlflow_db):
    """One run where candidate #2 crashes the synthesizer (injected) and the rest are real."""
    from superop.pipeline import nightly as N
    from superop.synth.synthesizer import synthesize
    calls = []

    def flaky(plan, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("injected synthesizer crash")
        return synthesize(plan, **kw)

    out = tmp_path_factory.mktemp("nightly")
    seed_mlflow_db(out / "mlflow.db")     # the job's default store, already migrated
    res = N.run_nightly(small_log, out, spark=spark, max_candidates=4, synth_timeout_s=40,
                        verify_timeout_s=15, synth_fn=flaky, progress=False,
                        # the sharing step runs on one window (tests/share covers the rest)
                        share_max_windows=1, share_budget_s=20)
    return res


def test_nightly_writes_catalog_report_and_marks_the_crash(nightly):
    res = nightly
    assert res.catalog_path.is_file() and res.report_path.is_file()
    cat = load_catalog(res.catalog_path)           # schema, checksum, all certificates verified
    statuses = [o.status for o in res.outcomes]
    assert len(statuses) == 4 and statuses[1] == "crashed"
    assert "injected synthesizer crash" in res.outcomes[1].reason
    # the other candidates were really synthesized (some verified, the rest honest statuses)
    assert all(s in ("verified", "refuted", "unknown", "no_program", "unsupported")
               for i, s in enumerate(statuses) if i != 1)
    assert res.metrics["crashed"] == 1
    assert res.metrics["rules"] == len(cat["rules"])
    verified = [o for o in res.outcomes if o.verified]
    assert res.metrics["verified"] == len(verified)
    for r in cat["rules"]:
        assert r["support"]["patterns"] >= 1 and all(c["status"] == "verified" for c in r["certificates"])
    md = res.report_path.read_text()
    assert "Patterns not admitted" in md and "crashed" in md
    # the report's near-misses come from the mined log: the recurring ones of near_misses.parquet
    import pandas as pd
    near = pd.read_parquet(res.out_dir / "near_misses.parquet")
    assert cat["near_misses"]["found"] == len(near) > 0
    assert {(i["family"], i["reason"]) for i in cat["near_misses"]["items"]} <= set(zip(near.family, near.reason))
    assert "## Near-misses: what to change in the query" in md
    # each rule's example before/after, planned by Spark: fewer shuffles after
    for r in cat["rules"]:
        ex = cat["rule_examples"][r["id"]]
        assert ex["exchanges_after"] < ex["exchanges_before"], ex
    assert "data:image/svg+xml;base64," in (res.out_dir / "report.html").read_text()
    # every certificate in the catalog re-checks (`superop verify --catalog`)
    from superop.cli import main
    if cat["rules"]:
        assert main(["verify", "--catalog", str(res.catalog_path)]) == 0
        assert any(r["proof"] == "unbounded" for r in cat["rules"])


def test_every_rewrite_of_the_mined_catalog_is_covered_by_a_proof(nightly):
    """The mined catalog applied to the queries it was mined from: every applied match is
    covered by a proof of its instance (an unbounded template proof, or the bounded
    certificate the nightly job made of that instance) and the explanation names it; no
    admitted instance is left uncovered."""
    from superop.rewrite.rewriter import Rewriter, rewrite_structural
    from superop.workloads.loggen import mining_schema
    cat = json.loads(nightly.catalog_path.read_text())
    rw = Rewriter(cat)
    applied = 0
    in_rules = {c["candidate"] for r in cat["rules"] for c in r["certificates"] if "candidate" in c}
    for o in nightly.outcomes:
        if o.candidate not in in_rules or not o.example_sql:
            continue
        r = rewrite_structural(rw, o.example_sql, mining_schema())
        assert r.changed, (o.candidate, r.explanation)
        applied += len(r.applied)
        assert r.explanation.count("covered by the ") == len(r.applied), r.explanation
    assert applied >= 1 and rw.uncovered_instances() == []


def test_rule_support_matches_the_generators_ground_truth(nightly, small_log):
    """A rule's support is the sum of its member patterns' support, and each pattern's
    support is the planted variant's (distinct templates, executions) from the generator."""
    truth = json.loads(small_log.with_suffix(".truth.json").read_text())
    planted = {(v["family"], v["join_kind"] or "", v["shape"]): v for v in truth["variants"]}
    by_candidate = {o.candidate: o for o in nightly.outcomes}
    cat = json.loads(nightly.catalog_path.read_text())
    checked = 0
    for r in cat["rules"]:
        members = [c["candidate"] for c in r["certificates"] if "candidate" in c]
        assert len(members) == r["support"]["patterns"] >= 1
        want_t = want_e = 0
        for m in members:
            o = by_candidate[m]
            v = planted[(o.family, o.support.join_kind_mined, o.shape)]
            assert (o.support.templates, o.support.executions) == (v["templates"], v["executions"])
            want_t += v["templates"]
            want_e += v["executions"]
            checked += 1
        assert r["support"]["executions"] == want_e
        assert r["support"]["distinct_queries"] == want_t
    # every verified outcome whose memory its family's rules take (WinMagic's window buffers
    # a partition by design; Min & Join's rules take streaming programs only)
    assert checked == sum(1 for o in nightly.outcomes
                          if o.verified and o.memory in families.get(o.family).rule_memory)


def test_nightly_logs_parent_and_child_runs_and_registers_the_catalog(nightly):
    from mlflow.tracking import MlflowClient
    c = MlflowClient(tracking_uri=nightly.tracking_uri, registry_uri=nightly.tracking_uri)
    parent = c.get_run(nightly.mlflow_run_id)
    assert parent.info.status == "FINISHED"
    assert parent.data.params["K"] == "4"
    # fluent runs carry MLflow's standard tags (and the code version)
    assert parent.data.tags["mlflow.source.type"] == "LOCAL"
    assert parent.data.tags["mlflow.user"] and parent.data.tags["superop.version"]
    # the mined log is the run's input dataset
    ds = [i.dataset for i in parent.inputs.dataset_inputs]
    assert len(ds) == 1 and ds[0].source_type == "spark"
    assert ds[0].digest in json.loads(nightly.catalog_path.read_text())["source"]["content_hash"]
    # default selection: by recurring cost, not by k distinct templates
    assert (parent.data.params["k"], parent.data.params["min_cost_share"]) == ("None", "0.005")
    kids = c.search_runs([parent.info.experiment_id],
                         filter_string=f"tags.mlflow.parentRunId = '{nightly.mlflow_run_id}'")
    names = sorted(r.info.run_name for r in kids)
    assert names == ["export", "generalize", "mine", "share", "synthesize", "verify"]
    assert all(r.info.status == "FINISHED" for r in kids)
    mine = next(r for r in kids if r.info.run_name == "mine")
    assert mine.data.metrics["queries_read"] == nightly.metrics["queries_read"] > 0
    # the HTML report is an artifact the MLflow UI renders
    assert "report.html" in {a.path for a in c.list_artifacts(nightly.mlflow_run_id)}
    routes = ("single_template", "multi_template", "both")
    assert sum(mine.data.metrics[f"candidates_{r}"] for r in routes) == \
        mine.data.metrics["candidates"]
    assert nightly.registered_version is not None
    mv = c.get_model_version("superop-catalog", nightly.registered_version)
    cat = json.loads(nightly.catalog_path.read_text())
    assert mv.tags["superop.checksum"] == cat["checksum"]
    assert mv.tags["superop.rule_count"] == str(len(cat["rules"]))
    assert mv.tags["superop.verification"] in ("verified", "empty")
    assert not mv.source.startswith(("/", "file:"))          # no absolute local path


def test_promoted_catalog_loads_as_pyfunc_model_and_in_the_runtime(nightly, spark, tmp_path):
    """Register (done by the nightly job), promote, then load models:/...@production with
    MLflow itself and with the runtime — from a copy of the store in another directory."""
    import shutil

    import mlflow
    import pandas as pd

    from superop.rules_out.registry import promote
    from superop.runtime import SuperOpSession
    uri = promote(nightly.registered_version, nightly.tracking_uri)
    assert uri == "models:/superop-catalog@production"
    cat = json.loads(nightly.catalog_path.read_text())
    # moving the store must not break loading: artifact locations are store-relative
    moved = tmp_path / "moved"
    shutil.copytree(nightly.out_dir, moved)
    from superop.tracking import tracking_uri
    store = tracking_uri(f"sqlite:///{moved}/mlflow.db").__enter__()
    # ... and the original artifacts are out of reach while the copy is read
    orig, away = Path(nightly.out_dir) / "mlartifacts", Path(nightly.out_dir) / "mlartifacts.away"
    orig.rename(away)
    try:
        model = mlflow.pyfunc.load_model(uri)
        assert model.metadata.signature is not None
        examples = [e["sql"] for r in cat["rules"]
                    for e in (r["template"].get("parameters") or {}).get("examples", [])]
        queries = examples[:2] + ["SELECT a FROM ops", "SELECT nope FROM no_such_table"]
        out = model.predict(queries)
        assert list(out.columns) == ["sql", "changed", "applied", "explanation", "error"]
        assert len(out) == len(queries)
        # a query no rule covers, and one the schema does not know, come back unchanged
        assert out.iloc[-2]["sql"] == "SELECT a FROM ops" and not out.iloc[-2]["changed"]
        assert out.iloc[-1]["sql"] == queries[-1] and not out.iloc[-1]["changed"]
        assert "no_such_table" in out.iloc[-1]["error"]
        if examples:          # every rule's own example is rewritten by a rule of the catalog
            rule_ids = {r["id"] for r in cat["rules"]}
            for i in range(len(examples[:2])):
                assert out.iloc[i]["changed"], out.iloc[i]["explanation"]
                assert set(out.iloc[i]["applied"]) <= rule_ids
        # a DataFrame input works the same
        df_out = model.predict(pd.DataFrame({"sql": queries[-2:]}))
        assert list(df_out["sql"]) == queries[-2:]
        so = SuperOpSession(spark, uri)
        assert so.catalog["checksum"] == cat["checksum"]
    finally:
        away.rename(orig)
        store.__exit__(None, None, None)


def test_a_failed_stage_never_replaces_the_previous_catalog(spark, small_log, nightly, tmp_path,
                                                            monkeypatch):
    """A run that dies after mining (here: in generalization), with its output directory given
    as a file: URI (written through Hadoop's FileSystem, like s3a:/hdfs:), leaves every
    previous output as it was: no new summary.json or parquet beside the previous catalog."""
    from superop.pipeline import nightly as N
    out = Path(nightly.out_dir)
    names = ("catalog.json", "report.md", "report.html", "summary.json", "synthesis.json",
             "candidates.parquet", "near_misses.parquet", "recurring.parquet")
    before = {n: (out / n).read_bytes() for n in names}
    # another (small) log: mining writes outputs that differ from the previous ones
    tiny = tmp_path / "tiny.jsonl"
    tiny.write_text("".join(small_log.read_text().splitlines(keepends=True)[:12]))

    def boom(*a, **k):
        raise RuntimeError("generalization exploded")
    monkeypatch.setattr(N, "generalize", boom)
    with pytest.raises(RuntimeError, match="exploded"):
        N.run_nightly(tiny, out.as_uri(), spark=spark, max_candidates=0, progress=False,
                      register=False, share_window_s=None)
    assert {n: (out / n).read_bytes() for n in names} == before
    assert not [p for p in out.iterdir() if p.name.startswith((".staging-", ".catalog.staged"))]
