"""The pivot join (superop/families/pivot.py) on Spark: original vs rewritten as bags over data
with NULL keys, NULL values, duplicates and groups missing for a constant; n = 2, 3, 4 uses;
every join kind; keep-unchanged traps; the canonical regrouping of join regions (kit.regroup)
on its own; the proof instances through the bounded verifier, and a template without its
presence flags refuted."""
from __future__ import annotations

from dataclasses import replace

import pytest

from superop import families
from superop.dsl import PartitionEmit
from superop.families.kit.regroup import regroup
from superop.ir import lower, to_sql
from superop.ir.nodes import Join, Select, walk
from superop.rewrite.rewriter import Rewriter, rewrite_structural
from superop.rules_out.catalog import make_catalog
from superop.sparkutil import bag

from ..runtime.runtime_fixtures import values_view

PV_SCHEMA = "k int, y int, q int, x int, z string"
# k=1: every year, duplicates; k=2: no row for y=2002; k=3: only y=2002; k=NULL: a NULL-key group
# in 2001 and 2002; k=4: NULL measures; k=5: y NULL only; 2000 and 2003 rows for n = 3, 4
PV_ROWS = [
    (1, 2001, 1, 10, "a"), (1, 2001, 1, 10, "a"), (1, 2001, 2, 5, "b"), (1, 2002, 1, 7, "a"),
    (1, 2002, 2, None, "b"), (1, 2003, 1, 1, "a"), (1, 2000, 1, 3, "a"),
    (2, 2001, 1, 4, "a"), (2, 2003, 1, 6, "b"), (2, 2000, 2, 2, "a"),
    (3, 2002, 1, 9, "b"), (3, 2003, 2, 1, "a"),
    (None, 2001, 1, 8, "a"), (None, 2002, 1, 2, "a"), (None, 2003, 2, 5, None),
    (4, 2001, 1, None, "a"), (4, 2002, 1, None, None), (4, 2003, 1, 3, "b"), (4, 2000, 1, 1, "b"),
    (5, None, 1, 1, "a"), (5, 2001, None, 2, "a"), (6, 2002, 2, 3, "b"), (6, 2001, 2, -3, "b"),
]
DIM_SCHEMA = "k int, region string"
DIM_ROWS = [(1, "eu"), (1, "us"), (2, "eu"), (3, None), (None, "ap"), (4, "eu"), (6, "us")]
SCHEMA = {"pv": {"k": "int", "y": "int", "q": "int", "x": "int", "z": "string"},
          "pdim": {"k": "int", "region": "string"}}

T = "WITH t AS (SELECT k, y, SUM(x) AS s, COUNT(*) AS c, MAX(x) AS mx FROM pv GROUP BY k, y) "

