"""Drop-in (enable/disable, settings read on every call), decision records and shadow mode, on
the suite's classic session (the Connect suite runs the same drop-in through a real server)."""
from __future__ import annotations

import io
import json
import logging
import re
from contextlib import redirect_stdout

import pytest

from superop.runtime import SuperOpSession, disable, enable, enable_from_conf, enabled_session
from superop.runtime import session as session_mod
from superop.sparkutil import bag

from .test_differential import DU, _dj

DU_Q = DU["sigma"]
DJ_Q = _dj("inner", "sigma-rho")
_SHUFFLE = re.compile(r"Exchange (hashpartitioning|rangepartitioning|SinglePartition|RoundRobinPartitioning)")


def exchanges(df) -> int:
    """Shuffle exchanges in the DataFrame's physical plan (classic or Connect; of an executed
    adaptive plan, its final plan only)."""
    buf = io.StringIO()
    with redirect_stdout(buf):
        df.explain()
    return len(_SHUFFLE.findall(buf.getvalue().split("== Initial Plan ==")[0]))


@pytest.fixture
def settings(spark):
    """Sets spark.superop.* settings for one test and unsets them after it."""
    touched = []

    def put(key, value):
        touched.append(key)
        spark.conf.set(key, value)
    yield put
    for k in touched:
        spark.conf.unset(k)


@pytest.fixture
def enabled(spark, ops, catalog, tmp_path):
    log = tmp_path / "decisions.jsonl"
    so = enable(spark, catalog, gate="exchanges", decision_log=str(log))
    yield so, log
    disable(spark)


def _records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("sql,rule", [(DU_Q, "du-2way"), (DJ_Q, "dj-inner")], ids=["DU", "DJ"])
def test_enable_rewrites_spark_sql_and_disable_restores_it(spark, ops, catalog, sql, rule, tmp_path):
    before = spark.sql(sql)
    want, n_before = bag(before.collect()), exchanges(before)
    so = enable(spark, catalog, gate="exchanges", decision_log=str(tmp_path / "d.jsonl"))
    try:
        assert enabled_session(spark) is so
        df = spark.sql(sql)                                   # the call site is unchanged
        assert exchanges(df) < n_before
        assert bag(df.collect()) == want
        assert df.columns == before.columns
        rec = _records(tmp_path / "d.jsonl")[-1]
        assert rec["outcome"] == "rewritten" and rec["rules"] == [rule] and rec["ran"] == "rewritten"
    finally:
        assert disable(spark) is so
    assert enabled_session(spark) is None and "sql" not in spark.__dict__
    assert exchanges(spark.sql(sql)) == n_before


def test_settings_take_effect_on_the_next_call(spark, enabled, settings):
    so, log = enabled
    assert exchanges(spark.sql(DU_Q)) == 1
    settings("spark.superop.enabled", "false")                # the kill switch
    assert exchanges(spark.sql(DU_Q)) == 2
    assert so.counters["disabled"] == 1
    settings("spark.superop.enabled", "true")
    settings("spark.superop.rules.exclude", "dj-left, du-2way")
    df = spark.sql(DU_Q)
    assert exchanges(df) == 2
    rec = _records(log)[-1]
    assert rec["outcome"] == "unchanged" and rec["reason_class"] == "no rule matches", rec
    assert exchanges(spark.sql(DJ_Q)) == 1                     # other rules still apply
    settings("spark.superop.rules.exclude", "")
    assert exchanges(spark.sql(DU_Q)) == 1


