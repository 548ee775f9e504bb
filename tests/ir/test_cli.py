"""`superop plan` smoke tests: in-process through superop.cli.main, and one subprocess."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from superop.cli import main
from superop.workloads.paper import CORPUS_BY_ID, PAPER_SCHEMA


@pytest.fixture()
def schema_file(tmp_path):
    p = tmp_path / "schema.json"
    p.write_text(json.dumps(PAPER_SCHEMA))
    return str(p)


def test_plan_text(schema_file, capsys):
    rc = main(["plan", "--sql", CORPUS_BY_ID["fig01"].sql, "--schema", schema_file])
    out = capsys.readouterr().out
    assert rc == 0
    assert "shape: (σ|γ, σ|γ)∪" in out and out.startswith("UnionAll n=2")
    assert "sql:   SELECT" in out and "opaque:" not in out


def test_plan_json_from_file(schema_file, tmp_path, capsys):
    f = tmp_path / "q.sql"
    f.write_text("SELECT a FROM ops INTERSECT SELECT a FROM accounts")
    rc = main(["plan", "--sql-file", str(f), "--schema", schema_file, "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert data["fully_lowered"] is False and data["opaque_reasons"] == ["INTERSECT"]
    assert set(data) >= {"tree", "shape", "sql"}


@pytest.mark.parametrize("args, msg", [
    (["--sql", "SELECT a FROM nope"], "unknown table: nope"),
    (["--sql", "SELEC a FROM ops"], "cannot parse SQL"),
    (["--sql", "SELECT zz FROM ops"], "cannot resolve SQL"),
    (["--sql-file", "/nonexistent/q.sql"], "SQL file not found"),
])
def test_plan_bad_input_is_one_line_exit_2(schema_file, capsys, args, msg):
    rc = main(["plan", *args, "--schema", schema_file])
    err = capsys.readouterr().err
    assert rc == 2
    assert msg in err and err.startswith("superop plan: error:") and err.count("\n") == 1


def test_plan_missing_or_bad_schema(tmp_path, capsys):
    assert main(["plan", "--sql", "SELECT 1 AS x", "--schema", str(tmp_path / "no.json")]) == 2
    assert "schema file not found" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["plan", "--sql", "SELECT 1 AS x", "--schema", str(bad)]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_plan_subprocess(schema_file):
    r = subprocess.run([sys.executable, "-m", "superop.cli", "plan", "--sql",
                        "SELECT a, COUNT(*) AS n FROM ops WHERE s < 100 GROUP BY a",
                        "--schema", schema_file, "--json"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["shape"] == "σ|γ"
    r = subprocess.run([sys.executable, "-m", "superop.cli", "plan", "--sql", "SELECT a FROM nope",
                        "--schema", schema_file], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip() == "superop plan: error: unknown table: nope"
