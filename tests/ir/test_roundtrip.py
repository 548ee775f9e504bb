"""sql -> lower -> to_sql runs on Spark and returns the same bag of rows as sql, for
the 22 TPC-H queries and the paper corpus (Table 2 shapes + figure queries)."""
from __future__ import annotations

import pytest

from superop.ir import Join, Scan, UnionAll, lower, shape, shared_nodes, to_sql
from superop.sparkutil import bag_of
from superop.workloads.paper import PAPER_SCHEMA, TABLE2_CORPUS, TABLE2_ROWS
from superop.workloads.tpch import QUERIES, TPCH_SCHEMA

# Floors on full lowering (no Opaque node anywhere in the plan). Raise them, never lower.
TPCH_FULL_FLOOR = 22
CORPUS_FULL_FLOOR = len(TABLE2_CORPUS)


def test_tpch_schema_matches_the_generated_parquet(tpch):
    assert tpch == TPCH_SCHEMA


@pytest.mark.parametrize("qid", sorted(QUERIES))
def test_tpch_roundtrip(spark, tpch, qid, lowering_coverage):
    sql = QUERIES[qid]
    low = lower(sql, tpch)
    lowering_coverage.setdefault("tpch", {})[str(qid)] = low.fully_lowered
    expected = bag_of(spark, sql)
    assert sum(expected.values()) > 0, "the validation parameters select rows at SF 0.01"
    assert bag_of(spark, to_sql(low.plan)) == expected


@pytest.mark.parametrize("q", TABLE2_CORPUS, ids=[q.id for q in TABLE2_CORPUS])
def test_corpus_roundtrip_and_shape(paper_spark, paper, q, lowering_coverage):
    low = lower(q.sql, paper)
    lowering_coverage.setdefault("paper corpus", {})[q.id] = low.fully_lowered
    assert shape(low.plan) == q.shape
    root = low.plan
    assert isinstance(root, UnionAll if q.family == "DU" else Join)
    # The diamond's common input is one shared node (the paper's Spool).
    assert any(isinstance(n, Scan) for n in shared_nodes(root))
    expected = bag_of(paper_spark, q.sql)
    assert sum(expected.values()) > 0
    assert bag_of(paper_spark, to_sql(low.plan)) == expected


def test_full_lowering_floor(capsys):
    """Counts without Spark, so the numbers do not depend on test selection."""
    tpch_full = [k for k, sql in QUERIES.items() if lower(sql, TPCH_SCHEMA).fully_lowered]
    corpus_full = [q.id for q in TABLE2_CORPUS if lower(q.sql, PAPER_SCHEMA).fully_lowered]
    with capsys.disabled():
        print(f"\nTPC-H: {len(tpch_full)}/{len(QUERIES)} fully lowered, "
              f"{len(QUERIES) - len(tpch_full)} with opaque parts; paper corpus: "
              f"{len(corpus_full)}/{len(TABLE2_CORPUS)} fully lowered")
    assert len(QUERIES) == 22
    assert len(TABLE2_ROWS) == 20
    assert len(tpch_full) >= TPCH_FULL_FLOOR
    assert len(corpus_full) >= CORPUS_FULL_FLOOR
