"""Certificates that cannot be weakened. Each way an audit weakened a certificate — a
vacuous context around the instance, a lowered bound, a shown bound that is not the bound
checked, an emitted-SQL claim dropped, swapped or downgraded — is refused by the
structural check (without Z3), by loading a catalog holding it (the load checks the
certificate's own fields; what the code re-derives, the signer of this build checked), and,
for what only Z3 can decide, by the re-check. A certificate about a query with context that
a key holder signs anyway loads, and covers nothing: its instance key is no match's."""
from __future__ import annotations

import copy
import json

import pytest

from superop.rules_out import trust
from superop.rules_out.catalog import CatalogError, load_catalog, make_catalog
from superop.rules_out.coverage import covered_rule
from superop.rules_out.signing import sign_catalog, signing_key
from superop.families.identity import Instance, instance_of_sql
from superop.verify import certify as C
from superop.verify.certificate import sha256_of, structural_check
from superop.verify.certify import check_and_certify, prove_and_certify, recheck_detail

from .conftest import SCHEMA

DU_Q = ("SELECT a, sum(s) AS t FROM ops WHERE b > 0 GROUP BY a "
        "UNION ALL SELECT a, count(*) AS t FROM ops GROUP BY a")
# the nightly's DJ-inner certificate carried an outer filter: only rows with lo > 1 were compared
DJ_Q = ("SELECT x.a, x.lo, y.mb FROM (SELECT a, min(b) AS lo FROM ops GROUP BY a) x JOIN "
        "(SELECT a, max(b) AS mb FROM ops WHERE c > 0 GROUP BY a) y ON x.a = y.a")


@pytest.fixture(scope="module")
def du_cert():
    return check_and_certify(DU_Q, SCHEMA, K=3)


def _rehashed(c: dict) -> dict:
    c["inputs_sha256"] = sha256_of(c["inputs"])
    return c


def _load(tmp_path, monkeypatch, cert: dict):
    """Load a catalog holding ``cert`` that carries a valid signature of the local key (signed
    without the signer's own checks, as a holder of the key could): the load-time checks
    must refuse a weakened certificate on their own."""
    monkeypatch.setattr(trust, "_RECHECKED", {})
    rule = covered_rule("DU", [cert], rule_id="du-2way")
    p = tmp_path / "catalog.json"
    p.write_text(json.dumps(sign_catalog(make_catalog([rule]), signing_key(), "tests")))
    return load_catalog(p)


def test_the_honest_certificate_holds_and_loads(du_cert, tmp_path, monkeypatch):
    assert du_cert["status"] == "verified" and structural_check(du_cert, True) == (True, "structure holds")
    assert _load(tmp_path, monkeypatch, du_cert)["rules"]


@pytest.mark.parametrize("context", ["SELECT * FROM ({q}) q WHERE 1 = 0",
                                     "SELECT a FROM ({q}) q WHERE t > 1"])
def test_a_context_around_the_instance_is_not_certified(context):
    # certifying a query with context certifies the instance alone ...
    c = check_and_certify(context.format(q=DU_Q), SCHEMA, K=3)
    assert c["inputs"]["sql"] == instance_of_sql(DU_Q, SCHEMA).sql and "1 = 0" not in c["inputs"]["sql"]
    # ... and a certificate whose SQL carries the context (honestly re-hashed) is refused
    forged = copy.deepcopy(c)
    forged["inputs"]["sql"] = context.format(q=c["inputs"]["sql"])
    ok, why = structural_check(_rehashed(forged), True)
    assert not ok and "not the match alone" in why


def test_the_outer_filter_of_the_dj_certificate(tmp_path, monkeypatch):
    c = check_and_certify(f"SELECT * FROM ({DJ_Q}) q WHERE q.lo > 1", SCHEMA, K=3)
    assert "lo > 1" not in c["inputs"]["sql"] and c["status"] == "verified"
    forged = copy.deepcopy(c)
    forged["inputs"]["sql"] = f"SELECT * FROM ({c['inputs']['sql']}) AS q WHERE q.lo > 1"
    ok, why = structural_check(_rehashed(forged), True)
    assert not ok and "context" in why


@pytest.mark.parametrize("K", [0, 1, 2])
def test_a_lowered_bound_is_refused_on_load(du_cert, K, tmp_path, monkeypatch):
    t = copy.deepcopy(du_cert)
    t["inputs"]["K"] = t["K"] = K
    t["inputs"]["emitted_sql"]["K"] = t["emitted_sql"]["K"] = K
    ok, why = structural_check(_rehashed(t), True)
    assert not ok and f"at most {K} rows, below the minimum bound 3" in why
    with pytest.raises(CatalogError, match="below the minimum bound"):
        _load(tmp_path, monkeypatch, t)


def test_the_shown_bound_is_the_bound_checked(du_cert):
    t = copy.deepcopy(du_cert)
    t["inputs"]["K"] = 0               # inputs checked at 0 rows, K=3 shown
    ok, why = structural_check(_rehashed(t), True)
    assert not ok and "shows K=3 but its inputs were checked at K=0" in why
    t = copy.deepcopy(du_cert)
    t["K"] = 4                         # a higher bound shown than checked
    ok, why = structural_check(t, True)
    assert not ok and "shows K=4" in why