CASES = {
    "inner_2": T + "SELECT t1.k, t1.s, t2.s AS s2 FROM t t1 JOIN t t2 ON t1.k = t2.k WHERE t1.y = 2001 AND t2.y = 2002",
    "inner_2_same_constant": T + "SELECT t1.k, t1.c, t2.mx FROM t t1 JOIN t t2 ON t1.k = t2.k "
                                 "WHERE t1.y = 2001 AND t2.y = 2001",
    "inner_2_fixed_key_output": T + "SELECT t1.k, t1.y, t2.y AS y2, t2.s - t1.s AS diff FROM t t1, t t2 "
                                    "WHERE t1.k = t2.k AND t1.y = 2002 - 1 AND t2.y = 2001 + 1",
    "inner_3_having_above": T + "SELECT t1.k, t1.s, t2.s AS s2, t3.c FROM t t1, t t2, t t3 WHERE t1.k = t2.k "
                                "AND t2.k = t3.k AND t1.y = 2001 AND t2.y = 2002 AND t3.y = 2003 "
                                "AND COALESCE(t1.s, 0) <= COALESCE(t2.s, 0) + 100 AND t3.c >= 1",
    "inner_4": T + "SELECT t1.k, t1.s, t2.s AS s2, t3.s AS s3, t4.mx FROM t t1 JOIN t t2 ON t1.k = t2.k "
                   "JOIN t t3 ON t2.k = t3.k JOIN t t4 ON t1.k = t4.k "
                   "WHERE t1.y = 2000 AND t2.y = 2001 AND t3.y = 2002 AND t4.y = 2003",
    "inner_having_in_cte": "WITH t AS (SELECT k, y, SUM(x) AS s FROM pv WHERE x IS NOT NULL GROUP BY k, y "
                           "HAVING COUNT(*) > 1 OR SUM(x) > 5) SELECT t1.k, t1.s, t2.s AS s2 FROM t t1 JOIN t t2 "
                           "ON t1.k = t2.k WHERE t1.y = 2001 AND t2.y = 2002",
    "inner_two_fixed_keys": "WITH t AS (SELECT k, y, q, SUM(x) AS s FROM pv GROUP BY k, y, q) "
                            "SELECT a.k, a.s, b.s AS s2 FROM t a JOIN t b ON a.k = b.k "
                            "WHERE a.y = 2001 AND a.q = 1 AND b.y = 2002 AND b.q = 1",
    "inner_string_key": "WITH t AS (SELECT k, z, SUM(x) AS s, MIN(y) AS my FROM pv GROUP BY k, z) "
                        "SELECT a.k, a.s, b.my FROM t a JOIN t b ON a.k = b.k WHERE a.z = 'a' AND b.z = 'b'",
    "inner_with_dimension": T + "SELECT t1.k, d.region, t1.s, t2.s AS s2 FROM t t1, pdim d, t t2 "
                                "WHERE t1.k = d.k AND t2.k = t1.k AND t1.y = 2001 AND t2.y = 2002",
    "inner_derived_tables": "SELECT u.k, u.s, v.s AS s2 FROM (SELECT k, y, SUM(x) AS s FROM pv GROUP BY k, y) u "
                            "JOIN (SELECT k, y, SUM(x) AS s FROM pv GROUP BY k, y) v ON u.k = v.k "
                            "WHERE u.y = 2001 AND v.y = 2003",
    "inner_union_branch": "WITH u AS (SELECT k, y, SUM(x) AS v, 'p' AS kind FROM pv GROUP BY k, y UNION ALL "
                          "SELECT k, y, SUM((q)) AS v, 'q' AS kind FROM pv WHERE q > 1 GROUP BY k, y) "
                          "SELECT a.k, a.v, b.v AS v2 FROM u a, u b WHERE a.k = b.k AND a.kind = 'p' "
                          "AND b.kind = 'p' AND a.y = 2001 AND b.y = 2002",
    "left_2": T + "SELECT t1.k, t1.s, t2.s AS s2 FROM t t1 LEFT JOIN t t2 ON t1.k = t2.k AND t2.y = 2002 "
                  "WHERE t1.y = 2001",
    "left_3": T + "SELECT t1.k, t1.s, t2.s AS s2, t3.c FROM t t1 LEFT JOIN t t2 ON t1.k = t2.k AND t2.y = 2002 "
                  "LEFT JOIN t t3 ON t1.k = t3.k AND t3.y = 2003 WHERE t1.y = 2001",
    "left_residual": T + "SELECT t1.k, t1.s, t2.s AS s2 FROM t t1 LEFT JOIN t t2 ON t1.k = t2.k AND t2.y = 2002 "
                         "AND t2.s > t1.s WHERE t1.y = 2001",
    "right_2": T + "SELECT t2.k, t1.s, t2.s AS s2 FROM t t1 RIGHT JOIN t t2 ON t1.k = t2.k AND t1.y = 2001 "
                   "WHERE t2.y = 2002",
    "full_2": T + "SELECT COALESCE(u.k, v.k) AS k, u.s, v.s AS s2 FROM (SELECT * FROM t WHERE y = 2001) u "
                  "FULL OUTER JOIN (SELECT * FROM t WHERE y = 2002) v ON u.k = v.k",
    "semi_2": T + "SELECT t1.k, t1.s FROM t t1 LEFT SEMI JOIN t t2 ON t1.k = t2.k AND t2.y = 2003 WHERE t1.y = 2001",
    "anti_2": T + "SELECT t1.k, t1.s FROM t t1 LEFT ANTI JOIN t t2 ON t1.k = t2.k AND t2.y = 2002 WHERE t1.y = 2001",
}
EXPECTED_RULE = {name: f"pj-{name.split('_')[0]}-{int(name.split('_')[1]) if name.split('_')[1].isdigit() else 2}way"
                 for name in CASES}
EXPECTED_RULE["inner_3_having_above"] = "pj-inner-3way"


def _catalog() -> dict:
    """The rule catalog of these tests: per rule, superop.verify's bounded certificates (real
    Z3, K=3) of the program the runtime builds for each case the rule is expected to rewrite,
    and the rule admits exactly what they cover (superop.rules_out.coverage). The runtime
    re-checks them on load (superop.rules_out.trust). A case the bounded verifier cannot
    encode (a dimension table in the join tree reads a second table) must be admitted by the
    certificates of the other cases, or it is not rewritten."""
    from superop.rules_out.coverage import covered_rule
    from superop.verify.certify import check_and_certify
    certs: dict[str, list[dict]] = {}
    for name, sql in CASES.items():
        cert = check_and_certify(sql, SCHEMA, K=3)
        if cert["status"] == "verified":
            certs.setdefault(EXPECTED_RULE[name], []).append(cert)
        else:
            assert name == "inner_with_dimension", (name, cert.get("reason"))
    return make_catalog([covered_rule("PJ", cs, rule_id=rid) for rid, cs in sorted(certs.items())],
                        version="pivot-tests")


