"""Selection by recurring cost: a dashboard query (one template, 50 runs with new literals)
is a candidate; a rare or cheap diamond is not; the summary counts candidates by route."""
from __future__ import annotations

import json
import random

import pytest

from superop.errors import SuperopError
from superop.mining.job import run_mining
from superop.mining.selection import Selection

# one template, run 50 times a day with fresh literals (a dashboard)
DASHBOARD = ("SELECT a, COUNT(*) AS n FROM ops WHERE s < {x} GROUP BY a "
             "UNION ALL SELECT a, COUNT(*) AS n FROM ops WHERE s >= {y} GROUP BY a")
# one Diamond Join variant written as three templates, each run once
MULTI = ["SELECT l.a, l.n, r.m FROM (SELECT a, COUNT(*) AS n FROM ops GROUP BY a) l "
         "JOIN (SELECT a, MAX(s) AS m FROM ops WHERE b > {x} GROUP BY a) r ON l.a = r.a",
         "SELECT l.a, l.n, r.m FROM (SELECT a, SUM(c) AS n FROM ops GROUP BY a) l "
         "JOIN (SELECT a, MAX(s) AS m FROM ops WHERE b > {x} GROUP BY a) r ON l.a = r.a",
         "SELECT l.a, l.n, r.m FROM (SELECT a, MIN(c) AS n FROM ops GROUP BY a) l "
         "JOIN (SELECT a, MAX(s) AS m FROM ops WHERE b > {x} GROUP BY a) r ON l.a = r.a"]
# a left-join diamond from two templates, one of them run 20 times (both routes)
BOTH = ["SELECT l.a, l.n, r.m FROM (SELECT a, COUNT(*) AS n FROM ops GROUP BY a) l "
        "LEFT JOIN (SELECT a, SUM(b) AS m FROM ops WHERE c > {x} GROUP BY a) r ON l.a = r.a",
        "SELECT l.a, l.n, r.m FROM (SELECT a, MAX(c) AS n FROM ops GROUP BY a) l "
        "LEFT JOIN (SELECT a, SUM(b) AS m FROM ops WHERE c > {x} GROUP BY a) r ON l.a = r.a"]
# run once: not recurring
RARE = ("SELECT l.a, l.n, r.m FROM (SELECT a, COUNT(*) AS n FROM ops GROUP BY a) l "
        "FULL JOIN (SELECT a, MIN(b) AS m FROM ops WHERE s > {x} GROUP BY a) r ON l.a = r.a")
# run 3 times but cheap: below the cost share (a 3-way union: its own variant)
CHEAP = ("SELECT a, MAX(b) AS m FROM ops WHERE c < {x} GROUP BY a "
         "UNION ALL SELECT a, MIN(b) AS m FROM ops WHERE c >= {y} GROUP BY a "
         "UNION ALL SELECT a, SUM(b) AS m FROM ops GROUP BY a")
NOISE = "SELECT a, b FROM ops WHERE s = {x}"


def _log(path) -> None:
    rng = random.Random(5)
    rows = []

    def add(tpl, ms):
        x, y = rng.sample(range(1, 1000), 2)
        rows.append({"statement_text": tpl.format(x=x, y=y), "total_duration_ms": ms,
                     "execution_status": "FINISHED", "read_bytes": 1000, "shuffle_bytes": 10})
    for _ in range(50):
        add(DASHBOARD, 2000)
    for t in MULTI:
        add(t, 3000)
    for _ in range(20):
        add(BOTH[0], 1000)
    add(BOTH[1], 1000)
    add(RARE, 3000)
    for _ in range(3):
        add(CHEAP, 50)
    for _ in range(400):
        add(NOISE, 500)
    rng.shuffle(rows)
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")


@pytest.fixture(scope="module")
def mixed_log(tmp_path_factory):
    p = tmp_path_factory.mktemp("recurrence") / "log.jsonl"
    _log(p)
    return p


def _by_family(res):
    return {(r["family"], r["join_kind"]): r for r in res.candidates.to_dict("records")}


def test_cost_selection_finds_the_dashboard_and_drops_rare_and_cheap(spark, mixed_log, tmp_path):
    res = run_mining(mixed_log, tmp_path / "o", spark=spark, mlflow_run=False, progress=False)
    c = _by_family(res)
    total = res.summary["total_cost_ms"]
    assert total == 50 * 2000 + 3 * 3000 + 21 * 1000 + 3000 + 3 * 50 + 400 * 500
    du = c[("DU", "")]
    assert (du["templates"], du["executions"], du["route"]) == (1, 50, "single_template")
    assert du["cost_share"] == pytest.approx(100_000 / total)
    dj = c[("DJ", "inner")]
    assert (dj["templates"], dj["executions"], dj["route"]) == (3, 3, "multi_template")
    left = c[("DJ", "left")]
    assert (left["templates"], left["executions"], left["route"]) == (2, 21, "both")
    # the full-join diamond ran once, the 3-way union is 0.05 % of the cost: not recurring
    assert ("DJ", "full") not in c
    assert len(c) == 3
    s = res.summary
    assert s["selection"] == {"mode": "cost", "k": None, "min_cost_share": 0.005,
                              "min_executions": 2}
    assert s["candidates_by_route"] == {"single_template": 1, "multi_template": 1, "both": 1}
    # the cheap union was found and dropped by cost, not by detection
    strict = run_mining(mixed_log, tmp_path / "all", spark=spark, mlflow_run=False,
                        progress=False, min_cost_share=0.0, min_executions=1)
    found = {(r["family"], r["join_kind"], r["executions"])
             for r in strict.candidates.to_dict("records")}
    assert {("DJ", "full", 1), ("DU", "", 3)} <= found and len(found) == 5
    # recurring sub-plans follow the same rule: every one ran >= 2 times and costs >= 0.5 %
    rec = res.recurring
    assert len(rec) and (rec["executions"] >= 2).all()
    assert (rec["cost_ms"] >= 0.005 * total).all()


def test_k_keeps_the_classic_template_support_rule(spark, mixed_log, tmp_path):
    res = run_mining(mixed_log, tmp_path / "o", spark=spark, k=2, mlflow_run=False,
                     progress=False)
    c = _by_family(res)
    # the dashboard is one template: invisible to the support rule
    assert set(c) == {("DJ", "inner"), ("DJ", "left")}
    assert res.summary["selection"]["mode"] == "templates"
    assert res.summary["candidates_by_route"] == {"single_template": 0, "multi_template": 1,
                                                  "both": 1}
    assert (res.recurring["templates"] >= 2).all()


def test_selection_rule_and_bad_thresholds(tmp_path):
    s = Selection()
    assert s.keeps(1, 50, 0.02) and not s.keeps(1, 1, 0.5) and not s.keeps(5, 5, 0.001)
    assert Selection(k=2).keeps(2, 2, 0.0) and not Selection(k=2).keeps(1, 50, 0.9)
    assert s.route(1, True) == "single_template"
    assert (s.route(3, False), s.route(2, True)) == ("multi_template", "both")
    log = tmp_path / "l.jsonl"
    log.write_text('{"statement_text": "SELECT a FROM ops"}\n')
    for kw in ({"k": 0}, {"min_cost_share": 1.5}, {"min_executions": 0}):
        with pytest.raises(SuperopError):
            run_mining(log, tmp_path / "o", mlflow_run=False, progress=False, **kw)
