"""Log readers (CSV with another warehouse's columns, Parquet, JSON Lines), bad input and the
`superop mine` command."""
import csv
import json

import pandas as pd
import pytest

from superop.cli import main
from superop.errors import SuperopError
from superop.mining.job import run_mining
from superop.mining.readers import parse_column_map, read_log

DU = ("SELECT a, COUNT(*) AS n FROM ops WHERE s < {x} GROUP BY a UNION ALL "
      "SELECT a, MAX(b) AS n FROM ops WHERE s >= {x} GROUP BY a")
DU2 = ("SELECT a, SUM(c) AS v FROM ops WHERE d = '{w}' GROUP BY a UNION ALL\n"
       "SELECT a, MIN(c) AS v FROM ops WHERE d <> '{w}' GROUP BY a")


def snowflake_rows():
    rows = []
    for i in range(6):
        rows.append({"QUERY_ID": f"q{i}", "QUERY_TEXT": DU.format(x=10 * i + 1),
                     "TOTAL_ELAPSED_TIME": 1000 + i, "EXECUTION_STATUS": "SUCCESS",
                     "BYTES_SCANNED": 10 ** 6, "USER_NAME": "ana"})
    for i, w in enumerate(["read", "write", "it's"]):
        rows.append({"QUERY_ID": f"r{i}", "QUERY_TEXT": DU2.format(w=w.replace("'", "''")),
                     "TOTAL_ELAPSED_TIME": 500, "EXECUTION_STATUS": "SUCCESS",
                     "BYTES_SCANNED": 5, "USER_NAME": "bo"})
    rows.append({"QUERY_ID": "f1", "QUERY_TEXT": DU.format(x=5), "TOTAL_ELAPSED_TIME": 3,
                 "EXECUTION_STATUS": "FAIL", "BYTES_SCANNED": 0, "USER_NAME": "bo"})
    rows.append({"QUERY_ID": "n1", "QUERY_TEXT": "SHOW TABLES", "TOTAL_ELAPSED_TIME": 1,
                 "EXECUTION_STATUS": "SUCCESS", "BYTES_SCANNED": 0, "USER_NAME": "bo"})
    return rows


def write_csv(path, rows, extra_bad=True):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
        if extra_bad:
            f.write('x9,"SELECT 1,1,SUCCESS\n')      # unterminated quote: a malformed record


def test_csv_with_column_map_through_the_cli(spark, tmp_path, capsys):
    log = tmp_path / "history.csv"
    write_csv(log, snowflake_rows(), extra_bad=False)
    out = tmp_path / "out"
    rc = main(["mine", "--mine-only", "--log", str(log), "--out", str(out), "--min-templates", "1",
               "--no-mlflow", "--quiet",
               "--column-map", "statement_text=QUERY_TEXT,duration_ms=TOTAL_ELAPSED_TIME"])
    assert rc == 0
    assert "candidates" in capsys.readouterr().out
    s = json.loads((out / "summary.json").read_text())
    assert s["queries_read"] == 11
    assert s["skipped_by_reason"] == {"failed_statement": 1, "non_query:show": 1}
    c = pd.read_parquet(out / "candidates.parquet")
    assert sorted(zip(c["shape"], c["templates"], c["executions"])) == \
        [("(σ|γ, σ|γ)∪", 2, 9)]
    assert c["cost_ms"][0] == sum(1000 + i for i in range(6)) + 3 * 500


def test_csv_malformed_record_is_counted(spark, tmp_path):
    log = tmp_path / "bad.csv"
    write_csv(log, snowflake_rows())
    df = read_log(spark, str(log), "csv")          # aliases find QUERY_TEXT by themselves
    rows = df.collect()
    assert sum(1 for r in rows if r["statement_text"] and r["error"] is None) == 11
    assert [r["error"] for r in rows if r["error"]] == ["malformed_csv"]
    q0 = next(r for r in rows if r["statement_id"] == "q0")
    assert (q0["duration_ms"], q0["read_bytes"], q0["execution_status"]) == (1000.0, 1e6, "SUCCESS")


def test_parquet_and_k_threshold(spark, tmp_path):
    rows = snowflake_rows()
    pdf = pd.DataFrame({"statement_id": [r["QUERY_ID"] for r in rows],
                        "statement_text": [r["QUERY_TEXT"] for r in rows],
                        "total_duration_ms": [r["TOTAL_ELAPSED_TIME"] for r in rows],
                        "execution_status": ["FINISHED" if r["EXECUTION_STATUS"] == "SUCCESS"
                                             else "FAILED" for r in rows]})
    log = tmp_path / "h.parquet"
    pdf.to_parquet(log)
    r2 = run_mining(log, tmp_path / "o2", spark=spark, k=2, mlflow_run=False, progress=False)
    assert r2.summary["candidates"] == 1 and r2.candidates["templates"][0] == 2
    r3 = run_mining(log, tmp_path / "o3", spark=spark, k=3, mlflow_run=False, progress=False)
    assert r3.summary["candidates"] == 0        # only 2 distinct templates: below k


def test_jsonl_bad_rows_are_counted_by_reason(spark, tmp_path):
    log = tmp_path / "q.jsonl"
    good = {"statement_id": "1", "statement_text": "SELECT a FROM ops", "execution_status":
            "FINISHED", "total_duration_ms": 5}
    log.write_text("\n".join([json.dumps(good), "{not json", "[1]",
                              json.dumps({"statement_id": "2"}),
                              json.dumps(dict(good, total_duration_ms="slow")), ""]) + "\n")
    reasons = sorted(str(r["error"]) for r in read_log(spark, str(log)).collect())
    assert reasons == ["None", "bad_numeric_field", "malformed_json", "missing_statement_text",
                       "not_a_json_object"]


def test_unusable_inputs_raise_one_line_errors(spark, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(SuperopError, match="empty"):
        run_mining(empty, tmp_path / "o", spark=spark, mlflow_run=False, progress=False)
    junk = tmp_path / "junk.jsonl"
    junk.write_text("nope\n{bad\n")
    with pytest.raises(SuperopError, match="malformed"):
        run_mining(junk, tmp_path / "o", spark=spark, mlflow_run=False, progress=False)
    nocol = tmp_path / "nocol.csv"
    nocol.write_text("id,foo\n1,bar\n")
    with pytest.raises(SuperopError, match="statement text column"):
        read_log(spark, str(nocol))
    with pytest.raises(SuperopError, match="unknown log format"):
        read_log(spark, str(nocol), "xml")
    with pytest.raises(SuperopError):
        parse_column_map("statement_text")
    with pytest.raises(SuperopError, match="unknown column"):
        parse_column_map("nope=x")


def test_cli_missing_log_exits_2(tmp_path, capsys):
    rc = main(["mine", "--log", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "log not found" in err and len(err.splitlines()) == 1
