"""Keyed filter joins (superop.families.kit.keyedfilter): cross-joined global aggregates
whose inputs differ by one inner join on a DECLARED key are one GA instance over the keyed
left join — TPC-DS q61. The premise is part of the claim (match, covers record, template
proof with its bounded lemma); without the declaration the typed near-miss
``filter_join_not_on_key``; differential runs on Spark compare bags of rows."""
from __future__ import annotations

import pytest

from superop import families
from superop.ir import lower
from superop.ir.keys import KEYS_ENTRY
from superop.ir.schema import normalize_schema
from superop.mining.detect import detect
from superop.sparkutil import bag

from ..runtime.runtime_fixtures import values_view

PREMISE = "filter join on a declared key"
TABLES = {"kf_sales": {"fk": "int", "a": "int", "b": "int"},
          "kf_dim": {"pk": "int", "grp": "int", "flag": "string"}}
KEYS = {"kf_dim": "pk"}

# NULL foreign keys, a foreign key with no dimension row (9), dimension rows failing the
# filter (2: 'N', 3: NULL flag), duplicate sales rows, a dimension row no sale reads (5)
SALES = [(1, 10, 1), (1, 10, 1), (2, 20, 1), (3, 30, 1), (None, 40, 1), (None, None, 1), (9, 50, 1),
         (4, 60, 1), (1, 70, -1), (4, None, 2)]
DIM = [(1, 7, "Y"), (2, 7, "N"), (3, 8, None), (4, 8, "Y"), (5, 9, "Y")]

Q = ("SELECT x.s1, x.c1, y.s2, y.c2 FROM "
     "(SELECT SUM(a) AS s1, COUNT(*) AS c1 FROM kf_sales, kf_dim WHERE fk = pk AND b > 0 AND flag = 'Y') x "
     "CROSS JOIN (SELECT SUM(a) AS s2, COUNT(*) AS c2 FROM kf_sales WHERE b > 0) y")
POSITIVE = {
    "q61_like": Q,
    # a filter TRUE on a NULL-extended row: the canonical form's pk IS NOT NULL guard decides
    "null_true_filter": Q.replace("flag = 'Y'", "(flag IS NULL OR flag = 'N')"),
    # the dimension's columns in the filtered aggregate's output (the lemma compares every column)
    "dimension_columns_aggregated": Q.replace("COUNT(*) AS c1", "MAX(flag) AS c1").replace(
        "SUM(a) AS s1", "SUM(a + pk) AS s1"),
    # nothing passes: empty inputs of both aggregates
    "empty_inputs": Q.replace("b > 0", "b > 100"),
    # three global aggregates, two of them filtered through the dimension, a HAVING on one
    "three_way": ("SELECT * FROM (SELECT SUM(a) AS s1 FROM kf_sales JOIN kf_dim ON fk = pk WHERE flag = 'Y') x, "
                  "(SELECT MIN(a) AS m2 FROM kf_sales JOIN kf_dim ON kf_sales.fk = kf_dim.pk WHERE grp = 8) y, "
                  "(SELECT COUNT(a) AS c3 FROM kf_sales HAVING COUNT(*) > 2) z"),
}
TRAPS = {
    # joined on a column that is not the declared key
    "non_key_column": Q.replace("fk = pk", "fk = grp"),
}


def _schema(keys=KEYS) -> dict:
    return normalize_schema(dict(TABLES, **({KEYS_ENTRY: keys} if keys else {})))


def _scan(sql: str, keys=KEYS):
    return families.scan(lower(sql, _schema(keys)).plan)


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_declared_key_makes_a_ga_instance_with_its_premise(name):
    [m] = [f for f in _scan(POSITIVE[name]) if isinstance(f, families.Match)]
    assert m.family == "GA" and m.program is not None
    [p] = m.premises
    assert p.text() == PREMISE and p.origins == ("kf_dim: pk",)
    assert families.get("GA").point(m).premises == (PREMISE,)
    canon = families.regroup(lower(POSITIVE[name], _schema()).plan)
    assert families.regroup(canon) is canon          # idempotent


@pytest.mark.parametrize("keys", [None, {"kf_dim": "grp"}])
def test_without_the_key_a_typed_near_miss(keys):
    [f] = _scan(Q, keys)
    assert isinstance(f, families.NearMiss) and f.reason.value == "filter_join_not_on_key", f
    assert "not a declared key of kf_dim" in f.detail


def test_non_key_join_column_is_a_near_miss():
    [f] = _scan(TRAPS["non_key_column"])
    assert isinstance(f, families.NearMiss) and f.reason.value == "filter_join_not_on_key"


def test_tpcds_q61_is_mined_as_a_keyed_ga_candidate():
    from superop.workloads.tpcds import queries, tpcds_schema
    sch = normalize_schema(tpcds_schema())
    [f] = detect(lower(queries()["q61"], sch).plan)
    assert (f.status, f.family, f.premises) == ("candidate", "GA", PREMISE), f
    bare = normalize_schema({t: c for t, c in tpcds_schema().items() if t != KEYS_ENTRY})
    [g] = detect(lower(queries()["q61"], bare).plan)
    assert (g.status, g.reason) == ("near_miss", "filter_join_not_on_key"), g


