"""The runtime on Spark Connect: the differential matrix through a real Connect server.

The server is Spark's own ``SparkConnectService`` from the PySpark distribution's jars
(``pyspark/jars/spark-connect_*.jar``), started once per test session inside its JVM
(``connect_url`` of ``tests/conftest.py``: what ``SparkSession.builder.remote("local")``
does, but on the JVM the classic ``spark`` fixture already runs, so no second JVM).
The client is PySpark's gRPC Connect client: nothing the runtime does can reach the JVM
through py4j. ``SUPEROP_TEST_CONNECT_URL=sc://host:port`` runs the same tests against
an external server instead (e.g. ``$SPARK_HOME/sbin/start-connect-server.sh``).
"""
from __future__ import annotations

import pytest

from superop.sparkutil import bag

from .runtime_fixtures import connect_session
from .test_differential import CASES, DU, _dj

DU_SIGMA, DJ_INNER = DU["sigma"], _dj("inner", "sigma-rho")

pytest.importorskip("grpc", reason="Spark Connect needs the connect extra (grpcio, grpcio-status, "
                                   "googleapis-common-protos)")


@pytest.fixture(scope="module")
def connect(connect_url):
    # the Connect client directly (the classic builder would switch this whole process to
    # Connect mode through SPARK_CONNECT_MODE_ENABLED)
    c = connect_session(connect_url)
    yield c
    c.stop()


@pytest.fixture(scope="module")
def cso(connect, catalog):
    from superop.runtime import SuperOpSession
    return SuperOpSession(connect, catalog, gate="exchanges")


def test_the_session_is_really_connect(connect):
    from superop.runtime.tablestats import is_connect
    assert is_connect(connect) and not hasattr(connect, "_jsparkSession")
    with pytest.raises(AttributeError):    # what the runtime used to read plans through
        _ = connect.sql("SELECT 1")._jdf


@pytest.mark.parametrize("name,rule,sql", CASES, ids=[c[0] for c in CASES])
def test_differential_through_connect(connect, cso, so, name, rule, sql):
    r = cso.rewrite(sql)
    assert r.error is None, r.explanation
    assert r.changed and r.applied == [rule], r.explanation
    assert r.exchanges_after < r.exchanges_before
    # one implementation: the same SQL as on the classic session
    assert r.sql == so.rewrite(sql).sql
    got, want = connect.sql(r.sql), connect.sql(sql)
    assert got.columns == want.columns
    assert [f.dataType for f in got.schema.fields] == [f.dataType for f in want.schema.fields]
    assert bag(got.collect()) == bag(want.collect())


def test_cost_gate_cache_and_explain_through_connect(connect, catalog):
    from superop.runtime import SuperOpSession
    so = SuperOpSession(connect, catalog)                 # the default: cost gate + cache
    q = ("SELECT a, sum(s) AS t FROM ops WHERE b > 0 GROUP BY a "
         "UNION ALL SELECT a, count(*) AS t FROM ops WHERE c < 5 GROUP BY a")
    r1 = so.rewrite(q)
    assert r1.error is None and "benefit gate (cost)" in r1.explanation
    assert r1.candidates and r1.candidates[0]["predicted_speedup"] > 0
    r2 = so.rewrite(q.replace("b > 0", "b > 2"))
    assert r2.timings_ms.get("cache_hit") == 1.0 and r2.changed == r1.changed
    assert bag(connect.sql(r2.sql).collect()) == bag(connect.sql(q.replace("b > 0", "b > 2")).collect())
    text = so.explain(q)
    assert "exchanges before: 2 shuffle" in text and "predicted cost" in text
    # a replaced view is a new version for the cache on Connect too
    connect.sql("CREATE OR REPLACE TEMP VIEW ops2 AS SELECT * FROM ops")
    q2 = q.replace("FROM ops", "FROM ops2")
    assert so.rewrite(q2).timings_ms.get("cache_hit") == 0.0
    assert so.rewrite(q2).timings_ms.get("cache_hit") == 1.0
    connect.sql("CREATE OR REPLACE TEMP VIEW ops2 AS SELECT * FROM ops WHERE a IS NOT NULL")
    assert so.rewrite(q2).timings_ms.get("cache_hit") == 0.0


def test_uncovered_and_bad_queries_pass_through_on_connect(cso):
    for q in ("SELECT a, sum(s) FROM ops GROUP BY a", "SELECT a FROM no_such_table"):
        r = cso.rewrite(q)
        assert not r.changed and r.sql == q


@pytest.mark.parametrize("sql,rule", [(DU_SIGMA, "du-2way"), (DJ_INNER, "dj-inner")], ids=["DU", "DJ"])
def test_enable_on_a_connect_session(connect, catalog, sql, rule):
    from superop.runtime import disable, enable

    from .test_enable import exchanges
    before = connect.sql(sql)
    n, want = exchanges(before), bag(before.collect())
    so = enable(connect, catalog, gate="exchanges")
    try:
        df = connect.sql(sql)
        assert exchanges(df) < n and bag(df.collect()) == want
        assert so.counters[f"rule: {rule}"] == 1
        connect.conf.set("spark.superop.enabled", "false")     # the kill switch, over the wire
        assert exchanges(connect.sql(sql)) == n
        connect.conf.set("spark.superop.enabled", "true")
        connect.conf.set("spark.superop.rules.exclude", rule)
        assert exchanges(connect.sql(sql)) == n
    finally:
        connect.conf.unset("spark.superop.enabled")
        connect.conf.unset("spark.superop.rules.exclude")
        disable(connect)
    assert exchanges(connect.sql(sql)) == n


def test_the_flag_form_runs_in_a_server_side_clone(connect):
    """Spark's merge settings as a form on Connect: planned and run in a clone of the server
    session (SparkSession.cloneSession), the caller's settings untouched, equal rows."""
    from superop.rules_out.catalog import make_catalog
    from superop.rules_out.signing import sign_catalog, signing_key
    from superop.runtime import SuperOpSession
    from superop.runtime.merge_flags import FORM, MERGE_FLAGS
    connect.range(0, 40, 1, 2).selectExpr(
        "CASE WHEN id % 7 = 3 THEN NULL ELSE CAST(id % 6 AS INT) END AS h",
        "CASE WHEN id % 4 = 1 THEN NULL ELSE CAST(id % 3 AS INT) END AS x").createOrReplaceTempView("mf_c")
    q = ("SELECT (SELECT count(*) FROM mf_c WHERE h < 2) AS n, (SELECT sum(x) FROM mf_c WHERE h >= 4) AS s, "
         "(SELECT max(x) FROM mf_c WHERE h = 9) AS empty_max")
    before = {k: connect.conf.get(k) for k in MERGE_FLAGS}
    no_rules = sign_catalog(make_catalog([], version="no-rules"), signing_key(), "tests")
    so = SuperOpSession(connect, no_rules, gate="exchanges", cache=False)
    r = so.rewrite(q)
    assert r.applied == [FORM] and r.conf == MERGE_FLAGS and r.exchanges_after < r.exchanges_before, r.explanation
    df = so.sql(q)
    assert df.sparkSession is not connect
    assert bag(df.collect()) == bag(connect.sql(q).collect())
    assert {k: connect.conf.get(k) for k in MERGE_FLAGS} == before
