"""Neighbour self-joins (superop/families/nb.py) beyond the fixture table: TPC-DS q47/q57
match as ONE instance with offsets -1/+1 over the rank's partition; the rewrite is wrong
under the conditions the pattern refuses (rank with ties, a join on part of P) — shown on
Spark with the naive LAG form; differential runs through SuperOpSession (NULL partition
keys, NULL neighbour values, one-row partitions, offsets 2 and 3, left joins, an empty
parquet input); row_number() views are refused by the match safety check; Spark's physical
plan of the rewrite (no join, one window)."""
from __future__ import annotations

import pytest

from superop import families
from superop.ir import lower
from superop.rules_out.catalog import make_catalog
from superop.runtime import SuperOpSession
from superop.sparkutil import bag
from superop.workloads.tpcds import TPCDS_SCHEMA, queries

from ..runtime.runtime_fixtures import SCHEMA
from .conftest import bounded_rules

RANKED = "WITH v AS (SELECT a, d, SUM(s) AS t, RANK() OVER (PARTITION BY a ORDER BY d) AS rn FROM {t} GROUP BY a, d) "
NUMBERED = ("WITH v AS (SELECT a, b, MAX(c) AS c, SUM(s) AS s, "
            "DENSE_RANK() OVER (PARTITION BY a ORDER BY b DESC) AS rn "
            "FROM {t} GROUP BY a, b) ")
NB_QUERIES = [
    RANKED + "SELECT v.a, v.d, v.t, p.t AS pt, n.t AS nt FROM v, v AS p, v AS n WHERE v.a = p.a AND v.a = n.a "
             "AND v.rn = p.rn + 1 AND v.rn = n.rn - 1",
    # offsets 2 and 3, inner and left, a residual over both rows
    NUMBERED + "SELECT v.a, v.s, w.s AS s2, x.b AS b3 FROM v JOIN v AS w ON v.a = w.a AND v.rn = w.rn + 2 "
               "LEFT JOIN v AS x ON x.a = v.a AND x.rn = v.rn + 3 AND x.s > v.s",
    # the neighbour's value is often NULL: presence is a marker, not the value
    NUMBERED + "SELECT v.a, v.b, p.c AS pc FROM v JOIN v AS p ON v.a = p.a AND p.rn = v.rn - 1",
]


def test_q47_and_q57_are_one_neighbour_instance():
    for name, p in (("q47", 4), ("q57", 3)):
        found = families.scan(lower(queries()[name], TPCDS_SCHEMA).plan)
        assert [(type(f).__name__, f.family) for f in found] == [("Match", "NB")], name
        m = found[0]
        prog = m.program
        assert len(prog.keys) == p and [s.column for s in prog.sort] == ["rn"]
        assert sorted(n.offset for n in prog.neighbours if n.name.startswith("p")) == [-1, 1]
        assert [(r.column, r.partition) for r in prog.requires] == [("rn", prog.keys)]
        assert families.get("NB").point(m).variant == "inner-1,inner+1"


TIES = ("WITH v AS (SELECT a, b, s, RANK() OVER (PARTITION BY a ORDER BY b) AS rn FROM ops) "
        "SELECT v.a, v.s, p.s AS ps FROM v JOIN v AS p ON v.a = p.a AND v.rn = p.rn + 1")
TIES_AS_LAG = ("WITH v AS (SELECT a, b, s, RANK() OVER (PARTITION BY a ORDER BY b) AS rn FROM ops) "
               "SELECT a, s, ps FROM (SELECT a, s, LAG(s) OVER (PARTITION BY a ORDER BY rn, s) AS ps, "
               "LAG(1) OVER (PARTITION BY a ORDER BY rn, s) AS here FROM v) AS w "
               "WHERE here IS NOT NULL AND a IS NOT NULL")
PART = ("WITH v AS (SELECT a, d, b, COUNT(*) AS n, RANK() OVER (PARTITION BY a, d ORDER BY b) AS rn FROM ops "
        "GROUP BY a, d, b) SELECT v.a, v.n, p.n AS pn FROM v JOIN v AS p ON v.a = p.a AND v.rn = p.rn + 1")
PART_AS_LAG = ("WITH v AS (SELECT a, d, b, COUNT(*) AS n, RANK() OVER (PARTITION BY a, d ORDER BY b) AS rn FROM ops "
               "GROUP BY a, d, b) SELECT a, n, pn FROM "
               "(SELECT a, n, LAG(n) OVER (PARTITION BY a, d ORDER BY rn) AS pn, "
               "LAG(1) OVER (PARTITION BY a, d ORDER BY rn) AS here FROM v) AS w "
               "WHERE here IS NOT NULL AND a IS NOT NULL")


