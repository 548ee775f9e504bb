"""STDDEV_SAMP / VAR_SAMP (and Spark's aliases stddev / variance) through the families and
the runtime: the pivot join of TPC-DS q39 (an aggregate of stddev_samp and avg, filtered on
its own output, self-joined on two months) is a streaming program; Z3 proves it with the
statistic left an uninterpreted function of (count, sum, sum of squares) — both sides
compute it from the same moments — and refutes (confirmed by the reference semantics) an
unguarded stddev, var for stddev and another argument; on Spark the rewrite returns the
original bag of rows (NULLs, duplicates, a group of one row: stddev NULL, a month with no
row: no output row)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from superop import families
from superop.dsl import STREAMING, e
from superop.ir import lower
from superop.rules_out.catalog import make_catalog
from superop.rules_out.trust import recheck_locally
from superop.runtime import SuperOpSession
from superop.sparkutil import bag
from superop.verify.check import check_equivalence

from ..runtime.runtime_fixtures import values_view
from .conftest import bounded_rules

SD_SCHEMA = {"sd": {"k": "int", "y": "int", "x": "int"}}
# q39's shape: the aggregate's output filtered (CASE m WHEN 0 ..) before the self-join
Q39 = ("WITH t AS (SELECT k, y, s, m, v FROM (SELECT k, y, stddev_samp(x) AS s, avg(x) AS m, variance(x) AS v "
       "FROM sd GROUP BY k, y) a WHERE CASE m WHEN 0 THEN 0 ELSE s / m END > 0.4) "
       "SELECT t1.k, t1.s, t1.m, t2.s AS s2, t2.m AS m2, t2.v FROM t t1 JOIN t t2 ON t1.k = t2.k "
       "WHERE t1.y = 1 AND t2.y = 2")
ALIASES = ("WITH t AS (SELECT k, y, stddev(x) AS s, variance(x) AS v, var_samp(x) AS w, count(*) AS n "
           "FROM sd GROUP BY k, y) "
           "SELECT t1.k, t1.s, t1.v, t2.w, t2.n FROM t t1 JOIN t t2 ON t1.k = t2.k WHERE t1.y = 1 AND t2.y = 2")
# stddev_pop has no accumulator: the template refuses it, the runtime keeps the query
POP = ALIASES.replace("stddev(x)", "stddev_pop(x)")

# k=1: duplicates and a NULL in y=1, two values in y=2; k=2: one row in y=1 (stddev NULL),
# only NULLs in y=2; k=3: no y=2 row (no output row); k=4: equal values (stddev 0, mean 1);
# k=5: a mean of 0; k=6: passes both filters; a NULL k; a year no use reads
ROWS = [(6, 1, 1), (6, 1, 5), (6, 2, 2), (6, 2, 4), (6, 2, 6), (1, 1, 1), (1, 1, 3), (1, 1, None), (1, 1, 3),
        (1, 2, 2), (1, 2, 10), (2, 1, 5), (2, 2, None),
        (2, 2, None), (3, 1, 1), (3, 1, 9), (4, 1, 0), (4, 1, 4), (4, 2, 1), (4, 2, 1), (5, 1, -2),
        (5, 1, 2), (5, 2, 0), (5, 2, 7), (None, 1, 1), (None, 1, 8), (None, 2, 1), (None, 2, 6), (1, 3, 50)]


def _match(sql):
    return families.first_match(lower(sql, SD_SCHEMA).plan, finished=True)


def test_reference_semantics_are_sparks():
    """As Spark 4's CentralMomentAgg: NULL inputs ignored, NULL below 2 values (not NaN)."""
    from superop.dsl.plan_eval import aggregate_values
    assert aggregate_values("stddev_samp", [None, 5]) is None and aggregate_values("var_samp", []) is None
    assert aggregate_values("stddev_samp", [3, None, 3]) == 0.0
    assert aggregate_values("var_samp", [1, 2, 3, 4]) == pytest.approx(5 / 3)
    assert aggregate_values("stddev_samp", [2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx((32 / 7) ** 0.5)


def test_q39_shape_is_a_streaming_pivot_join_with_per_use_filters():
    m = _match(Q39)
    assert m is not None and m.family == "PJ" and m.program is not None and m.program.memory == STREAMING
    assert {a.func for a in m.program.accumulators} >= {"stddev_samp", "avg"}
    assert "stddev_samp" in families.get("PJ").point(m).aggregates
    # each use's filter reads that use's guarded aggregates only
    emit = m.program.pretty()
    assert emit.count("> 0.4") == 2
    a = _match(ALIASES)
    # stddev = stddev_samp, variance and var_samp = var_samp, per use
    assert {x.func for x in a.program.accumulators} >= {"stddev_samp", "var_samp"}
    p = _match(POP)
    assert p is None


def _with(prog, name, **kw):
    return replace(prog, accumulators=tuple(replace(a, **kw) if a.name == name else a for a in prog.accumulators))


def test_z3_proves_the_template_and_refutes_the_mutants():
    m = _match(ALIASES)
    sub = families.over_source(m.root, m.source)[0]
    ok = check_equivalence(sub, m.program, K=3, timeout_ms=30000)
    assert ok.status == "verified", ok.reason
    sd = next(a for a in m.program.accumulators if a.func == "stddev_samp")
    mutants = {"unguarded stddev": _with(m.program, sd.name, guard=None),
               "var for stddev": _with(m.program, sd.name, func="var_samp"),
               "positive values only": _with(m.program, sd.name, arg=e("CASE WHEN row.x > 0 THEN row.x END"))}
    for what, bad in mutants.items():
        r = check_equivalence(sub, bad, K=3, timeout_ms=30000)
        # the uninterpreted statistic's counterexample is re-decided by the reference semantics
        assert r.status == "refuted", (what, r.status, r.reason)
        assert "re-decided" in r.reason


@pytest.fixture(scope="module")
def sd_session(spark):
    s = spark.newSession()
    s.conf.set("spark.sql.shuffle.partitions", "2")
    values_view(s, "sd", "k int, y int, x int", ROWS)
    rules = bounded_rules(sqls=[Q39], schema=SD_SCHEMA)     # the runtime-template certificate
    assert {a for r in rules for a in r["aggregates"]} >= {"stddev_samp", "var_samp"}
    return s, SuperOpSession(s, recheck_locally(make_catalog(rules)), gate=False)


def test_rewritten_on_spark_with_the_original_rows(sd_session):
    s, so = sd_session
    sql = Q39
    r = so.rewrite(sql)
    assert r.changed, r.explanation
    low = r.sql.lower()
    assert "stddev_samp(case when" in low            # what runs is the guarded aggregate proved
    assert r.exchanges_after < r.exchanges_before
    want = s.sql(sql).collect()
    assert sorted(r[0] for r in want) == [1, 6]
    assert bag(s.sql(r.sql).collect()) == bag(want)


def test_stddev_pop_is_kept(sd_session):
    s, so = sd_session
    r = so.rewrite(POP)
    assert not r.changed and r.sql == POP
