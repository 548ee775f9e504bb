"""Smoke tests of the benchmark harness on tiny data (real Spark, the session fixture).

They prove the harness runs end to end (data, rewrite, equality, timing, metrics, JSON,
Markdown, PNG, MLflow) and that the equality check really rejects unequal results. They
assert nothing about speed: speed is measured by `superop bench`, not tested."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from superop.workloads.bench.harness import check_equal, plan_info, plan_info_from_text
from superop.workloads.bench.micro import run_micro, select_queries
from superop.workloads.bench.progress import Progress
from superop.workloads.bench.report import log_mlflow, machine_info, now, write_outputs
from superop.workloads.bench.rewriters import Rewrite, Rewriter, identity_rewriter


@pytest.fixture()
def mlflow_tmp(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    import mlflow
    mlflow.set_tracking_uri(uri)
    yield uri
    mlflow.set_tracking_uri(None)


@pytest.fixture()
def small_view(spark):
    rows = [(1, 10, None), (1, 20, "x"), (2, None, "y"), (None, 5, "y"), (2, 7, "y")]
    spark.createDataFrame(rows, "a INT, b INT, d STRING").createOrReplaceTempView("bench_t")
    return "bench_t"


def test_equality_accepts_equal_bags_in_any_order(spark, small_view):
    a = "SELECT a, SUM(b) AS s FROM bench_t GROUP BY a"
    b = "SELECT a, s FROM (SELECT a, SUM(b) AS s FROM bench_t GROUP BY a) ORDER BY a DESC"
    for limit in (0, 10_000):          # fingerprint only / exact + fingerprint
        assert check_equal(spark, a, b, exact_limit=limit).equal


@pytest.mark.parametrize("other, why", [
    # one row missing
    ("SELECT a, b FROM bench_t WHERE b IS NULL OR b <> 20", "row count"),
    # same rows, duplicates differ (bag, not set): 2 copies of one row vs 1 of another
    ("SELECT a, b FROM bench_t WHERE b <> 20 OR b IS NULL UNION ALL SELECT 1, 10", "hash"),
    # NULL moved to another column: (NULL, 5) vs (5, NULL) must not collide
    ("SELECT CASE WHEN a IS NULL THEN b ELSE a END AS a, CASE WHEN a IS NULL THEN NULL ELSE b END AS b "
     "FROM bench_t", "hash"),
    # a value changed
    ("SELECT a, CASE WHEN b = 7 THEN 8 ELSE b END AS b FROM bench_t", "hash"),
])
def test_equality_rejects_unequal_bags(spark, small_view, other, why):
    base = "SELECT a, b FROM bench_t"
    fp = check_equal(spark, base, other, exact_limit=0)      # the scalable path alone
    assert not fp.equal and fp.method == "fingerprint", fp
    ex = check_equal(spark, base, other)
    assert not ex.equal, ex


def test_equality_rejects_type_or_name_change(spark, small_view):
    r = check_equal(spark, "SELECT a, b FROM bench_t", "SELECT a, CAST(b AS BIGINT) AS b FROM bench_t")
    assert not r.equal and r.method == "schema"


def test_exchange_counting(spark, small_view):
    pi = plan_info(spark, "SELECT a, COUNT(*) FROM bench_t GROUP BY a "
                          "UNION ALL SELECT a, MAX(b) FROM bench_t GROUP BY a")
    assert pi.shuffle_exchanges == 2
    text = ("+- Exchange hashpartitioning(a#1, 4)\n   :- BroadcastExchange HashedRelationBroadcastMode\n"
            "      +- ReusedExchange [a#2], Exchange hashpartitioning(a#1, 4)\n")
    t = plan_info_from_text(text)
    assert (t.shuffle_exchanges, t.broadcast_exchanges, t.reused_exchanges) == (1, 1, 1)


def test_micro_end_to_end_identity(spark, tmp_path, mlflow_tmp):
    """The full pipeline with the identity rewriter: every step runs and writes its outputs."""
    qs = select_queries(["du_core", "mj_core"])
    doc = run_micro(spark, identity_rewriter(), rows=[2000], repeat=1, warmup=0,
                    data_dir=tmp_path / "data", queries=qs, progress=Progress(enabled=False))
    doc.update(started_at=now(), command="test", machine=machine_info(), params={"repeat": 1, "warmup": 0},
               rewriter={"name": "identity"})
    assert [r["name"] for r in doc["results"]] == ["du_core", "mj_core"]
    for r in doc["results"]:
        assert r["equal"]["equal"], r["equal"]
        assert r["equal"]["rows_left"] > 0
        for side in ("original", "rewritten", "limit"):
            t = r["timing"][side]
            assert t["runs"] == 1 and t["median_s"] > 0
            assert t["shuffle_write_bytes"] > 0 and t["shuffle_read_bytes"] > 0   # Spark's metrics
        assert r["plans"]["limit"]["shuffle_exchanges"] == 1
    du = doc["results"][0]
    assert du["plans"]["original"]["shuffle_exchanges"] == 2
    outs = write_outputs(doc, tmp_path / "out", "micro")
    assert json.loads(Path(outs["json"]).read_text())["results"][0]["name"] == "du_core"
    md = Path(outs["markdown"]).read_text()
    assert "du_core" in md and "| rows |" in md
    assert outs["plots"] and all(Path(p).stat().st_size > 1000 for p in outs["plots"])
    run_id = log_mlflow(doc, "micro", experiment="superop-bench-test")
    import mlflow
    run = mlflow.get_run(run_id)
    assert any(k.endswith("du_core.original_median_s") for k in run.data.metrics)


def test_micro_wrong_rewrite_is_caught_and_not_timed(spark, tmp_path):
    """A rewriter that returns wrong SQL: the bench reports it and does not time it."""
    def bad(sql: str) -> Rewrite:
        return Rewrite(sql=sql.replace("COUNT(*)", "COUNT(b)", 1), changed=True, applied=["bogus"])
    doc = run_micro(spark, Rewriter("bad", bad), rows=[2000], repeat=1, warmup=0,
                    data_dir=tmp_path / "data", queries=select_queries(["du_core"]),
                    progress=Progress(enabled=False))
    r = doc["results"][0]
    assert not r["equal"]["equal"] and r["timing"] is None
    assert doc["summary"]["2000"]["results_differ"] == ["du_core"]


def test_cli_bench_mine_not_available_is_one_line(capsys, tmp_path):
    from superop.cli import main
    root = Path(__file__).resolve().parents[2]
    if (root / "benchmarks" / "mining_bench.py").exists():
        pytest.skip("the mining benchmark exists in this checkout")
    assert main(["bench", "mine"]) == 2
    err = capsys.readouterr().err
    assert "not available" in err and len(err.strip().splitlines()) == 1
