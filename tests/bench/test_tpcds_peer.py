"""The peer column of `superop bench tpcds` and its power-run mode, at SF 0.01 (no speed is
asserted): Spark's defaults, Spark with its merge settings and superop side by side, every
compared side checked for equal rows first."""
from __future__ import annotations

import pytest

from superop.bench.peer import PEER
from superop.bench.power import CONFIGS, WARM, power_markdown, run_power
from superop.bench.rewriters import runtime_rewriter, runtime_session
from superop.bench.tpcds_bench import run_tpcds, tpcds_markdown
from superop.rules_out.catalog import make_catalog
from superop.runtime.merge_flags import FORM, MERGE_FLAGS
from superop.workloads.tpcds import queries

# q9: no family rewrites it, the merge settings merge its 15 scalar sub-queries;
# q96: one aggregate, nothing for the settings to merge (no peer side)
NAMES = ["q9", "q96"]


@pytest.fixture(scope="module")
def no_rules():
    return make_catalog([], version="no-rules")


def test_the_peer_column_times_three_sides_with_equal_rows(tpcds_session, tpcds_dir, no_rules):
    doc = run_tpcds(tpcds_session, lambda: runtime_rewriter(tpcds_session, no_rules), queries=NAMES,
                    repeat=1, warmup=0, tpcds_dir=tpcds_dir, sf=0.01)
    q9, q96 = doc["results"]
    assert q9["rewrite"]["applied"] == [FORM] and q9["rewrite"]["conf"] == MERGE_FLAGS
    assert set(q9["timing"]) == {"original", "rewritten", PEER}
    assert q9["equal"]["equal"] and q9["peer_equal"]["equal"]
    assert q9["plans"][PEER]["shuffle_exchanges"] < q9["plans"]["original"]["shuffle_exchanges"]
    assert set(q9["ratios"]) == {"original_over_rewritten", "peer_over_rewritten", "original_over_peer"}
    assert not q96["rewrite"]["changed"] and set(q96["timing"]) == {"original"} and "peer_equal" not in q96
    s = doc["summary"]
    assert (s["rewritten"], s["equal"], s["peer_timed"], s["peer_equal"], s["errors"]) == (1, 1, 1, 1, [])
    md = tpcds_markdown(dict(doc, params={"sf": 0.01}))
    assert "| Spark s | Spark + flags s | superop s |" in md
    assert f"| q9 | {FORM} | yes" in md and "/ peer yes" in md
    assert "| q96 | none | n/a (unchanged) |" in md


def test_the_power_run_alternates_three_configurations(tpcds_session, no_rules):
    made = []

    def make():
        so, _ = runtime_session(tpcds_session, no_rules)
        made.append(so)
        return so
    doc = run_power(tpcds_session, make, queries(), NAMES, repeat=1, warmup=0)
    [rnd] = doc["rounds"]
    assert rnd["order"] == list(CONFIGS) and len(made) == 1      # a fresh session per round
    s = doc["summary"]
    assert (s["statements"], s["statements_timed"], s["failed"]) == (2, 2, [])
    assert s["changed"] == {"q9": [FORM]}
    assert all(s["median_total_s"][c] > 0 for c in CONFIGS)
    assert rnd["decisions"]["q9"]["decision_s"] > 0 and s["median_decision_s"] > 0
    md = power_markdown(dict(doc, params={"sf": 0.01}))
    assert all(f"| {c} |" in md for c in CONFIGS) and f"q9 ({FORM})" in md


def test_the_warm_configuration_decides_before_its_round(tpcds_session, no_rules):
    """--warm: a fourth configuration whose session decided every statement before the timed
    pass (its own session: a fresh one per superop configuration)."""
    made = []

    def make():
        so, _ = runtime_session(tpcds_session, no_rules)
        made.append(so)
        return so
    doc = run_power(tpcds_session, make, queries(), NAMES, repeat=1, warmup=0, warm=True)
    [rnd] = doc["rounds"]
    assert doc["configs"] == list(CONFIGS) + [WARM] and rnd["order"] == doc["configs"] and len(made) == 2
    assert rnd["decisions_warm"]["q9"]["applied"] == [FORM] and rnd["decisions"]["q9"]["applied"] == [FORM]
    s = doc["summary"]
    assert s["spark_over_superop_warm"] > 0 and s["median_decision_warm_s"] >= 0
    md = power_markdown(dict(doc, params={"sf": 0.01}))
    assert f"| {WARM} |" in md and f"Spark / {WARM}" in md


def test_power_needs_the_runtime(tmp_path, capsys):
    from superop.cli import main
    rc = main(["bench", "tpcds", "--power", "--rewriter", "identity", "--queries", "q9",
               "--out", str(tmp_path), "--no-mlflow", "--quiet"])
    assert rc == 2 and "--power times superop's runtime" in capsys.readouterr().err
    rc = main(["bench", "tpcds", "--warm", "--queries", "q9", "--out", str(tmp_path)])
    assert rc == 2 and "--warm is a configuration of the power run" in capsys.readouterr().err


def test_the_first_sight_mode_reaches_the_session(spark):
    """``--certify background``: the superop side's session never waits for a proof; an
    unknown mode is refused by the command line before Spark starts."""
    import pytest

    from superop.bench.rewriters import runtime_session
    from superop.cli import main
    from superop.rules_out.catalog import make_catalog
    so, info = runtime_session(spark, make_catalog([], version="none"), certify="background")
    assert info["certify"] == "background" and so.certifier is not None and so.certifier.background
    with pytest.raises(SystemExit) as e:
        main(["bench", "tpcds", "--certify", "later", "--queries", "q9"])
    assert e.value.code == 2
