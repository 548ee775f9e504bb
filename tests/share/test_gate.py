"""The never-slower gate and the planning-time guards.

* a consumer that does not gain from reading a CE does not read it; a batch where no
  consumer gains is left unshared, and the report says why;
* the same extraction shape is proved once (cache by the normalized plan pair);
* a spent proof budget is "unknown": the consumer is not rewritten, never unverified."""
from __future__ import annotations

from superop.ir import lower
from superop.share import detect, plan_batch
from superop.share.estimate import ConsumerValue, CostModel
from superop.share.proofs import BUDGET_EXHAUSTED, Prover
from superop.share.select import Verdict

from .conftest import SCHEMA

Q = ["SELECT a, b, c FROM st WHERE c > 3", "SELECT a, b, c FROM st WHERE b = 'x'"]


def test_consumer_value_sign():
    assert ConsumerValue("ce1", 0, "u", own_cost=10.0, read_cost=4.0).gains
    slower = ConsumerValue("ce1", 0, "u", own_cost=4.0, read_cost=4.0)
    assert not slower.gains and "<=" in slower.reason()
    assert not ConsumerValue("ce1", 0, "u", 10.0, 1.0, known=False).gains


def test_a_batch_where_reading_the_cache_does_not_pay_is_left_unshared(spark, share_schema):
    # reading a cached byte costs 3x decoding it: no consumer gains, whatever the budget
    costly_reads = CostModel(write_factor=0.0, read_factor=3.0)
    plan = plan_batch(Q, spark, budget=10 ** 9, cost=costly_reads)
    assert plan.ces, plan.report()                        # found and proved ...
    assert not plan.cached and not any(r.changed for r in plan.rewrites)   # ... but not used
    for d in plan.decisions:
        assert d.verdict is Verdict.NOT_PAYING and "never slower" in d.reason, d
    vals = [v for vs in plan.consumer_values.values() for v in vs]
    assert vals and not any(v.gains for v in vals)
    assert "consumer(s) gain from reading it (never slower" in plan.report()
    # the same batch with cheap reads is shared (the gate, not the batch, said no)
    assert plan_batch(Q, spark, budget=10 ** 9, cost=CostModel(0.0, 0.0, fill_fixed=0.0)).cached


def test_the_same_extraction_is_proved_once():
    _, (ce,), _ = detect([lower(q, SCHEMA).plan for q in Q])
    first = Prover()
    proofs = [first.prove_consumer(c) for c in ce.consumers]
    assert all(p.verified for p in proofs)
    # σ/π extractions are proved without bound first: no bounded check was needed
    assert {o.method for p in proofs for o in p.obligations if o.name == "extraction"} == {"rowwise"}
    again = Prover()                                       # another planning run, same shapes
    assert all(again.prove_consumer(c).verified for c in ce.consumers)
    assert again.stats["solved"] == 0 and again.stats["cached"] > 0


def test_a_spent_proof_budget_is_unknown_never_verified():
    sqls = ["SELECT a, c FROM st WHERE c > 11", "SELECT a, c FROM st WHERE c < -2"]   # shapes of no other test
    plan = plan_batch(sqls, schema=SCHEMA, proof_budget_s=0.0)
    assert not plan.ces and plan.prover_stats["over_budget"] > 0
    assert any(o.reason == BUDGET_EXHAUSTED and o.status == "unknown"
               for p in plan.proofs for o in p.obligations)
    assert any(d.verdict is Verdict.NOT_PROVED for d in plan.decisions), plan.report()
