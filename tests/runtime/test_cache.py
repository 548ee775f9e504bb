"""The decision cache (superop.runtime.cache): hits, misses on a new catalog checksum and on
new table statistics or a replaced view, new literals rendered into the same rewrite (the
SQL equals a fresh rewrite of those literals), literal-sensitive decisions, bounds."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from superop.rules_out.catalog import make_catalog
from superop.rules_out.trust import recheck_locally
from superop.runtime import SuperOpSession
from superop.runtime.cache import Decision, DecisionCache, template_of
from superop.sparkutil import bag

DU_Q = ("SELECT a, sum(s) AS t FROM ops WHERE b > 0 GROUP BY a "
        "UNION ALL SELECT a, count(*) AS t FROM ops WHERE d = 'x' GROUP BY a")


def _hit(r) -> bool:
    return r.timings_ms.get("cache_hit") == 1.0


def test_templates_parameterize_only_comparison_operands():
    t = template_of("SELECT a, round(s, 2) FROM ops WHERE b > 10 AND d IN ('x', 'y') AND c BETWEEN 1 AND 5 "
                    "AND 1 = 1 GROUP BY 1 ORDER BY 2 LIMIT 7")
    assert t.literals == ("10", "'x'", "'y'", "1", "5")
    assert t.types == ("i", "s", "s", "i", "i")
    # round's scale, the folded 1 = 1, ordinals and LIMIT stay in the key
    for kept in ("ROUND(s, 2)", "1 = 1", "GROUP BY 1", "ORDER BY 2", "LIMIT 7"):
        assert kept in t.key, (kept, t.key)
    assert template_of(DU_Q.replace("b > 0", "b > 3")).key == template_of(DU_Q).key
    # the sign belongs to the value: -100 is a parameter like 3 (Spark parses it as -(100))
    neg = template_of(DU_Q.replace("b > 0", "b > -100"))
    assert neg.key == template_of(DU_Q).key and neg.literals == ("-100", "'x'")
    # Spark types -2147483648 as an int, 2147483648 as a bigint
    assert template_of("SELECT * FROM t WHERE x > -2147483648").types == ("i",)
    assert template_of("SELECT * FROM t WHERE x > 2147483648").types == ("l",)
    # a literal of another type is another template (bigint vs int, decimal scale)
    assert template_of(DU_Q.replace("b > 0", "b > 3000000000")).key != template_of(DU_Q).key
    assert template_of("SELECT * FROM t WHERE x < 12.50").key != template_of("SELECT * FROM t WHERE x < 12.500").key
    assert template_of("SELECT * FROM db1.t JOIN t2 ON 1 = 1").tables == ("db1.t", "t2")


def test_hit_and_new_literals_render_the_same_rewrite(spark, ops, catalog):
    so = SuperOpSession(spark, catalog, gate="exchanges")
    # what the same rewrite generates for the new literals, decided afresh without the gate:
    # over VALUES views Spark folds filters at planning time, so a literal that empties a
    # branch (d = 'it\'s') changes the gate's plan comparison — the cache keeps the decision
    # per template by design; what must never happen is serving another literal's SQL
    fresh = SuperOpSession(spark, catalog, gate=False, cache=False)
    r1 = so.rewrite(DU_Q)
    assert r1.changed and not _hit(r1)
    r2 = so.rewrite(DU_Q)
    assert _hit(r2) and r2.sql == r1.sql and r2.applied == r1.applied
    assert "cached decision" in r2.explanation
    for b, d in ((-100, "q"), (0, "it's")):          # a signed number, an escaped quote
        # Spark escapes a quote with a backslash ('it''s' is two adjacent literals, 'its')
        q = DU_Q.replace("b > 0", f"b > {b}").replace("d = 'x'", "d = '" + d.replace("'", "\\'") + "'")
        r = so.rewrite(q)
        assert _hit(r), r.explanation
        want = fresh.rewrite(q)
        assert want.changed and want.applied == r.applied
        assert r.sql == want.sql                       # never the SQL of another literal
        assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(q).collect())
    # an unchanged decision is cached too, and serves the caller's own text
    u = "SELECT a, sum(s) FROM ops WHERE b > 1 GROUP BY a"
    so.rewrite(u)
    r = so.rewrite(u.replace("b > 1", "b > 2"))
    assert _hit(r) and r.sql == u.replace("b > 1", "b > 2") and not r.changed


def test_miss_on_a_new_catalog_checksum(spark, ops, catalog):
    shared = DecisionCache()
    a = SuperOpSession(spark, catalog, gate="exchanges", cache=shared)
    assert not _hit(a.rewrite(DU_Q)) and _hit(a.rewrite(DU_Q))
    # another catalog (another checksum) that also admits the query: its DU rule alone
    other = make_catalog([r for r in catalog["rules"] if r["family"] == "DU"], version="other")
    b = SuperOpSession(spark, recheck_locally(other), gate="exchanges", cache=shared)
    r = b.rewrite(DU_Q)
    assert not _hit(r) and r.changed


def test_miss_on_new_statistics_and_on_a_replaced_view(spark, ops, catalog):
    spark.table("ops").write.mode("overwrite").saveAsTable("ops_cached")
    try:
        so = SuperOpSession(spark, catalog, gate="exchanges")
        q = DU_Q.replace("FROM ops", "FROM ops_cached")
        assert not _hit(so.rewrite(q)) and _hit(so.rewrite(q))
        spark.sql("ANALYZE TABLE ops_cached COMPUTE STATISTICS")
        assert not _hit(so.rewrite(q))                 # new statistics version
        assert _hit(so.rewrite(q))
    finally:
        spark.sql("DROP TABLE IF EXISTS ops_cached")
    spark.sql("CREATE OR REPLACE TEMP VIEW ops_v AS SELECT * FROM ops")
    # the same session: ops_v is another table, so its query starts as a miss
    q = DU_Q.replace("FROM ops", "FROM ops_v")
    assert not _hit(so.rewrite(q)) and _hit(so.rewrite(q))
    spark.sql("CREATE OR REPLACE TEMP VIEW ops_v AS SELECT * FROM ops WHERE a IS NOT NULL")
    r = so.rewrite(q)
    assert not _hit(r)                                 # the view's plan identity changed
    assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(q).collect())
    spark.sql("DROP VIEW IF EXISTS ops_v")


def test_miss_when_a_plan_setting_changes(spark, ops, catalog):
    so = SuperOpSession(spark, catalog, gate="exchanges")
    so.rewrite(DU_Q)
    spark.conf.set("spark.sql.shuffle.partitions", "3")
    try:
        assert not _hit(so.rewrite(DU_Q))
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "4")
    assert _hit(so.rewrite(DU_Q))


def test_literal_sensitive_decisions_are_cached_per_literal():
    c = DecisionCache()
    key = ("tpl", "cat", (), ())
    c.put(key, Decision(True, label="x", literal_sensitive=True, literals=("1",)))
    assert c.get(key, ("1",)).label == "x"
    assert c.get(key, ("2",)) is None                  # another literal: decide again
    c.put(key, Decision(False, literal_sensitive=True, literals=("2",)))
    assert c.get(key, ("2",)).changed is False and c.get(key, ("1",)).changed is True


def test_bounded_lru_and_thread_safe():
    c = DecisionCache(maxsize=3)
    for i in range(5):
        c.put((i,), Decision(False, explanation=str(i)))
    assert len(c) == 3 and c.get((0,), ()) is None and c.get((4,), ()).explanation == "4"
    with ThreadPoolExecutor(4) as ex:
        list(ex.map(lambda i: c.put((i % 7,), Decision(False)) or c.get((i % 5,), ()), range(400)))
    assert len(c) <= 3


def test_cached_path_skips_spark_planning(spark, ops, catalog):
    so = SuperOpSession(spark, catalog, gate="exchanges")
    so.rewrite(DU_Q)
    r = so.rewrite(DU_Q.replace("b > 0", "b > 5"))
    assert _hit(r) and "plan_original_ms" not in r.timings_ms and "gate_ms" not in r.timings_ms


@pytest.mark.parametrize("gate", ["cost", "exchanges"])
def test_cache_keeps_refusals(spark, ops, catalog, gate):
    # a broadcast join leaves the Min & Join original with one shuffle: refused (exchanges),
    # or priced (cost) — either way the second call is a hit with the same decision
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", str(10 * 1024 * 1024))
    try:
        so = SuperOpSession(spark, catalog, gate=gate)
        q = "SELECT o.a, o.s, m.mn FROM ops o JOIN (SELECT a, min(s) AS mn FROM ops GROUP BY a) m ON o.a = m.a"
        r1, r2 = so.rewrite(q), so.rewrite(q)
        assert _hit(r2) and r2.changed == r1.changed and r2.sql == r1.sql
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")


def test_exact_text_hit_skips_parsing_and_sees_new_table_versions(spark, ops, catalog):
    """The fast path: the same text is served before sqlglot parses it; a semantic setting
    changed, or a view replaced by another definition (a new table version), is decided
    again."""
    from superop.runtime import SuperOpSession

    from .runtime_fixtures import OPS_ROWS, OPS_SCHEMA, values_view
    so = SuperOpSession(spark, catalog, gate=False)
    r1 = so.rewrite(DU_Q)
    r2 = so.rewrite(DU_Q)
    assert r2.timings_ms.get("exact_hit") == 1.0 and r2.sql == r1.sql and r2.applied == r1.applied
    assert r2.explanation.startswith("cached decision (exact text): ")
    # settings come in one JVM call per hit (SessionProbe.conf): a SET of a setting that
    # changes what the text means is seen by the very next call; an unrelated one is not
    before = spark.conf.get("spark.sql.caseSensitive", None)     # as another test may have left it
    spark.sql("SET spark.sql.caseSensitive=true")
    try:
        r = so.rewrite(DU_Q)
        assert not _hit(r) and r.sql == r1.sql
    finally:
        if before is None:
            spark.conf.unset("spark.sql.caseSensitive")
        else:
            spark.conf.set("spark.sql.caseSensitive", before)
    spark.conf.set("spark.superop.test.unrelated", "1")
    try:
        assert so.rewrite(DU_Q).timings_ms.get("exact_hit") == 1.0
    finally:
        spark.conf.unset("spark.superop.test.unrelated")
    values_view(spark, "ops", OPS_SCHEMA, OPS_ROWS[:-1])     # another definition: a new version
    try:
        r3 = so.rewrite(DU_Q)
        assert r3.timings_ms.get("exact_hit") is None and r3.sql == r1.sql
    finally:
        values_view(spark, "ops", OPS_SCHEMA, OPS_ROWS)



def test_one_call_snapshot_agrees_with_per_call_reads_and_sees_changes(spark, ops):
    """SessionProbe.snapshot reads the settings and every table's version in ONE JVM call
    (runtime/jvmprobe.py): the same values and versions as the per-call reads, and a SET,
    a replaced view, another current database or a dropped table are seen at once."""
    from superop.runtime.cache import PLAN_CONF
    from superop.runtime.tablestats import SessionProbe
    p = SessionProbe(spark)
    assert p.one_call
    s1 = p.snapshot(PLAN_CONF, ("ops",))
    assert s1.conf[:len(PLAN_CONF)] == p.conf(PLAN_CONF) and s1.versions == (p.version("ops"),)
    spark.conf.set("spark.sql.ansi.enabled", "false" if spark.conf.get("spark.sql.ansi.enabled") == "true" else "true")
    try:
        assert p.snapshot(PLAN_CONF, ("ops",)).conf != s1.conf
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")
    assert p.snapshot(PLAN_CONF, ("ops",)) == s1
    spark.sql("CREATE OR REPLACE TEMP VIEW ops_snap AS SELECT * FROM ops")
    v1 = p.snapshot(PLAN_CONF, ("ops", "ops_snap")).versions
    spark.sql("CREATE OR REPLACE TEMP VIEW ops_snap AS SELECT a FROM ops")
    assert p.snapshot(PLAN_CONF, ("ops", "ops_snap")).versions[1] != v1[1]
    spark.sql("DROP VIEW ops_snap")
    with pytest.raises(LookupError):
        p.snapshot(PLAN_CONF, ("ops", "ops_snap"))
    spark.sql("CREATE DATABASE IF NOT EXISTS so_cache_db")
    try:
        spark.sql("USE so_cache_db")
        assert p.snapshot(PLAN_CONF, ("ops",)).conf != s1.conf     # names resolve elsewhere now
    finally:
        spark.sql("USE default")
        spark.sql("DROP DATABASE so_cache_db")


@pytest.mark.parametrize("first,second", [
    (DU_Q, DU_Q.replace("b > 0", "b > -100").replace("'x'", "'it\\'s'")),
    ("SELECT * FROM t WHERE x > 1", "SELECT * FROM t WHERE x > 2147483648"),       # int -> bigint kind
    ("SELECT * FROM t WHERE x > -2147483648", "SELECT * FROM t WHERE x > 2147483648"),
    ("SELECT * FROM t WHERE x < 12.50 LIMIT 7", "SELECT * FROM t WHERE x < 99.99 LIMIT 8"),  # LIMIT is kept
    ("SELECT * FROM t WHERE x < 12.50", "SELECT * FROM t WHERE x < 12.500"),            # decimal scale
    ("SELECT a, round(s, 2) FROM t WHERE d IN ('x', 'y') AND c BETWEEN 1 AND 5 AND 1 = 1 /* c1 */",
     "SELECT a, round(s, 3) FROM t WHERE d IN ('p', 'q') AND c BETWEEN -1 AND 50 AND 1 = 1 /* c1 */"),
    ("SELECT a FROM t WHERE d = 'x' /* note 1 */", "SELECT a FROM t WHERE d = 'y' /* note 2 */"),
    ("SELECT a FROM t WHERE d = 'a' 'b'", "SELECT a FROM t WHERE d = 'c' 'd'"),         # adjacent strings
    ("SELECT a FROM t WHERE ts > TIMESTAMP '2020-01-01' AND x = 1",
     "SELECT a FROM t WHERE ts > TIMESTAMP '2021-01-01' AND x = 2"),
])
def test_template_from_tokens_equals_the_parsed_template(first, second):
    """A text of a known token shape takes its template without a parse (cache.Shape):
    it must be exactly the template the parse gives, or fall back to the parse."""
    from superop.runtime.cache import SHAPES, _parse_template
    SHAPES.clear()
    assert template_of(first) == _parse_template(first)[0]
    assert template_of(second) == _parse_template(second)[0]
    assert template_of(second) == _parse_template(second)[0]       # now from its own shape


def test_a_known_shape_is_not_parsed_again(monkeypatch):
    from superop.runtime import cache
    new = DU_Q.replace("b > 0", "b > 7").replace("'x'", "'z'")
    want = cache._parse_template(new)[0]
    cache.SHAPES.clear()
    template_of(DU_Q)
    monkeypatch.setattr(cache, "_parse_template", lambda sql: pytest.fail("parsed again"))
    got = template_of(new)
    assert got == want and got.literals == ("7", "'z'")
    with pytest.raises(pytest.fail.Exception, match="parsed again"):
        template_of(DU_Q.replace("GROUP BY a UNION", "GROUP BY a, b UNION"))   # another shape: parsed
