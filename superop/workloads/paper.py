"""The super-operator paper's example tables, a small deterministic data generator, and a
query corpus: one query per row of Table 2 plus the queries of Fig. 1, 7-9, 11-13, 15.

Every corpus entry carries the shape string that :func:`superop.ir.shape` must produce
for it, written by hand from the paper's notation without the column-count subscripts.
A branch of a shape is ``pre-γ optional operators | γ | post-γ optional operators``
read bottom-up (post-order); in SQL a pre-γ operator is a derived table (ρ: only columns,
some renamed; π: expressions) or the aggregating SELECT's WHERE (σ), a post-γ operator is
HAVING or an enclosing SELECT/WHERE over the aggregate.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

PAPER_SCHEMA: dict[str, dict[str, str]] = {
    "ops": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"},
    "mailbox": {"mailboxguid": "string", "ts": "bigint", "eventid": "string",
                "activityid": "string", "machinename": "string", "eventname": "string"},
    "accounts": {"a": "int", "region": "string", "tier": "int"},
}

_KINDS = ("read", "write", "delete", "list")
_EVENTS = ("Ev1", "Ev2", "Ev3", "Other")


def paper_rows(rows: int = 200, seed: int = 7) -> dict[str, list[tuple]]:
    """Deterministic rows for ops / mailbox / accounts (plain Python tuples, column
    order of PAPER_SCHEMA). What the data guarantees, for differential tests:

    * a NULL in every column of every table;
    * exact duplicate rows;
    * keys with a single row (ops.a, mailbox.mailboxguid);
    * groups where no row passes the typical filters: an account whose sizes are all
      < 100 and one whose sizes are all >= 100, an account whose b, c, d are all NULL,
      a mailbox with only 'Other' events;
    * mailbox.ts is unique except between exact duplicates, so ARGMAX (max_by) is
      deterministic.
    """
    rnd = random.Random(seed)
    n_acc = max(4, rows // 10)

    def maybe(v, p=0.08):
        return None if rnd.random() < p else v

    ops: list[tuple] = []
    for _ in range(max(rows - 12, 1)):
        a = maybe(rnd.randint(1, n_acc), 0.04)
        ops.append((a, maybe(rnd.randint(0, 9)), maybe(rnd.randint(0, 9)),
                    maybe(rnd.choice(_KINDS)), maybe(rnd.randint(0, 300))))
    k = n_acc
    ops.append((k + 1, 5, 5, "read", 50))                         # single-row account
    ops += [(k + 2, i, i + 1, "write", 10 + 20 * i) for i in range(3)]   # all s < 100
    ops += [(k + 3, i, 2 * i, "read", 150 + 40 * i) for i in range(3)]   # all s >= 100
    ops += [(k + 4, None, None, None, 100 + i) for i in range(2)]         # NULL metrics
    ops += [(None, None, None, None, None)]                                # all NULL
    ops += [ops[i] for i in range(0, len(ops), 9)]                        # duplicates
    ops = ops[:rows] if rows >= 12 else ops

    guids = [f"g{i:02d}" for i in range(max(3, rows // 25))]
    mailbox: list[tuple] = []
    ts = 1000
    for _ in range(max(rows - 8, 1)):
        ts += rnd.randint(1, 5)
        g = maybe(rnd.choice(guids), 0.05)
        mailbox.append((g, maybe(ts, 0.04), maybe(f"e{rnd.randint(1, 40)}"),
                        maybe(f"act{rnd.randint(1, 9)}"), maybe(f"m{rnd.randint(1, 4)}"),
                        maybe(rnd.choice(_EVENTS))))
    mailbox.append(("gsingle", ts + 1, "e1", "act1", "m1", "Ev1"))            # single row
    mailbox += [("gother", ts + 2 + i, f"e{i}", "act2", "m2", "Other") for i in range(3)]
    mailbox.append((None, None, None, None, None, None))
    mailbox += [mailbox[i] for i in range(0, len(mailbox), 11)]              # duplicates

    accounts: list[tuple] = []
    for a in range(1, k + 3):
        accounts.append((a, maybe(rnd.choice(("eu", "us", "asia")), 0.15),
                         maybe(rnd.randint(1, 3), 0.15)))
    accounts.append((k + 10, "eu", 1))                                      # no ops rows
    accounts.append((None, None, None))
    accounts.append(accounts[0])                                            # duplicate key
    return {"ops": ops, "mailbox": mailbox, "accounts": accounts}


def _spark_schema(cols: dict[str, str]):
    from pyspark.sql import types as T
    m = {"int": T.IntegerType(), "bigint": T.LongType(), "string": T.StringType()}
    return T.StructType([T.StructField(c, m[t], True) for c, t in cols.items()])


def paper_tables(spark, rows: int = 200, seed: int = 7) -> dict[str, dict[str, str]]:
    """Register ops, mailbox and accounts (see :func:`paper_rows`) as temp views and
    return PAPER_SCHEMA. Same (rows, seed) -> same data."""
    data = paper_rows(rows, seed)
    for name, cols in PAPER_SCHEMA.items():
        spark.createDataFrame(data[name], _spark_schema(cols)).createOrReplaceTempView(name)
    return {t: dict(c) for t, c in PAPER_SCHEMA.items()}


@dataclass(frozen=True)
class CorpusQuery:
    id: str        # "t2-01" .. "t2-20" (Table 2 rows), "fig01", ...
    sql: str
    family: str    # DU | DJ | MJ
    shape: str     # expected superop.ir.shape(lower(sql).plan)
    note: str = ""


def _q(id, family, shape, sql, note=""):
    return CorpusQuery(id, sql.strip(), family, shape, note)


TABLE2_ROWS: tuple[CorpusQuery, ...] = (
    # 1 DU (σ2π4|γ2|σ1, σ6|γ2|π1ρ1)∪
    _q("t2-01", "DU", "(σπ|γ|σ, σ|γ|πρ)∪", """
