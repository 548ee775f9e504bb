"""Algorithms 1-3 (streamability) with the join implication decided by Z3, and the
memory class of programs checked against the sub-plan."""
from __future__ import annotations

import pytest

from superop.dsl import BUFFERING, STREAMING
from superop.verify.streamability import check_program_memory, check_streamability

from .conftest import K_TEST, plan_of
from .test_equivalence import FIG11, FIG11_PROG, FIG13, fig13_prog

OK = {
    "du": "SELECT a, COUNT(*) AS n FROM ops WHERE s < 100 GROUP BY a "
          "UNION ALL SELECT a, SUM(s) AS n FROM ops GROUP BY a HAVING SUM(s) > 10",
    "du_renamed_key": "SELECT k, n FROM (SELECT aa AS k, COUNT(*) AS n FROM (SELECT a AS aa, s FROM ops) t "
                      "GROUP BY aa) x UNION ALL SELECT a, SUM(s) AS n FROM ops GROUP BY a",
    "dj_left": "SELECT l.a, l.n, r.m FROM (SELECT a, COUNT(*) n FROM ops GROUP BY a) l LEFT JOIN "
               "(SELECT a, MAX(b) m FROM ops WHERE c > 0 GROUP BY a) r ON l.a = r.a",
    "dj_two_keys_and_residual": "SELECT l.a, l.n, r.m FROM (SELECT a, d, COUNT(*) n FROM ops GROUP BY a, d) l "
                                "JOIN (SELECT a, d, MAX(b) m FROM ops GROUP BY a, d) r "
                                "ON l.a = r.a AND r.d = l.d AND l.n > r.m",
    "mj_min": FIG11,
    "mj_max_agg_on_left_right_join": "SELECT m.mb, o.b FROM (SELECT a, MAX(b) mb FROM ops GROUP BY a) m "
                                     "RIGHT JOIN ops o ON o.a = m.a",
    # Min & Join's premises fail (Fig. 13; not a MIN/MAX): WinMagic's window over the whole
    # partition, one exchange, buffering
    "wm_fig13_select_below_min": FIG13,
    "wm_sum": "SELECT o.*, m.mb FROM ops o JOIN (SELECT a, SUM(b) mb FROM ops GROUP BY a) m ON o.a = m.a",
}
BAD = {
    "different_grouping_keys": ("SELECT a, COUNT(*) AS n FROM ops GROUP BY a "
                                "UNION ALL SELECT b AS a, COUNT(*) AS n FROM ops GROUP BY b", "different keys"),
    "join_on_non_key_columns": ("SELECT l.a, l.n, r.m FROM (SELECT a, COUNT(*) n FROM ops GROUP BY a) l JOIN "
                                "(SELECT a, COUNT(*) m FROM ops GROUP BY a) r ON l.n = r.m", "does not imply"),
    "join_on_subset_of_keys": ("SELECT l.a, l.n, r.m FROM (SELECT a, d, COUNT(*) n FROM ops GROUP BY a, d) l "
                               "JOIN (SELECT a, d, MAX(b) m FROM ops GROUP BY a, d) r ON l.a = r.a",
                               "does not imply l.d <=> r.d"),
    "fig13_select_below_min_full_join": (FIG13.replace(" JOIN ", " FULL JOIN "), "Fig. 13"),
    "mj_sum_is_not_min_max_full_join": ("SELECT o.*, m.mb FROM ops o FULL JOIN (SELECT a, SUM(b) mb FROM ops "
                                        "GROUP BY a) m ON o.a = m.a", "MIN or a MAX"),
    "mj_join_on_aggregate": ("SELECT o.*, m.mb FROM ops o JOIN (SELECT a, MIN(b) mb FROM ops GROUP BY a) m "
                             "ON o.b = m.mb", "does not imply"),
}


@pytest.mark.parametrize("name", sorted(OK))
def test_streamable(name):
    r = check_streamability(plan_of(OK[name]))
    assert r.ok, r.reason
    assert r.family == name[:2].upper()


@pytest.mark.parametrize("name", sorted(BAD))
def test_not_streamable(name):
    sql, why = BAD[name]
    r = check_streamability(plan_of(sql))
    assert not r.ok
    assert why in r.reason, r.reason


def test_null_safe_join_on_keys_is_streamable():
    # <=> matches NULL keys with each other, which is still partition-local
    sql = ("SELECT l.a, l.n, r.m FROM (SELECT a, COUNT(*) n FROM ops GROUP BY a) l JOIN "
           "(SELECT a, MAX(b) m FROM ops GROUP BY a) r ON l.a <=> r.a")
    assert check_streamability(plan_of(sql)).ok


def test_memory_class_is_checked_not_declared():
    bad = check_program_memory(plan_of(FIG13), fig13_prog(STREAMING), K=K_TEST)
    assert not bad.ok and bad.details["memory"] == BUFFERING
    good = check_program_memory(plan_of(FIG11), FIG11_PROG, K=K_TEST)
    assert good.ok and good.details["memory"] == STREAMING
    honest = check_program_memory(plan_of(FIG13), fig13_prog(BUFFERING), K=K_TEST)
    assert honest.ok and honest.details["memory"] == BUFFERING


@pytest.mark.parametrize("name", ["dj_left", "dj_two_keys_and_residual", "mj_min", "join_on_non_key_columns",
                                  "join_on_subset_of_keys", "mj_join_on_aggregate"])
def test_z3_agrees_with_union_find_where_both_apply(name):
    sql = OK[name] if name in OK else BAD[name][0]
    r = check_streamability(plan_of(sql))
    uf = r.details.get("union_find")
    # bare column equalities only in these ON clauses: the syntactic check applies
    assert uf is not None and uf == r.ok, (r.reason, uf)


def test_z3_decides_what_union_find_cannot():
    # a.k + 0 = b.k is not a bare column equality, yet it implies key equality
    sql = ("SELECT l.a, l.n, r.m FROM (SELECT a, COUNT(*) n FROM ops GROUP BY a) l JOIN "
           "(SELECT a, MAX(b) m FROM ops GROUP BY a) r ON l.a + 0 = r.a")
    r = check_streamability(plan_of(sql))
    assert r.ok and r.details["union_find"] is False
