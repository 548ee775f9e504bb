"""The mining job on the bundled log, asserted against the generator's ground truth."""
import json

import pandas as pd
import pytest

from superop.ir import lower
from superop.mining.detect import detect, skeleton
from superop.mining.job import CANDIDATE_COLUMNS, candidate_id, tracking_uri_for
from superop.workloads.loggen import mining_schema


def key(r):
    return (r["family"], r["join_kind"], r["shape"])


def test_finds_every_planted_variant_with_exact_support(bundled, truth):
    c = bundled.candidates
    found = {key(r): r for r in c.to_dict("records")}
    for v in truth["variants"]:
        r = found.get(key(v))
        assert r is not None, f"{v['variant_id']} {v['shape']} not found"
        assert (r["templates"], r["executions"]) == (v["templates"], v["executions"]), v
    # nothing else: no near-miss and no noise query became a candidate
    assert len(c) == len(truth["variants"])


def test_near_misses_are_reported_with_their_reason(bundled, truth):
    nm = bundled.near_misses
    for m in truth["near_misses"]:
        rows = nm[nm["reason"] == m["reason"]]
        assert len(rows), m["reason"]
        if m["reason"] == "different_inputs":     # noise joins add more of this reason
            assert rows["templates"].sum() >= m["templates"]
        else:
            assert (rows["templates"].sum(), rows["executions"].sum()) == \
                (m["templates"], m["executions"]), m["reason"]


def test_summary_counts(bundled, truth):
    s = json.loads((bundled.out_dir / "summary.json").read_text())
    assert s["queries_read"] == truth["lines"]
    assert s["malformed"] >= 1 and s["malformed"] < truth["junk_lines"]
    sk = s["skipped_by_reason"]
    assert sk["failed_statement"] == truth["failed_statements"]
    assert any(r.startswith("non_query:") for r in sk)
    assert sk.get("parse_error", 0) >= 1 and sk.get("unknown_table", 0) >= 1
    assert s["candidates"] == len(truth["variants"])
    assert s["recurring_subplans"] > 0 and s["templates"] > 100
    assert set(s["seconds_by_phase"]) >= {"read", "normalize", "analyze", "aggregate", "write"}
    assert 0 < s["candidate_cost_share"] <= 1
    assert s["queries_mined"] + sum(sk.values()) == s["queries_read"]


def test_candidates_parquet_is_complete_and_reloadable(bundled):
    c = pd.read_parquet(bundled.out_dir / "candidates.parquet")
    assert list(c.columns) == CANDIDATE_COLUMNS
    assert c["candidate_id"].is_unique
    schema = mining_schema()
    for r in c.to_dict("records"):
        assert r["candidate_id"] == candidate_id(r["family"], r["join_kind"], r["shape"])
        assert r["templates"] >= 2 and r["executions"] >= r["templates"]
        assert r["cost_share"] == pytest.approx(r["cost_ms"] / bundled.summary["total_cost_ms"])
        # the example SQL re-lowers to one candidate of the same variant (what synth will do
        # with it); to_sql may fold σ/π/ρ into SELECT blocks, so only the skeleton is kept
        fs = [(f.status, f.family, f.join_kind, f.shape) for f in
              detect(lower(r["example_sql"], schema).plan)]
        assert fs == [("candidate", r["family"], r["join_kind"], r["example_shape"])], \
            r["example_sql"]
        assert skeleton(r["example_shape"]) == r["skeleton"] == skeleton(r["shape"])
    rec = pd.read_parquet(bundled.out_dir / "recurring.parquet")
    assert (rec["templates"] >= 2).all() and rec["fingerprint"].is_unique


def test_candidate_sql_is_valid_on_spark(bundled, tables_session):
    for sql in bundled.candidates["example_sql"]:
        assert tables_session.sql(sql).schema.fields


def test_mlflow_run_logged_to_local_store(bundled, monkeypatch):
    from mlflow.tracking import MlflowClient
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    client = MlflowClient(tracking_uri=tracking_uri_for(bundled.out_dir))
    run = client.get_run(bundled.mlflow_run_id)
    assert run.info.status == "FINISHED"
    assert run.data.metrics["candidates"] == len(bundled.candidates)
    assert run.data.params["k"] == "2"
    arts = {a.path for a in client.list_artifacts(bundled.mlflow_run_id)}
    assert {"summary.json", "candidates.parquet"} <= arts


def test_mlflow_tracking_uri_is_honored(bundled, tmp_path, monkeypatch, seed_mlflow_db):
    """MLFLOW_TRACKING_URI wins over the default store in the output directory."""
    from mlflow.tracking import MlflowClient
    from superop.mining.job import _log_mlflow
    uri = seed_mlflow_db(tmp_path / "elsewhere.db")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    # an existing experiment (as on a tracking server) keeps artifacts out of the cwd
    MlflowClient(tracking_uri=uri).create_experiment(
        "superop-mining-uri-test", artifact_location=(tmp_path / "arts").as_uri())
    rid = _log_mlflow(bundled.out_dir, bundled.summary, bundled.candidates, "log.jsonl", "jsonl",
                      2, "superop-mining-uri-test")
    run = MlflowClient(tracking_uri=uri).get_run(rid)
    assert run.data.metrics["candidates"] == bundled.summary["candidates"]
    assert (tmp_path / "elsewhere.db").exists()
    assert {a.path for a in MlflowClient(tracking_uri=uri).list_artifacts(rid)} >= {
        "summary.json", "candidates.parquet"}
