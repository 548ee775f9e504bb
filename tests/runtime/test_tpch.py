"""Every TPC-H query passes through the rewriter and returns the same rows; a query the
catalog does not cover comes back byte for byte."""
from __future__ import annotations

import pytest

from superop.runtime import SuperOpSession
from superop.sparkutil import bag

tpch_mod = pytest.importorskip("superop.workloads.tpch")
QUERIES = getattr(tpch_mod, "QUERIES", {})


def test_every_tpch_query_passes_through(spark, tpch, catalog, record_property):
    assert len(QUERIES) == 22
    so = SuperOpSession(spark, catalog)
    rewritten = []
    for n, q in sorted(QUERIES.items()):
        r = so.rewrite(q)
        assert r.error is None, (n, r.error)
        if r.changed:
            rewritten.append((n, r.applied))
            assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(q).collect()), n
            assert r.exchanges_after < r.exchanges_before
        else:
            assert r.sql == q, n
    record_property("tpch_rewritten", rewritten)
    print(f"TPC-H queries rewritten: {rewritten or 'none'}")