_CATALOG: list[dict] = []


def catalog() -> dict:
    if not _CATALOG:
        _CATALOG.append(_catalog())
    return _CATALOG[0]


@pytest.fixture(scope="module")
def pv(spark):
    values_view(spark, "pv", PV_SCHEMA, PV_ROWS)
    values_view(spark, "pdim", DIM_SCHEMA, DIM_ROWS)
    return SCHEMA


@pytest.fixture(scope="module")
def so(spark, pv):
    """The production entry point with its benefit gate. Broadcast joins are off so the
    plans look like plans over large tables (a broadcast join has no shuffle to save)."""
    from superop.runtime import SuperOpSession
    old = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    yield SuperOpSession(spark, catalog())
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", old)


@pytest.mark.parametrize("name", list(CASES))
def test_session_rewrites_and_returns_the_original_bag(so, spark, name):
    """SuperOpSession applies the rule (the gate sees fewer shuffles) and the rewritten SQL
    returns the original's bag. The rewritten SQL is run as is: ``so.sql`` would fall back
    to the original on an error and hide a broken rewrite."""
    sql = CASES[name]
    r = so.rewrite(sql)
    assert r.error is None and r.changed, r.explanation
    assert r.applied == [EXPECTED_RULE[name]], r.explanation
    assert r.exchanges_after is not None and r.exchanges_before is not None
    assert r.exchanges_after < r.exchanges_before
    want = bag(spark.sql(sql).collect())
    assert want, "the case must return rows to compare"
    assert bag(spark.sql(r.sql).collect()) == want


def test_groups_missing_for_a_constant_inner_drops_outer_keeps(pv, spark):
    """k=2 has no 2002 row, k=3 no 2001 row, the NULL-key group joins nothing: inner drops
    them, LEFT keeps k=2 and the NULL key with NULLs, FULL keeps all four."""
    def rows(name):
        r = rewrite_structural(Rewriter(catalog()), CASES[name], SCHEMA)
        assert r.changed
        return spark.sql(r.sql).collect()
    assert {r[0] for r in rows("inner_2")} == {1, 4, 6}
    left = {r[0]: r[2] for r in rows("left_2")}
    assert set(left) == {1, 2, 4, 6, None, 5} and left[2] is None and left[None] is None
    full = {(r[0], r[1] is None, r[2] is None) for r in rows("full_2")}
    assert (3, True, False) in full and (2, False, True) in full and (None, False, True) in full \
        and (None, True, False) in full


TRAPS = {
    # a use's filter on a grouping key that is not one constant
    "or_in_one_use": (T + "SELECT t1.k, t2.s FROM t t1 JOIN t t2 ON t1.k = t2.k WHERE (t1.y = 2001 OR t1.y = 2002) "
                      "AND t2.y = 2003", "use_filter_not_constant"),
    # a use filtered on an aggregate value only: it does not fix y
    "non_grouped_column": (T + "SELECT t1.k, t2.s FROM t t1 JOIN t t2 ON t1.k = t2.k WHERE t1.y = 2001 AND t2.c = 1",
                           "fixed_keys_differ"),
    # a computed column of a key is not the key
    "computed_key_column": ("WITH t AS (SELECT k, y, y + 1 AS y1, SUM(x) AS s FROM pv GROUP BY k, y) "
                            "SELECT t1.k, t2.s FROM t t1 JOIN t t2 ON t1.k = t2.k WHERE t1.y1 = 2002 AND t2.y = 2002",
                            "use_filter_not_constant"),
    "nondeterministic": (T + "SELECT t1.k, t2.s FROM (SELECT * FROM t WHERE y = 2001 AND rand() < 2) t1 "
                         "JOIN (SELECT * FROM t WHERE y = 2002) t2 ON t1.k = t2.k", "nondeterministic"),
    "two_aggregates": ("WITH t AS (SELECT k, y, SUM(x) AS s FROM pv GROUP BY k, y), "
                       "u AS (SELECT k, y, MAX(x) AS m FROM pv GROUP BY k, y) "
                       "SELECT t.k, t.s, u.m FROM t JOIN u ON t.k = u.k WHERE t.y = 2001 AND u.y = 2002",
                       "join_on_subset_of_keys"),
    "join_on_part_of_k": ("WITH t AS (SELECT k, z, y, SUM(x) AS s FROM pv GROUP BY k, z, y) "
                          "SELECT t1.k, t2.s FROM t t1 JOIN t t2 ON t1.k = t2.k WHERE t1.y = 2001 AND t2.y = 2002",
                          "join_on_subset_of_keys"),
    "string_constant_on_int_key": (T + "SELECT t1.k, t2.s FROM t t1 JOIN t t2 ON t1.k = t2.k "
                                   "WHERE t1.y = '2001' AND t2.y = 2002", "constant_type"),
    "double_constant_on_string_key": ("WITH t AS (SELECT k, z, SUM(x) AS s FROM pv GROUP BY k, z) "
                                      "SELECT a.k, b.s FROM t a JOIN t b ON a.k = b.k WHERE a.z = 1.0 AND b.z = 'b'",
                                      "constant_type"),
    "self_join_no_constant": (T + "SELECT t1.k, t2.s FROM t t1 JOIN t t2 ON t1.k = t2.k AND t1.y = t2.y",
                              "no_fixed_key"),
    "where_on_null_supplying_use": (T + "SELECT t1.k, t2.s FROM t t1 LEFT JOIN t t2 ON t1.k = t2.k "
                                    "WHERE t1.y = 2001 AND t2.y = 2002", "fixed_keys_differ"),
}


