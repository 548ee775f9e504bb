"""`superop synth` prints pseudo-code or JSON with status/program/streaming/counterexample."""
from __future__ import annotations

import json

from superop.cli import main
from superop.synth.corpus import CORPUS_BY_NAME


def test_cli_json_found_and_no_program(capsys, tmp_path):
    rc = main(["synth", "--json", "--no-verify", "--sql", CORPUS_BY_NAME["dj_full"][1]])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["status"] == "unknown" and out["streaming"] is True
    assert out["program"]["keys"] == ["a"] and len(out["program"]["partition_emits"]) == 3
    f = tmp_path / "q.sql"
    f.write_text(CORPUS_BY_NAME["neg_different_keys"][1])
    rc = main(["synth", "--json", "--sql-file", str(f)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["status"] == "no_program" and out["program"] is None
    assert out["counterexample"]["rows"] and out["counterexample"]["plan_output"] != \
        out["counterexample"]["program_output"]


def test_cli_text_with_schema_and_z3(capsys, tmp_path):
    sch = tmp_path / "s.json"
    sch.write_text(json.dumps({"t": {"k": "int", "v": "int"}}))
    rc = main(["synth", "--schema", str(sch), "--bound", "3", "--sql",
               "SELECT k, sum(v) AS x FROM t WHERE v > 0 GROUP BY k "
               "UNION ALL SELECT k, count(*) AS x FROM t GROUP BY k"])
    text = capsys.readouterr().out
    assert rc == 0 and "status: verified" in text and "partition by k" in text
    assert "exists row: (row.v > 0)" in text


def test_cli_bad_input_is_one_line(capsys):
    assert main(["synth", "--sql", "SELECT nope FROM"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("superop synth: error:") and "\n" not in err
    assert main(["synth", "--sql", "SELECT 1", "--bound", "0"]) == 2


def test_cli_streaming_only_fig13(capsys):
    sql = CORPUS_BY_NAME["mj_fig13_filter_below_min"][1]
    assert main(["synth", "--json", "--no-verify", "--streaming-only", "--sql", sql]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "no_program" and out["streaming"] is False
    assert "streaming" in out["counterexample"]["choice"]
    assert main(["synth", "--no-verify", "--sql", sql]) == 0
    text = capsys.readouterr().out
    assert "[buffering]" in text and "why not streaming:" in text


def test_cli_finds_the_sub_query(capsys):
    inner = ("SELECT a, sum(s) AS x FROM ops GROUP BY a UNION ALL "
             "SELECT a, count(*) AS x FROM ops WHERE d = 'r' GROUP BY a")
    sql = f"SELECT * FROM ({inner}) t ORDER BY x LIMIT 5"
    assert main(["synth", "--json", "--no-verify", "--sql", sql]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["program"] is not None and "LIMIT" not in out["sub_plan_sql"].upper()
    assert main(["synth", "--json", "--no-verify", "--whole", "--sql", sql]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "unsupported" and "Limit" in out["reason"]
