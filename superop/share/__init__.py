"""Work sharing across the queries of a batch (cache-based multi-query optimization).

    from superop.share import run_batch, plan_batch
    result = run_batch(spark, [sql1, sql2, ...], budget="2g")   # plan + run, cache released
    plan = plan_batch([sql1, sql2], spark)                      # the plan only
    print(plan.report())

Similar sub-expressions by Merkle fingerprints loose on σ/π (Algorithm 1 of the cache-based
MQO paper), covering expressions (OR-ed filters, united projections, covering aggregates
on equal grouping keys), a proof for every extraction (bounded Z3 check + template proof +
placement proof), an MCKP choice under a memory budget, and execution with the chosen
covering expressions persisted (MEMORY_AND_DISK) and the consumers rewritten.

Stages on their own: :func:`detect` (similar sub-expressions and covering expressions,
``covering.py``), :func:`prove` (proof obligations of one consumer, ``proofs.py``).
"""
# exported lazily (name -> module): importing ``superop.share`` (e.g. for its command)
# stays free of z3, which only planning needs
_EXPORTS = {
    "run_batch": "run", "execute": "run", "analyze": "run", "BatchResult": "run", "QueryRun": "run",
    "detect": "covering", "prove": "proofs",
    "SharingOpportunity": "opportunities", "sharing_opportunities": "opportunities",
    "BatchQuery": "sharing_plan", "RewrittenQuery": "sharing_plan", "SharingPlan": "sharing_plan",
    "plan_batch": "planner",
}


def __getattr__(name):
    if name in _EXPORTS:
        import importlib
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_EXPORTS)