SELECT a, SUM(bc) AS total FROM (SELECT a, b + c AS bc FROM ops WHERE s < 100) t
GROUP BY a HAVING SUM(bc) > 5
UNION ALL
SELECT x AS acct, y AS total2 FROM (
  SELECT a AS x, n * 10 AS y FROM (SELECT a, COUNT(*) AS n FROM ops WHERE s >= 100 GROUP BY a) g) p"""),
    # 2 DJ (ρ2π1|γ4|σ2, ρ1|γ4|πσ1)⋈1
    _q("t2-02", "DJ", "(ρπ|γ|σ, ρ|γ|πσ)⋈", """
SELECT * FROM (
  SELECT acct, SUM(x) AS sx, COUNT(*) AS n FROM (
    SELECT acct, b2 * 2 AS x FROM (SELECT a AS acct, b AS b2 FROM ops) r1) r2
  GROUP BY acct HAVING COUNT(*) > 1) l
JOIN (
  SELECT * FROM (
    SELECT acct2, m + 1 AS m1 FROM (
      SELECT acct2, MAX(c2) AS m FROM (SELECT a AS acct2, c AS c2 FROM ops) r GROUP BY acct2) g) p
  WHERE m1 > 2) r
ON l.acct = r.acct2"""),
    # 3 DU (π1|γ5|σ3, π1|γ5|σ1)∪
    _q("t2-03", "DU", "(π|γ|σ, π|γ|σ)∪", """
SELECT a, SUM(bb) AS v FROM (SELECT a, b * 2 AS bb FROM ops) t GROUP BY a HAVING SUM(bb) > 4
UNION ALL
SELECT a, MAX(cc) AS v FROM (SELECT a, c + 1 AS cc FROM ops) t GROUP BY a HAVING MAX(cc) < 9"""),
    # 4 DU (ρ1σ1π1|γ4, ρ1|γ4)∪
    _q("t2-04", "DU", "(ρσπ|γ, ρ|γ)∪", """
SELECT acct, SUM(v) AS total FROM (
  SELECT acct, b2 + 1 AS v FROM (SELECT a AS acct, b AS b2, s AS sz FROM ops) r WHERE sz < 100) p
GROUP BY acct
UNION ALL
SELECT acct, COUNT(*) AS total FROM (SELECT a AS acct FROM ops) r GROUP BY acct"""),
    # 5 DJ (σ2π2|γ4|σ1, γ5|π2)⋈4
    _q("t2-05", "DJ", "(σπ|γ|σ, γ|π)⋈", """
SELECT * FROM (
  SELECT a, SUM(w) AS sw FROM (SELECT a, b * c AS w FROM ops WHERE d = 'read' AND s > 20) t
  GROUP BY a HAVING SUM(w) >= 0) l
