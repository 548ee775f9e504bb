"""Shared data of the runtime tests: tiny tables with NULLs, duplicates and empty groups, and
a test rule catalog (one rule per family / join kind, admitting exactly what its
certificates cover)."""
from __future__ import annotations

OPS_SCHEMA = "a int, b int, c int, d string, s int"
# a=1: duplicates; a=2: NULLs in b/c/s; a=3: every b < 0 (empty group under b > 0);
# a=NULL: a NULL group; a=4: a single row; a=5: only NULL s.
OPS_ROWS = [
    (1, 1, 1, "x", 10), (1, 2, None, "y", 5), (1, 2, None, "y", 5), (1, 3, 4, "x", 7),
    (2, None, 3, None, None), (2, 5, None, "z", 2), (2, 6, 2, "x", 8),
    (3, -5, -5, "q", 1), (3, -1, 0, "q", 4),
    (None, 1, 1, "x", 7), (None, -1, 0, "z", 3), (None, 2, 2, None, 7),
    (4, 7, 7, "y", 0), (5, 1, None, "x", None), (5, 0, 9, "w", None),
]
ACCOUNTS_SCHEMA = "a int, region string, tier int"
ACCOUNTS_ROWS = [(1, "eu", 1), (1, "us", 2), (2, "eu", None), (3, None, 3), (None, "us", 1),
                 (6, "ap", 2)]
SCHEMA = {"ops": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"},
          "accounts": {"a": "int", "region": "string", "tier": "int"}}

KINDS = ("inner", "left", "right", "full", "semi", "anti")

# The certificates of this catalog are real and cover what each rule admits (the runtime
# re-checks certificates and coverage on load, superop.rules_out.trust, so hand-made ones
# would be refused): per rule the template proofs of its family and join kind (unbounded,
# every σ/π/ρ edge, every streaming fold; Min & Join: both sides, MIN and MAX, no σ into
# the MIN/MAX) and superop.verify's bounded certificate (K=3) of the exact program the
# runtime builds for representative instances (see REPRESENTATIVE below). Computed once
# per test process (proofs are memoized by superop.verify).
STREAMING_FOLDS = ["count_star", "count", "sum", "min", "max", "avg"]
_CERTS: dict = {}


def rule_certificates(rule_id: str, K: int = 3) -> list:
    if rule_id not in _CERTS:
        from superop import families
        from superop.verify.certify import check_and_certify, prove_and_certify
        fam = {"du": "DU", "dj": "DJ", "mj": "MJ"}[rule_id[:2]]
        kind = None if fam == "DU" else rule_id[3:]
        sides = ["left", "right"] if fam == "MJ" else [None]
        insts = [i for s in sides for i in families.get(fam).proofs_for((fam, 2, kind, s))]
        _CERTS[rule_id] = [prove_and_certify(i) for i in insts]
        _CERTS[rule_id] += [check_and_certify(q, SCHEMA, K=K) for q in REPRESENTATIVE[rule_id]]
    return _CERTS[rule_id]


def catalog_rules():
    """One rule per family / join kind admitting exactly what its certificates cover."""
    from superop.rules_out.coverage import covered_rule
    ids = ["du-2way"] + [f"{f}-{k}" for f in ("dj", "mj") for k in KINDS]
    return [covered_rule(i[:2].upper(), rule_certificates(i), rule_id=i) for i in ids]


def _lit(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return repr(v)


def values_view(spark, name: str, ddl: str, rows) -> None:
    """A temp view over an inline VALUES table with the given column types."""
    cols = [c.strip().split() for c in ddl.split(",")]
    body = ", ".join("(" + ", ".join(_lit(v) for v in r) + ")" for r in rows)
    sel = ", ".join(f"CAST(c{i} AS {t}) AS {n}" for i, (n, t) in enumerate(cols))
    names = ", ".join(f"c{i}" for i in range(len(cols)))
    spark.sql(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT {sel} FROM VALUES {body} AS v({names})")


# Representative concrete instances per rule: the test catalog's bounded certificates come
# from the real verifier (K=3) on these, via the exact program the runtime generates (a
# COUNT(DISTINCT) is no streaming fold: only a bounded certificate covers it).
REPRESENTATIVE = {
    "du-2way": ["SELECT a, sum(s) AS t FROM ops WHERE b > 0 GROUP BY a "
                "UNION ALL SELECT a, count(*) FROM ops GROUP BY a",
                "SELECT a, d, count(DISTINCT b) AS n FROM ops WHERE s IS NOT NULL GROUP BY a, d "
                "UNION ALL SELECT a, d, min(c) FROM ops WHERE b < 3 GROUP BY d, a"],
    **{f"dj-{k}": [f"SELECT x.* FROM (SELECT a, sum(s) AS t FROM ops GROUP BY a) x LEFT {k.upper()} JOIN "
                   f"(SELECT a AS k, max(b) AS mb FROM ops WHERE c > 0 GROUP BY a) y ON x.a = y.k"
                   if k in ("semi", "anti") else
                   f"SELECT * FROM (SELECT a, sum(s) AS t FROM ops GROUP BY a) x {k.upper()} JOIN "
                   f"(SELECT a AS k, max(b) AS mb FROM ops WHERE c > 0 GROUP BY a) y ON x.a = y.k"]
       for k in KINDS},
    **{f"mj-{k}": [f"SELECT o.* FROM (SELECT * FROM ops WHERE b > 0) o LEFT {k.upper()} JOIN "
                   f"(SELECT a, min(s) AS mn FROM ops GROUP BY a) m ON o.a = m.a"
                   if k in ("semi", "anti") else
                   f"SELECT o.a, o.s, m.mn FROM (SELECT * FROM ops WHERE b > 0) o {k.upper()} JOIN "
                   f"(SELECT a, min(s) AS mn FROM ops GROUP BY a) m ON o.a = m.a"]
       for k in KINDS},
}


def connect_session(url: str):
    """A Spark Connect session on ``url`` as the Connect tests use it: broadcast joins off,
    4 shuffle partitions, the ``ops`` and ``accounts`` tables as VALUES views."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession
    c = ConnectSession.builder.remote(url).create()
    c.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    c.conf.set("spark.sql.shuffle.partitions", "4")
    values_view(c, "ops", OPS_SCHEMA, OPS_ROWS)
    values_view(c, "accounts", ACCOUNTS_SCHEMA, ACCOUNTS_ROWS)
    return c


def verifier_certificates(rules, K: int = 3) -> tuple[list, dict]:
    """The rules (their certificates are the verifier's, see :func:`rule_certificates`) and
    {rule id: certificate status}."""
    status = {r["id"]: ",".join(sorted({c["status"] for c in r["certificates"]})) for r in rules}
    return list(rules), status
