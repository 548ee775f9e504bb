"""Logs and outputs on Hadoop filesystem paths (``file:`` URIs go through Hadoop's
FileSystem exactly like ``s3a:``/``hdfs:``), tables, mixed and unreadable files, and the
output set that replaces the previous one as a whole or not at all."""
from __future__ import annotations

import gzip
import json
import os
import random
import stat

import pandas as pd
import pytest

from superop.cli import main
from superop.errors import SuperopError
from superop.mining.job import run_mining
from superop.mining.readers import file_format, open_log, table_source
from superop.storage import OutputSet, local_path, scheme

DU = ("SELECT a, COUNT(*) AS n FROM ops WHERE s < {x} GROUP BY a UNION ALL "
      "SELECT a, MAX(b) AS n FROM ops WHERE s >= {x} GROUP BY a")
DJ = ("SELECT x.a, x.n, y.m FROM (SELECT a, COUNT(*) AS n FROM ops WHERE c > {x} GROUP BY a) x "
      "JOIN (SELECT a, MAX(b) AS m FROM ops GROUP BY a) y ON x.a = y.a")


def rows(n: int, tmpl: str = DU, start: int = 0) -> list[dict]:
    return [{"statement_id": f"q{start + i}", "statement_text": tmpl.format(x=start + i),
             "total_duration_ms": 100 + i, "execution_status": "FINISHED"} for i in range(n)]


def jsonl(rs) -> bytes:
    return ("\n".join(json.dumps(r) for r in rs) + "\n").encode()


