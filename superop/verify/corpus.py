"""The paper's benchmark shapes (Table 2) as SQL over ``ops(a, b, c, d, s)``, for the
verifier's tests and benchmark. The paper's trees carry production column counts; these
queries keep each tree's core operators and the kinds and order of optional operators
(σ, π, ρ) on every abstract edge. ``paper_shape`` is the paper's string, the lowered
shape can be printed with ``superop.ir.shape``. Query 11 prints ``∪`` in the paper but
is listed as a DJ; it is a join here.
"""
from __future__ import annotations

OPS_SCHEMA = {"ops": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"}}

TABLE2 = [
    ("q01", "DU", "(σπ|γ|σ, σ|γ|πρ)∪",
     "SELECT a, x FROM (SELECT a, SUM(bc) AS x FROM (SELECT a, b + c AS bc FROM ops WHERE s > 0) t "
     "GROUP BY a) u WHERE x > 5 UNION ALL SELECT w.k, w.y FROM (SELECT a AS k, y + 1 AS y FROM "
     "(SELECT a, MAX(b) AS y FROM ops WHERE c < 3 AND d <> 'x' GROUP BY a) v) w"),
    ("q02", "DJ", "(ρπ|γ|σ, ρ|γ|πσ)⋈",
     "SELECT l.k, l.x, r.y FROM (SELECT k, SUM(v) AS x FROM (SELECT a AS k, b * 2 AS v FROM ops) t "
     "GROUP BY k HAVING SUM(v) > 0) l JOIN (SELECT k2, y * 10 AS y FROM (SELECT a AS k2, COUNT(*) AS y "
     "FROM (SELECT a AS a FROM ops) t2 GROUP BY a) u WHERE y > 1) r ON l.k = r.k2"),
    ("q03", "DU", "(π|γ|σ, π|γ|σ)∪",
     "SELECT a, SUM(v) AS x FROM (SELECT a, b + c AS v FROM ops) t GROUP BY a HAVING SUM(v) > 2 "
     "UNION ALL SELECT a, MIN(w) AS x FROM (SELECT a, s * 2 AS w FROM ops) t GROUP BY a HAVING MIN(w) < 10"),
    ("q04", "DU", "(ρσπ|γ, ρ|γ)∪",
     "SELECT k, COUNT(*) AS n FROM (SELECT a AS k, b FROM (SELECT a, b, c FROM ops) t0 WHERE c > 1) t "
     "GROUP BY k UNION ALL SELECT k, SUM(b) AS n FROM (SELECT a AS k, b FROM ops) t GROUP BY k"),
    ("q05", "DJ", "(σπ|γ|σ, γ|π)⋈",
     "SELECT l.a, l.x, r.y FROM (SELECT a, AVG(v) AS x FROM (SELECT a, b - c AS v FROM ops WHERE s > 0) t "
     "GROUP BY a HAVING AVG(v) > 1) l JOIN (SELECT a, cnt + 1 AS y FROM (SELECT a, COUNT(b) AS cnt FROM ops "
     "GROUP BY a) u) r ON l.a = r.a"),
    ("q06", "DU", "(ρ|γ|σ, σ|γ)∪",
     "SELECT k, MAX(b) AS m FROM (SELECT a AS k, b FROM ops) t GROUP BY k HAVING MAX(b) > 3 "
     "UNION ALL SELECT a, MIN(b) AS m FROM ops WHERE d = 'x' GROUP BY a"),
    ("q07", "DJ", "(π|γ, γ|πσ)⋈",
     "SELECT l.a, l.x, r.y FROM (SELECT a, SUM(v) AS x FROM (SELECT a, s * 3 AS v FROM ops) t GROUP BY a) l "
     "LEFT JOIN (SELECT a, y FROM (SELECT a, MAX(c) AS y FROM ops GROUP BY a) u WHERE y > 0) r ON l.a = r.a"),
    ("q08", "DJ", "(σ|γ|ρ, σ|γ)⋈",
     "SELECT l.k, l.n, r.m FROM (SELECT a AS k, COUNT(*) AS n FROM ops WHERE s > 1 GROUP BY a) l "
     "FULL JOIN (SELECT a, SUM(s) AS m FROM ops WHERE b < 5 GROUP BY a) r ON l.k = r.a"),
    ("q09", "DU", "(ρ|γ|σ, ρ|γ)∪",
     "SELECT k, COUNT(*) AS n, MAX(b) AS m FROM (SELECT a AS k, b FROM ops) t GROUP BY k HAVING COUNT(*) > 1 "
     "UNION ALL SELECT k, COUNT(c) AS n, MIN(b) AS m FROM (SELECT a AS k, b, c FROM ops) t GROUP BY k"),
    ("q10", "MJ", "(ρπ|γ, σρ)⋈",
     "SELECT o.k, o.b, m.mb FROM (SELECT a AS k, b FROM ops WHERE s > 0) o JOIN "
     "(SELECT k, MIN(v) AS mb FROM (SELECT a AS k, b AS v FROM ops) t GROUP BY k) m ON o.k = m.k"),
    ("q11", "DJ", "(ρ|γ|σ, γ|π)⋈",
     "SELECT l.k, l.n, r.y FROM (SELECT k, COUNT(*) AS n FROM (SELECT a AS k FROM ops) t GROUP BY k "
     "HAVING COUNT(*) > 1) l RIGHT JOIN (SELECT a, s2 * 2 AS y FROM (SELECT a, SUM(s) AS s2 FROM ops "
     "GROUP BY a) u) r ON l.k = r.a"),
    ("q12", "DJ", "(σ|γ|ρ, σ|γ)⋈",
     "SELECT l.k, l.dd, l.n, r.m FROM (SELECT a AS k, d AS dd, COUNT(*) AS n FROM ops WHERE s > 0 "
     "GROUP BY a, d) l JOIN (SELECT a, d, MAX(b) AS m FROM ops WHERE c > 0 GROUP BY a, d) r "
     "ON l.k = r.a AND l.dd = r.d"),
    ("q13", "DJ", "(πσ|γ|π, σ|γ|ρ)⋈",
     "SELECT l.a, l.x FROM (SELECT a, x * 2 AS x FROM (SELECT a, SUM(v) AS x FROM "
     "(SELECT a, b + 1 AS v FROM ops WHERE c > 0) t GROUP BY a) u) l LEFT SEMI JOIN "
     "(SELECT a AS kk, COUNT(*) AS n FROM ops WHERE s < 9 GROUP BY a) r ON l.a = r.kk"),
    ("q14", "DU", "(ρσρ|γ, σ|γ)∪",
     "SELECT k2, SUM(b) AS x FROM (SELECT k AS k2, b FROM (SELECT a AS k, b, s FROM ops) t WHERE s > 0) u "
     "GROUP BY k2 UNION ALL SELECT a, SUM(c) AS x FROM ops WHERE c > 0 GROUP BY a"),
    ("q15", "DU", "(πσ|γ, σ|γ|π)∪",
     "SELECT a, MAX(v) AS x FROM (SELECT a, b * c AS v FROM ops WHERE s > 0) t GROUP BY a "
     "UNION ALL SELECT a, n * 2 AS x FROM (SELECT a, COUNT(*) AS n FROM ops WHERE d IS NOT NULL GROUP BY a) u"),
    ("q16", "MJ", "(σ|γ|σ, σπ)⋈",
     "SELECT o.a, o.v, m.mb FROM (SELECT a, b + s AS v FROM ops WHERE c > 0) o JOIN "
     "(SELECT a, MIN(b) AS mb FROM ops WHERE a > 0 GROUP BY a HAVING MIN(b) < 5) m ON o.a = m.a"),
    ("q17", "DJ", "(γ, σ|γ|πσπ)⋈",
     "SELECT l.a, l.n, r.z FROM (SELECT a, COUNT(*) AS n FROM ops GROUP BY a) l JOIN "
     "(SELECT a, y + 1 AS z FROM (SELECT a, y FROM (SELECT a, SUM(b) AS y FROM ops WHERE s > 2 GROUP BY a) u "
     "WHERE y > 0) w) r ON l.a = r.a"),
    ("q18", "DU", "(ρπσ|γ|ρ, σ|γ)∪",
     "SELECT u.kk, u.x FROM (SELECT k AS kk, SUM(v) AS x FROM (SELECT a AS k, v FROM (SELECT a, b + c AS v "
     "FROM ops WHERE s > 0) t0) t GROUP BY k) u UNION ALL SELECT a, SUM(b) AS x FROM ops WHERE b > 1 GROUP BY a"),
    ("q19", "MJ", "(π|γ|σ, σ)⋈",
     "SELECT o.a, o.b, o.s, m.mx FROM (SELECT * FROM ops WHERE s > 0) o LEFT JOIN "
     "(SELECT a, MAX(v) AS mx FROM (SELECT a, b AS v FROM ops) t GROUP BY a HAVING MAX(v) > 0) m ON o.a = m.a"),
    ("q20", "DU", "(σ|γ|ρπσπ, σ|γ|π)∪",
     "SELECT z.k, z.y FROM (SELECT k, y * 2 AS y FROM (SELECT k, y FROM (SELECT a AS k, SUM(b) AS y FROM ops "
     "WHERE c > 0 GROUP BY a) u WHERE y > 1) w) z UNION ALL SELECT a, n + 0 AS y FROM (SELECT a, COUNT(*) AS n "
     "FROM ops WHERE s > 0 GROUP BY a) v"),
]