ROW_NUMBER = ("WITH v AS (SELECT a, b, s, ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) AS rn FROM ops) "
              "SELECT v.a, v.s, p.s AS ps FROM v JOIN v AS p ON v.a = p.a AND v.rn = p.rn + 1")


def test_row_number_is_refused_as_order_dependent():
    """Each use of a row_number() view may number ties differently: the match safety check
    (superop.ir.safety) refuses it before the family's template is built."""
    found = families.scan(lower(ROW_NUMBER, SCHEMA).plan)
    assert [(f.family, str(getattr(f, "reason", ""))) for f in found] == [("NB", "order_dependent")]


@pytest.mark.parametrize("sql,as_lag,reason", [(TIES, TIES_AS_LAG, "rank_may_tie"),
                                               (PART, PART_AS_LAG, "join_on_subset_of_keys")])
def test_what_the_pattern_refuses_would_be_wrong(spark, tables, sql, as_lag, reason):
    """ops has ties in (a, b) (a duplicate row) and two values of d under a = 1: the LAG
    form differs from the self-join on both, so the pattern must refuse them."""
    found = families.scan(lower(sql, SCHEMA).plan)
    assert [(f.family, str(getattr(f, "reason", ""))) for f in found] == [("NB", reason)]
    assert bag(spark.sql(sql).collect()) != bag(spark.sql(as_lag).collect())


@pytest.fixture(scope="module")
def nb_session(spark, ops_empty):
    schema = ops_empty
    sqls = [q.format(t=t) for q in NB_QUERIES for t in ("ops", "ops_empty")]
    return SuperOpSession(spark, make_catalog(bounded_rules(sqls=sqls, schema=schema)))


@pytest.mark.parametrize("table", ["ops", "ops_empty"])
@pytest.mark.parametrize("i", range(len(NB_QUERIES)))
def test_rewritten_returns_the_original_rows(spark, nb_session, i, table):
    q = NB_QUERIES[i].format(t=table)
    r = nb_session.rewrite(q)
    assert r.changed and r.applied[0].startswith("neighbour-self-join-"), r.explanation
    assert r.exchanges_after < r.exchanges_before
    want = bag(spark.sql(q).collect())
    assert bag(spark.sql(r.sql).collect()) == want
    assert (sum(want.values()) == 0) == (table == "ops_empty")


def test_physical_plan_no_join_one_window(spark, nb_session):
    q = NB_QUERIES[0].format(t="ops")
    text = nb_session.explain(q)
    before = text.split("== physical plan before ==")[1].split("== physical plan after ==")[0]
    after = text.split("== physical plan after ==")[1].split("== rewritten SQL ==")[0]
    assert "Join" in before and "Join" not in after
    windows = [ln for ln in after.splitlines() if "Window [" in ln and ("lag(" in ln or "lead(" in ln)]
    assert len(windows) == 1, after             # every lag/lead in ONE window operator
    assert after.count("Exchange hashpartitioning") <= before.count("Exchange hashpartitioning") - 2


def test_the_bounded_check_refutes_a_program_with_the_wrong_offset():
    """Z3 over the match's source as a table (RowNumber precondition assumed): the template's
    program is verified, the same program reading the row AFTER instead of before is not."""
    from dataclasses import replace

    from superop.verify.check import check_equivalence
    m = families.first_match(lower(NB_QUERIES[2].format(t="ops"), SCHEMA).plan, finished=True)
    assert m is not None and m.program is not None
    over = families.over_source(m.root, m.source)
    assert over is not None
    sub = over[0]
    assert check_equivalence(sub, m.program, K=3, timeout_ms=60000).status == "verified"
    flipped = replace(m.program, neighbours=tuple(replace(n, offset=-n.offset) for n in m.program.neighbours))
    r = check_equivalence(sub, flipped, K=3, timeout_ms=60000)
    assert r.status == "refuted", r.reason


def test_the_nightly_carries_the_variant_into_its_pattern():
    """The nightly's outcome of a mined NB sub-query is verified and records the point's
    variant (the rank offsets), so the rule it generalizes to admits only that variant."""
    from superop.pipeline.candidates import synthesize_candidate
    from superop.pipeline.records import MinedCandidate
    sql = NB_QUERIES[2].format(t="ops")
    m = families.first_match(lower(sql, SCHEMA).plan, finished=True)
    assert m is not None
    variant = families.get("NB").point(m).variant
    o = synthesize_candidate(MinedCandidate("c1", "NB", "", "", sql, 1, 1, 1.0), SCHEMA, K=3,
                             synth_timeout_s=60, verify_timeout_s=30)
    assert o.verified, o.reason
    assert variant and o.variant == variant
