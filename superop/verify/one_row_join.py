"""The one-row product lemma: the step of the canonical form
:mod:`superop.families.kit.onerow` that pushes a product with a one-row (global) aggregate
below the GROUP BY it joins, proved bounded by Z3.

The lemma is about the step the matching path runs, not a copy of it: a symbolic query
(TPC-DS q24's form over one table ``t``: a grouped aggregate whose HAVING compares with an
uncorrelated global aggregate of the same table, each under its own filter) is lowered —
the HAVING's sub-query becomes the product ``γ_K(σ(t)) × ρ(γ_∅(σ'(t)))`` above the filter —
and :func:`~superop.families.kit.onerow.one_row_products` pushes the product below the
GROUP BY; the two plans are compared as bags of the query's rows
(:func:`superop.verify.plans.check_plans_equivalent`) over every table of at most K rows.
The filters are LIKE predicates, which the plan encoder reads as uninterpreted atoms (any
deterministic predicate, NULL or raising included), so the lemma holds for every filter.

Its premise is needed: applied to a GLOBAL outer aggregate (no GROUP BY) the same push
(:func:`~superop.families.kit.onerow.push_product`, which :func:`one_row_products` refuses
to call there) is refuted — over an empty input the query has its one row, the pushed plan
none (:func:`prove_lemma` with ``variant="global_outer"``).
"""
from __future__ import annotations

import time
from typing import Any

from ..families.kit.onerow import one_row_products, push_product
from ..ir.lower import lower
from ..ir.nodes import Aggregate, Join, Node, replace, walk
from .plans import check_plans_equivalent
from .result import UNSUPPORTED, VERIFIED, Result

LEMMA_K = 4
LEMMA_SCHEMA: dict[str, Any] = {"t": {"k": "int", "a": "int", "b": "string"}}
LEMMA_SQL = ("SELECT k, SUM(a) AS s, COUNT(*) AS n FROM t WHERE b LIKE 'p%' GROUP BY k "
             "HAVING SUM(a) > (SELECT MAX(a) - MIN(a) FROM t WHERE b LIKE 'q%')")
# the same with a global outer aggregate, where the step must not be taken, and concrete
# filters (an uninterpreted one leaves a difference undecided): Z3 refutes the push
CONCRETE_SCHEMA: dict[str, Any] = {"t": {"k": "int", "a": "int", "b": "int"}}
GLOBAL_OUTER_SQL = ("SELECT SUM(a) AS s, COUNT(*) AS n FROM t WHERE b > a OR b IS NULL "
                    "HAVING COUNT(*) >= (SELECT COUNT(*) FROM t WHERE b = 1)")
ASSUMPTIONS = (
    "the outer aggregate has grouping keys (an empty input has no group, with or without the product)",
    "the product's other input is a global aggregate under projections and renames only: exactly one row",
    "the filters are deterministic predicates, uninterpreted in the lemma (any function of the columns they "
    "read, TRUE, FALSE or NULL, or raising): the step evaluates them on the same rows",
    "the carried value is read through MAX over a group whose rows all hold it (NULL included): any type "
    "MAX orders; one table stands for the shared input and one column per kind for every column",
)
VARIANTS = ("", "global_outer")


def _forced_push(plan: Node) -> Node:
    """``plan`` with its one product pushed below the aggregate beside it, whatever the
    premises (the refuted variant)."""
    (j,) = [n for n in walk(plan) if isinstance(n, Join) and n.kind == "cross"]
    agg_left = isinstance(j.left, Aggregate)
    grouped, other = (j.left, j.right) if agg_left else (j.right, j.left)
    pushed = push_product(grouped, other, agg_left)
    if pushed is None:
        raise ValueError("the product does not push")
    return replace(plan, {id(j): pushed})


def prove_lemma(K: int = LEMMA_K, timeout_ms: int = 120000, variant: str = "") -> Result:
    """The lemma (module doc) at bound ``K``; ``variant="global_outer"``: the same push
    forced on a global outer aggregate, which Z3 refutes."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}")
    t0 = time.perf_counter()
    sql, schema = (GLOBAL_OUTER_SQL, CONCRETE_SCHEMA) if variant else (LEMMA_SQL, LEMMA_SCHEMA)
    plan = lower(sql, schema).plan
    if not any(isinstance(n, Join) and n.kind == "cross" for n in walk(plan)):
        return Result(UNSUPPORTED, method="bounded", K=K, reason="the HAVING's sub-query did not lower to a product")
    canon = _forced_push(plan) if variant else one_row_products(plan)
    if canon is plan:
        return Result(UNSUPPORTED, method="bounded", K=K, reason="the canonical form did not take the lemma's instance")
    r = check_plans_equivalent(plan, canon, K, timeout_ms)
    details = {"lemma": "one-row product below a GROUP BY", "sql": sql, "schema": schema, "variant": variant,
               "assumptions": list(ASSUMPTIONS)}
    if r.status != VERIFIED:
        return Result(r.status, method="bounded", K=K, seconds=time.perf_counter() - t0,
                      reason=f"the pushed product differs: {r.reason}", counterexample=r.counterexample,
                      details=details)
    return Result(VERIFIED, method="bounded", K=K, seconds=time.perf_counter() - t0,
                  reason=f"no table of at most {K} rows makes the query and its canonical form differ",
                  details=details)
