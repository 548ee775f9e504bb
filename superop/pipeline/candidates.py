"""One mined candidate through synthesis and bounded verification, with the bound
fallback: after a Z3 timeout at K rows the candidate is synthesized again with fewer rows,
down to ``MIN_BOUND``; the outcome records which bounds timed out and the bound its verdict
holds for. Never raises: a crash is an outcome.
"""
from __future__ import annotations

import time
import traceback
from typing import Callable, Optional

from .. import families
from ..families import first_match
from ..families.identity import instance_of
from ..families.kit.diamond import over_source, single_input_base
from ..ir import Scan, lower, to_sql
from ..ir.subqueries import has_tokens, tokens_as_parameters
from ..rules_out.generalize import edges_from_shape, merge_edges
from ..synth.synthesizer import synthesize
from .records import MinedCandidate, Outcome, OutcomeStatus, Support

# when Z3 times out at K rows, the candidate (and its certificate) is checked again at K-1, ...
# down to MIN_BOUND rows; a timeout at every bound stays "unknown"
MIN_BOUND = 3


def timed_out(verifier: Optional[dict]) -> bool:
    """Z3 gave up (``unknown`` from a timeout), as opposed to a refutation or a refusal."""
    v = verifier or {}
    return v.get("status") == "unknown" and "timeout" in str(v.get("reason") or "")


def bounds(K: int, min_bound: int) -> list[int]:
    """The bounds tried, largest first: K, then down to min_bound after a timeout."""
    return list(range(K, min(K, max(1, min_bound)) - 1, -1))



def synthesize_candidate(cand: MinedCandidate | dict, schema: dict, K: int, synth_timeout_s: float,
                         verify_timeout_s: float, synth_fn: Optional[Callable] = None) -> Outcome:
    """Synthesize + verify one mined candidate. Never raises: a crash is an outcome."""
    c = cand if isinstance(cand, MinedCandidate) else MinedCandidate.from_row(cand)
    out = Outcome(candidate=c.candidate_id, family=c.family, shape=c.shape, sql=c.example_sql,
                  join_kind=c.join_kind or None,
                  support=Support(c.templates, c.executions, c.cost_share, c.join_kind),
                  template_ids=list(c.template_ids), instances=list(c.instances))
    t0 = time.perf_counter()
    try:
        low = lower(c.example_sql, schema)
        if not low.fully_lowered:
            out.status, out.reason = OutcomeStatus.UNSUPPORTED, "; ".join(low.opaque_reasons)
            return out
        m = first_match(low.plan, finished=True)
        # Synthesize for the diamond itself (the part a rule replaces), not the whole
        # example query around it; its SQL is what the certificate re-checks. A source that
        # is not a table (a join with dimensions, a union) is read as one table of its
        # columns: the program reads the source's rows, and a check for every such table
        # covers the rows the source produces — unless the family needs what the source
        # computes to recognize the sub-plan (a neighbour self-join's ranked view
        # establishes the row numbers its program assumes): then the sub-plan is kept whole
        # and the synthesizer's family route reads the source as a table under those
        # preconditions.
        target, tschema = low.plan, schema
        if m is not None:
            target = m.root
            src = None if isinstance(m.source, Scan) else over_source(m.root, m.source)
            again_src = None if src is None else first_match(src[0], finished=True)
            if src is None or again_src is None or again_src.family != m.family:
                # the family recognizes the sub-plan by what its source computes (a
                # ranked view's row numbers): cut below that instead, where the source's
                # chain of one-input operators meets the join/union/scan it reads
                base = single_input_base(m.source)
                src = None if base is m.source else over_source(m.root, base)
                again_src = None if src is None else first_match(src[0], finished=True)
            if src is not None and again_src is not None and again_src.family == m.family:
                target, tschema = src
                out.schema = tschema
            out.sql = to_sql(target)
            inst = instance_of(m)
            if inst is not None:    # the match alone, canonical: what the certificate is about
                out.sql, out.schema = inst.sql, inst.schema
            out.example_sql = c.example_sql     # what the runtime rewrites (certified)
            if has_tokens(target):
                # a sub-query's value on the match: synthesized (and certified) with the
                # value as a parameter that may be any number or NULL, never its text
                if inst is not None:
                    target, tschema = lower(inst.sql, inst.schema).plan, inst.schema
                else:
                    param = tokens_as_parameters(target)
                    if param is None:
                        out.status = OutcomeStatus.UNSUPPORTED
                        out.reason = "a sub-query on the match is not a numeric comparison operand"
                        return out
                    target = param
                    out.sql = to_sql(target)
        if synth_fn is None:
            synth_fn = synthesize
        res = synth_fn(target, schema=tschema, K=K, timeout_s=synth_timeout_s,
                       verify_timeout_s=verify_timeout_s)
        out.status, out.reason, out.streaming = OutcomeStatus(res.status), res.reason, res.streaming
        out.checked_by, out.candidates_tried = res.checked_by, res.candidates_tried
        out.verifier, out.counterexample = res.verifier, res.counterexample
        if res.program is not None:
            out.program, out.pseudo_code, out.memory = res.program.to_json(), res.program.pretty(), res.program.memory
        if m is not None:
            # what the certificate covers is read off the certified SQL, exactly as
            # `superop verify` re-derives it; the σ/π/ρ as written in the log are kept
            # for the report
            again = first_match(lower(out.sql, out.schema or tschema).plan)
            if again is not None:
                point = families.get(again.family).point(again)
                out.edges = [list(e) for e in point.edges]
                out.edges_written = merge_edges(out.edges, edges_from_shape(c.shape, again.family))
                out.aggregates, out.branches = list(point.aggregates), point.branches
                out.agg_side, out.join_kind = point.agg_side, again.join_kind
                out.variant = point.variant
                out.premises = list(point.premises)
    except Exception as e:  # one candidate never kills the run
        out.status, out.reason = OutcomeStatus.CRASHED, f"{type(e).__name__}: {e}"
        out.traceback = traceback.format_exc(limit=5)
    out.seconds = round(time.perf_counter() - t0, 3)
    return out


def synthesize_at_bounds(cand: MinedCandidate | dict, schema: dict, ks: list[int], synth_timeout_s: float,
                         verify_timeout_s: float, synth_fn: Optional[Callable] = None) -> Outcome:
    """:func:`synthesize_candidate` at the first bound of ``ks``; again at the next one only
    while Z3 timed out. The outcome says which bounds timed out; its verifier records the
    bound its verdict holds for."""
    given_up: list[int] = []
    o = synthesize_candidate(cand, schema, ks[0], synth_timeout_s, verify_timeout_s, synth_fn)
    for k in ks[1:]:
        if o.status is not OutcomeStatus.UNKNOWN or not timed_out(o.verifier):
            break
        given_up.append(int((o.verifier or {}).get("K") or k + 1))
        o = synthesize_candidate(cand, schema, k, synth_timeout_s, verify_timeout_s, synth_fn)
    if given_up:
        o.reason = f"{o.reason}; Z3 timed out at K={', '.join(map(str, given_up))} rows first"
    return o
