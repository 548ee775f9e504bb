"""Smoke tests of the benchmark harness on tiny data (real Spark, the session fixture).

They prove the harness runs end to end (data, rewrite, equality, timing, metrics, JSON,
Markdown, PNG, MLflow) and that the equality check really rejects unequal results. They
assert nothing about speed: speed is measured by `superop bench`, not tested."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from superop.bench.harness import check_equal, plan_info, plan_info_from_text
from superop.bench.micro import run_micro, select_queries
from superop.bench.progress import Progress
from superop.bench.report import log_mlflow, machine_info, now, write_outputs
from superop.bench.rewriters import Rewrite, Rewriter, runtime_rewriter


@pytest.fixture()
def mlflow_tmp(tmp_path, monkeypatch, seed_mlflow_db):
    uri = seed_mlflow_db(tmp_path / "mlflow.db")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    import mlflow
    mlflow.set_tracking_uri(uri)
    yield uri
    mlflow.set_tracking_uri(None)


@pytest.fixture(scope="module")
def micro_data(tmp_path_factory):
    """One data directory for every micro run of this module: ``ops_data`` caches the
    parquet by size and seed, so the 2000-row ``ops`` is written once, not once per test."""
    return tmp_path_factory.mktemp("bench-micro-data")


@pytest.fixture()
def small_view(spark):
    # a VALUES view runs in the JVM; a createDataFrame of Python rows needs Python workers
    # in every query (the equality checks run ~20)
    spark.sql("CREATE OR REPLACE TEMP VIEW bench_t AS SELECT CAST(a AS INT) AS a, CAST(b AS INT) AS b, "
              "CAST(d AS STRING) AS d FROM VALUES (1, 10, NULL), (1, 20, 'x'), (2, NULL, 'y'), "
              "(NULL, 5, 'y'), (2, 7, 'y') AS v(a, b, d)")
    return "bench_t"


def test_equality_accepts_equal_bags_in_any_order(spark, small_view):
    a = "SELECT a, SUM(b) AS s FROM bench_t GROUP BY a"
    b = "SELECT a, s FROM (SELECT a, SUM(b) AS s FROM bench_t GROUP BY a) ORDER BY a DESC"
    for limit in (0, 10_000):          # fingerprint only / exact + fingerprint
        assert check_equal(spark, a, b, exact_limit=limit).equal


UNEQUAL = [
    # one row missing
    "SELECT a, b FROM bench_t WHERE b IS NULL OR b <> 20",
    # same distinct rows, different multiplicities (a bag, not a set)
    "SELECT a, b FROM bench_t WHERE b <> 20 OR b IS NULL UNION ALL SELECT 1, 10",
    # NULL moved to the other column: (NULL, 5) vs (5, NULL) must not collide
    "SELECT CASE WHEN a IS NULL THEN b ELSE a END AS a, CASE WHEN a IS NULL THEN NULL ELSE b END AS b "
    "FROM bench_t",
    # one value changed
    "SELECT a, CASE WHEN b = 7 THEN 8 ELSE b END AS b FROM bench_t",
]


def test_equality_rejects_unequal_bags(spark, small_view):
    base = "SELECT a, b FROM bench_t"
    for other in UNEQUAL:
        fp = check_equal(spark, base, other, exact_limit=0)      # the scalable path alone
        assert not fp.equal and fp.method == "fingerprint", (other, fp)
    ex = check_equal(spark, base, UNEQUAL[-1])
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


def _bundled_slice(path: Path) -> int:
    """The lines of the bundled log that run one template of its simplest Diamond Union
    variant, ``(γ, γ)∪`` (found through the log's own truth file, matched on the mining
    job's literal normalization). Returns how many lines were written."""
    import gzip

    from superop.mining.normalize import normalize
    from superop.workloads.bundled import LOG, TRUTH
    truth = json.loads(Path(TRUTH).read_text())
    du = [v for v in truth["variants"] if v["family"] == "DU" and v["shape"] == "(γ, γ)∪"]
    assert du, "the bundled log has no (γ, γ)∪ variant to slice"
    want = normalize(du[0]["example_sql"])
    n = 0
    with gzip.open(LOG, "rt", encoding="utf-8", errors="surrogateescape") as f, open(path, "w") as out:
        for line in f:
            try:
                text = json.loads(line).get("statement_text", "")
            except (ValueError, AttributeError):
                continue
            if isinstance(text, str) and normalize(text) == want:
                out.write(line)
                n += 1
    return n


@pytest.fixture(scope="module")
def mined(spark, tmp_path_factory, seed_mlflow_db):
    """The nightly job (real Spark mining, synthesis, Z3, generalization) on a small slice
    of the bundled log: the executions of one DU template, so k=1 makes it one candidate
    (cheap: the rest of `tests/bench` uses it; the whole bundled log is mined by `superop
    bench`, not by tests). Its MLflow runs go to a store copied from the session's migrated
    one (a new store in the job's output directory would run MLflow's schema migrations)."""
    from superop.bench.mined import mined_catalog
    d = tmp_path_factory.mktemp("bench-mined")
    log = d / "log.jsonl"
    assert _bundled_slice(log) >= 2
    kw = dict(k=1, max_candidates=1, synth_timeout_s=20, verify_timeout_s=10)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", seed_mlflow_db(d / "mlflow.db"))
        m = mined_catalog(d / "data", log, spark=spark, **kw)
    return m, d, log, kw


def test_mined_catalog_is_cached_by_log_and_code(spark, mined):
    from superop.bench.mined import mined_catalog
    m, d, log, kw = mined
    assert not m.cached and m.path.is_file() and m.log_hash.startswith("sha256:")
    again = mined_catalog(d / "data", log, spark=spark, **kw)
    assert again.cached and again.path == m.path
    log2 = d / "log2.jsonl"
    log2.write_bytes(log.read_bytes() + b"\n")         # another log: another key
    from superop.pipeline.nightly import content_hash
    assert content_hash(log2) != m.log_hash


def test_micro_end_to_end_with_the_runtime(spark, tmp_path, mlflow_tmp, mined, micro_data):
    """The full pipeline with the real rewriter (superop.runtime) on the catalog the nightly job
    mined: every step runs, a rewrite is checked equal, the outputs are written and logged."""
    m, d, log, kw = mined
    rw = runtime_rewriter(spark, None, d / "data", log, mine_kw=kw)       # the default: mined
    assert "mined by the nightly job" in rw.info["catalog"] and "cached" in rw.info["catalog"]
    fams = {r["family"] for r in json.loads(m.path.read_text())["rules"]}
    assert fams == {"DU"} and m.rules >= 1, "the nightly job mined no DU rule from the slice"
    qs = [next(q for q in select_queries(None) if q.family in fams and q.variant == "core")]
    doc = run_micro(spark, rw, rows=[2000], repeat=1, warmup=0,
                    data_dir=micro_data, queries=qs, progress=Progress(enabled=False))
    doc.update(started_at=now(), command="test", machine=machine_info(), params={"repeat": 1, "warmup": 0},
               rewriter={"name": rw.name, **rw.info})
    assert [r["name"] for r in doc["results"]] == [qs[0].name]
    for r in doc["results"]:
        assert r["equal"]["equal"] is not False, r["equal"]
        for side in ("original", "rewritten", "limit"):
            t = r["timing"][side]
            assert t["runs"] == 1 and t["median_s"] > 0
            assert t["shuffle_write_bytes"] > 0 and t["shuffle_read_bytes"] > 0   # Spark's metrics
        assert r["plans"]["limit"]["shuffle_exchanges"] == 1
    du = doc["results"][0]
    assert du["plans"]["original"]["shuffle_exchanges"] == 2
    if du["rewrite"]["changed"]:
        assert du["rewrite"]["applied"] and du["plans"]["rewritten"]["shuffle_exchanges"] == 1
        assert du["equal"]["equal"] is True
    else:   # the cost gate kept the original: no self-comparison reported as "equal"
        assert du["equal"]["equal"] is None and "benefit gate" in du["rewrite"]["explanation"]
    # either way the mined rule covers the query: without the gate it is rewritten
    from superop.runtime import SuperOpSession
    off = SuperOpSession(spark, str(m.path), gate=False, cache=False).rewrite(qs[0].sql)
    assert off.changed and off.applied == [r["id"] for r in json.loads(m.path.read_text())["rules"]], \
        off.explanation
    outs = write_outputs(doc, tmp_path / "out", "micro")
    assert json.loads(Path(outs["json"]).read_text())["results"][0]["name"] == "du_core"
    md = Path(outs["markdown"]).read_text()
    assert qs[0].name in md and "| rows |" in md
    assert outs["plots"] and all(Path(p).stat().st_size > 1000 for p in outs["plots"])
    run_id = log_mlflow(doc, "micro", experiment="superop-bench-test")
    import mlflow
    run = mlflow.get_run(run_id)
    assert any(k.endswith(f"{qs[0].name}.original_median_s") for k in run.data.metrics)


def test_micro_wrong_rewrite_is_caught_and_not_timed(spark, micro_data):
    """A rewriter that returns wrong SQL: the bench reports it and does not time it."""
    def bad(sql: str) -> Rewrite:
        return Rewrite(sql=sql.replace("COUNT(*)", "COUNT(b)", 1), changed=True, applied=["bogus"])
    doc = run_micro(spark, Rewriter("bad", bad), rows=[2000], repeat=1, warmup=0,
                    data_dir=micro_data, queries=select_queries(["du_core"]),
                    progress=Progress(enabled=False))
    r = doc["results"][0]
    assert not r["equal"]["equal"] and r["timing"] is None
    assert doc["summary"]["2000"]["results_differ"] == ["du_core"]


def test_cli_bench_wrapper_says_not_available_in_one_line(capsys, monkeypatch):
    from superop import cli
    from superop.bench import commands
    monkeypatch.setattr(commands, "_SCRIPTS", {**commands._SCRIPTS, "mine": "no_such_bench.py"})
    assert cli.main(["bench", "mine"]) == 2
    err = capsys.readouterr().err
    assert "not available" in err and len(err.strip().splitlines()) == 1


def test_tpch_bench_one_query(spark, tpch_dir, template_certificates):
    """TPC-H through the real rewriter (tiny SF from the conftest fixture): the pipeline runs,
    results are checked equal, unchanged queries are timed once. One query (Q13: a join and
    two aggregations) exercises every step of the per-query loop; the 22 are `superop bench tpch`.
    The hand-built catalog is made from this run's template proofs and signed as the nightly
    job signs proofs it just made (the CLI's `--catalog bench-default`, which proves them
    again, is tests/workloads/test_tpcds_bench.py's)."""
    from superop.bench.rewriters import default_catalog
    from superop.bench.tpch_bench import run_tpch
    from superop.rules_out.signing import signing_key
    from superop.rules_out.trust import sign_fresh
    cat = sign_fresh(default_catalog(template_certificates), signing_key(), "tests (fresh proofs)")
    doc = run_tpch(spark, lambda: runtime_rewriter(spark, cat), queries=[13], repeat=1,
                   warmup=0, tpch_dir=tpch_dir, progress=Progress(enabled=False))
    assert [r["query"] for r in doc["results"]] == [13]
    for r in doc["results"]:
        assert not r.get("error"), r.get("error")
        # unchanged queries: "n/a (unchanged)", never a self-comparison reported as equal
        assert r["equal"]["equal"] is (True if r["rewrite"]["changed"] else None), r["equal"]
        assert ("rewritten" in r["timing"]) == r["rewrite"]["changed"]
        assert r["plans"]["original"]["shuffle_exchanges"] >= 1     # the plan was really read
    assert doc["summary"]["queries"] == 1 and doc["summary"]["errors"] == []


def test_unchanged_query_reports_n_a_not_equal(spark, micro_data):
    from superop.bench.report import micro_markdown
    from superop.bench.rewriters import identity_rewriter
    doc = run_micro(spark, identity_rewriter(), rows=[2000], repeat=1, warmup=0, data_dir=micro_data,
                    queries=select_queries(["du_core"]), progress=Progress(enabled=False))
    r = doc["results"][0]
    assert r["equal"]["equal"] is None and r["ratios"]["original_over_rewritten"] == 1.0
    doc.update(params={"repeat": 1, "warmup": 0})
    assert "n/a (unchanged)" in micro_markdown(doc)


def test_readme_blocks_touch_only_the_bench_section(tmp_path):
    from superop.bench.report import update_readme
    p = tmp_path / "README.md"
    p.write_text("# x\nintro\n<!-- bench:start -->\nold\n<!-- bench:end -->\ntail\n")
    update_readme(p, "tpch", "T1")
    update_readme(p, "micro", "M1")
    update_readme(p, "micro", "M2")
    text = p.read_text()
    assert text.startswith("# x\nintro\n<!-- bench:start -->\n") and text.endswith("<!-- bench:end -->\ntail\n")
    assert "M1" not in text and "old" not in text
    assert text.index("M2") < text.index("T1")          # micro before tpch
