"""Reading batches: statement splitting keeps each statement as written."""
from __future__ import annotations

import pytest

from superop.errors import SuperopError
from superop.share.inputs import read_sql_dir, read_sql_file, split_statements


def test_split_respects_strings_and_comments():
    text = "SELECT 'a;b' AS x FROM t;\n-- a comment; with a semicolon\nSELECT 2 AS y;\n\n;"
    assert split_statements(text) == ["SELECT 'a;b' AS x FROM t", "-- a comment; with a semicolon\nSELECT 2 AS y"]


def test_sql_dir_natural_order(tmp_path):
    (tmp_path / "q10.sql").write_text("SELECT 10")
    (tmp_path / "q2.sql").write_text("SELECT 2;")
    (tmp_path / "two.sql").write_text("SELECT 1; SELECT 3")
    qs = read_sql_dir(tmp_path)
    assert [q.name for q in qs] == ["q2", "q10", "two#1", "two#2"]
    assert [q.sql for q in qs] == ["SELECT 2", "SELECT 10", "SELECT 1", "SELECT 3"]


def test_missing_inputs_are_clear_errors(tmp_path):
    with pytest.raises(SuperopError, match="not found"):
        read_sql_dir(tmp_path / "nope")
    with pytest.raises(SuperopError, match="no .sql files"):
        read_sql_dir(tmp_path)
    (tmp_path / "empty.sql").write_text("-- nothing\n")
    with pytest.raises(SuperopError, match="no SQL statement"):
        read_sql_file(tmp_path / "empty.sql")
