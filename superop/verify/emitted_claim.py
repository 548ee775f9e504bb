"""What a certificate claims of the SQL the runtime emits, read without Z3: the verdicts'
names, the claim kept in a certificate's hashed inputs (:func:`claim_of`) and whether an
emitted SQL lowers fully (:func:`lowers_fully`). The runtime's load-time check
(:mod:`superop.verify.certificate`) uses these; the Z3 check is
:mod:`superop.verify.emitted`.
"""
from __future__ import annotations

from typing import Optional

from ..ir import Node
from ..ir.lower import lower_fixed

BOUNDED, DIFFERENTIAL = "bounded", "differential-tests"
NOT_MODELLED = "the encoder does not model the emitted SQL"


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
    """(the emitted SQL lowers to a plan with no opaque part, why not) — a certificate
    whose emitted SQL lowers may not say it was left to differential tests for any reason
    but the encoder's (:data:`NOT_MODELLED`)."""
    plan, why = lowered(sql, schema)
    return plan is not None, why


def claim_of(record: dict) -> dict:
    """What a certificate's hashed inputs hold of an ``emitted_sql`` record: the SQL and the
    verdict (not the timing or the counterexample)."""
    return {k: record[k] for k in ("sql", "checked_by", "status", "K", "reason") if k in record
            and not (k == "reason" and record.get("checked_by") == BOUNDED)}