@pytest.mark.parametrize("name", list(TRAPS))
def test_traps_are_kept_unchanged_with_their_reason(so, name):
    sql, reason = TRAPS[name]
    reasons = [f.reason.value for f in families.scan(lower(sql, SCHEMA).plan) if isinstance(f, families.NearMiss)]
    assert reason in reasons, reasons
    r = so.rewrite(sql)
    assert r.error is None and not r.changed and r.sql == sql, r.explanation
    so.sql(sql)      # the session hands back the user's query as written (analyzed by Spark)


# ---------------------------------------------------------------------------
# kit.regroup: semantics preserved, idempotent, no new cartesian product, order kept
# ---------------------------------------------------------------------------
REGIONS = [
    CASES["inner_with_dimension"],
    CASES["left_3"],
    CASES["right_2"],
    CASES["inner_union_branch"],
    T + "SELECT t1.k, d.region, t2.s FROM t t1 JOIN pdim d ON t1.k = d.k AND d.region <> 'us' "
        "LEFT JOIN t t2 ON t1.k = t2.k AND t2.y = 2002 WHERE t1.y = 2001 AND d.k IS NOT NULL",
    T + "SELECT t1.k, t1.s FROM t t1 LEFT SEMI JOIN t t2 ON t1.k = t2.k AND t2.y = 2002 AND t1.c > 1 "
        "WHERE t1.y = 2001",
    T + "SELECT * FROM t a, t b, t c WHERE a.k = c.k AND b.k = c.k AND a.y = 2001 AND b.y = 2002 "
        "AND c.y = 2003 AND a.s + b.s > c.s",
]


@pytest.mark.parametrize("i", range(len(REGIONS)))
def test_regroup_preserves_the_bag_and_is_idempotent(pv, spark, i):
    plan = lower(REGIONS[i], SCHEMA).plan
    new = regroup(plan)
    assert new is not plan
    assert regroup(new) is new
    assert bag(spark.sql(to_sql(new)).collect()) == bag(spark.sql(REGIONS[i]).collect())
    assert not any(isinstance(n, Join) and n.kind == "cross" for n in walk(new))


def test_regroup_pushes_only_where_the_relation_is_the_same():
    plan = regroup(lower(TRAPS["where_on_null_supplying_use"][0], SCHEMA).plan)
    # t1's filter (preserved side) moved onto t1; t2's (null-supplying, in the WHERE) stays above
    top = [n for n in walk(plan) if isinstance(n, Select) and isinstance(n.child, Join)]
    assert len(top) == 1 and "t2.y = 2002" in top[0].predicate.sql() and "t1.y" not in top[0].predicate.sql()


def test_regroup_keeps_column_order_under_a_positional_parent():
    sql = (T + "SELECT * FROM t t1, pdim d, t t2 WHERE t1.k = d.k AND t1.k = t2.k AND t1.y = 2001 AND t2.y = 2002 "
           "UNION ALL SELECT * FROM t t1, pdim d, t t2 "
           "WHERE t1.k = d.k AND t1.k = t2.k AND t1.y = 2002 AND t2.y = 2003")
    plan = lower(sql, SCHEMA).plan
    new = regroup(plan)
    assert new.fields == plan.fields and [n.names for n in new.children] == [n.names for n in plan.children]


