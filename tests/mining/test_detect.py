"""Fingerprints and candidate detection on hand-written SQL over the paper's tables."""
import pytest

from superop.ir import lower, to_sql
from superop.mining.detect import detect
from superop.mining.fingerprint import Fingerprinter
from superop.workloads.loggen import LOG_SCHEMA

S = LOG_SCHEMA


def plan(sql):
    low = lower(sql, S)
    assert low.fully_lowered, low.opaque_reasons
    return low.plan


def root_fp(sql):
    p = plan(sql)
    return Fingerprinter()(p)


def test_loose_select_strict_aggregate():
    base = "SELECT a, COUNT(*) AS n FROM ops WHERE {p} GROUP BY {k}"
    f1 = root_fp(base.format(p="s < 5", k="a"))
    assert f1 == root_fp(base.format(p="b > 7 AND d = 'x'", k="a"))     # σ is loose
    assert f1 != root_fp(base.format(p="s < 5", k="b"))                 # γ keys are strict
    assert f1 != root_fp("SELECT a, SUM(s) AS n FROM ops WHERE s < 5 GROUP BY a")
    # output alias names and table aliases do not matter, positions do
    assert f1 == root_fp("SELECT x.a, COUNT(*) AS cnt FROM ops x WHERE x.s < 9 GROUP BY x.a")


def test_commutative_inputs_are_canonically_ordered():
    j1 = root_fp("SELECT * FROM ops o JOIN accounts x ON o.a = x.a")
    j2 = root_fp("SELECT * FROM accounts x JOIN ops o ON x.a = o.a")
    # the root is the (identity) projection: compare the joins themselves
    fp = Fingerprinter()
    p1, p2 = plan("SELECT * FROM ops o JOIN accounts x ON o.a = x.a"), \
        plan("SELECT * FROM accounts x JOIN ops o ON x.a = o.a")
    from superop.ir import Join, walk
    jj1 = next(n for n in walk(p1) if isinstance(n, Join))
    jj2 = next(n for n in walk(p2) if isinstance(n, Join))
    assert fp(jj1) == Fingerprinter()(jj2)
    lj = next(n for n in walk(plan("SELECT * FROM ops o LEFT JOIN accounts x ON o.a = x.a"))
              if isinstance(n, Join))
    rj = next(n for n in walk(plan("SELECT * FROM accounts x RIGHT JOIN ops o ON x.a = o.a"))
              if isinstance(n, Join))
    assert Fingerprinter()(lj) == Fingerprinter()(rj)            # A ⟕ B == B ⟖ A
    assert Fingerprinter()(lj) != fp(jj1)                        # ⟕ != ⋈
    u1 = root_fp("SELECT a, COUNT(*) AS n FROM ops GROUP BY a UNION ALL "
                 "SELECT a, MAX(s) AS n FROM ops GROUP BY a")
    u2 = root_fp("SELECT a, MAX(s) AS n FROM ops GROUP BY a UNION ALL "
                 "SELECT a, COUNT(*) AS n FROM ops GROUP BY a")
    assert u1 == u2
    assert j1 and j2


