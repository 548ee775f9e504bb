"""Narrower similar sub-expressions and the planning-time memos.

* the members of an SE over a join that share a filter conjunct, or that each filter one
  table, form a narrower SE whose CE ORs only their filters (``similar.narrower``); it
  conflicts with the SE's own CE;
* a batch shared through a narrower CE returns what each query returns alone;
* the estimator plans each distinct sub-plan with Spark once."""
from __future__ import annotations

from superop.ir import lower
from superop.share import run_batch
from superop.share.estimate import CostModel, Estimator
from superop.share.similar import identify, narrower, units_of_plan

from .conftest import SCHEMA, assert_same_results

J = "SELECT st.a, st.c, su.d FROM st JOIN su ON st.a = su.a WHERE "
Q = [J + "st.b = 'x' AND su.d > 5", J + "st.b = 'x' AND su.d < 15", J + "st.b = 'x'", J + "st.c > 0"]
Q3 = [Q[0], Q[1], Q[3]]
FREE = CostModel(write_factor=0.0, read_factor=0.0, fill_fixed=0.0)


def _ses(sqls):
    forests = [units_of_plan(lower(q, SCHEMA).plan, i) for i, q in enumerate(sqls)]
    return identify(forests, 2)


def test_members_sharing_a_conjunct_form_a_narrower_se():
    (se,) = [s for s in _ses(Q) if len(s.tables) == 2]
    assert len(se.members) == 4
    sub, by_table = narrower(se, 2)
    assert sub.parent == se.id and sub.queries == [0, 1, 2]
    assert by_table.queries == [0, 1] and by_table.shared == ("<a filter on su>",)   # next test
    assert any("'x'" in c for c in sub.shared), sub.shared
    assert narrower(se, 2, blocked=frozenset([sub.narrow_key, by_table.narrow_key])) == []
    assert narrower(sub, 2) == [] or all(len(n.members) < 3 for n in narrower(sub, 2))
    # no narrower SE of one table, or of members that all filter alike
    assert all(narrower(s, 2) == [] for s in _ses(Q) if len(s.tables) == 1)
    assert narrower(next(s for s in _ses(Q[:1] * 3) if len(s.tables) == 2), 2) == []


def test_members_that_filter_one_table_each_their_own_way_form_a_narrower_se():
    # three members filter su, each differently (no conjunct in common); the fourth reads
    # su whole: with it, the CE would hold every su row joined
    sqls = [J + "su.d > 5", J + "su.d < 2", J + "su.d = 3", J + "st.c > 0"]
    (se,) = [s for s in _ses(sqls) if len(s.tables) == 2]
    (sub,) = narrower(se, 2)
    assert sub.queries == [0, 1, 2] and sub.shared == ("<a filter on su>",)
    assert "sharing <a filter on su>" in sub.describe()
    # every member filters su: nothing to cut
    assert narrower(next(s for s in _ses(sqls[:3]) if len(s.tables) == 2), 2) == []


def test_a_batch_shared_through_a_narrower_ce_equals_each_query_alone(spark, share_schema):
    res = run_batch(spark, Q3, budget=10 ** 9, cost=FREE)
    plan = res.plan
    subs = [c for c in plan.ces if c.se.parent]
    assert subs and subs[0].se.queries == [0, 1], plan.report()
    parent = next(c for c in plan.ces if c.se.id == subs[0].se.parent)
    assert not ({parent.id, subs[0].id} <= set(plan.selection.chosen)), plan.report()   # exclusive
    assert plan.cached, plan.report()
    assert 0 < plan.estimator_stats["spark_plans"] < plan.estimator_stats["cost_calls"]
    assert_same_results(spark, res, Q3)


def test_the_estimator_plans_each_sub_plan_once(spark, share_schema):
    plan = lower(Q[0], SCHEMA).plan
    est = Estimator(spark, FREE)
    first = est.cost(plan)
    assert est.cost(plan) == first and est.cost(lower(Q[0], SCHEMA).plan) == first
    assert est.stats == {"spark_plans": 1, "cost_calls": 3}
