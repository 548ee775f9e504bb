"""The SQL the runtime emits for an instance, and how it is covered.

The runtime does not run the DSL program: it compiles it to Spark SQL
(``superop.rewrite.compile``) behind a prefilter on the shared source. :func:`emitted_sql`
produces exactly that SQL for one instance through the runtime's own rewrite path (match,
template, prefilter, compile, SQL generation — ``rewrite_structural``, the same
``Rewriter.apply`` the session runs), with the output and input column types the
certificate records (the runtime compiles an instance a certificate covers with those
types, so what it runs is this SQL). :func:`check_emitted` lowers it with
``superop.ir.lower`` (the generator form and ``size(collect_set(..))`` included,
``superop.ir.lowering.generators``) and checks it against the instance's plan with the
bounded verifier (errors as outcomes) when the encoder models every construct it uses;
otherwise the record says the emitted SQL is covered by differential tests, and why.

A symbolic proof instance (uninterpreted predicates and projections) is checked the same
way with its functions declared deterministic: ``functions``.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional, Sequence

from .. import families
from ..errors import SuperopError
from ..families.coverage import covers_of, match_of
from ..ir.functions import declared_deterministic
from ..rewrite.rewriter import Rewriter, rewrite_structural
from .check import check_plans_outcomes
from .emitted_claim import BOUNDED, DIFFERENTIAL, NOT_MODELLED, lowered
from .exprs import encoding
from .result import UNSUPPORTED, VERIFIED, Unsupported


def emitted_sql(sql: str, schema: dict, form: str = "", output_types: Optional[Sequence[Optional[str]]] = None,
                input_types: Optional[dict[str, str]] = None, functions: Optional[dict[str, str]] = None
                ) -> tuple[Optional[str], str]:
    """(the SQL the runtime emits for ``sql`` — in the family's ``form`` when given —, why
    None when it does not rewrite it)."""
    with declared_deterministic(functions or {}):
        point = covers_of(match_of(sql, schema))          # a rule admitting exactly this instance
        formed = replace(point, variant=families.get(point.family).form_variant(point.variant, form))
        rewriter = Rewriter.admitting([point] + ([formed] if form else []))
        res = rewrite_structural(rewriter, sql, schema, form=form, output_types=output_types,
                                 input_types=input_types)
    if not res.changed:
        return None, res.explanation
    return res.sql, ""


def check_emitted(sql: str, schema: dict, K: int = 4, timeout_ms: int = 20000, form: str = "",
                  output_types: Optional[Sequence[Optional[str]]] = None,
                  input_types: Optional[dict[str, str]] = None,
                  functions: Optional[dict[str, str]] = None) -> dict:
    """The certificate's ``emitted_sql`` record: ``checked_by`` bounded (with ``status``)
    or differential-tests (with ``reason``), and the SQL."""
    try:
        out, why = emitted_sql(sql, schema, form, output_types, input_types, functions)
    except (SuperopError, Unsupported, ValueError) as e:
        return {"checked_by": DIFFERENTIAL, "sql": None, "reason": f"the runtime does not rewrite the pattern: {e}"}
    if out is None:
        return {"checked_by": DIFFERENTIAL, "sql": None, "reason": f"the runtime does not rewrite the pattern: {why}"}
    plan, why = lowered(out, schema)
    orig, _ = lowered(sql, schema)
    if plan is None or orig is None:
        return {"checked_by": DIFFERENTIAL, "sql": out, "reason": why or "the instance does not lower"}
    with declared_deterministic(functions or {}), encoding(ansi=True, functions=functions or {}):
        r = check_plans_outcomes(orig, plan, K=K, timeout_ms=timeout_ms)
    if r.status == UNSUPPORTED:
        return {"checked_by": DIFFERENTIAL, "sql": out, "reason": f"{NOT_MODELLED}: {r.reason}"}
    rec = {"checked_by": BOUNDED, "sql": out, "status": r.status, "K": K, "seconds": round(r.seconds, 4)}
    if r.status != VERIFIED:
        rec["reason"] = r.reason
        if r.counterexample is not None:
            rec["counterexample"] = r.counterexample.to_json()
    return rec

