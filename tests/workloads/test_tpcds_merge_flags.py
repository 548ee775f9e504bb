"""TPC-DS q9 — five buckets of three scalar sub-queries over store_sales, which no family
rewrites — gets Spark's own merge settings as its form when the gate prices it faster (all
fifteen aggregates in one scan), with the original's row at SF 0.01."""
from __future__ import annotations

from superop.rules_out.catalog import make_catalog
from superop.runtime import SuperOpSession
from superop.runtime.merge_flags import FORM, MERGE_FLAGS
from superop.sparkutil import bag
from superop.workloads.tpcds import queries


def test_q9_takes_the_flag_form_with_equal_rows(tpcds_session):
    q = queries()["q9"]
    so = SuperOpSession(tpcds_session, make_catalog([], version="no-rules"), cache=False)
    r = so.rewrite(q)
    assert r.changed and r.applied == [FORM] and r.conf == MERGE_FLAGS, r.explanation
    assert r.exchanges_after < r.exchanges_before
    want = bag(tpcds_session.sql(q).collect())
    assert sum(want.values()) == 1
    assert bag(so.sql(q).collect()) == want
    assert tpcds_session.conf.get(next(iter(k for k in MERGE_FLAGS if "symmetric" in k))) == "false"