def test_one_decision_record_per_call_with_its_fields(spark, enabled, tmp_path, settings):
    so, log = enabled
    other = tmp_path / "other.jsonl"
    spark.sql(DU_Q)
    spark.sql(DU_Q.replace("b > 0", "b > 1"))                 # same template, new literal
    spark.sql("SELECT a, sum(s) FROM ops GROUP BY a")          # no rule matches
    spark.sql("SELECT a FROM ops WHERE b = :v", args={"v": 1})  # parameterized: passed through
    spark.sql("SET spark.sql.shuffle.partitions=4")            # not a query: passed through
    settings("spark.superop.decisionLog", str(other))
    spark.sql(DJ_Q)
    recs = _records(log)
    assert [r["outcome"] for r in recs] == ["rewritten", "rewritten", "unchanged"]
    first, second, third = recs
    assert first["query_hash"] == second["query_hash"] != third["query_hash"]
    assert first["text_hash"] != second["text_hash"]
    assert second["cache"] == "template" and first["cache"] in ("miss", "template")
    for r in recs:
        assert r["catalog_checksum"] == so.catalog["checksum"] and r["catalog_version"] == "test"
        assert r["decision_ms"] >= 0 and r["sql_ms"] >= 0 and r["time"].endswith("Z")
    assert first["exchanges_before"] == 2 and first["exchanges_after"] == 1
    assert third["reason"].startswith("no rule matches") and third["rules"] == []
    moved = _records(other)
    assert len(moved) == 1 and moved[0]["rules"] == ["dj-inner"]
    c = so.counters
    assert c["rewritten"] == 3 and c["unchanged"] == 1 and c["rule: du-2way"] == 2
    assert c["refused: no rule matches"] == 1 and c["passed_through"] == 2


def test_the_gate_named_off_is_refused(spark, ops, catalog):
    with pytest.raises(ValueError, match="not a kill switch.*spark.superop.enabled=false.*ungated"):
        SuperOpSession(spark, catalog, gate="off")
    assert SuperOpSession(spark, catalog, gate="ungated").gate == "ungated"


def test_enable_from_conf_and_the_startup_hook(spark, ops, catalog, tmp_path, settings):
    from superop.rules_out.catalog import write_catalog
    path = tmp_path / "catalog.json"
    write_catalog(path, catalog)
    assert enable_from_conf(spark) is None                      # no catalog set: nothing changes
    settings("spark.superop.catalog", str(path))
    settings("spark.superop.gate", "exchanges")
    settings("spark.superop.certify", "background")
    settings("spark.superop.enabled", "false")
    assert enable_from_conf(spark) is None                      # switched off: nothing changes
    settings("spark.superop.enabled", "true")
    try:
        import superop.runtime.autoenable  # (wraps SparkSession.Builder.getOrCreate)
        superop.runtime.autoenable.install()     # again, if an earlier test uninstalled it
        from pyspark.sql import SparkSession
        same = SparkSession.builder.getOrCreate()               # the suite's one session
        assert same is spark
        so = enabled_session(spark)
        assert so is not None and so.gate == "exchanges"
        assert so.certifier is not None and so.certifier.background
        assert exchanges(spark.sql(DU_Q)) == 1
    finally:
        superop.runtime.autoenable.uninstall()
        disable(spark)


@pytest.mark.parametrize("key,value", [("spark.superop.certify", "later"), ("spark.superop.gate", "fast")])
def test_enable_from_conf_names_the_setting_it_refuses(spark, catalog, tmp_path, settings, key, value):
    from superop.errors import SuperopError
    from superop.rules_out.catalog import write_catalog
    path = tmp_path / "catalog.json"
    write_catalog(path, catalog)
    settings("spark.superop.catalog", str(path))
    settings(key, value)
    with pytest.raises(SuperopError, match=f"^{key}: .*must be one of"):
        enable_from_conf(spark)
    assert enabled_session(spark) is None


@pytest.fixture
def broken(monkeypatch):
    """A deliberately wrong rewrite: every candidate's SQL with its SUM turned into MAX (what
    a broken super-operator program would emit). Test-only: it patches this process."""
    real = session_mod.candidates_for

    def wrong(*a, **kw):
        out = real(*a, **kw)
        for c in out:
            c.sql = re.sub(r"\bSUM\(", "MAX(", c.sql, flags=re.IGNORECASE)
        return out
    monkeypatch.setattr(session_mod, "candidates_for", wrong)