JOIN (
  SELECT a AS a2, n + 1 AS n1, mx FROM (SELECT a, COUNT(*) AS n, MAX(s) AS mx FROM ops GROUP BY a) g) r
ON l.a = r.a2"""),
    # 6 DU (ρ1|γ5|σ1, σ1|γ5)∪
    _q("t2-06", "DU", "(ρ|γ|σ, σ|γ)∪", """
SELECT acct, MIN(sz) AS v FROM (SELECT a AS acct, s AS sz FROM ops) r GROUP BY acct HAVING MIN(sz) > 10
UNION ALL
SELECT a, MAX(s) AS v FROM ops WHERE b > 3 GROUP BY a"""),
    # 7 DJ (π1|γ2, γ5|π1σ3)⋈4
    _q("t2-07", "DJ", "(π|γ, γ|πσ)⋈", """
SELECT * FROM (SELECT a, SUM(z) AS sz FROM (SELECT a, COALESCE(s, 0) AS z FROM ops) t GROUP BY a) l
JOIN (
  SELECT * FROM (SELECT a, n * 2 AS n2 FROM (SELECT a, COUNT(c) AS n FROM ops GROUP BY a) g) p
  WHERE n2 > 2) r
ON l.a = r.a"""),
    # 8 DJ (σ1|γ3|ρ1, σ2|γ2)⋈1
    _q("t2-08", "DJ", "(σ|γ|ρ, σ|γ)⋈", """
SELECT * FROM (
  SELECT a AS acct, cnt AS small_ops FROM (SELECT a, COUNT(*) AS cnt FROM ops WHERE s < 100 GROUP BY a) g) l
JOIN (SELECT a, SUM(s) AS big FROM ops WHERE s >= 100 AND d IS NOT NULL GROUP BY a) r
ON l.acct = r.a"""),
    # 9 DU (ρ2|γ7|σ5, ρ1|γ7)∪
    _q("t2-09", "DU", "(ρ|γ|σ, ρ|γ)∪", """
SELECT acct, kind, COUNT(*) AS n FROM (SELECT a AS acct, d AS kind FROM ops) r
GROUP BY acct, kind HAVING COUNT(*) > 1
UNION ALL
SELECT acct, d, COUNT(*) AS n FROM (SELECT a AS acct, d FROM ops) r GROUP BY acct, d"""),
    # 10 MJ (ρ1π1|γ2, σ1ρ1)⋈1
    _q("t2-10", "MJ", "(ρπ|γ, σρ)⋈", """
SELECT * FROM (
  SELECT acct, MIN(v) AS mn FROM (
    SELECT acct, bb + 0 AS v FROM (SELECT a AS acct, b AS bb FROM ops) r) p
  GROUP BY acct) m
JOIN (SELECT a AS acct2, b AS b2, d AS d2 FROM ops WHERE s > 10) x
ON m.acct = x.acct2"""),
    # 11 DJ: Table 2 prints (ρ1|γ4|σ1, γ4|π2)∪ although its op column says DJ; the op
    # column decides which super-operator applies, so this entry is a join.
    _q("t2-11", "DJ", "(ρ|γ|σ, γ|π)⋈", """
SELECT * FROM (
  SELECT acct, AVG(sz) AS avg_s FROM (SELECT a AS acct, s AS sz FROM ops) r
  GROUP BY acct HAVING AVG(sz) > 50) l
JOIN (SELECT a, mx - mn AS spread FROM (SELECT a, MAX(b) AS mx, MIN(b) AS mn FROM ops GROUP BY a) g) r
ON l.acct = r.a""", note="paper prints ∪ for a DJ row"),
    # 12 DJ (σ1|γ2|ρ1, σ2|γ2)⋈2
    _q("t2-12", "DJ", "(σ|γ|ρ, σ|γ)⋈", """
SELECT * FROM (
  SELECT a AS acct, kind AS k, n AS writes FROM (
    SELECT a, d AS kind, COUNT(*) AS n FROM ops WHERE d = 'write' GROUP BY a, d) g) l
JOIN (SELECT a, d, SUM(c) AS sc FROM ops WHERE d = 'write' AND c > 2 GROUP BY a, d) r
ON l.acct = r.a AND l.k = r.d"""),
    # 13 DJ (π2σ1|γ4|π2, σ3|γ3|ρ2)⋈3
    _q("t2-13", "DJ", "(πσ|γ|π, σ|γ|ρ)⋈", """
