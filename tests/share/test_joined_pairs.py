"""Sub-expressions across join orders and the work a shared join result saves.

* two scans an equi-join links form a unit even when the query's FROM order never joins
  them first (``blocks._joined_pairs``): ``st ⋈ su`` is shared between a query that joins
  them directly and one that lists ``sv`` in between; results equal each query alone;
* a pair joined on another condition is not the same sub-expression (keep unchanged);
* the estimator counts a join's other work (probes, broadcast stage) from the runtime
  cost model; a plain filtered scan has none (``estimate.work_bytes``)."""
from __future__ import annotations

from superop.ir import lower
from superop.share import run_batch
from superop.share.estimate import CostModel, Estimator
from superop.share.similar import identify, units_of_plan

from .conftest import SCHEMA, assert_same_results

FREE = CostModel(write_factor=0.0, read_factor=0.0, fill_fixed=0.0)
# sv sits between st and su in the FROM list: (st ⋈ sv) ⋈ su, no join input is {st, su}
MIDDLE = "SELECT st.b, su.d, sv.w FROM st, sv, su WHERE st.a = sv.a AND st.a = su.a AND su.e = 'p'"
DIRECT = "SELECT st.c, su.d FROM st JOIN su ON st.a = su.a WHERE su.e = 'p' OR su.d > 3"
OTHER_KEY = "SELECT st.b, su.e FROM st JOIN su ON st.c = su.d"


def _pair_se(sqls):
    forests = [units_of_plan(lower(q, SCHEMA).plan, i) for i, q in enumerate(sqls)]
    return [s for s in identify(forests, 2) if set(s.tables) == {"st", "su"}]


def test_a_pair_the_from_order_never_joins_first_is_a_unit():
    (se,) = _pair_se([MIDDLE, DIRECT])
    assert se.queries == [0, 1]
    assert _pair_se([OTHER_KEY, DIRECT]) == []           # st.c = su.d is another join


def test_a_batch_sharing_a_pair_equals_each_query_alone(spark, share_schema):
    # free caching: the pair's CE saves its join on top of what one-table CEs save
    sqls = [MIDDLE, DIRECT]
    res = run_batch(spark, sqls, budget=10 ** 9, cost=FREE)
    pair = [ce for ce in res.plan.cached if set(ce.se.tables) == {"st", "su"}]
    assert pair and {c.query for c in res.plan.used[pair[0].id]} == {0, 1}, res.plan.report()
    assert all(r.rewritten for r in res.runs)
    assert_same_results(spark, res, sqls)


def test_the_estimator_counts_a_joins_work(spark, share_schema):
    join, scan = lower(DIRECT, SCHEMA).plan, lower("SELECT a, c FROM st WHERE c > 3", SCHEMA).plan
    with_work = Estimator(spark, FREE)
    without = Estimator(spark, CostModel(write_factor=0.0, read_factor=0.0, fill_fixed=0.0, work_factor=0.0))
    assert with_work.cost(join)[0] > without.cost(join)[0] > 0
    assert with_work.cost(scan)[0] == without.cost(scan)[0] > 0
