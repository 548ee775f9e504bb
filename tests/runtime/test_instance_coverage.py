"""Every rewrite that runs is proved for the instance that runs. A rule admitting a match
(its covers records contain the instance's point) is not enough: the runtime applies a
match only under an unbounded template proof whose claim contains it or a bounded
certificate (K >= 4) of exactly that instance — the match's sub-plan alone, canonical.
A new instance is certified on first sight (Z3 installed) or runs unchanged and is
recorded for the next nightly job; `explain` names the proof of every applied match."""
from __future__ import annotations

import pytest

from superop.families.identity import instance_of_sql
from superop.families.parametric import parametric_of
from superop.rewrite.rewriter import Rewriter, rewrite_structural
from superop.rules_out.catalog import make_catalog
from superop.rules_out.coverage import covered_rule
from superop.rules_out.trust import recheck_locally
from superop.sparkutil import bag
from superop.verify.certify import check_and_certify, prove_and_certify

from .runtime_fixtures import SCHEMA, values_view

# four aggregates of ops glued by UNION ALL: no template proof covers 4 branches (DU/2,
# DU/3), so a rule made of this certificate rests on it alone
OPS_4WAY = " UNION ALL ".join([
    "SELECT a, sum(s) AS v FROM ops WHERE b > 0 GROUP BY a",
    "SELECT a, count(*) AS v FROM ops GROUP BY a",
    "SELECT a, max(c) AS v FROM ops WHERE d = 'x' GROUP BY a",
    "SELECT a, min(b) AS v FROM ops GROUP BY a"])
# the audit's query: another table, string keys, a `v / 0` projection no certificate checked
KV = {"kv": {"k": "string", "v": "int", "w": "int"}}
KV_4WAY = " UNION ALL ".join([
    "SELECT k, sum(v) AS x FROM kv WHERE w > 0 GROUP BY k",
    "SELECT k, count(*) AS x FROM kv GROUP BY k",
    "SELECT k, max(w) AS x FROM kv WHERE v = 1 GROUP BY k",
    "SELECT k, min(v) / 0 AS x FROM kv GROUP BY k"])


@pytest.fixture(scope="module")
def cert4():
    c = check_and_certify(OPS_4WAY, SCHEMA, K=4, timeout_ms=120000)
    assert c["status"] == "verified", c.get("reason")
    return c


@pytest.fixture(scope="module")
def catalog4(cert4):
    return make_catalog([covered_rule("DU", [cert4], rule_id="diamond-union-all-4way")], version="t")


def test_the_rule_admits_the_other_instance_but_no_proof_covers_it(catalog4):
    rw = Rewriter(catalog4)
    r = rewrite_structural(rw, KV_4WAY, {**SCHEMA, **KV})
    assert not r.changed and r.sql == KV_4WAY
    assert "no proof covers instance" in r.explanation, r.explanation
    key = instance_of_sql(KV_4WAY, {**SCHEMA, **KV}).key
    assert [i.key for i in rw.uncovered_instances()] == [key]      # recorded for the next nightly


def test_the_certified_instance_is_applied_and_named(catalog4, cert4):
    r = rewrite_structural(Rewriter(catalog4), OPS_4WAY, SCHEMA)
    assert r.applied == ["diamond-union-all-4way"], r.explanation
    assert f"covered by the bounded certificate K=4 of instance {cert4['instance'][7:19]}" in r.explanation
    assert "first sight" not in r.explanation      # the catalog's own certificate
    # the same instance spelled otherwise (context around it, another alias) is the same key
    ctx = f"SELECT q.a FROM ({OPS_4WAY}) AS q WHERE q.v > 1"
    assert instance_of_sql(ctx, SCHEMA).key == cert4["instance"]
    assert rewrite_structural(Rewriter(catalog4), ctx, SCHEMA).applied == ["diamond-union-all-4way"]


def test_another_literal_is_another_instance(catalog4):
    other = OPS_4WAY.replace("b > 0", "b > 1")
    r = rewrite_structural(Rewriter(catalog4), other, SCHEMA)
    assert not r.changed and "no proof covers instance" in r.explanation


def test_a_bound_below_four_covers_no_instance():
    c = check_and_certify(OPS_4WAY, SCHEMA, K=3, timeout_ms=120000)
    cat = make_catalog([covered_rule("DU", [c], rule_id="du4")], version="t")
    r = rewrite_structural(Rewriter(cat), OPS_4WAY, SCHEMA)
    assert not r.changed and "no proof covers" in r.explanation


def test_a_template_proof_covers_what_its_claim_contains():
    cat = make_catalog([covered_rule("DU", [prove_and_certify("DU/2")], rule_id="du-2way")], version="t")
    q = "SELECT k, sum(v) AS x FROM kv WHERE w > 0 GROUP BY k UNION ALL SELECT k, count(*) FROM kv GROUP BY k"
    r = rewrite_structural(Rewriter(cat), q, KV)
    assert r.applied == ["du-2way"] and "covered by the unbounded proof DU/2" in r.explanation


@pytest.fixture(scope="module")
def kv(spark, ops):
    values_view(spark, "kv", "k string, v int, w int",
                [("a", 1, 1), ("a", 2, -1), ("b", None, 3), (None, 1, 0), ("c", 5, None)])
    return KV


