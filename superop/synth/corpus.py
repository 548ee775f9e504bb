"""Sub-queries over the paper's example tables that exercise the synthesizer: every
super-operator family with σ/π/ρ in different orders on the abstract edges, and the
shapes that have no (streaming) program. Used by tests/synth and the synthesis benchmark
(when ``superop.workloads.paper.TABLE2_CORPUS`` is not available).

Each entry: (name, sql, expected status, expected streaming). ``expected`` is what a
correct synthesizer must answer — the programs themselves are found by search.
"""
from __future__ import annotations

PAPER_SCHEMA = {
    "ops": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"},
    "mailbox": {"mailboxguid": "string", "ts": "bigint", "eventid": "string", "activityid": "string",
                "machinename": "string", "eventname": "string"},
    "accounts": {"a": "int", "region": "string", "tier": "int"},
}

FOUND = "found"   # verified (or, without a verifier, a tested program)

CORPUS: list[tuple[str, str, str, bool]] = [
    # ---- Diamond UnionAll --------------------------------------------------------------
    ("du_core", "SELECT a, sum(s) AS x FROM ops GROUP BY a UNION ALL SELECT a, count(*) AS x FROM ops GROUP BY a",
     FOUND, True),
    ("du_fig8_select", "SELECT a, sum(s) AS x FROM ops WHERE s < 100 GROUP BY a "
     "UNION ALL SELECT a, count(*) AS x FROM ops GROUP BY a HAVING count(*) > 2", FOUND, True),
    ("du_fig9_project", "SELECT a, sum(t) AS x, 1 AS tag FROM (SELECT a, b + c AS t FROM ops) q GROUP BY a "
     "UNION ALL SELECT a, max(s) * 2 AS x, 2 AS tag FROM ops WHERE d = 'w' GROUP BY a", FOUND, True),
    ("du_rename_cte", "WITH t AS (SELECT a AS acc, s * 2 AS s2, d FROM ops WHERE b > 0) "
     "SELECT acc, sum(s2) AS v FROM t GROUP BY acc UNION ALL SELECT acc, count(*) AS v FROM t WHERE d = 'x' GROUP BY acc",
     FOUND, True),
    ("du_multi_agg", "SELECT a, count(*) AS n, sum(s) AS t, min(b) AS lo, avg(c) AS m FROM ops WHERE d IN ('r', 'w') GROUP BY a "
     "UNION ALL SELECT a, count(b) AS n, max(s) AS t, max(b) AS lo, avg(s) AS m FROM ops WHERE s > 10 GROUP BY a",
     FOUND, True),
    ("du_3way", "SELECT a, count(*) AS n FROM ops WHERE d = 'r' GROUP BY a "
     "UNION ALL SELECT a, count(*) AS n FROM ops WHERE d = 'w' GROUP BY a "
     "UNION ALL SELECT a, sum(s) AS n FROM ops GROUP BY a HAVING sum(s) > 3", FOUND, True),
    ("du_4way_two_keys", "SELECT a, b, count(*) AS n FROM ops GROUP BY a, b "
     "UNION ALL SELECT a, b, sum(s) AS n FROM ops WHERE s < 2 GROUP BY a, b "
     "UNION ALL SELECT a, b, min(c) AS n FROM ops GROUP BY b, a "
     "UNION ALL SELECT a, b, count(DISTINCT c) AS n FROM ops WHERE c IS NOT NULL GROUP BY a, b", FOUND, True),
    # (one COUNT(DISTINCT) column: the sorted fold, constant state with the partition sorted on c)
    ("du_two_distinct_columns", "SELECT a, count(DISTINCT b) AS n FROM ops GROUP BY a "
     "UNION ALL SELECT a, count(DISTINCT c) AS n FROM ops GROUP BY a", FOUND, False),
    # (two COUNT(DISTINCT) columns: no one sort order serves both, a set per partition)
    ("du_rho_sigma_pi_mix", "SELECT k, v FROM (SELECT k, sum(z) AS v FROM (SELECT a AS k, s + 1 AS z FROM ops WHERE b > 1) p "
     "WHERE z < 4 GROUP BY k) q WHERE v > 0 UNION ALL SELECT a AS k, count(*) AS v FROM (SELECT a, s AS z FROM ops) r "
     "GROUP BY a", FOUND, True),
    # ---- Diamond Join ------------------------------------------------------------------
    ("dj_inner", "SELECT l.a, l.x, r.y FROM (SELECT a, sum(s) AS x FROM ops WHERE d = 'r' GROUP BY a) l "
     "JOIN (SELECT a, max(b) AS y FROM ops GROUP BY a) r ON l.a = r.a", FOUND, True),
    ("dj_left", "SELECT l.a, l.x, r.y FROM (SELECT a, sum(s) AS x FROM ops GROUP BY a) l "
     "LEFT JOIN (SELECT a AS k, max(b + c) AS y FROM ops WHERE d = 'w' GROUP BY a) r ON l.a = r.k", FOUND, True),
    ("dj_right", "SELECT l.a, l.x, r.k, r.y FROM (SELECT a, count(*) AS x FROM ops WHERE s > 1 GROUP BY a) l "
     "RIGHT JOIN (SELECT a AS k, min(c) AS y FROM ops GROUP BY a) r ON l.a = r.k", FOUND, True),
    ("dj_full", "SELECT l.a, l.x, r.a AS ra, r.y FROM (SELECT a, count(*) AS x FROM ops WHERE d = 'r' GROUP BY a) l "
     "FULL OUTER JOIN (SELECT a, sum(s) AS y FROM ops WHERE d = 'w' GROUP BY a) r ON l.a = r.a", FOUND, True),
    ("dj_semi", "SELECT l.a, l.x FROM (SELECT a, sum(s) AS x FROM ops GROUP BY a) l "
     "LEFT SEMI JOIN (SELECT a FROM ops WHERE b > 2 GROUP BY a) r ON l.a = r.a", FOUND, True),
    ("dj_residual_having", "SELECT l.a, l.x, r.y FROM (SELECT a, sum(s) AS x FROM ops GROUP BY a HAVING count(*) > 1) l "
     "JOIN (SELECT a, max(b) AS y FROM ops WHERE c > 0 GROUP BY a) r ON l.a = r.a AND l.x > r.y", FOUND, True),
    ("dj_computed_key", "SELECT l.k, l.x, r.y FROM (SELECT a + 1 AS k, count(*) AS x FROM ops GROUP BY a + 1) l "
     "JOIN (SELECT a + 1 AS k, sum(s) AS y FROM ops GROUP BY a + 1) r ON l.k = r.k", FOUND, True),
    ("dj_two_keys", "SELECT l.a, l.d, l.x, r.y FROM (SELECT a, d, count(*) AS x FROM ops GROUP BY a, d) l "
     "LEFT JOIN (SELECT d, a, sum(s) AS y FROM ops WHERE s < 3 GROUP BY d, a) r ON l.a = r.a AND l.d = r.d",
     FOUND, True),
    # ---- Min & Join --------------------------------------------------------------------
    ("mj_min", "SELECT o.a, o.b, o.s, m.mb FROM ops o JOIN (SELECT a, min(b) AS mb FROM ops GROUP BY a) m ON o.a = m.a",
     FOUND, True),
    ("mj_max_fig12", "SELECT o.a, o.s, m.ms FROM (SELECT * FROM ops WHERE d = 'r') o "
     "JOIN (SELECT a, max(s) AS ms FROM ops GROUP BY a) m ON o.a = m.a WHERE m.ms > 2", FOUND, True),
    ("mj_min_rows_at_min", "SELECT o.a, o.b, o.c FROM ops o JOIN (SELECT a AS k, min(b) AS mb FROM ops GROUP BY a) m "
     "ON o.a = m.k AND o.b = m.mb", FOUND, True),
    ("mj_left", "SELECT o.a, o.c, m.mc FROM ops o LEFT JOIN (SELECT a, max(c) AS mc FROM ops GROUP BY a) m "
     "ON o.a = m.a", FOUND, True),
    ("mj_semi", "SELECT o.a, o.s FROM ops o LEFT SEMI JOIN (SELECT a, max(s) AS m FROM ops GROUP BY a "
     "HAVING max(s) > 5) g ON o.a = g.a", FOUND, True),
    ("mj_agg_side_outer", "SELECT o.a, o.b, m.lo FROM (SELECT * FROM ops WHERE s > 2) o "
     "RIGHT JOIN (SELECT a, min(b) AS lo FROM ops GROUP BY a) m ON o.a = m.a", FOUND, True),
    ("mj_two_aggs", "SELECT o.a, o.b, m.lo, m.hi FROM ops o JOIN (SELECT a, min(b) AS lo, max(b) AS hi "
     "FROM ops GROUP BY a) m ON o.a = m.a", FOUND, False),   # one sort cannot serve min and max
    # Fig. 13: a filter below the min. Correct only when buffering.
    ("mj_fig13_filter_below_min", "SELECT o.a, o.b, m.mb FROM ops o "
     "JOIN (SELECT a, min(b) AS mb FROM ops WHERE s > 3 GROUP BY a) m ON o.a = m.a", FOUND, False),
    # ---- no program --------------------------------------------------------------------
    ("neg_different_keys", "SELECT a AS k, count(*) AS n FROM ops GROUP BY a "
     "UNION ALL SELECT b AS k, count(*) AS n FROM ops GROUP BY b", "no_program", False),
    ("neg_join_non_key", "SELECT l.a, l.x, r.y FROM (SELECT a, sum(s) AS x FROM ops GROUP BY a) l "
     "JOIN (SELECT a, max(b) AS y FROM ops GROUP BY a) r ON l.x = r.y", "no_program", False),
    ("neg_join_key_subset", "SELECT l.a, l.d, l.x, r.y FROM (SELECT a, d, count(*) AS x FROM ops GROUP BY a, d) l "
     "JOIN (SELECT a, d, sum(s) AS y FROM ops GROUP BY a, d) r ON l.a = r.a", "no_program", False),
    ("neg_not_shared", "SELECT a, count(*) AS n FROM ops GROUP BY a "
     "UNION ALL SELECT a, count(*) AS n FROM accounts GROUP BY a", "no_program", False),
]

CORPUS_BY_NAME = {c[0]: c for c in CORPUS}
