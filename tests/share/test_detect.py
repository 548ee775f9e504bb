"""Similar sub-expressions (Algorithm 1) and covering expressions, without Spark."""
from __future__ import annotations

from superop.ir import lower, to_sql
from superop.share import detect, plan_batch
from superop.share.covering import TEMPLATE_AGG_KEYS, TEMPLATE_FILTER, TEMPLATE_IDENTITY

from .conftest import SCHEMA


def plans(*sqls):
    return [lower(s, SCHEMA).plan for s in sqls]


def kinds(ses):
    return sorted((s.kind, s.tables, tuple(s.queries)) for s in ses)


def test_filters_are_ored_and_projections_united():
    ses, ces, _ = detect(plans("SELECT a FROM st WHERE c > 3", "SELECT b, f FROM st WHERE b = 'x'"))
    assert kinds(ses) == [("spj", ("st",), (0, 1))]
    (ce,) = ces
    assert ce.template == TEMPLATE_FILTER
    sql = to_sql(ce.plan)
    assert "c > 3 OR" in sql and "b = 'x'" in sql
    assert set(ce.columns) == {"a", "b", "c", "f"}      # outputs and the columns filters read
    ext = [to_sql(c.extraction) for c in ce.consumers]
    assert "WHERE" in ext[0] and "c > 3" in ext[0] and "b = 'x'" in ext[1]


def test_same_filter_means_no_re_filtering():
    ses, ces, _ = detect(plans("SELECT a FROM st WHERE c > 3", "SELECT f FROM st WHERE c > 3"))
    (ce,) = ces
    assert ce.template == TEMPLATE_IDENTITY
    assert all("WHERE" not in to_sql(c.extraction) for c in ce.consumers)


def test_found_as_high_as_possible():
    # the join is shared: the SE is the join, and (joins being cache-unfriendly) the
    # lookup also goes below it; a join-free shared unit hides nothing below it
    ses, _, _ = detect(plans(
        "SELECT st.a, su.d FROM st JOIN su ON st.a = su.a WHERE st.c > 1",
        "SELECT st.b, su.e FROM st JOIN su ON st.a = su.a WHERE su.d < 9"))
    assert ("spj", ("st", "su"), (0, 1)) in kinds(ses)
    assert ("spj", ("st",), (0, 1)) in kinds(ses) and ("spj", ("su",), (0, 1)) in kinds(ses)


def test_different_join_conditions_are_not_similar():
    ses, _, _ = detect(plans("SELECT st.a FROM st JOIN su ON st.a = su.a",
                             "SELECT st.a FROM st JOIN su ON st.c = su.a"))
    assert ("spj", ("st", "su"), (0, 1)) not in kinds(ses)


def test_literals_in_join_conditions_matter():
    ses, _, _ = detect(plans("SELECT st.a FROM st JOIN su ON st.a = su.a + 1",
                             "SELECT st.a FROM st JOIN su ON st.a = su.a + 2"))
    assert ("spj", ("st", "su"), (0, 1)) not in kinds(ses)


def test_different_tables_never_share():
    ses, _, _ = detect(plans("SELECT a FROM st WHERE c > 1", "SELECT a FROM su WHERE d > 1"))
    assert ses == []


def test_nondeterministic_and_time_dependent_are_never_shared():
    for bad in ("SELECT a FROM st WHERE rand() < 0.5", "SELECT a, rand() AS r FROM st WHERE c > 1",
                "SELECT a, current_timestamp() AS ts FROM st WHERE c > 1",
                "SELECT a FROM st WHERE c > 1 AND uuid() <> ''"):
        ses, _, _ = detect(plans(bad, "SELECT a FROM st WHERE c > 2"))
        assert all(0 not in s.queries for s in ses), bad


def test_order_dependent_aggregates_and_udfs_are_never_shared():
    """superop.ir.safety's classification blocks sharing too: first() depends on the row
    order the cache would fix once; a UDF's determinism is unknown."""
    other = "SELECT a, SUM(c) AS s FROM st WHERE a > 2 GROUP BY a"
    good, _, _ = detect(plans("SELECT a, MAX(c) AS fc FROM st WHERE a > 1 GROUP BY a", other))
    assert ("agg", ("st",), (0, 1)) in kinds(good)       # the control: shared without them
    for bad in ("SELECT a, first(c) AS fc FROM st WHERE a > 1 GROUP BY a",
                "SELECT a, my_udf(c) AS u FROM st WHERE c > 1"):
        ses, _, _ = detect(plans(bad, other))
        assert all(0 not in s.queries for s in ses), bad


def test_covering_aggregate_when_keys_agree_and_filters_are_on_keys():
    ses, ces, why = detect(plans("SELECT a, SUM(c) AS s FROM st WHERE a > 1 GROUP BY a",
                                 "SELECT a, MAX(f) AS m, COUNT(*) AS n FROM st WHERE a IS NULL GROUP BY a"))
    agg = [c for c in ces if c.kind == "agg"]
    assert len(agg) == 1 and agg[0].template == TEMPLATE_AGG_KEYS
    sql = to_sql(agg[0].plan)
    assert "GROUP BY" in sql and "SUM(" in sql and "MAX(" in sql and "COUNT(" in sql
    assert "a > 1 OR" in sql


def test_no_covering_aggregate_when_a_filter_is_not_on_a_key():
    ses, ces, why = detect(plans("SELECT a, SUM(c) AS s FROM st WHERE b = 'x' GROUP BY a",
                                 "SELECT a, SUM(c) AS s FROM st WHERE b = 'y' GROUP BY a"))
    assert not [c for c in ces if c.kind == "agg"]
    assert any("non-key column" in w for w in why.values())


def test_aggregates_with_different_keys_are_not_covered():
    ses, ces, _ = detect(plans("SELECT a, SUM(c) AS s FROM st GROUP BY a",
                               "SELECT b, SUM(c) AS s FROM st GROUP BY b"))
    assert not [s for s in ses if s.kind == "agg"]


def test_plan_without_spark_proves_every_consumer():
    p = plan_batch(["SELECT a FROM st WHERE c > 3", "SELECT b FROM st WHERE b = 'x'"], schema=SCHEMA)
    assert p.proofs and all(pr.verified for pr in p.proofs)
    names = {o.name for pr in p.proofs for o in pr.obligations}
    assert names == {"extraction", "template", "placement"}
    ob = p.proofs[0].obligations[0]
    # a σ/π extraction is proved without bound (row-wise); bounded Z3 only where that fails
    assert ob.method == "rowwise" and ob.certificate["K"] is None and ob.certificate["inputs"]["a_sql"]
    assert p.selection is None and not any(r.changed for r in p.rewrites)   # nothing chosen without Spark


def test_qualified_names_not_carried_take_no_part():
    from superop.ir.nodes import Scan, walk
    p = plan_batch(["SELECT a FROM st WHERE c > 3", "SELECT a FROM other_db.st WHERE c > 2"],
                   schema=SCHEMA)
    q = p.queries[1]
    scans = {n.table for n in walk(q.plan) if isinstance(n, Scan)} if q.plan is not None else set()
    if "other_db.st" not in scans:
        # the IR reads db.st as the bare st: the query must take no part
        assert q.excluded
    assert not p.ses      # other_db.st is never shared with st
