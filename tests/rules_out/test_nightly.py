"""The nightly job end to end on a small generated log: real Spark mining, real
synthesis + Z3, generalization, the catalog, MLflow parent/child runs and registry."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from superop.rules_out.catalog import load_catalog


@pytest.fixture(scope="module")
def small_log(tmp_path_factory) -> Path:
    from superop.workloads.loggen import write_log
    p = tmp_path_factory.mktemp("log") / "log.jsonl"
    write_log(p, n_queries=400, seed=3, truth_path=p.with_suffix(".truth.json"))
    return p


@pytest.fixture(scope="module")
def nightly(spark, small_log, tmp_path_factory):
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
    res = N.run_nightly(small_log, out, spark=spark, max_candidates=4, synth_timeout_s=40,
                        verify_timeout_s=15, synth_fn=flaky, progress=False)
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
    # every certificate in the catalog re-checks (`superop verify --catalog`)
    from superop.cli import main
    if cat["rules"]:
        assert main(["verify", "--catalog", str(res.catalog_path)]) == 0
        assert any(r["proof"] == "unbounded" for r in cat["rules"])


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
    assert checked == sum(1 for o in nightly.outcomes if o.verified and o.memory == "streaming")


def test_nightly_logs_parent_and_child_runs_and_registers_the_catalog(nightly):
    from mlflow.tracking import MlflowClient
    c = MlflowClient(tracking_uri=nightly.tracking_uri)
    parent = c.get_run(nightly.mlflow_run_id)
    assert parent.info.status == "FINISHED"
    assert parent.data.params["K"] == "4"
    kids = c.search_runs([parent.info.experiment_id],
                         filter_string=f"tags.mlflow.parentRunId = '{nightly.mlflow_run_id}'")
    names = sorted(r.info.run_name for r in kids)
    assert names == ["export", "generalize", "mine", "synthesize", "verify"]
    mine = next(r for r in kids if r.info.run_name == "mine")
    assert mine.data.metrics["queries_read"] == nightly.metrics["queries_read"] > 0
    assert nightly.registered_version is not None
    # production loads the catalog by a registry URI once it is promoted
    from superop.rules_out.registry import _TrackingUri, promote
    uri = promote(nightly.registered_version, nightly.tracking_uri)
    assert uri == "models:/superop-catalog@production"
    with _TrackingUri(nightly.tracking_uri):
        cat = load_catalog(uri)
    assert cat["checksum"] == json.loads(nightly.catalog_path.read_text())["checksum"]


def test_a_failed_stage_never_replaces_the_previous_catalog(spark, small_log, nightly, monkeypatch):
    from superop.rules_out import generalize as G
    from superop.pipeline import nightly as N
    before = nightly.catalog_path.read_bytes()

    def boom(*a, **k):
        raise RuntimeError("generalization exploded")
    monkeypatch.setattr(G, "generalize", boom)
    with pytest.raises(RuntimeError, match="exploded"):
        N.run_nightly(small_log, nightly.out_dir, spark=spark, max_candidates=0, progress=False,
                      register=False)
    assert nightly.catalog_path.read_bytes() == before
    assert not list(Path(nightly.out_dir).glob(".catalog.staged*"))
