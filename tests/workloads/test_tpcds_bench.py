"""`superop bench tpcds` end to end at the smallest scale factor (no speed is asserted)."""
from __future__ import annotations

import json

from superop.workloads.bench.tpcds_bench import run_tpcds, tpcds_markdown


def test_run_tpcds_records_plans_equality_and_timings(tpcds_session, tpcds_dir):
    from superop.workloads.bench.rewriters import identity_rewriter
    doc = run_tpcds(tpcds_session, identity_rewriter, queries=["q3", "q96"], repeat=1,
                    warmup=0, tpcds_dir=tpcds_dir, sf=0.01)
    s = doc["summary"]
    assert (s["queries"], s["rewritten"], s["errors"]) == (2, 0, [])
    for r in doc["results"]:
        assert r["timing"]["original"]["median_s"] > 0 and "rewritten" not in r["timing"]
        assert r["plans"]["original"]["shuffle_exchanges"] >= 1
    md = tpcds_markdown(dict(doc, params={"sf": 0.01}))
    assert "| q96 | none | n/a (unchanged) |" in md


def test_bench_tpcds_command(tmp_path, spark, monkeypatch):
    from superop.cli import main
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    rc = main(["bench", "tpcds", "--sf", "0.01", "--queries", "q96", "--repeat", "1",
               "--warmup", "0", "--out", str(tmp_path / "out"), "--data-dir",
               str(tmp_path / "data"), "--no-mlflow", "--quiet",
               # the hand-built catalog: without --catalog the bench mines the bundled log first
               "--catalog", "bench-default"])
    assert rc == 0
    doc = json.loads((tmp_path / "out" / "tpcds.json").read_text())
    assert [r["query"] for r in doc["results"]] == ["q96"]
    assert doc["results"][0]["rewrite"]["error"] is None
    assert (tmp_path / "data" / "tpcds_sf0.01" / ".complete").exists()