SELECT * FROM (
  SELECT a, t * 2 AS t2, n FROM (
    SELECT a, SUM(kb) AS t, COUNT(*) AS n FROM (SELECT a, s / 1024 AS kb FROM ops) p
    WHERE kb > 0 GROUP BY a) g) l
JOIN (
  SELECT a AS acct, mb AS max_b FROM (
    SELECT a, MAX(b) AS mb FROM ops WHERE b > 1 AND c > 1 AND s > 1 GROUP BY a) g) r
ON l.a = r.acct AND l.n > 0"""),
    # 14 DU (ρ1σ1ρ2|γ5, σ3|γ5)∪
    _q("t2-14", "DU", "(ρσρ|γ, σ|γ)∪", """
SELECT k2, SUM(v) AS total FROM (
  SELECT acct AS k2, bb AS v FROM (SELECT a AS acct, b AS bb, s AS sz FROM ops) r1 WHERE sz < 200) r2
GROUP BY k2
UNION ALL
SELECT a, SUM(b) AS total FROM ops WHERE s >= 200 AND c IS NOT NULL AND d <> 'list' GROUP BY a"""),
    # 15 DU (π1σ1|γ6, σ1|γ5|π2)∪
    _q("t2-15", "DU", "(πσ|γ, σ|γ|π)∪", """
SELECT a, COUNT(*) AS n, SUM(w) AS total FROM (SELECT a, b + c AS w FROM ops) p WHERE w > 5 GROUP BY a
UNION ALL
SELECT a, n, n * 100 AS total FROM (SELECT a, COUNT(*) AS n FROM ops WHERE s > 250 GROUP BY a) g"""),
    # 16 MJ (σ5|γ6|σ1, σ2π1)⋈5 — a σ below the aggregate: Fig. 13 calls MIN under a
    # filter non-streaming; the shape is what the paper lists.
    _q("t2-16", "MJ", "(σ|γ|σ, σπ)⋈", """
SELECT * FROM (
  SELECT a, MAX(s) AS mx FROM ops WHERE d = 'read' OR d = 'write' GROUP BY a HAVING MAX(s) > 100) m
JOIN (SELECT a AS a2, s * 2 AS s2 FROM ops WHERE s IS NOT NULL) x
ON m.a = x.a2"""),
    # 17 DJ (γ4, σ1|γ4|π1σπ2)⋈4
    _q("t2-17", "DJ", "(γ, σ|γ|πσπ)⋈", """
SELECT * FROM (SELECT a, SUM(b) AS sb FROM ops GROUP BY a) l
JOIN (
  SELECT acct, w + 1 AS w1 FROM (
    SELECT acct, v * 2 AS w FROM (SELECT a AS acct, SUM(b) AS v FROM ops WHERE s < 150 GROUP BY a) g) p
  WHERE w > 0) r
ON l.a = r.acct"""),
    # 18 DU (ρ1π1σ1|γ4|ρ1, σ5|γ4)∪
    _q("t2-18", "DU", "(ρπσ|γ|ρ, σ|γ)∪", """
SELECT acct AS account, n AS cnt FROM (
  SELECT acct, COUNT(*) AS n FROM (
    SELECT acct, sz * 2 AS sz2 FROM (SELECT a AS acct, s AS sz FROM ops) r) p
  WHERE sz2 > 40 GROUP BY acct) g
UNION ALL
SELECT a, COUNT(*) AS cnt FROM ops WHERE s > 1 AND b > 1 AND c > 1 GROUP BY a"""),
    # 19 MJ (π1|γ2|σ1, σ4)⋈1
    _q("t2-19", "MJ", "(π|γ|σ, σ)⋈", """
SELECT * FROM (
  SELECT a, MIN(bc) AS mn FROM (SELECT a, b + c AS bc FROM ops) p GROUP BY a HAVING MIN(bc) >= 0) m
JOIN (SELECT * FROM ops WHERE b > 0 AND c > 0 AND d <> 'delete') x
ON m.a = x.a"""),
    # 20 DU (σ6|γ6|ρ1π1σ4π2, σ1|γ7|π1)∪
    _q("t2-20", "DU", "(σ|γ|ρπσπ, σ|γ|π)∪", """