def test_regroup_leaves_plans_without_a_shared_aggregate_alone():
    plan = lower("SELECT p.k, d.region FROM pv p JOIN pdim d ON p.k = d.k WHERE p.y = 2001", SCHEMA).plan
    assert regroup(plan) is plan


# ---------------------------------------------------------------------------
# the physical plan: one aggregate, the constants at the scan
# ---------------------------------------------------------------------------
def test_physical_plan_one_exchange_and_the_constants_at_the_scan(pv, spark, tmp_path):
    from superop.runtime.plan import analyze_plan
    spark.table("pv").write.parquet(str(tmp_path / "pvp"))
    spark.read.parquet(str(tmp_path / "pvp")).createOrReplaceTempView("pvp")
    sql = CASES["inner_3_having_above"].replace("FROM pv ", "FROM pvp ")
    schema = dict(SCHEMA, pvp=SCHEMA["pv"])
    r = rewrite_structural(Rewriter(catalog()), sql, schema)
    assert r.changed
    before, after = analyze_plan(spark, sql), analyze_plan(spark, r.sql)
    assert after.exchanges == 1 < before.exchanges
    assert len(after.pushed_filters) == 1 and "In(y, [2001,2002,2003])" in after.pushed_filters[0]
    assert after.tree.count("HashAggregate") == 2       # partial + final of the ONE aggregate


# ---------------------------------------------------------------------------
# proof instances and a mutated template
# ---------------------------------------------------------------------------
def _instance_match(name):
    from .pivot_instances import concrete_sql
    inst = next(i for i in families.get("PJ").proof_instances() if i.name == name)
    m = families.first_match(lower(concrete_sql(inst), inst.schema).plan, finished=True)
    assert m is not None and m.program is not None
    return m


def test_proof_instances_are_matched_and_cover_what_their_family_claims():
    """Made concrete (built-in bodies for the uninterpreted functions) each instance is a
    match the family's covers contain; the symbolic SQL itself is refused by the safety
    hook (its functions are not Spark built-ins), so no user query with a UDF matches."""
    from .pivot_instances import concrete_sql
    fam = families.get("PJ")
    for inst in fam.proof_instances():
        m = families.first_match(lower(concrete_sql(inst), inst.schema).plan, finished=True)
        assert m is not None and m.program is not None, inst.name
        assert inst.covers.contains(fam.point(m)), inst.name
        assert set(inst.functions) >= {"p", "g1", "q1"}
        found = families.scan(lower(inst.sql, inst.schema).plan)
        assert not any(isinstance(f, families.Match) for f in found), inst.name
        assert "unknown_function" in [f.reason.value for f in found if isinstance(f, families.NearMiss)]


@pytest.mark.parametrize("name", ["PJ/inner/2", "PJ/left/2"])
def test_proof_instance_program_is_equivalent_bounded_k4(name):
    from superop.verify.check import check_equivalence
    m = _instance_match(name)
    r = check_equivalence(m.root, m.program, 4, timeout_ms=300000)
    assert r.status == "verified", r.reason


def test_a_template_without_presence_flags_is_refuted():
    """The flags are what makes a missing group produce no row: drop them from the emits and
    the verifier finds the input where the program invents a row. (Not on the proof
    instance: its use filter reads COUNT(*) > 0, which already implies presence.)"""
    from superop.verify.check import check_equivalence
    m = families.first_match(lower(CASES["inner_2"], SCHEMA).plan, finished=True)
    assert m is not None and m.program is not None
    p = m.program
    assert any(_without_flags(e.guard) != e.guard for e in p.partition_emits)
    assert check_equivalence(m.root, p, 3, timeout_ms=120000).status == "verified"   # the control
    no_flags = [PartitionEmit(_without_flags(e.guard), e.outputs) for e in p.partition_emits]
    r = check_equivalence(m.root, replace(p, partition_emits=tuple(no_flags)), 3, timeout_ms=120000)
    assert r.status == "refuted"


def test_a_template_whose_accumulators_ignore_the_constant_is_refuted():
    from superop.verify.check import check_equivalence
    m = _instance_match("PJ/inner/2")
    p = m.program
    accs = tuple(replace(a, guard=None) if a.func == "sum" else a for a in p.accumulators)
    r = check_equivalence(m.root, replace(p, accumulators=accs), 3, timeout_ms=120000)
    assert r.status == "refuted"


def _without_flags(g):
    from sqlglot import exp
    g = g.copy()
    for c in list(g.find_all(exp.Column)):
        if c.table == "flag":
            c.replace(exp.true())
    return g
