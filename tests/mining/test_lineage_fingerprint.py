"""Lineage fingerprints: one program, however a planner arranged its filters and
projections, hashes the same; another program does not."""
from __future__ import annotations

import pytest

from superop.ir import lower
from superop.mining.fingerprint import Fingerprinter, lineage_fingerprint

from ..runtime.runtime_fixtures import SCHEMA

DU = ("SELECT a, COUNT(*) AS n FROM ops GROUP BY a "
      "UNION ALL SELECT a, SUM(s + 1) AS n FROM ops WHERE b > 0 GROUP BY a")
SAME = [
    # a pruning projection, a derived table, the branches swapped, a computed column below
    "SELECT a, SUM(s + 1) AS n FROM (SELECT a, s FROM ops WHERE b > 0) q GROUP BY a "
    "UNION ALL SELECT a, COUNT(1) AS n FROM (SELECT a FROM ops) z GROUP BY a",
    "SELECT a, SUM(x) AS n FROM (SELECT a, s + 1 AS x FROM ops WHERE b > 0 AND b IS NOT NULL) q GROUP BY a "
    "UNION ALL SELECT a, COUNT(*) AS n FROM ops GROUP BY a",
    "SELECT a, COUNT(*) AS n FROM ops GROUP BY a "
    "UNION ALL SELECT a, SUM((s + 1)) AS n FROM ops WHERE b > 7 GROUP BY a",   # filters are edges
]
OTHER = [
    "SELECT a, COUNT(*) AS n FROM ops GROUP BY a UNION ALL SELECT a, SUM(s) AS n FROM ops GROUP BY a",
    "SELECT a, COUNT(*) AS n FROM ops GROUP BY a UNION ALL SELECT a, SUM(s + 1) AS n FROM ops GROUP BY b, a",
    "SELECT a, COUNT(*) AS n FROM ops GROUP BY a UNION ALL SELECT a, MAX(s + 1) AS n FROM ops GROUP BY a",
    "SELECT a, COUNT(*) AS n FROM ops GROUP BY a UNION ALL SELECT a, SUM(s * 1) AS n FROM ops GROUP BY a",
    "SELECT a, COUNT(*) AS n FROM accounts GROUP BY a UNION ALL SELECT a, SUM(tier + 1) AS n FROM accounts GROUP BY a",
]


def _fp(sql: str) -> str:
    return lineage_fingerprint(lower(sql, SCHEMA).plan)


@pytest.mark.parametrize("sql", SAME)
def test_one_program_one_lineage_fingerprint(sql):
    assert _fp(sql) == _fp(DU)


@pytest.mark.parametrize("sql", SAME[:2])
def test_where_the_merkle_fingerprint_tells_arrangements_apart(sql):
    assert Fingerprinter()(lower(sql, SCHEMA).plan) != Fingerprinter()(lower(DU, SCHEMA).plan)


@pytest.mark.parametrize("sql", OTHER)
def test_another_program_another_fingerprint(sql):
    assert _fp(sql) != _fp(DU)


def test_operator_grouping_is_kept():
    a = "SELECT a, SUM(s * (b + 1)) AS n FROM ops GROUP BY a"
    b = "SELECT a, SUM(s * b + 1) AS n FROM ops GROUP BY a"
    c = "SELECT a, SUM(s * x) AS n FROM (SELECT a, s, b + 1 AS x FROM ops) q GROUP BY a"
    assert _fp(a) != _fp(b) and _fp(a) == _fp(c)


def test_a_cast_over_an_aggregate_is_a_projection():
    # the physical plan folds the cast the analyzer put above a union branch's aggregate
    # into the aggregate's results
    inline = ("SELECT a, COUNT(*) AS n FROM ops GROUP BY a "
              "UNION ALL SELECT a, CAST(MAX(b) AS BIGINT) AS n FROM ops GROUP BY a")
    above = ("SELECT a, COUNT(*) AS n FROM ops GROUP BY a "
             "UNION ALL SELECT a, CAST(m AS BIGINT) AS n FROM (SELECT a, MAX(b) AS m FROM ops GROUP BY a) g")
    assert _fp(inline) == _fp(above)
    assert _fp(inline) != _fp(inline.replace("MAX(b)", "MIN(b)"))
