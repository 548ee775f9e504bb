"""Unbounded template proofs of the extraction templates, and that they can fail."""
from __future__ import annotations

import pytest

from superop.share.templates import CLAIMS, filter_project_obligations, prove_template


@pytest.mark.parametrize("template", sorted(CLAIMS))
def test_every_template_is_proved(template):
    p = prove_template(template)
    assert p.verified, p
    cert = p.certificate()
    assert cert["method"] == "template" and cert["status"] == "verified"
    assert cert["claim"] == CLAIMS[template] and cert["assumptions"]
    assert all(o["status"] == "verified" for o in cert["obligations"])


def test_filter_template_fails_without_its_side_conditions():
    # p must read only the cached columns Y, and p must imply the per-table ORs d
    assert ("keep", "refuted") in filter_project_obligations(p_reads_only_y=False)
    assert ("keep", "refuted") in filter_project_obligations(p_implies_d=False)
    assert all(s == "verified" for _, s in filter_project_obligations())


def test_unknown_template():
    with pytest.raises(KeyError):
        prove_template("no-such-template")