G1 = "(SELECT a, COUNT(*) AS n FROM ops WHERE s < 100 GROUP BY a)"
G2 = "(SELECT a, MAX(b) AS m FROM ops WHERE s >= 100 GROUP BY a)"
CASES = [
    # (sql, status, family, join_kind, shape or reason)
    (f"SELECT * FROM {G1} x UNION ALL SELECT * FROM {G2} y", "candidate", "DU", "", "(σ|γ, σ|γ)∪"),
    ("SELECT a, COUNT(*) FROM ops GROUP BY a UNION ALL SELECT a, SUM(s) FROM ops GROUP BY a "
     "UNION ALL SELECT a, MIN(c) FROM ops WHERE d = 'x' GROUP BY a",
     "candidate", "DU", "", "(γ, γ, σ|γ)∪"),
    (f"SELECT l.a, l.n, r.m FROM {G1} l JOIN {G2} r ON l.a = r.a", "candidate", "DJ", "inner",
     "(σ|γ, σ|γ)⋈"),
    (f"SELECT l.a FROM {G1} l FULL OUTER JOIN {G2} r ON r.a = l.a", "candidate", "DJ", "full",
     "(σ|γ, σ|γ)⟗"),
    (f"SELECT l.a FROM {G1} l LEFT SEMI JOIN {G2} r ON l.a = r.a", "candidate", "DJ", "semi",
     "(σ|γ, σ|γ)⋉"),
    ("SELECT o.a, o.b, g.mn FROM ops o JOIN (SELECT a, MIN(b) AS mn FROM ops GROUP BY a) g "
     "ON o.a = g.a", "candidate", "MJ", "inner", "(, γ)⋈"),
    ("SELECT o.a, g.mx FROM (SELECT a, MAX(s) AS mx FROM ops WHERE a > 3 GROUP BY a) g "
     "RIGHT JOIN ops o ON o.a = g.a AND o.s = g.mx", "candidate", "MJ", "right", "(σ|γ, )⟖"),
    # near-misses
    ("SELECT a, COUNT(*) FROM ops GROUP BY a UNION ALL SELECT b, COUNT(*) FROM ops GROUP BY b",
     "near_miss", "DU", "", "different_grouping_keys"),
    ("SELECT a, COUNT(*) FROM ops GROUP BY a UNION ALL SELECT a, COUNT(*) FROM accounts GROUP BY a",
     "near_miss", "DU", "", "different_inputs"),
    (f"SELECT l.a FROM {G1} l JOIN {G2} r ON l.n = r.m", "near_miss", "DJ", "inner",
     "join_not_on_grouping_keys"),
    ("SELECT l.a FROM (SELECT a, d, COUNT(*) AS n FROM ops GROUP BY a, d) l JOIN "
     "(SELECT a, d, SUM(s) AS m FROM ops GROUP BY a, d) r ON l.a = r.a", "near_miss", "DJ",
     "inner", "join_on_subset_of_keys"),
    ("SELECT o.a, g.mn FROM ops o FULL JOIN (SELECT a, MIN(b) AS mn FROM ops WHERE s > 10 GROUP BY a) g "
     "ON o.a = g.a", "near_miss", "MJ", "full", "filter_below_min_max"),
    ("SELECT o.a, g.t FROM ops o FULL JOIN (SELECT a, SUM(b) AS t FROM ops GROUP BY a) g ON o.a = g.a",
     "near_miss", "MJ", "full", "aggregate_not_min_max"),
    # where Min & Join's premises fail on an inner join: WinMagic (a window over the partition)
    ("SELECT o.a, g.mn FROM ops o JOIN (SELECT a, MIN(b) AS mn FROM ops WHERE s > 10 GROUP BY a) g "
     "ON o.a = g.a", "candidate", "WM", "inner", "(, σ|γ)⋈"),
    ("SELECT o.a, o.s FROM ops o WHERE o.s > (SELECT 1.2 * AVG(i.s) FROM ops i WHERE i.a = o.a)",
     "candidate", "WM", "left", "(, γ)⟕"),
]


@pytest.mark.parametrize("sql,status,family,kind,what", CASES)
def test_detection(sql, status, family, kind, what):
    fs = detect(plan(sql))
    assert len(fs) == 1, [(f.status, f.family, f.shape, f.reason) for f in fs]
    f = fs[0]
    assert (f.status, f.family, f.join_kind) == (status, family, kind)
    if status == "candidate":
        assert f.shape == what and f.reason == ""
        # the candidate sub-plan round-trips through SQL and is found again
        again = detect(plan(to_sql(f.root)))
        assert [(g.status, g.family, g.join_kind, g.shape) for g in again] == \
            [(status, family, kind, what)]
    else:
        assert f.reason == what


def test_plain_joins_and_single_aggregates_are_not_reported():
    for sql in ["SELECT o.a, x.region FROM ops o JOIN accounts x ON o.a = x.a",
                "SELECT a, COUNT(*) FROM ops GROUP BY a",
                "SELECT a, s, ROW_NUMBER() OVER (PARTITION BY a ORDER BY s) AS w FROM ops"]:
        assert detect(plan(sql)) == []


def test_scan_fingerprint_is_the_resolved_identity():
    """Fingerprints key tables by what the name resolved to, not by its spelling:
    SALES.OPS and sales.ops are one table in a case-insensitive session, sales.ops and
    default.ops never are; the input tables mining reports follow the same identity."""
    from superop.ir.schema import DictSchema
    cols = {"a": "int", "s": "int"}
    insensitive = DictSchema({"sales.ops": cols, "default.ops": cols}, current_database="default")

    def fp(sql, schema=insensitive):
        return Fingerprinter()(lower(sql, schema).plan)

    q = "SELECT a, SUM(s) AS t FROM {} GROUP BY a"
    assert fp(q.format("SALES.OPS")) == fp(q.format("sales.ops")) == fp(q.format("`Sales`.`Ops`"))
    assert fp(q.format("sales.ops")) != fp(q.format("default.ops"))
    assert fp(q.format("ops")) == fp(q.format("default.ops"))            # default is current
    sensitive = DictSchema({"sales.ops": cols, "SALES.OPS": cols}, case_sensitive=True)
    assert fp(q.format("sales.ops"), sensitive) != fp(q.format("SALES.OPS"), sensitive)

    du = ("SELECT a, COUNT(*) AS n FROM {t} GROUP BY a "
          "UNION ALL SELECT a, MAX(s) FROM {t} GROUP BY a")
    for spelling in ("SALES.OPS", "sales.ops"):
        [f] = detect(lower(du.format(t=spelling), insensitive).plan)
        assert str(f.status) == "candidate" and f.inputs == ["sales.ops"]
