"""Noise the log generator mixes in: other query shapes (dimension joins, scans, top-k,
windows, single aggregates, TPC-H), malformed lines, non-SQL statements and bad SQL."""
from __future__ import annotations

import random
from typing import Callable

from .. import tpch
from .sqlkit import Slots


def noise_templates(rng: random.Random, n: int) -> list[tuple[str, list[str]]]:
    """Other shapes: dimension joins, scans, top-k, windows, single aggregates, TPC-H."""
    out = []
    makers: list[Callable[[], tuple[str, list[str]]]] = []

    def dim_join():
        t = Slots()
        agg = rng.choice(["SUM(o.s)", "COUNT(*)", "MAX(o.b)", "AVG(o.c)"])
        return (f"SELECT acc.region, {agg} AS v FROM ops o JOIN accounts acc ON o.a = acc.a "
                f"WHERE acc.tier {rng.choice(['=', '>=', '<'])} {t.lit('small')} "
                f"GROUP BY acc.region"), t.slots

    def scan():
        t = Slots()
        c = rng.choice(["b", "c", "s"])
        return (f"SELECT a, {c}, d FROM ops WHERE {c} > {t.lit('int')} AND d = {t.lit('op')}",
                t.slots)

    def topk():
        t = Slots()
        c = rng.choice(["b", "c", "s"])
        return f"SELECT a, {c} FROM ops ORDER BY {c} DESC LIMIT {t.lit('small')}", t.slots

    def single_agg():
        t = Slots()
        tab = rng.choice(["ops", "mailbox", "accounts"])
        k = {"ops": "a", "mailbox": "machinename", "accounts": "region"}[tab]
        m = {"ops": "SUM(s)", "mailbox": "MAX(ts)", "accounts": "COUNT(*)"}[tab]
        return f"SELECT {k}, {m} AS v FROM {tab} GROUP BY {k}", t.slots

    def window():
        t = Slots()
        f = rng.choice(["ROW_NUMBER()", "RANK()", "SUM(s)"])
        return (f"SELECT a, s, {f} OVER (PARTITION BY a ORDER BY s) AS w FROM ops "
                f"WHERE b < {t.lit('int')}"), t.slots

    def mailbox_events():
        t = Slots()
        return (f"SELECT mailboxguid, eventname, COUNT(*) AS n FROM mailbox WHERE ts > "
                f"{t.lit('big')} AND eventname IN ({t.lit('eventlist')}) GROUP BY mailboxguid, "
                f"eventname"), t.slots

    def two_dim():
        t = Slots()
        return (f"SELECT acc.tier, m.cnt FROM accounts acc LEFT JOIN (SELECT a, COUNT(*) AS cnt "
                f"FROM ops GROUP BY a) m ON acc.a = m.a WHERE acc.region = {t.lit('region')}",
                t.slots)

    makers = [dim_join, scan, topk, single_agg, window, mailbox_events, two_dim]
    tpch = _tpch_queries()
    for i in range(n):
        if tpch and i % 5 == 4:
            q = tpch[(i // 5) % len(tpch)]
            out.append((q, []))
        else:
            out.append(makers[i % len(makers)]())
    return out


def _tpch_queries() -> list[str]:
    try:
        qs = getattr(tpch, "QUERIES", None)
    except Exception:
        return []
    if not qs:
        return []
    vals = list(qs.values()) if isinstance(qs, dict) else list(qs)
    return [q for q in vals if isinstance(q, str)]


JUNK_LINES = [
    '{"statement_id": "x1", "statement_text": "SELECT a FROM ops", "execution_status": ',
    'this is not json at all',
    '[1, 2, 3]',
    '{"statement_id": "x2", "execution_status": "FINISHED"}',
    '{"statement_id": "x3", "statement_text": 42, "execution_status": "FINISHED"}',
    '{"statement_id": "x4", "statement_text": "SELECT a FROM ops", "total_duration_ms": "slow"}',
    '\x00\x01binary\x02',
]
NON_SQL = ["SET spark.sql.shuffle.partitions = 200", "SHOW TABLES", "DESCRIBE ops",
           "USE analytics", "CACHE TABLE ops", "REFRESH TABLE mailbox",
           "CREATE TABLE tmp_ops AS SELECT * FROM ops", "INSERT INTO ops SELECT * FROM ops",
           "EXPLAIN SELECT a FROM ops", "DROP VIEW IF EXISTS v1", "ANALYZE TABLE ops COMPUTE STATISTICS"]
BAD_SQL = ["SELEC a FROM ops", "SELECT a FROM ops WHERE", "SELECT TOP 10 a FROM ops",
           "SELECT * FROM no_such_table", "SELECT a, FROM ops GROUP BY", "SELECT zz FROM ops",
           "SELECT a FROM ops o JOIN accounts x ON o.a = x.missing"]
