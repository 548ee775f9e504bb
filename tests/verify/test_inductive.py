"""Unbounded template proofs: every Fig. 10 template instance is proved; dropping a
streamability premise, the paper's literal outer-join guard, and the Fig. 13 guarded
running MIN are refuted (an obligation fails with a Z3 model)."""
from __future__ import annotations

import pytest

from superop.verify.inductive import all_templates, prove_template


@pytest.mark.parametrize("params", all_templates(), ids=lambda p: "-".join(str(v) for v in p.values()))
def test_template_proved_for_every_table_size(params):
    r = prove_template(**params)
    assert r.status == "verified", r.reason
    assert r.method == "inductive" and r.K is None
    names = [o["name"] for o in r.details["obligations"]]
    if params["family"] in ("DU", "DJ"):
        assert {"fold.base", "fold.step", "emit"} <= set(names)   # induction: base + step
    else:
        assert {"running.base", "running.step", "locality"} <= set(names)
    assert r.details["covers"] and r.details["assumptions"]


@pytest.mark.parametrize("params,failing", [
    (dict(family="DU", variant="no-premise"), "fold.step"),            # different grouping keys
    (dict(family="DJ", join_kind="inner", variant="no-premise"), "fold.step"),
    (dict(family="DJ", join_kind="left", variant="paper-literal"), "emit"),
    (dict(family="DJ", join_kind="right", variant="paper-literal"), "emit"),
    (dict(family="MJ", join_kind="inner", variant="fig13"), "running.first_is_final"),
])
def test_broken_variants_fail_an_obligation(params, failing):
    r = prove_template(**params)
    assert r.status == "refuted"
    bad = {o["name"]: o for o in r.details["obligations"] if o["status"] == "failed"}
    assert failing in bad and bad[failing]["counterexample"]
