"""Certificate assembly for the nightly job: the bounded certificate of one verified
pattern (about the program the runtime builds for it, at the bound synthesis verified at,
lower only after a Z3 timeout), the generalization stage's pattern carrying it, and the
unbounded template proofs a rule's members need (``Family.proofs_for``).
"""
from __future__ import annotations

import logging
from typing import Optional

from .. import families
from ..families import Side
from ..rules_out.generalize import Pattern
from ..verify.certify import check_and_certify, prove_and_certify
from .candidates import MIN_BOUND, bounds, timed_out
from .records import Outcome

log = logging.getLogger(__name__)


def bounded_certificate(o: Outcome, schema: dict, K: int, verify_timeout_s: float,
                        min_bound: int = MIN_BOUND) -> Optional[dict]:
    """The bounded certificate of one verified pattern: about the program the RUNTIME builds
    for it (``build_program`` of the matched diamond) at the bound the synthesis stage verified
    at, at most K (lower, down to ``min_bound``, only after a Z3 timeout), with how the SQL the runtime
    emits is covered (``emitted_sql``). The synthesizer's program and its verification stay
    in synthesis.json as the synthesis stage's evidence; they are not the certificate."""
    if not o.verified:
        return None
    # at most the bound the synthesis stage verified at; lower only after a Z3 timeout
    top = min(K, int((o.verifier or {}).get("K") or K))
    for k in bounds(top, min_bound):
        cert = _certificate_at(o, schema, k, verify_timeout_s)
        if cert is None or not timed_out(cert):
            return cert
    return cert


def _certificate_at(o: Outcome, schema: dict, K: int, verify_timeout_s: float) -> Optional[dict]:
    cert = None
    # the example query as mined (the runtime rewrites its match in place); else its match's
    # sub-query alone (over its source read as one table) when the example reads more than
    # the encoder models
    tries = [(o.example_sql, schema), (o.sql, o.schema or schema)]
    for sql, sch in tries:
        if not sql:
            continue
        try:
            cert = check_and_certify(sql, sch, K=K, timeout_ms=int(verify_timeout_s * 1000),
                                     emitted=True)
        except Exception as e:  # e.g. the template refuses the pattern: nothing the runtime would run
            log.warning("no certificate for %s: %s", o.candidate, e)
            continue
        if cert["status"] != "unsupported":
            return cert
    return cert


def pattern_of(o: Outcome, schema: dict, K: int, verify_timeout_s: float,
               min_bound: int = MIN_BOUND) -> Optional[Pattern]:
    """The generalization stage's pattern of one verified outcome, with its certificate
    (None for an outcome that is not verified or has no recorded point)."""
    if not o.verified or o.edges is None or o.support is None:
        return None
    return Pattern(
        candidate_id=o.candidate, family=o.family, shape=o.shape, sql=o.sql,
        edges=o.edges, edges_written=o.edges_written, join_kind=o.join_kind,
        branches=o.branches, agg_side=Side(o.agg_side) if o.agg_side else None,
        aggregates=o.aggregates, variant=o.variant, premises=list(o.premises), memory=o.memory or "streaming",
        program=o.program, pseudo_code=o.pseudo_code,
        certificate=bounded_certificate(o, schema, K, verify_timeout_s, min_bound),
        distinct_queries=o.support.templates, executions=o.support.executions,
        cost_share=o.support.cost_share, template_ids=o.template_ids)


def template_proofs(timeout_ms: int = 20000):
    """Unbounded (inductive) proofs of the template instances a rule's members need (the
    family says which: ``Family.proofs_for``), each certificate with what its instance
    covers."""
    def proofs(skeleton: tuple, members: list) -> list[dict]:
        fam = families.get(skeleton[0])
        aggs = sorted({a for m in members for a in m.aggregates})
        out = []
        for inst in fam.proofs_for(skeleton, aggs):
            try:
                out.append(prove_and_certify(inst, timeout_ms=timeout_ms))
            except Exception as e:  # a failing proof means "bounded only", never "verified"
                log.warning("template proof %s failed: %s", inst.name, e)
                return []
        return out
    return proofs
