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

from ..errors import SuperopError
from ..families.coverage import covers_of, match_of
from ..ir import Node
from ..ir.lower import lower_fixed
from ..ir.functions import declared_deterministic
from ..rewrite.rewriter import Rewriter, rewrite_structural
from .check import check_plans_outcomes
from .exprs import encoding
from .result import UNSUPPORTED, VERIFIED, Unsupported

BOUNDED, DIFFERENTIAL = "bounded", "differential-tests"
NOT_MODELLED = "the encoder does not model the emitted SQL"


def emitted_sql(sql: str, schema: dict, form: str = "", output_types: Optional[Sequence[Optional[str]]] = None,
                input_types: Optional[dict[str, str]] = None, functions: Optional[dict[str, str]] = None
                ) -> tuple[Optional[str], str]:
    """(the SQL the runtime emits for ``sql`` — in the family's ``form`` when given —, why
    None when it does not rewrite it)."""
    with declared_deterministic(functions or {}):
        point = covers_of(match_of(sql, schema))          # a rule admitting exactly this instance
        rewriter = Rewriter.admitting([point] + ([replace(point, variant=form)] if form else []))
        res = rewrite_structural(rewriter, sql, schema, form=form, output_types=output_types,
                                 input_types=input_types)
    if not res.changed:
        return None, res.explanation
    return res.sql, ""


def lowered(sql: str, schema: dict) -> tuple[Optional[Node], str]:
    """(the plan, "") or (None, why it does not lower fully) — lowering, the costliest part
    of these checks, is remembered per process (``superop.ir.lower.lower_fixed``)."""
    try:
        low = lower_fixed(sql, schema)
    except Exception as e:  # e.g. a construct the lowerer cannot resolve
        return None, f"the emitted SQL does not lower: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
    if not low.fully_lowered:
        return None, "the emitted SQL is not fully lowered: " + "; ".join(low.opaque_reasons)
    return low.plan, ""


def lowers_fully(sql: str, schema: dict) -> tuple[bool, str]:
    """(the emitted SQL lowers to a plan with no opaque part, why not) — z3-free: a
    certificate whose emitted SQL lowers may not say it was left to differential tests for
    any reason but the encoder's (:data:`NOT_MODELLED`)."""
    plan, why = lowered(sql, schema)
    return plan is not None, why


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


def claim_of(record: dict) -> dict:
    """What a certificate's hashed inputs hold of an ``emitted_sql`` record: the SQL and the
    verdict (not the timing or the counterexample)."""
    return {k: record[k] for k in ("sql", "checked_by", "status", "K", "reason") if k in record
            and not (k == "reason" and record.get("checked_by") == BOUNDED)}
