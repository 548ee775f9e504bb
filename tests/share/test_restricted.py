"""CEs restricted to the queries no chosen CE serves (``similar.restricted``).

* the restricted SE keeps exactly the members whose footprint no chosen consumer meets;
  nothing to cut, or fewer than k left: no restricted SE;
* the knapsack takes a restricted CE next to the chosen CE its parent conflicts with;
* a batch shared through a restricted CE returns what each query returns alone."""
from __future__ import annotations

import dataclasses

from superop.ir import lower
from superop.share.select import Verdict, choose
from superop.share.similar import identify, restricted, served_by, units_of_plan

from .conftest import SCHEMA

THREE = "SELECT st.b, su.d, sv.w FROM st JOIN su ON st.a = su.a JOIN sv ON sv.a = st.a WHERE st.c > 0"
PAIR = "SELECT st.a, su.d FROM st JOIN su ON st.a = su.a WHERE "
Q = [THREE, THREE + " AND su.d > 5", PAIR + "st.c > 2", PAIR + "st.c < 8"]


def _ses():
    forests = [units_of_plan(lower(q, SCHEMA).plan, i) for i, q in enumerate(Q)]
    return identify(forests, 2)


def test_a_restricted_se_keeps_the_members_no_chosen_ce_serves():
    ses = _ses()
    (three,) = [s for s in ses if len(s.tables) == 3]
    (pair,) = [s for s in ses if set(s.tables) == {"st", "su"}]
    assert pair.queries == [0, 1, 2, 3]
    # the 3-table CE is chosen for queries 0 and 1: its units cover their st ⋈ su
    served = {m.query: m.footprint() for m in three.members}
    r = restricted(pair, served, 2)
    assert r is not None and r.restricted and r.parent == pair.id
    assert r.queries == [2, 3] and all(m in pair.members for m in r.members)
    assert "restricted" in r.describe()
    assert restricted(pair, served, 2, blocked=frozenset([r.narrow_key])) is None
    assert restricted(pair, {}, 2) is None                               # nothing cut
    assert restricted(pair, {**served, 2: pair.members[2].footprint()}, 2) is None   # < k left
    # a chosen unit of another part of the query (sv alone) does not cut the st ⋈ su member
    (sv,) = [s for s in ses if s.tables == ("sv",)]
    assert restricted(pair, {m.query: m.footprint() for m in sv.members}, 2) is None


def test_a_chosen_restriction_of_the_same_se_does_not_cut_it_again():
    # chosen: the 3-table CE (q0, q1) and pair restricted to q2, q3. A fifth query with the
    # same st ⋈ su is left unserved: pair restricted against the 3-table CE alone keeps
    # q2, q3 and q4 (a CE the knapsack weighs against the chosen restriction); counting
    # that restriction as a server would cut q2 and q3 and leave q4 alone (no SE)
    sqls = Q + [PAIR + "st.c = 5"]
    ses = identify([units_of_plan(lower(q, SCHEMA).plan, i) for i, q in enumerate(sqls)], 2)
    (three,) = [s for s in ses if len(s.tables) == 3]
    (pair,) = [s for s in ses if set(s.tables) == {"st", "su"}]
    first = restricted(pair, served_by([(three, three.members)], pair), 2)
    assert first is not None and first.queries == [2, 3, 4]
    two = dataclasses.replace(first, members=[m for m in first.members if m.query in (2, 3)])
    chosen = [(three, three.members), (two, two.members)]
    served = served_by(chosen, pair)
    assert set(served) == {0, 1}                       # only the other SE's CE serves
    again = restricted(pair, served, 2)
    assert again is not None and again.queries == [2, 3, 4]
    # counted as a server, the restriction would leave a single member: nothing offered
    assert restricted(pair, {**served, **{m.query: m.footprint() for m in two.members}}, 2) is None
    # another SE's restriction does count: the 3-table SE cut by pair's chosen restriction
    assert set(served_by(chosen, three)) == {2, 3}


def test_the_knapsack_takes_a_restricted_ce_next_to_the_chosen_one():
    # three = 3-table CE of q0 q1; pair = the st ⋈ su CE of q0-q3 (conflicts with three);
    # pair/r = pair restricted to q2 q3 (conflicts with pair only)
    value = {"three": 10.0, "pair": 9.0, "pair/r": 3.0}
    weight = {"three": 5.0, "pair": 5.0, "pair/r": 2.0}
    conflicts = {frozenset(("three", "pair")), frozenset(("pair", "pair/r"))}
    without = choose(["three", "pair"], {frozenset(("three", "pair"))}, value, weight, budget=100.0)
    assert without.chosen == ["three"] and without.decisions["pair"].verdict is Verdict.BETTER_IN_GROUP
    sel = choose(list(value), conflicts, value, weight, budget=100.0)
    assert sorted(sel.chosen) == ["pair/r", "three"] and sel.total_value == 13.0
    # no room for both: the better single option
    assert choose(list(value), conflicts, value, weight, budget=6.0).chosen == ["three"]


def test_a_batch_shared_through_a_restricted_ce_equals_each_query_alone(spark, share_schema, monkeypatch):
    # Tiny tables make the 3-table CE worth about what the st ⋈ su CE is; weigh the 3-table
    # CE up (the value model only steers the choice: what is built, proved, rewritten and
    # run is the planner's own) so that it is chosen and st ⋈ su conflicts with it.
    import dataclasses

    from superop.share import plan_batch
    from superop.share.estimate import CostModel, Estimator
    from superop.share.run import execute
    from superop.sparkutil import bag

    from .conftest import alone
    real = Estimator.estimate

    def steered(self, ce, consumers):
        e = real(self, ce, consumers)
        return dataclasses.replace(e, value=e.value * 100) if len(ce.se.tables) == 3 else e
    monkeypatch.setattr(Estimator, "estimate", steered)
    free = CostModel(write_factor=0.0, read_factor=0.0, fill_fixed=0.0)
    plan = plan_batch(Q, spark, budget=10 ** 9, cost=free)
    chosen = {c.id: c for c in plan.ces if c.id in plan.selection.chosen}
    (r,) = [c for c in chosen.values() if c.se.restricted]
    assert r.queries == [2, 3] and any(len(c.se.tables) == 3 for c in chosen.values()), plan.report()
    assert r.proved and all(p.verified for p in plan.proofs if p.ce == r.id)
    assert [x.ces for x in plan.rewrites][2:] == [[r.id], [r.id]], plan.report()
    res = execute(spark, plan, "collect")
    for run, sql in list(zip(res.runs, Q))[2:]:      # the restricted CE's readers, NULLs and duplicates
        assert run.rewritten and bag(run.rows) == alone(spark, sql), (run.name, plan.report())
