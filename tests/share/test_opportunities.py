"""Sharing opportunities in a query log (for the nightly job's report)."""
from __future__ import annotations

from superop.share import sharing_opportunities
from superop.share.opportunities import windows
from superop.share.sharing_plan import BatchQuery

from .conftest import SCHEMA


def test_windows_cut_by_time_and_skip_untimed():
    qs = [BatchQuery("a", "x", 0.0), BatchQuery("b", "x", 100.0), BatchQuery("c", "x", 400.0),
          BatchQuery("d", "x", None), BatchQuery("e", "x", 500.0)]
    assert [[q.name for q in w] for w in windows(qs, 300)] == [["a", "b"], ["c", "e"]]


def test_opportunities_without_spark():
    log = [("SELECT a, c FROM st WHERE c > 3", "2026-01-01T10:00:00"),
           ("SELECT a, b FROM st WHERE b = 'x'", "2026-01-01T10:01:00"),
           ("SELECT a, d FROM su WHERE d > 1", "2026-01-01T12:00:00"),       # alone in its window
           ("SELECT a, d FROM su WHERE d > 2", 1767272400.0 + 7200 * 3)]    # epoch seconds, later
    opps = sharing_opportunities(log, window_seconds=600, schema=SCHEMA)
    assert len(opps) == 1
    o = opps[0]
    assert o.queries == ["q1", "q2"] and o.would_pay and o.estimated_value is None
    (ce,) = o.covering_expressions
    assert ce.tables == ["st"] and ce.consumers == ["q1", "q2"]


def test_opportunities_with_spark_say_whether_they_pay(spark, share_tables):
    log = [("SELECT a, b, c FROM st WHERE c > 3", 0), ("SELECT a, b, c FROM st WHERE b = 'x'", 10),
           ("SELECT a, b, c FROM st WHERE c < 0", 20)]
    (o,) = sharing_opportunities(log, window_seconds=60, spark=spark, budget=10 ** 9)
    assert o.estimated_value is not None
    assert o.would_pay == (o.estimated_value > 0)
    assert all(c.chosen is not None and c.value is not None for c in o.covering_expressions)


def test_read_log_window(spark, tmp_path):
    import json

    from superop.share.opportunities import read_log_window
    rows = [{"statement_id": "1", "statement_text": "SELECT a FROM st WHERE c > 1",
             "start_time": "2026-01-01T10:00:00Z"},
            {"statement_id": "2", "statement_text": "SELECT a FROM st WHERE c > 2",
             "start_time": "2026-01-01T10:05:00Z"},
            {"statement_id": "3", "statement_text": "SELECT a FROM st WHERE c > 3",
             "start_time": "2026-01-01T11:00:00Z"},
            {"statement_id": "4", "statement_text": "SELECT 1", "start_time": "2026-01-01T10:06:00Z",
             "execution_status": "FAILED"}]
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in rows) + "\n{not json\n")
    got = read_log_window(spark, str(log), "2026-01-01T10:00:00Z", "2026-01-01T10:30:00Z")
    assert [q.name for q in got] == ["1", "2"]
    assert got[0].sql == rows[0]["statement_text"] and got[1].timestamp - got[0].timestamp == 300
