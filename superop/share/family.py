"""Sharing as a family of its own kind: a sharing plan over a batch, not a single-query
rewrite. The three stages a family declaration needs, as separate public functions:

* :func:`detect` — similar sub-expressions (Algorithm 1) and their covering expressions;
* :func:`prove` — the proof obligations of one consumer (bounded extraction check,
  template proof, placement proof);
* :func:`generate` — a consumer query rewritten to read the chosen covering expressions.

``planner.plan_batch`` composes them with the cost model and the knapsack choice.
"""
from __future__ import annotations

from typing import Sequence

from ..ir.nodes import Node
from .covering import Builder, Consumer, CoveringExpression, group_consumers, rewrite_query
from .proofs import ConsumerProof, Prover
from .similar import SimilarSubexpression, identify, units_of_plan


def detect(plans: Sequence[Node], k: int = 2, view_prefix: str = "_superop_ce_") -> tuple[
        list[SimilarSubexpression], list[CoveringExpression], dict[str, str]]:
    """(SEs, CEs, {SE id: why it has no CE}) of a batch of plan IR trees (query i =
    ``plans[i]``). No proof has run yet: every consumer still needs :func:`prove`."""
    forests = [units_of_plan(p, i) for i, p in enumerate(plans)]
    ses = identify(forests, k)
    b = Builder(view_prefix)
    ces, why_not = [], {}
    for n, se in enumerate(ses, 1):
        ce, why = b.build(se, n)
        if ce is None:
            why_not[se.id] = why
        else:
            ces.append(ce)
    return ses, ces, why_not


def prove(consumer: Consumer, K: int = 3, timeout_ms: int = 20000, leaf_types=None) -> ConsumerProof:
    """Every obligation of one consumer; use the consumer only if ``.verified``."""
    return Prover(K, timeout_ms, leaf_types).prove_consumer(consumer)


def generate(plan: Node, consumers: Sequence[Consumer]) -> Node:
    """``plan`` with the given (proved, non-overlapping) consumers reading their CEs.
    Several consumers in one block need the combined placement proof
    (``Prover.prove_placement``) before the result may run."""
    return rewrite_query(plan, *group_consumers(consumers))
