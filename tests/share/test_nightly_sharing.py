"""The nightly job's "sharing opportunities" section (issue 15 item 4): from the log,
the windows where sharing would have paid, in the catalog and the report."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from superop.rules_out.catalog import load_catalog

from .conftest import SCHEMA

START = dt.datetime(2026, 1, 1, 10, 0, tzinfo=dt.timezone.utc)
LOG = [  # (id, seconds after the start, SQL)
    ("a1", 0, "SELECT a, c FROM st WHERE c > 3"),
    ("a2", 60, "SELECT a, b FROM st WHERE b = 'x'"),
    ("a3", 90, "SELECT a, d FROM su WHERE d > 1"),
    ("b1", 3600, "SELECT a FROM st WHERE rand() < 0.5"),        # trap: never shared
    ("b2", 3660, "SELECT a, b FROM st WHERE rand() < 0.5"),
    ("c1", 7200, "SELECT a, w FROM sv WHERE w > 1"),            # alone in its window
]


def write_log(path):
    rows = [{"statement_id": i, "statement_text": sql, "execution_status": "FINISHED",
             "start_time": (START + dt.timedelta(seconds=t)).isoformat().replace("+00:00", "Z"),
             "duration_ms": 1000} for i, t, sql in LOG]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


@pytest.fixture(scope="module")
def nightly_with_sharing(spark, share_tables, tmp_path_factory, seed_mlflow_db):
    from superop.pipeline.nightly import run_nightly
    d = tmp_path_factory.mktemp("share_nightly")
    seed_mlflow_db(d / "out" / "mlflow.db")     # the job's default store, already migrated
    res = run_nightly(write_log(d / "log.jsonl"), d / "out", spark=spark, schema=SCHEMA, max_candidates=0,
                      progress=False, register=False, share_window_s=300)
    return res


def test_catalog_and_report_carry_the_paying_windows(nightly_with_sharing):
    res = nightly_with_sharing
    cat = load_catalog(res.catalog_path)
    sec = cat["sharing_opportunities"]
    assert sec["error"] == "" and sec["queries"] == 6
    assert sec["windows"] == sec["examined"] == 2          # c1 is alone; a1..a3 and b1..b2
    (o,) = sec["opportunities"]                              # the rand() window is no opportunity
    assert o["queries"] == ["a1", "a2", "a3"] and o["would_pay"]
    (ce,) = o["covering_expressions"]
    assert ce["tables"] == ["st"] and ce["consumers"] == ["a1", "a2"]
    assert res.metrics["sharing_paying"] == 1 and res.metrics["sharing_windows"] == 2
    md = res.report_path.read_text()
    assert "## Sharing opportunities" in md and "1 of 2 examined log windows" in md
    assert "2026-01-01 10:00:00 … 2026-01-01 10:01:30" in md


def test_a_failing_sharing_step_is_reported_not_fatal(spark, tmp_path):
    from superop.rules_out.report import markdown_section
    from superop.share.opportunities import log_sharing_report
    rep = log_sharing_report(spark, str(tmp_path / "missing.jsonl"), schema=SCHEMA)
    assert rep.error and rep.opportunities == []
    assert any(line.startswith("Not computed: ") for line in markdown_section(rep.to_json()))


def test_the_step_is_bounded(spark, share_tables, tmp_path):
    from superop.rules_out.report import markdown_section
    from superop.share.opportunities import log_sharing_report
    log = str(write_log(tmp_path / "log.jsonl"))
    cut = log_sharing_report(spark, log, schema=SCHEMA, max_queries=2, time_budget_s=None)
    assert cut.truncated == 1                          # a1..a3 cut to a1, a2 (b1, b2 fit)
    (o,) = cut.opportunities
    assert o.queries == ["a1", "a2"]
    none = log_sharing_report(spark, log, schema=SCHEMA, time_budget_s=0.0)
    assert none.out_of_time == 2 and none.opportunities == [] and not none.error
    assert any(line.startswith("Bounded: 0 window(s) cut") for line in markdown_section(none.to_json()))
