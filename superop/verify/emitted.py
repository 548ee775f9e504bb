"""The SQL the runtime emits for a pattern, and how it is covered.

The runtime does not run the DSL program: it compiles it to Spark SQL
(``superop.rewrite.compile``) behind a prefilter on the shared source. :func:`emitted_sql`
produces exactly that SQL for one sub-query through the runtime's own rewrite path
(match, template, prefilter, compile, SQL generation — ``rewrite_structural``, without
Spark, so output columns are not cast to Spark's types). :func:`check_emitted` lowers it
with ``superop.ir.lower`` and checks it against the original plan with the bounded
verifier (errors as outcomes) when the encoder models every construct it uses;
otherwise the record says the emitted SQL is covered by differential tests (the
runtime's tests run original and rewritten queries on Spark), and why.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from ..errors import SuperopError
from ..families.coverage import covers_of, match_of
from ..ir import lower
from ..rewrite.rewriter import Rewriter, rewrite_structural
from .check import check_plans_outcomes
from .result import UNSUPPORTED, VERIFIED, Unsupported


def emitted_sql(sql: str, schema: dict, form: str = "") -> tuple[Optional[str], str]:
    """(the SQL the runtime emits for ``sql`` — in the family's ``form`` when given —, why
    None when it does not rewrite it)."""
    point = covers_of(match_of(sql, schema))          # a rule admitting exactly this instance
    rewriter = Rewriter.admitting([point] + ([replace(point, variant=form)] if form else []))
    res = rewrite_structural(rewriter, sql, schema, form=form)
    if not res.changed:
        return None, res.explanation
    return res.sql, ""


def check_emitted(sql: str, schema: dict, K: int = 4, timeout_ms: int = 20000, form: str = "") -> dict:
    """The certificate's ``emitted_sql`` record: ``checked_by`` bounded (with ``status``)
    or differential-tests (with ``reason``), and the SQL."""
    try:
        out, why = emitted_sql(sql, schema, form)
    except (SuperopError, Unsupported, ValueError) as e:
        return {"checked_by": "differential-tests", "sql": None,
                "reason": f"the runtime does not rewrite the pattern: {e}"}
    if out is None:
        return {"checked_by": "differential-tests", "sql": None,
                "reason": f"the runtime does not rewrite the pattern: {why}"}
    try:
        low = lower(out, schema)
    except Exception as e:  # e.g. a generator the lowerer cannot resolve
        return {"checked_by": "differential-tests", "sql": out,
                "reason": f"the emitted SQL does not lower: {str(e).splitlines()[0] if str(e) else type(e).__name__}"}
    if not low.fully_lowered:
        return {"checked_by": "differential-tests", "sql": out,
                "reason": "the emitted SQL is not fully lowered: " + "; ".join(low.opaque_reasons)}
    r = check_plans_outcomes(lower(sql, schema).plan, low.plan, K=K, timeout_ms=timeout_ms)
    if r.status == UNSUPPORTED:
        return {"checked_by": "differential-tests", "sql": out,
                "reason": f"the encoder does not model the emitted SQL: {r.reason}"}
    rec = {"checked_by": "bounded", "sql": out, "status": r.status, "K": K,
           "seconds": round(r.seconds, 4)}
    if r.status != VERIFIED:
        rec["reason"] = r.reason
        if r.counterexample is not None:
            rec["counterexample"] = r.counterexample.to_json()
    return rec