def test_the_session_certifies_a_new_instance_on_first_sight(spark, kv, catalog4):
    from superop.runtime import SuperOpSession
    q = KV_4WAY.replace("min(v) / 0", "min(v)")
    off = SuperOpSession(spark, recheck_locally(catalog4), gate="ungated", certify=False)
    r = off.rewrite(q)
    assert not r.changed and "no proof covers instance" in r.explanation
    assert [i.key for i in off.uncovered_instances()] == [instance_of_sql(q, {**SCHEMA, **KV}).key]
    so = SuperOpSession(spark, recheck_locally(catalog4), gate="ungated")             # Z3 is installed: first sight
    r = so.rewrite(q)
    assert r.applied == ["diamond-union-all-4way"], r.explanation
    # certified in its parametric form (w > 0, v = 1 as parameters): one certificate for
    # every literal of those types
    assert "covered by the bounded certificate K=4 of parametric instance" in r.explanation
    assert "made on first sight in this session (not in the catalog)" in r.explanation
    assert so.uncovered_instances() == [] and len(so.certifier.certified) == 1
    assert "covered by the bounded certificate K=4" in so.explain(q)
    assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(q).collect())
    # the SQL that runs is the SQL certified: the compiled sub-plan of the certificate's
    # emitted SQL (with the same column types) is inside the session's
    cert = so.certifier.certified[0]
    par = parametric_of(instance_of_sql(q, {**SCHEMA, **KV}))
    assert cert["instance"] == par.instance.key
    em = cert["emitted_sql"]["sql"]
    compiled = par.bind(em[em.index("SELECT CAST(k AS STRING)"):em.index(" AS __so_em")])
    assert "CAST(__so_a_f1 AS BIGINT)" in compiled and compiled in r.sql
    # the same template with other literals: covered by that certificate, nothing new made
    r2 = so.rewrite(q.replace("w > 0", "w > 2").replace("v = 1", "v = 5"))
    assert r2.applied == ["diamond-union-all-4way"] and len(so.certifier.certified) == 1
    assert "(p0=5, p1=2), made on first sight" in r2.explanation, r2.explanation


def test_the_v_div_zero_instance_is_checked_before_it_runs(spark, kv, catalog4):
    from superop.runtime import SuperOpSession
    so = SuperOpSession(spark, recheck_locally(catalog4), gate="ungated")
    r = so.rewrite(KV_4WAY)
    if r.changed:      # certified on first sight: the rewrite raises exactly where the query does
        assert "covered by the bounded certificate" in r.explanation
        for q in (KV_4WAY, r.sql):
            with pytest.raises(Exception, match="DIVIDE_BY_ZERO"):
                spark.sql(q).collect()
    else:
        assert "no proof covers" in r.explanation


def _settle(so, key: str, limit_s: float = 180.0) -> None:
    import time
    end = time.monotonic() + limit_s
    while so.certifier.pending(key):
        assert time.monotonic() < end, "the background proof did not finish"
        time.sleep(0.2)


def test_background_first_sight_never_makes_the_statement_wait(spark, kv, catalog4):
    """certify="background": the statement runs unchanged while its instance is checked
    on a background thread, that refusal is not cached, and the statements after the
    proof run rewritten under it."""
    from superop.rewrite.rewriter import IN_BACKGROUND
    from superop.runtime import SuperOpSession
    q = KV_4WAY.replace("min(v) / 0", "min(v)").replace("w > 0", "w > 1")
    key = instance_of_sql(q, {**SCHEMA, **KV}).key
    so = SuperOpSession(spark, recheck_locally(catalog4), gate="ungated", certify="background")
    try:
        r = so.rewrite(q)
        assert not r.changed and r.sql == q and IN_BACKGROUND in r.explanation, r.explanation
        assert so.uncovered_instances() == []      # not a nightly job's work (yet)
        _settle(so, key)
        r2 = so.rewrite(q)
        assert not r2.explanation.startswith("cached decision"), r2.explanation
        assert r2.applied == ["diamond-union-all-4way"], r2.explanation
        assert "made on first sight in this session" in r2.explanation
        assert bag(spark.sql(r2.sql).collect()) == bag(spark.sql(q).collect())
        assert so.rewrite(q).explanation.startswith("cached decision")    # settled: cached now
    finally:
        so.close()


def test_background_first_sight_of_a_refuted_instance_stays_unchanged(spark, kv, catalog4):
    """The v / 0 instance: when its background check does not verify, the statement keeps
    running unchanged and the instance is listed for the next nightly job."""
    from superop.rewrite.rewriter import IN_BACKGROUND
    from superop.runtime import SuperOpSession
    key = instance_of_sql(KV_4WAY, {**SCHEMA, **KV}).key
    so = SuperOpSession(spark, recheck_locally(catalog4), gate="ungated", certify="background")
    try:
        assert IN_BACKGROUND in so.rewrite(KV_4WAY).explanation
        _settle(so, key)
        r = so.rewrite(KV_4WAY)
        if r.changed:     # verified: the rewrite raises exactly where the query does
            assert "made on first sight" in r.explanation
        else:
            assert "no proof covers" in r.explanation and IN_BACKGROUND not in r.explanation
            assert [i.key for i in so.uncovered_instances()] == [key]
    finally:
        so.close()


@pytest.mark.parametrize("mode", ["sometimes", "", 2])
def test_an_unknown_certify_mode_is_refused(spark, catalog4, mode):
    from superop.runtime import SuperOpSession
    with pytest.raises(ValueError, match="certify must be one of"):
        SuperOpSession(spark, recheck_locally(catalog4), certify=mode)


def test_a_closed_background_certifier_leaves_statements_unchanged(spark, kv, catalog4):
    from superop.runtime import SuperOpSession
    q = KV_4WAY.replace("min(v) / 0", "min(v)").replace("w > 0", "w > 3")
    so = SuperOpSession(spark, recheck_locally(catalog4), gate="ungated", certify="background")
    so.rewrite("SELECT 1")
    so.close()
    r = so.rewrite(q)
    assert not r.changed and r.sql == q and r.error is None
    assert not so.certifier.pending(instance_of_sql(q, {**SCHEMA, **KV}).key)