def test_shadow_mode_catches_a_wrong_rewrite_and_disables_its_rule(spark, ops, catalog, tmp_path, broken,
                                                                   caplog):
    log = tmp_path / "d.jsonl"
    want = bag(spark.sql(DU_Q).collect())
    so = enable(spark, catalog, gate="exchanges", decision_log=str(log), shadow=1.0)
    try:
        with caplog.at_level(logging.ERROR, logger="superop.runtime"):
            first = spark.sql(DU_Q)                 # the caller gets the (wrong) rewrite at once
            so.wait_shadow(timeout=300)
        assert exchanges(first) == 1 and bag(first.collect()) != want
        assert "SHADOW MISMATCH" in caplog.text and "du-2way" in caplog.text
        assert so.counters["shadow_mismatch"] == 1 and "du-2way" in so.disabled_rules
        again = spark.sql(DU_Q)                     # the rule is off for the rest of the session
        assert exchanges(again) == 2 and bag(again.collect()) == want
        assert exchanges(spark.sql(DJ_Q)) == 1      # other rules are not
        outcomes = [r["outcome"] for r in _records(log)]
        assert outcomes[:2] == ["rewritten", "shadow_mismatch"] and outcomes[2] == "unchanged"
        mism = _records(log)[1]
        assert mism["rules"] == ["du-2way"] and mism["shadow"]["equal"] is False
        assert mism["shadow"]["original_ms"] > 0 and mism["shadow"]["rewritten_ms"] > 0
    finally:
        disable(spark)


def test_shadow_mode_agrees_on_a_correct_rewrite(spark, ops, catalog, settings):
    so = enable(spark, catalog, gate="exchanges")
    try:
        settings("spark.superop.shadow", "1")
        spark.sql(DJ_Q)
        so.wait_shadow(timeout=300)
        assert so.counters["shadow_equal"] == 1 and not so.disabled_rules
        settings("spark.superop.shadow", "0")
        spark.sql(DJ_Q)
        so.wait_shadow(timeout=300)
        assert so.counters["shadow_equal"] == 1
    finally:
        disable(spark)


def test_collect_times_the_run_and_the_report_sums_the_log(spark, ops, catalog, tmp_path, capsys):
    from superop.cli import main
    log = tmp_path / "d.jsonl"
    so = SuperOpSession(spark, catalog, decision_log=str(log), shadow=1.0, gate="exchanges")
    rows = so.collect(DU_Q)
    assert bag(rows) == bag(spark.sql(DU_Q).collect())
    so.sql(DJ_Q)
    so.sql("SELECT a, sum(s) FROM ops GROUP BY a")
    so.wait_shadow(timeout=300)
    with log.open("a") as f:
        f.write("{not json\n")
    recs = [json.loads(x) for x in log.read_text().splitlines()[:-1]]
    timed = [r for r in recs if r["outcome"] == "rewritten" and r["run_ms"] is not None]
    assert len(timed) == 1 and timed[0]["rules"] == ["du-2way"] and timed[0]["run_ms"] > 0
    assert main(["runtime", "report", "--decision-log", str(log)]) == 0
    out = capsys.readouterr().out
    assert "(1 malformed lines skipped)" in out
    assert "decisions: 3 (2 rewritten, 1 unchanged, 0 failed safe) over 3 query templates (2 rewritten)" in out
    assert "not rewritten, by reason: no rule matches 1" in out
    assert "measured by shadow runs (2 comparisons)" in out and "1 timed runs" in out
    assert re.search(r"du-2way\s+1\s+", out) and re.search(r"dj-inner\s+1\s+", out)
    assert main(["runtime", "report", "--decision-log", str(log), "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    assert j["outcomes"]["shadow_equal"] == 2 and j["rules"]["du-2way"]["exchanges_saved"] == 1
    assert main(["runtime", "report", "--decision-log", str(tmp_path / "none.jsonl")]) == 2
