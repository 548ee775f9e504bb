"""The mining job on the bundled log, asserted against the generator's ground truth."""
import json

import pandas as pd
import pytest

from superop.families import names
from superop.ir import lower
from superop.mining.detect import detect, skeleton
from superop.mining.job import CANDIDATE_COLUMNS, candidate_id, tracking_uri_for
from superop.mining.selection import Selection
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
    # every registered family is planted, and mining finds candidates of each
    assert set(c["family"]) == {v["family"] for v in truth["variants"]} == set(names())


def test_dashboards_are_candidates_by_cost_and_not_by_k(bundled, truth):
    """The planted dashboards (one template each, run many times with new literals) recur by
    cost only: the default finds every one, the classic k=2 support rule keeps none."""
    dash = [v for v in truth["variants"] if v["dashboard"]]
    assert {v["family"] for v in dash} == {"DU", "DJ", "MJ"}
    found = {key(r): r for r in bundled.candidates.to_dict("records")}
    for v in dash:
        r = found[key(v)]
        assert (r["templates"], r["executions"]) == (1, truth["generator"]["dashboard_runs"])
        assert r["route"] == "single_template"
        assert r["cost_share"] >= Selection().min_cost_share
        assert not Selection(k=2).keeps(r["templates"], r["executions"], r["cost_share"])
    # every other planted variant comes from >= 2 templates, so k=2 would keep it as well
    others = [r for r in found.values() if key(r) not in {key(v) for v in dash}]
    assert len(others) == len(truth["variants"]) - len(dash)
    assert all(Selection(k=2).keeps(r["templates"], r["executions"], r["cost_share"])
               for r in others)
    s = bundled.summary
    assert s["selection"]["mode"] == "cost"
    assert s["candidates_by_route"]["single_template"] == len(dash)
    assert sum(s["candidates_by_route"].values()) == s["candidates"]


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
        # by cost: a dashboard is one template run many times
        assert r["executions"] >= max(2, r["templates"]) and r["templates"] >= 1
        assert (r["route"] == "single_template") == (r["templates"] == 1)
        assert r["cost_share"] == pytest.approx(r["cost_ms"] / bundled.summary["total_cost_ms"])
        # the example SQL re-lowers to one candidate of the same variant (what synth will do
        # with it); to_sql may fold σ/π/ρ into SELECT blocks, so only the skeleton is kept
        fs = [(f.status, f.family, f.join_kind, f.shape) for f in
              detect(lower(r["example_sql"], schema).plan)]
        assert fs == [("candidate", r["family"], r["join_kind"], r["example_shape"])], \
            r["example_sql"]
        assert skeleton(r["example_shape"]) == r["skeleton"] == skeleton(r["shape"])
    rec = pd.read_parquet(bundled.out_dir / "recurring.parquet")
    # recurring by cost (the default): >= 2 runs and >= 0.5 % of the log's cost, from one
    # template or many
    total = bundled.summary["total_cost_ms"]
    assert (rec["executions"] >= 2).all() and (rec["cost_ms"] >= 0.005 * total).all()
    assert (rec["templates"] == 1).any() and rec["fingerprint"].is_unique


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
    assert (run.data.params["k"], run.data.params["selection"]) == ("None", "cost")
    assert run.data.metrics["candidates_route_single_template"] == \
        bundled.summary["candidates_by_route"]["single_template"] == 3
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
