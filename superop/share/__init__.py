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

Family entry points (for a registry declaration): :func:`detect` (similar
sub-expressions and covering expressions), :func:`prove` (proof obligations of one
consumer), :func:`generate` (the rewritten consumer query) — see ``family.py``.
"""
from .run import BatchResult, QueryRun, analyze, execute, run_batch
from .family import detect, generate, prove
from .opportunities import SharingOpportunity, sharing_opportunities
from .planner import BatchQuery, RewrittenQuery, SharingPlan, plan_batch

__all__ = ["run_batch", "plan_batch", "execute", "analyze", "BatchResult", "QueryRun", "SharingPlan",
           "RewrittenQuery", "BatchQuery", "sharing_opportunities", "SharingOpportunity",
           "detect", "prove", "generate"]
