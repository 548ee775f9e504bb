"""`superop bench tpcds` end to end at the smallest scale factor (no speed is asserted)."""
from __future__ import annotations

import json

from superop.bench.tpcds_bench import run_tpcds, tpcds_markdown


def test_run_tpcds_records_plans_equality_and_timings(tpcds_session, tpcds_dir):
    from superop.bench.rewriters import identity_rewriter
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


def test_bench_tpcds_keys_flag_reaches_the_session(tmp_path, monkeypatch):
    """``--keys FILE`` (a schema file with "$keys", or a bare keys mapping) is what the
    rewriting SuperOpSession vouches for; a file declaring nothing fails before Spark
    starts. No Spark here: the session, Spark and the run are stand-ins."""
    import superop.bench.rewriters as rewriters
    import superop.bench.tpcds_bench as tb
    from superop.cli import main
    from superop.ir.keys import DeclaredKey
    from superop.ir.schema import session_keys
    seen: list = []

    class FakeSession:
        def __init__(self, spark, catalog, keys=None, certify="auto"):
            assert certify == "auto"      # the command's default first-sight mode
            self.catalog, self.keys = {"version": "t", "rules": []}, session_keys(keys)
            seen.append(self.keys)

    class FakeSpark:
        def newSession(self):
            return self

    def fake_run(spark, make_rewriter, **kw):
        rw = make_rewriter()
        return {"bench": "tpcds", "results": [], "summary": {}, "rewriter": {"name": rw.name, **rw.info}}

    monkeypatch.setattr(rewriters, "SuperOpSession", FakeSession)
    monkeypatch.setattr(tb, "bench_spark", lambda args: FakeSpark())
    monkeypatch.setattr(tb, "run_tpcds", fake_run)
    monkeypatch.setattr(tb, "spark_info", lambda spark: {})
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"customer": {"c_customer_sk": "int", "c_customer_id": "string"},
                                  "$keys": {"customer": "c_customer_sk; c_customer_id"}}))
    bare = tmp_path / "keys.json"
    bare.write_text(json.dumps({"customer": "c_customer_id -> c_first_name"}))
    argv = ["bench", "tpcds", "--queries", "q4", "--out", str(tmp_path / "out"), "--no-mlflow",
            "--quiet", "--catalog", "c.json"]
    assert main(argv + ["--keys", str(schema)]) == 0
    assert seen[-1]["customer"] == (DeclaredKey(("c_customer_sk",)), DeclaredKey(("c_customer_id",)))
    doc = json.loads((tmp_path / "out" / "tpcds.json").read_text())
    assert doc["params"]["keys"] == str(schema) and doc["rewriter"]["keys"] == str(schema)
    assert f"declared keys {schema}" in (tmp_path / "out" / "tpcds.md").read_text()
    assert main(argv + ["--keys", str(bare)]) == 0
    assert seen[-1] == {"customer": (DeclaredKey(("c_customer_id",), ("c_first_name",)),)}
    assert main(argv) == 0 and seen[-1] == {}
    (tmp_path / "nokeys.json").write_text(json.dumps({"customer": {"c_customer_sk": "int"}}))
    n = len(seen)
    assert main(argv + ["--keys", str(tmp_path / "nokeys.json")]) == 2 and len(seen) == n