@pytest.fixture
def messy_dir(tmp_path):
    """A Hadoop-style output directory of a query-history export: _SUCCESS, .crc files,
    part files of JSON Lines (one gzipped), plus the bad files a real directory collects."""
    d = tmp_path / "history"
    d.mkdir()
    (d / "_SUCCESS").write_bytes(b"")
    (d / ".part-00000.jsonl.crc").write_bytes(b"\x00garbage")
    (d / "part-00000.jsonl").write_bytes(jsonl(rows(6)))
    (d / "part-00001.jsonl.gz").write_bytes(gzip.compress(jsonl(rows(4, DJ, 100))))
    # random bytes in a .jsonl: every line is a counted malformed row, not a crash
    (d / "part-00002.jsonl").write_bytes(bytes(range(256)) * 3 + b"\n\xff\xfe{oops\n")
    # a truncated .jsonl.gz: unreadable, counted, and the rest is mined
    whole = gzip.compress(jsonl(rows(50, DU, 500)))
    (d / "part-00003.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    # a stray CSV without a statement text column
    (d / "notes.csv").write_text("owner,comment\nana,ignore me\n")
    # a binary file of no known format
    (d / "blob.bin").write_bytes(b"\x00" + random.Random(3).randbytes(511))
    return d


def test_file_formats_by_name_and_content():
    assert file_format("part-00000.jsonl.gz") == "jsonl"
    assert file_format("x.csv") == "csv" and file_format("x.snappy.parquet") == "parquet"
    assert file_format("app-20240101-0001.zstd") == "spark-eventlog"
    assert file_format("part-0", head=b"PAR1\x00") == "parquet"
    assert file_format("part-0", head=b'{"statement_text": "SELECT 1"}\n') == "jsonl"
    assert file_format("part-0", head=b'{"Event":"SparkListenerLogStart"}\n') == "spark-eventlog"
    assert file_format("part-0", head=gzip.compress(b"query_id,query_text\n1,x\n")) == "csv"
    assert file_format("part-0", head=b'{"a": "\xc3\xa9t\xc3') == "jsonl"  # cut inside a char
    rnd = random.Random(11)
    for _ in range(200):  # binary heads, including ones that start like a JSON object
        assert file_format("part-0", head=rnd.randbytes(64) + b"\xff") is None
        assert file_format("part-0", head=b"{" + rnd.randbytes(64) + b"\xff") is None
    assert file_format("part-0", head=b'{z:u\xa9\xd2Y\xb2\xa0\x1dWr?\x8a') is None


def test_paths_and_schemes():
    assert scheme("/tmp/x") == "" and scheme("file:///tmp/x") == "file"
    assert scheme("s3a://bucket/k") == "s3a" and scheme("abfss://c@a.dfs.core.windows.net/p") == "abfss"
    assert local_path("file:///tmp/a%20b") == "/tmp/a b" and local_path("hdfs://nn/x") is None


def test_mixed_directory_through_a_file_uri_mines_what_it_can(spark, messy_dir):
    lr = open_log(spark, messy_dir.as_uri())          # file:// -> Hadoop FileSystem
    s = lr.summary()
    assert s["by_format"] == {"csv": 0, "jsonl": 3} or s["by_format"] == {"jsonl": 3}
    assert s["unreadable"] == {"corrupt_file": 1, "no_statement_text_column": 1,
                               "unknown_format": 1}
    why = {u["file"].rsplit("/", 1)[-1]: u for u in s["unreadable_files"]}
    assert "EOFException" in why["part-00003.jsonl.gz"]["detail"]
    assert why["notes.csv"]["reason"] == "no_statement_text_column"
    got = lr.df.collect()
    good = [r for r in got if r["error"] is None]
    assert len(good) == 10                               # 6 plain + 4 gzipped rows
    assert {r["statement_id"] for r in good} == {f"q{i}" for i in range(6)} | \
        {f"q{100 + i}" for i in range(4)}
    bad = [r["error"] for r in got if r["error"]]
    assert bad and set(bad) == {"malformed_json"}        # the random bytes, line by line


def test_mine_cli_on_file_uri_and_hadoop_dir(spark, messy_dir, tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(["mine", "--mine-only", "--log", messy_dir.as_uri(), "--out", out.as_uri(),
               "--min-templates", "1", "--no-mlflow", "--quiet"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "skipped unreadable files" in cap.err and "part-00003.jsonl.gz (corrupt_file)" in cap.err
    s = json.loads((out / "summary.json").read_text())
    assert s["files"]["unreadable"]["corrupt_file"] == 1
    assert s["queries_read"] > 10 and s["malformed"] > 0
    assert s["candidates_by_family"]["DU"] >= 1 and s["candidates_by_family"]["DJ"] >= 1
    # outputs are readable by the group, as the umask says (0644 under 022)
    umask = os.umask(0o022)
    os.umask(umask)
    for f in ("summary.json", "candidates.parquet", "near_misses.parquet", "recurring.parquet"):
        assert stat.S_IMODE((out / f).stat().st_mode) == 0o666 & ~umask, f
    assert not [p for p in out.iterdir() if p.name.startswith(".staging-")]


def test_log_table(spark, tmp_path, capsys):
    pdf = pd.DataFrame(rows(5) + rows(3, DJ, 50))
    spark.createDataFrame(pdf).write.mode("overwrite").format("parquet").saveAsTable(
        "superop_test_query_history")
    try:
        out = tmp_path / "o"
        rc = main(["mine", "--mine-only", "--log-table", "superop_test_query_history",
                   "--out", str(out), "--min-templates", "1", "--no-mlflow", "--quiet", "--json"])
        assert rc == 0
        s = json.loads(capsys.readouterr().out)
        assert s["queries_read"] == 8 and s["malformed"] == 0
        assert s["files"]["by_format"] == {"table": 1}
        assert s["candidates_by_family"]["DU"] == 1 and s["candidates_by_family"]["DJ"] == 1
        with pytest.raises(SuperopError, match="log table not found"):
            open_log(spark, table_source("no_such_history_table"))
    finally:
        spark.sql("DROP TABLE IF EXISTS superop_test_query_history")


def test_a_failed_run_on_a_hadoop_path_leaves_the_previous_outputs(spark, tmp_path, monkeypatch):
    """`superop mine --mine-only` killed after mining wrote its outputs (into its staging
    area) on a file: URI: the previous output set stays as it was, nothing new beside it.
    (What a successful run writes there: test_mine_cli_on_file_uri_and_hadoop_dir.)"""
    out = tmp_path / "out"
    previous = OutputSet(out.as_uri(), spark=spark)
    for name in ("summary.json", "candidates.parquet", "near_misses.parquet", "recurring.parquet"):
        previous.write_bytes(name, f"previous {name}".encode())
    previous.commit(last=["summary.json"])
    before = {f.name: f.read_bytes() for f in out.iterdir()}
    assert len(before) == 4
    log = tmp_path / "log.jsonl"
    log.write_bytes(jsonl(rows(6) + rows(4, DJ, 100)))
    from superop.mining import job

    def killed(*a, **k):
        raise KeyboardInterrupt("killed after mining")
    monkeypatch.setattr(job, "_log_mlflow", killed)
    with pytest.raises(KeyboardInterrupt):
        run_mining(log, out.as_uri(), spark=spark, k=1, mlflow_run=True, progress=False)
    after = {f.name: f.read_bytes() for f in out.iterdir()}
    assert after == before                      # nothing new beside the previous outputs


def test_output_set_commit_is_finished_by_the_next_run(tmp_path):
    """A run killed in the middle of its commit (marker written, files half moved) is rolled
    forward by the next run before it starts: never a mix of two sets for long."""
    out = tmp_path / "o"
    first = OutputSet(str(out))
    first.write_text("catalog.json", "old catalog")
    first.write_text("summary.json", "old summary")
    first.commit(last=["catalog.json"])
    second = OutputSet(str(out))
    second.write_text("catalog.json", "new catalog")
    second.write_text("summary.json", "new summary")
    # simulate the crash: marker written, only summary.json moved
    (out / second.staging.rsplit("/", 1)[-1] / OutputSet.MARKER).write_bytes(b"")
    os.replace(second.path("summary.json"), out / "summary.json")
    assert (out / "catalog.json").read_text() == "old catalog"
    OutputSet(str(out)).discard()               # the next run starts
    assert (out / "catalog.json").read_text() == "new catalog"
    assert (out / "summary.json").read_text() == "new summary"
    assert not [p for p in out.iterdir() if p.name.startswith(".staging-")]


def test_an_unfinished_staging_dir_is_left_alone_and_a_discarded_one_removed(tmp_path):
    out = tmp_path / "o"
    a = OutputSet(str(out))
    a.write_text("summary.json", "a")
    b = OutputSet(str(out))                     # another run must not delete a's staging area
    assert os.path.isdir(a.staging)
    b.discard()
    a.discard()
    assert not list(out.iterdir())