SELECT acct, z + 1 AS z1 FROM (
  SELECT acct, y * 2 AS z FROM (
    SELECT a AS acct, t AS y FROM (SELECT a, SUM(s) AS t FROM ops WHERE b > 0 GROUP BY a) g) r) p
WHERE z > 10
UNION ALL
SELECT a, t - 1 AS z1 FROM (SELECT a, SUM(c) AS t FROM ops WHERE d = 'list' GROUP BY a) g"""),
)

FIGURE_CORPUS: tuple[CorpusQuery, ...] = (
    # Fig. 1: per account, the number of operations below and above 100 KB.
    _q("fig01", "DU", "(σ|γ, σ|γ)∪", """
SELECT a, 'small' AS kind, COUNT(*) AS cnt FROM ops WHERE s < 100 GROUP BY a
UNION ALL
SELECT a, 'large' AS kind, COUNT(*) AS cnt FROM ops WHERE s > 100 GROUP BY a"""),
    # Fig. 7: Diamond UnionAll core.
    _q("fig07", "DU", "(γ, γ)∪", """
SELECT a, SUM(b) AS f FROM ops GROUP BY a
UNION ALL
SELECT a, MAX(c) AS f FROM ops GROUP BY a"""),
    # Fig. 8: a filter before the left aggregate, a filter after the right one.
    _q("fig08", "DU", "(σ|γ, γ|σ)∪", """
SELECT a, SUM(b) AS f FROM ops WHERE s < 100 GROUP BY a
UNION ALL
SELECT a, MAX(c) AS f FROM ops GROUP BY a HAVING MAX(c) > 5"""),
    # Fig. 9: projections: a computed column aggregated on the left, dropped/constant
    # columns in the outputs.
    _q("fig09", "DU", "(π|γ|π, γ|π)∪", """
SELECT a, f, 1 AS tag FROM (SELECT a, SUM(bc) AS f FROM (SELECT a, b + c AS bc FROM ops) p GROUP BY a) g
UNION ALL
SELECT a, f, 2 AS tag FROM (SELECT a, MAX(c) AS f, MIN(c) AS unused FROM ops GROUP BY a) g"""),
    # Fig. 11: Min & Join core.
    _q("fig11", "MJ", "(γ, )⋈", """
SELECT * FROM (SELECT a, MIN(b) AS mb FROM ops GROUP BY a) m JOIN ops ON m.a = ops.a"""),
    # Fig. 12: Min & Join with filters on the join's inputs.
    _q("fig12", "MJ", "(γ|σ, σ)⋈", """
SELECT * FROM (SELECT a, MIN(b) AS mb FROM ops GROUP BY a HAVING MIN(b) > 1) m
JOIN (SELECT * FROM ops WHERE s > 50) x ON m.a = x.a"""),
    # Fig. 13: the non-streaming variant (a filter below MIN).
    _q("fig13", "MJ", "(σ|γ, )⋈", """
SELECT * FROM (SELECT a, MIN(b) AS mb FROM ops WHERE c > 2 GROUP BY a) m JOIN ops ON m.a = ops.a"""),
    # Fig. 15: mailbox watermarks (ARGMAX = max_by, Simplified() = a string function).
    _q("fig15", "DU", "(σ|γ, γ)∪", """
SELECT max_by(eventid, ts) AS eventid, max_by(activityid, ts) AS activityid,
       max_by(upper(eventid), ts) AS sevent, max_by(machinename, ts) AS machinename,
       mailboxguid AS mailboxguidstring, COUNT(*) AS cnt
FROM mailbox WHERE eventname IN ('Ev1', 'Ev2', 'Ev3')
GROUP BY mailboxguid
UNION ALL
SELECT max_by(eventid, ts) AS eventid, max_by(activityid, ts) AS activityid,
       first('High') AS sevent, max_by(machinename, ts) AS machinename,
       mailboxguid AS mailboxguidstring, COUNT(*) AS cnt
FROM mailbox GROUP BY mailboxguid"""),
)

# The corpus of issue 2: the 20 Table-2 shapes followed by the figure queries.
TABLE2_CORPUS: tuple[CorpusQuery, ...] = TABLE2_ROWS + FIGURE_CORPUS
CORPUS_BY_ID = {q.id: q for q in TABLE2_CORPUS}
