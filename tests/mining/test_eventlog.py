"""Real Spark event logs (written by a subprocess with spark.eventLog.enabled) in every codec."""
import pytest

from superop.mining.eventlog import codec_of, decompress, read_eventlog
from superop.mining.job import run_mining
from superop.mining.physical import PLAN_MARKER

CODECS = ["none", "zstd", "lz4", "snappy"]


@pytest.mark.parametrize("codec", CODECS)
def test_reads_sql_text_plan_and_costs(spark, eventlog_dir, codec):
    rows = read_eventlog(spark, str(eventlog_dir / codec), with_metrics=True).collect()
    sql = [r for r in rows if r["statement_text"]
           and not r["statement_text"].startswith(PLAN_MARKER)]
    assert len(sql) == 6                            # the six statements run with SQL text
    # the DataFrame API action carries its physical plan; the temp views are commands
    assert sum(1 for r in rows if (r["statement_text"] or "").startswith(PLAN_MARKER)) == 1
    assert any(r["error"] == "non_query:dataframe_command" for r in rows)
    du = [r for r in sql if "UNION ALL" in r["statement_text"]]
    assert len(du) == 4
    for r in du:
        assert r["execution_status"] == "FINISHED"
        assert r["duration_ms"] > 0 and r["executor_run_ms"] > 0
        assert r["shuffle_bytes"] > 0 and r["exchanges"] >= 2 and r["plan_nodes"] > 5


def test_codec_detection_and_truncated_input(eventlog_dir):
    files = [p for p in eventlog_dir.rglob("events_1_*") if p.suffix == ".zstd"]
    assert files
    data = files[0].read_bytes()
    assert codec_of("x", data[:16]) == "zstd" and codec_of("a.lz4", b"") == "lz4"
    full = decompress(data, "zstd")
    part = decompress(data[: len(data) // 2], "zstd")      # an in-progress log
    assert full.startswith(part[:100]) and len(part) < len(full)


def test_mining_finds_the_planted_diamonds(spark, eventlog_dir, tmp_path):
    res = run_mining(eventlog_dir, tmp_path / "o", fmt="auto", spark=spark, k=1,
                     mlflow_run=False, progress=False)
    c = {(r["family"], r["join_kind"], r["shape"]): r for r in res.candidates.to_dict("records")}
    du = c[("DU", "", "(σ|γ, σ|γ)∪")]
    assert (du["templates"], du["executions"]) == (2, 4 * len(CODECS))
    dj = c[("DJ", "inner", "(γ, σ|γ)⋈")]
    assert (dj["templates"], dj["executions"]) == (1, len(CODECS))
    assert du["cost_ms"] > 0 and du["shuffle_bytes"] > 0
    # the DataFrame action (a plain GROUP BY) is mined from its plan: no candidate
    assert "no_sql_text" not in res.summary["skipped_by_reason"]
    assert res.summary["templates"] == 4 + 1     # 4 SQL templates + the DataFrame plan
    assert len(c) == 2
