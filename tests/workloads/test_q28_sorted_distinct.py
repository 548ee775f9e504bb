"""TPC-DS q28 (six global aggregates of store_sales cross-joined, each with
``count(DISTINCT ss_list_price)`` under its own filter): ONE global-aggregate diamond whose
program folds every COUNT(DISTINCT) as the sorted constant-state fold (sorted on
ss_list_price), so the nightly's generalization admits it; rewritten with the rule its
bounded certificate makes, it returns the original rows at SF 0.01."""
from __future__ import annotations

from superop import families
from superop.dsl import STREAMING
from superop.families.coverage import cover_bound
from superop.ir import lower, shape, to_sql
from superop.rules_out.catalog import make_catalog
from superop.rules_out.generalize import Pattern, generalize
from superop.rules_out.trust import recheck_locally
from superop.runtime import SuperOpSession
from superop.sparkutil import bag
from superop.verify.certify import check_and_certify
from superop.workloads.tpcds import TPCDS_SCHEMA, queries


def test_q28_is_one_streaming_ga_rule_with_equal_rows(tpcds_session):
    q = queries()["q28"]
    m = families.first_match(lower(q, TPCDS_SCHEMA).plan, finished=True)
    assert m is not None and m.family == "GA" and len(m.branches) == 6
    assert m.program is not None and m.program.memory == STREAMING
    assert [s.column for s in m.program.sort] == ["ss_list_price"]
    sub = to_sql(m.root)              # the query's LIMIT is outside the diamond
    # at the runtime's cover bound, so the catalog's certificate covers the instance itself: a
    # certificate below it leaves the session to prove it on first sight under a 10 s limit,
    # which a loaded machine can miss (the rule then does not apply)
    cert = check_and_certify(sub, TPCDS_SCHEMA, K=cover_bound(), timeout_ms=120000)
    assert cert["status"] == "verified", cert.get("reason")
    pt = families.get("GA").point(m)
    assert "count_distinct_sorted" in pt.aggregates
    p = Pattern(candidate_id="q28", family="GA", shape=shape(m.root), sql=sub, edges=[list(x) for x in pt.edges],
                branches=pt.branches, aggregates=list(pt.aggregates), memory=m.program.memory,
                program=m.program.to_json(), certificate=cert)
    rules, rejected = generalize([p])
    assert not rejected and [r["id"] for r in rules] == ["global-aggregate-diamond-6way"]
    r = SuperOpSession(tpcds_session, recheck_locally(make_catalog(rules))).rewrite(q)
    assert r.changed and r.applied == ["global-aggregate-diamond-6way"], r.explanation
    assert "first sight" not in r.explanation, r.explanation
    assert r.exchanges_after < r.exchanges_before
    want = bag(tpcds_session.sql(q).collect())
    assert sum(want.values()) == 1
    assert bag(tpcds_session.sql(r.sql).collect()) == want
