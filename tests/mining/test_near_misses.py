"""The catalog's near-miss summary: the near-misses whose cost recurs (the candidates'
selection rule), costliest first, each with its example; every reason a family declares
tells the query's author what to change."""
from __future__ import annotations

import pandas as pd

from superop.families import reason_codes
from superop.mining.near_misses import MAX_EXAMPLE_CHARS, recurring_near_misses
from superop.mining.selection import Selection


def near(**rows) -> pd.DataFrame:
    base = {"family": "DJ", "join_kind": "inner", "shape": "(γ, γ)⋈", "templates": 1, "executions": 1,
            "cost_share": 0.0, "example_sql": "SELECT 1", "input_tables": "ops,accounts",
            "reason": "join_not_on_grouping_keys"}
    return pd.DataFrame([dict(base, **r) for r in rows.values()])


def test_recurring_near_misses_are_selected_and_ordered_by_cost():
    df = near(rare=dict(executions=1, cost_share=0.2),                  # one execution: not recurring
              cheap=dict(executions=50, cost_share=0.001),              # below the cost share
              big=dict(executions=3, cost_share=0.05, reason="different_inputs", family="DU", join_kind=""),
              mid=dict(executions=9, cost_share=0.02, example_sql="SELECT " + "x, " * MAX_EXAMPLE_CHARS))
    s = recurring_near_misses(df, Selection())
    assert (s["found"], s["recurring"]) == (4, 2) and s["selection"] == Selection().describe()
    assert [i["reason"] for i in s["items"]] == ["different_inputs", "join_not_on_grouping_keys"]
    assert s["items"][0]["input_tables"] == ["ops", "accounts"] and s["items"][0]["join_kind"] == ""
    assert s["items"][1]["example_sql"].endswith("more characters)")      # cut, and says so
    assert recurring_near_misses(df, Selection(k=1), limit=1)["items"][0]["cost_share"] == 0.2
    assert recurring_near_misses(near(), Selection())["items"] == []


def test_every_reason_tells_what_to_change():
    for code, r in reason_codes().items():
        assert r.hint and r.hint.endswith(".") and r.hint != r.text, code
