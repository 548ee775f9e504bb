"""TPC-DS through the nightly job's later stages: a neighbour self-join statement (q47) as a
mined candidate is synthesized, certified (at 3 rows: the bound the nightly falls back to
after a timeout, recorded in the certificate), generalized into a rule of a catalog, and
that catalog rewrites q47 and q57 (the same shape over catalog_sales) through the runtime
with the original's rows at SF 0.01 — compared as bags, on data with NULLs."""
from __future__ import annotations

from superop.pipeline.candidates import synthesize_at_bounds
from superop.pipeline.certificates import pattern_of, template_proofs
from superop.rules_out.catalog import make_catalog
from superop.rules_out.generalize import generalize
from superop.sparkutil import bag
from superop.workloads.tpcds import TPCDS_SCHEMA, queries


def test_a_mined_neighbour_rule_rewrites_q47_and_q57(tpcds_session):
    from superop.runtime import SuperOpSession
    row = {"candidate_id": "NB-q47", "family": "NB", "join_kind": "inner", "shape": "((, )⋈, )⋈",
           "example_sql": queries()["q47"], "templates": 1, "executions": 3, "cost_share": 0.03,
           "template_ids": ["q47"]}
    o = synthesize_at_bounds(row, TPCDS_SCHEMA, [3], 60, 30)
    assert o.verified, o.reason
    p = pattern_of(o, TPCDS_SCHEMA, 3, 30)
    assert p is not None and p.certificate is not None
    assert (p.certificate["status"], p.certificate["K"]) == ("verified", 3)
    rules, rejected = generalize([p], template_proofs(30000))
    assert len(rules) == 1 and not rejected, rejected
    so = SuperOpSession(tpcds_session, make_catalog(rules))
    for name in ("q47", "q57"):
        sql = queries()[name]
        r = so.rewrite(sql)
        assert r.changed and r.applied == [rules[0]["id"]], (name, r.explanation)
        assert r.exchanges_after is not None and r.exchanges_before is not None
        assert r.exchanges_after < r.exchanges_before, (name, r.exchanges_before, r.exchanges_after)
        want = bag(tpcds_session.sql(sql).collect())
        assert want, name                                  # not an empty comparison
        assert bag(tpcds_session.sql(r.sql).collect()) == want, name
