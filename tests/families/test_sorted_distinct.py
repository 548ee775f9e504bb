"""COUNT(DISTINCT) through the families and the runtime: one distinct column is the sorted
constant-state fold (a streaming program; its covers record says ``count_distinct_sorted``),
rewritten queries return the original bag of rows on data with NULLs, duplicates and an
empty input; two distinct columns / a distinct expression stay buffering and a catalog of
sorted-fold rules leaves them unchanged. n-way inner diamond joins are instances too."""
from __future__ import annotations

import pytest

from superop import families
from superop.dsl import STREAMING
from superop.ir import lower
from superop.rules_out.catalog import make_catalog
from superop.rules_out.generalize import Pattern, generalize
from superop.rules_out.trust import recheck_locally
from superop.runtime import SuperOpSession
from superop.sparkutil import bag
from superop.verify.streamability import check_streamability

from ..runtime.runtime_fixtures import SCHEMA
from .conftest import bounded_rules

SORTED = [
    # DU: one distinct column under a branch filter, next to other folds
    "SELECT a, n FROM (SELECT a, COUNT(DISTINCT b) AS n FROM {t} WHERE s > 2 GROUP BY a) x "
    "UNION ALL SELECT a, m FROM (SELECT a, MAX(b) AS m FROM {t} GROUP BY a) y",
    # DJ: the distinct column is also another branch's min
    "SELECT l.a, l.n, r.mn FROM (SELECT a, COUNT(DISTINCT c) AS n FROM {t} GROUP BY a) l "
    "JOIN (SELECT a, MIN(c) AS mn FROM {t} WHERE b > 0 GROUP BY a) r ON l.a = r.a",
    # GA (q28's shape): the same distinct column under different filters
    "SELECT * FROM (SELECT COUNT(DISTINCT b) AS n1, AVG(b) AS a1 FROM {t} WHERE s > 2) x, "
    "(SELECT COUNT(DISTINCT b) AS n2 FROM {t} WHERE c = 1) y",
]
TWO_COLUMNS = ("SELECT a, n FROM (SELECT a, COUNT(DISTINCT b) AS n FROM ops GROUP BY a) x "
               "UNION ALL SELECT a, m FROM (SELECT a, COUNT(DISTINCT c) AS m FROM ops GROUP BY a) y")
EXPRESSION = ("SELECT a, n FROM (SELECT a, COUNT(DISTINCT b % 2) AS n FROM ops GROUP BY a) x "
              "UNION ALL SELECT a, m FROM (SELECT a, MAX(b) AS m FROM ops GROUP BY a) y")


def _match(sql, schema=SCHEMA):
    return families.first_match(lower(sql, schema).plan, finished=True)


def test_one_distinct_column_is_the_streaming_sorted_fold():
    for q in SORTED:
        m = _match(q.format(t="ops"))
        assert m is not None and m.program is not None, q
        assert m.program.memory == STREAMING and m.program.sort[0].column in ("b", "c")
        assert "count_distinct_sorted" in families.get(m.family).point(m).aggregates
        assert check_streamability(m.root).ok


@pytest.mark.parametrize("sql", [TWO_COLUMNS, EXPRESSION])
def test_unsortable_distinct_stays_buffering_with_a_reason(sql):
    m = _match(sql)
    assert "count_distinct" in families.get(m.family).point(m).aggregates
    st = check_streamability(m.root)
    assert not st.ok and "COUNT(DISTINCT)" in st.reason
    assert ("two columns" in st.reason) if sql is TWO_COLUMNS else ("not an input column" in st.reason)


def test_generalization_rejects_a_buffering_pattern_with_its_reason():
    m = _match(TWO_COLUMNS)
    from dataclasses import replace
    prog = replace(m.program, memory="buffering")
    p = Pattern(candidate_id="x", family="DU", shape="(γ, γ)∪", sql=TWO_COLUMNS, edges=[[]] * 4,
                aggregates=["count_distinct"], memory="buffering", program=prog.to_json(),
                certificate={"status": "verified"})
    rules, rejected = generalize([p])
    assert not rules and "two columns" in rejected[0].reason


@pytest.fixture(scope="module")
def sorted_session(spark, ops_empty):
    sqls = [q.format(t="ops") for q in SORTED] + [SORTED[2].format(t="ops_empty")]
    return SuperOpSession(spark, recheck_locally(make_catalog(bounded_rules(sqls=sqls, schema=ops_empty))))


# a keyed program has no partition over an empty input; the keyless one (GA) has one row
@pytest.mark.parametrize("i,table", [(0, "ops"), (1, "ops"), (2, "ops"), (2, "ops_empty")])
def test_rewritten_returns_the_original_rows(spark, sorted_session, i, table):
    q = SORTED[i].format(t=table)
    r = sorted_session.rewrite(q)
    assert r.changed, r.explanation
    assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(q).collect())


@pytest.mark.parametrize("sql", [TWO_COLUMNS, EXPRESSION])
def test_sorted_rules_leave_unsortable_distinct_unchanged(sorted_session, sql):
    r = sorted_session.rewrite(sql)
    assert not r.changed and r.sql == sql, r.explanation