def test_lemma_needs_the_key():
    """The canonical step, bounded K=4 over two tables with uninterpreted filters: verified
    with the key declared; without it not verified, and refuted with concrete filters (a
    repeated key repeats rows of the left join)."""
    from superop.verify.keyed_filter import prove_lemma
    assert prove_lemma(K=4).status == "verified"
    assert prove_lemma(K=2, declared_keys=False).status != "verified"
    r = prove_lemma(K=2, declared_keys=False, concrete=True)
    assert r.status == "refuted" and r.counterexample is not None
    assert prove_lemma(K=3, concrete=True).status == "verified"


@pytest.fixture(scope="module")
def keyed_catalog():
    from superop.rules_out.builtin import builtin_rules
    from superop.rules_out.catalog import make_catalog
    from superop.rules_out.trust import recheck_locally
    from superop.verify.certify import prove_and_certify
    certs = {i.name: prove_and_certify(i) for i in families.get("GA").proof_instances()
             if i.covers.branches <= 3 and "distinct" not in i.name}
    keyed = certs["GA/2/keyed-filter"]
    assert keyed["status"] == "verified", keyed.get("reason")
    assert keyed["covers"]["premises"] == [PREMISE]
    return recheck_locally(make_catalog(builtin_rules(per="family", certificates=certs), version="keyed-filter"))


@pytest.fixture(scope="module")
def kfdata(spark):
    values_view(spark, "kf_sales", "fk int, a int, b int", SALES)
    values_view(spark, "kf_dim", "pk int, grp int, flag string", DIM)


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_runtime_rewrites_under_the_declaration_and_keeps_the_bag(spark, kfdata, keyed_catalog, name):
    from superop.runtime import SuperOpSession
    sql = POSITIVE[name]
    r = SuperOpSession(spark, keyed_catalog, gate=False, keys=KEYS).rewrite(sql)
    assert r.changed and "keyed-filter" in r.explanation, r.explanation
    assert "LEFT JOIN" in r.sql.upper()
    assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(sql).collect())


@pytest.mark.parametrize("keys", [None, {"kf_dim": "grp"}])
def test_runtime_keeps_the_query_without_the_declaration(spark, kfdata, keyed_catalog, keys):
    from superop.runtime import SuperOpSession
    r = SuperOpSession(spark, keyed_catalog, gate=False, keys=keys).rewrite(Q)
    assert not r.changed and r.sql == Q and "filter_join_not_on_key" in r.explanation, r.explanation


def test_runtime_keeps_a_join_on_a_non_key_column(spark, kfdata, keyed_catalog):
    from superop.runtime import SuperOpSession
    sql = TRAPS["non_key_column"]
    r = SuperOpSession(spark, keyed_catalog, gate=False, keys=KEYS).rewrite(sql)
    assert not r.changed and r.sql == sql, r.explanation


def test_empty_tables(spark, keyed_catalog):
    from superop.runtime import SuperOpSession
    spark.sql("CREATE OR REPLACE TEMP VIEW kf_sales AS SELECT CAST(NULL AS INT) AS fk, CAST(1 AS INT) AS a, "
              "CAST(1 AS INT) AS b WHERE 1 = 0")
    spark.sql("CREATE OR REPLACE TEMP VIEW kf_dim AS SELECT CAST(1 AS INT) AS pk, CAST(1 AS INT) AS grp, "
              "'Y' AS flag WHERE 1 = 0")
    try:
        r = SuperOpSession(spark, keyed_catalog, gate=False, keys=KEYS).rewrite(Q)
        assert r.changed, r.explanation
        assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(Q).collect())
    finally:
        values_view(spark, "kf_sales", "fk int, a int, b int", SALES)
        values_view(spark, "kf_dim", "pk int, grp int, flag string", DIM)


def test_tpcds_q61_rewritten_with_equal_rows(tpcds_session, keyed_catalog):
    """TPC-DS q61 at SF 0.01 through SuperOpSession with the TPC-DS declarations."""
    from superop.runtime import SuperOpSession
    from superop.workloads.tpcds import TPCDS_KEYS, queries
    sql = queries()["q61"]
    r = SuperOpSession(tpcds_session, keyed_catalog, gate=False, keys=TPCDS_KEYS).rewrite(sql)
    assert r.changed and "GA/2/keyed-filter" in r.explanation, r.explanation
    assert bag(tpcds_session.sql(r.sql).collect()) == bag(tpcds_session.sql(sql).collect())
    bare = SuperOpSession(tpcds_session, keyed_catalog, gate=False).rewrite(sql)
    assert not bare.changed and "filter_join_not_on_key" in bare.explanation
