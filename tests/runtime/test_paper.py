"""The paper's corpus (one query per Table 2 row, Fig. 1/7-9/11-13/15) over the paper's
example tables: every query passes through the rewriter; what is rewritten returns the
same rows with fewer exchanges, the rest comes back byte for byte."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from superop.runtime import SuperOpSession
from superop.sparkutil import bag

from .runtime_fixtures import values_view

paper = pytest.importorskip("superop.workloads.paper")


def test_paper_corpus(spark, catalog):
    s = spark.newSession()                      # the paper's ops/accounts must not replace ours
    s.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    rows = paper.paper_rows(80, seed=7)
    for name, cols in paper.PAPER_SCHEMA.items():
        values_view(s, name, ", ".join(f"{c} {t}" for c, t in cols.items()), rows[name])
    so = SuperOpSession(s, catalog)
    corpus = {c.id: c for c in tuple(paper.TABLE2_CORPUS) + tuple(paper.FIGURE_CORPUS)}
    def one(c) -> tuple[object, str]:
        r = so.rewrite(c.sql)
        assert r.error is None, (c.id, r.error)
        if r.changed:
            assert bag(s.sql(r.sql).collect()) == bag(s.sql(c.sql).collect()), c.id
            assert r.exchanges_after < r.exchanges_before, c.id
            return r.applied, ""
        assert r.sql == c.sql
        return None, r.explanation

    # four queries at a time through the one session (as an application's threads would)
    with ThreadPoolExecutor(4) as pool:
        done = dict(zip(sorted(corpus), pool.map(one, (corpus[i] for i in sorted(corpus)))))
    rewritten = {cid: applied for cid, (applied, _) in done.items() if applied is not None}
    kept = {cid: why for cid, (applied, why) in done.items() if applied is None}
    print(f"paper corpus: rewritten {sorted(rewritten)}; kept {sorted(kept)}")
    # every family of the paper is rewritten somewhere in its corpus
    assert {corpus[i].family for i in rewritten} == {"DU", "DJ", "MJ"}
    assert len(rewritten) >= 20, kept
