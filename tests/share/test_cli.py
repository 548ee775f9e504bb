"""``superop share`` on a directory of queries over parquet tables."""
from __future__ import annotations

import json

import pytest

from superop.cli import main


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory):
    """A directory of one parquet table, written once for the module (the CLI only reads it)."""
    d = tmp_path_factory.mktemp("share-cli-tables")
    spark.sql("SELECT * FROM VALUES (1, 'x', 5), (1, 'x', 5), (2, NULL, 0), (NULL, 'y', -3), (3, 'y', 7) "
              "AS t(a, b, c)").write.parquet(str(d / "cli_t"))
    return d


def test_share_sql_dir_runs_and_writes_json(spark, tables, tmp_path, capsys):
    q = tmp_path / "queries"
    q.mkdir()
    (q / "q1.sql").write_text("SELECT a, b, c FROM cli_t WHERE c > 3")
    (q / "q2.sql").write_text("SELECT a, b, c FROM cli_t WHERE b = 'x'")
    (q / "q3.sql").write_text("SELECT a FROM cli_t WHERE rand() < 2")
    out = tmp_path / "out.json"
    pc = ["--plan-cache", str(tmp_path / "plan-cache")]
    rc = main(["share", "--sql-dir", str(q), "--tables-dir", str(tables), "--budget", "64m",
               "--consume", "count", "--out", str(out), *pc])
    text = capsys.readouterr().out
    assert "similar sub-expressions" in text and "q1:" in text and "total" in text
    assert "planning cache: stored" in text
    assert main(["share", "--sql-dir", str(q), "--tables-dir", str(tables), "--budget", "64m",
                 "--results-dir", str(tmp_path / "res"), *pc]) == 0
    assert "planning cache: hit" in capsys.readouterr().out      # the same batch: planned once
    from superop.sparkutil import bag
    assert bag(spark.read.parquet(str(tmp_path / "res" / "q2")).collect()) == \
        bag(spark.sql("SELECT a, b, c FROM cli_t WHERE b = 'x'").collect())
    assert rc == 0
    doc = json.loads(out.read_text())
    assert [r["name"] for r in doc["runs"]] == ["q1", "q2", "q3"]
    assert doc["runs"][0]["row_count"] == 3 and doc["runs"][1]["row_count"] == 2
    assert doc["runs"][2]["rewritten"] is False
    assert doc["plan"]["covering_expressions"]
    assert not [t for t in spark.catalog.listTables() if t.name.startswith("_superop_ce_")]


def test_plan_only_and_bad_input(spark, tables, tmp_path, capsys):
    f = tmp_path / "batch.sql"
    f.write_text("SELECT a, c FROM cli_t WHERE c > 3; SELECT a, c FROM cli_t WHERE c < 0;")
    out = tmp_path / "plan.json"
    assert main(["share", "--sql-file", str(f), "--tables-dir", str(tables), "--plan-only", "--no-plan-cache",
                 "--storage", "cache", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "batch: 2 queries" in text and "planning cache" not in text
    assert json.loads(out.read_text())["plan"]["storage"] == "cache"
    assert main(["share", "--sql-dir", str(tmp_path / "missing")]) == 2
    assert "SQL directory not found" in capsys.readouterr().err
    assert main(["share", "--sql-file", str(f), "--budget", "lots"]) == 2
    assert "bad budget" in capsys.readouterr().err
