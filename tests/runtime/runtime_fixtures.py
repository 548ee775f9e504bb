"""Shared data of the runtime tests: tiny tables with NULLs, duplicates and empty groups, and
a test rule catalog (one rule per family / join kind, every edge admitting σ/π/ρ)."""
from __future__ import annotations

from superop.rules_out.catalog import certificate, make_catalog, make_rule

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

# The certificates of this catalog are produced by this test suite: the runtime's
# differential tests below check every rule on Spark (the verifier is exercised by its
# own tests); nothing in production marks a certificate verified.
TEST_CERT = certificate("verified", "differential-test", "tests/runtime (test catalog)")


def catalog_rules(cert=TEST_CERT):
    rules = [make_rule("DU", certificates=[cert])]
    rules += [make_rule("DJ", join_kinds=[k], certificates=[cert]) for k in KINDS]
    rules += [make_rule("MJ", join_kinds=[k], aggregates=["min", "max"], certificates=[cert]) for k in KINDS]
    return rules




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


# One representative concrete instance per rule: the test catalog's certificates come from
# the real verifier (bounded, K=3) on these, via the exact program the runtime generates.
REPRESENTATIVE = {
    "du-2way": "SELECT a, sum(s) AS t FROM ops WHERE b > 0 GROUP BY a UNION ALL SELECT a, count(*) FROM ops GROUP BY a",
    **{f"dj-{k}": (f"SELECT x.* FROM (SELECT a, sum(s) AS t FROM ops GROUP BY a) x LEFT {k.upper()} JOIN "
                   f"(SELECT a AS k, max(b) AS mb FROM ops WHERE c > 0 GROUP BY a) y ON x.a = y.k"
                   if k in ("semi", "anti") else
                   f"SELECT * FROM (SELECT a, sum(s) AS t FROM ops GROUP BY a) x {k.upper()} JOIN "
                   f"(SELECT a AS k, max(b) AS mb FROM ops WHERE c > 0 GROUP BY a) y ON x.a = y.k")
       for k in KINDS},
    **{f"mj-{k}": (f"SELECT o.* FROM (SELECT * FROM ops WHERE b > 0) o LEFT {k.upper()} JOIN "
                   f"(SELECT a, min(s) AS mn FROM ops GROUP BY a) m ON o.a = m.a"
                   if k in ("semi", "anti") else
                   f"SELECT o.a, o.s, m.mn FROM (SELECT * FROM ops WHERE b > 0) o {k.upper()} JOIN "
                   f"(SELECT a, min(s) AS mn FROM ops GROUP BY a) m ON o.a = m.a")
       for k in KINDS},
}


def verifier_certificates(rules, K: int = 3) -> tuple[list, dict]:
    """Rules whose certificate is the verifier's result on the representative instance
    (when it says verified; otherwise the test's own certificate, and the status is
    reported). Returns (rules, {rule id: verifier status})."""
    from superop.ir.lower import lower
    from superop.rules_out.catalog import make_catalog
    from superop.runtime.rewriter import Rewriter, prepare
    from superop.verify import check_equivalence
    rw = Rewriter(make_catalog(rules))
    out, status = [], {}
    for r in rules:
        q = REPRESENTATIVE[r["id"]]
        plan = lower(q, SCHEMA).plan
        ms = [m for m in prepare(rw.match(plan)) if m.rule_id == r["id"]]
        res = check_equivalence(ms[0].root, ms[0].program, K=K) if ms else None
        status[r["id"]] = res.status if res is not None else "no match"
        r = dict(r)
        if res is not None and res.status == "verified":
            r["certificates"] = [certificate(res.status, res.method, "superop.verify.check_equivalence "
                                             "(tests/runtime, representative instance)",
                                             K=res.K, pattern=q, reason=res.reason)]
        out.append(r)
    return out, status