def test_the_minimum_bound_is_configurable_upward_only(du_cert, monkeypatch):
    monkeypatch.setenv("SUPEROP_MIN_BOUND", "4")
    ok, why = structural_check(du_cert, True)
    assert not ok and "below the minimum bound 4" in why
    monkeypatch.setenv("SUPEROP_MIN_BOUND", "1")       # below 3: still 3
    t = copy.deepcopy(du_cert)
    t["inputs"]["K"] = t["K"] = 2
    t["inputs"]["emitted_sql"]["K"] = t["emitted_sql"]["K"] = 2
    ok, why = structural_check(_rehashed(t), True)
    assert not ok and "below the minimum bound 3" in why


def test_the_emitted_sql_claim_is_hashed_and_rederived(du_cert, tmp_path, monkeypatch):
    assert du_cert["inputs"]["emitted_sql"]["checked_by"] == "bounded"
    # deleting the displayed record, or the claim (re-hashed)
    t = copy.deepcopy(du_cert)
    del t["emitted_sql"]
    assert not structural_check(t, True)[0]
    t = copy.deepcopy(du_cert)
    del t["inputs"]["emitted_sql"]
    ok, why = structural_check(_rehashed(t), True)
    assert not ok and "no emitted_sql claim" in why
    with pytest.raises(CatalogError, match="emitted_sql"):
        _load(tmp_path, monkeypatch, t)
    # downgrading it to "differential tests" (both copies, re-hashed)
    t = copy.deepcopy(du_cert)
    for rec in (t["inputs"]["emitted_sql"], t["emitted_sql"]):
        rec.pop("status")
        rec.pop("K")
        rec.update(checked_by="differential-tests", reason="the emitted SQL does not lower")
    ok, why = structural_check(_rehashed(t), True)
    assert not ok and "lowers but the certificate says it was left to differential tests" in why
    # another SQL than the runtime emits: the re-check re-derives it
    t = copy.deepcopy(du_cert)
    for rec in (t["inputs"]["emitted_sql"], t["emitted_sql"]):
        rec["sql"] = rec["sql"].replace("COALESCE(__so_f_out1, FALSE)", "TRUE")
    C._RERUN.clear()
    ok, why = recheck_detail(_rehashed(t), True)
    assert not ok and "is not what the check gives now" in why
    # a bounded verdict that is not "verified"
    t = copy.deepcopy(du_cert)
    for rec in (t["inputs"]["emitted_sql"], t["emitted_sql"]):
        rec["status"] = "unknown"
    ok, why = structural_check(_rehashed(t), True)
    assert not ok and "is unknown, not verified" in why


def test_a_downgrade_the_encoder_would_check_is_refused_by_the_recheck(du_cert):
    # claiming the encoder does not model an emitted SQL it models passes the structural
    # check (that needs Z3) but not the re-check, which re-derives the verdict
    t = copy.deepcopy(du_cert)
    for rec in (t["inputs"]["emitted_sql"], t["emitted_sql"]):
        rec.pop("status")
        rec.pop("K")
        rec.update(checked_by="differential-tests", reason="the encoder does not model the emitted SQL: x")
    t = _rehashed(t)
    assert structural_check(t, True)[0]
    C._RERUN.clear()
    ok, why = recheck_detail(t, True)
    assert not ok and "is not what the check gives now" in why


def test_a_template_proof_carries_its_emitted_sql_check():
    c = prove_and_certify("DU/2")
    em = c["inputs"]["emitted_sql"]
    assert c["status"] == "verified" and em["checked_by"] == "bounded" and em["status"] == "verified"
    assert "INLINE(FILTER(ARRAY(STRUCT(" in em["sql"] and "G1(" in em["sql"].upper()
    t = copy.deepcopy(c)
    del t["inputs"]["emitted_sql"]
    ok, why = structural_check(_rehashed(t), True)
    assert not ok and "no emitted_sql claim" in why


def test_a_signed_context_certificate_covers_nothing(tmp_path, monkeypatch):
    from superop.rewrite.rewriter import Rewriter, rewrite_structural
    c = check_and_certify(f"SELECT * FROM ({DU_Q}) q WHERE 1 = 0", SCHEMA, K=4)
    forged = copy.deepcopy(c)
    forged["inputs"]["sql"] = f"SELECT * FROM ({c['inputs']['sql']}) AS q WHERE 1 = 0"
    forged = _rehashed(forged)
    forged["instance"] = Instance(forged["inputs"]["sql"], forged["inputs"]["schema"]).key
    forged["inputs_sha256"] = sha256_of(forged["inputs"])
    assert not structural_check(forged, True)[0]                 # the full check refuses it
    assert structural_check(forged, True, rederive=False)[0]     # the load's own-fields check does not
    cat = _load(tmp_path, monkeypatch, forged)
    for q in (DU_Q, f"SELECT * FROM ({DU_Q}) q WHERE 1 = 0"):
        r = rewrite_structural(Rewriter(cat), q, SCHEMA)
        assert not r.changed and "no proof covers" in r.explanation, r.explanation
