"""The top-level conjuncts of a filter or guard, shared by the families (mj's group-limit
form) and the runtime's code generation (``superop.rewrite.compile``)."""
from __future__ import annotations

from typing import Optional

from sqlglot import exp


def filter_conjuncts(e: Optional[exp.Expr], *, two_valued: bool = False) -> list[exp.Expr]:
    """``p1 AND p2 AND ...`` (parentheses dropped) as ``[p1, p2, ...]``; None is ``[]``.

    ``COALESCE(p, FALSE)`` — a two-valued ``p`` — is split too. With ``two_valued=False``
    (the conjuncts are read as a filter, where NULL and FALSE both drop the row) it becomes
    the conjuncts of ``p``. With ``two_valued=True`` each conjunct stays two-valued:
    ``COALESCE(a AND b, FALSE)`` is ``[COALESCE(a, FALSE), COALESCE(b, FALSE)]`` (``b`` is
    still evaluated only where ``a`` is not FALSE), and ``COALESCE(p, FALSE)`` with ``p``
    not a conjunction is kept whole."""
    if e is None:
        return []
    while isinstance(e, exp.Paren):
        e = e.this
    if isinstance(e, exp.And):
        return (filter_conjuncts(e.this, two_valued=two_valued)
                + filter_conjuncts(e.expression, two_valued=two_valued))
    if isinstance(e, exp.Coalesce) and len(e.expressions) == 1 and isinstance(e.expressions[0], exp.Boolean) \
            and not e.expressions[0].this:
        if not two_valued:
            return filter_conjuncts(e.this)
        inner = e.this
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.And):
            return [exp.Coalesce(this=c.copy(), expressions=[exp.false()])
                    for c in filter_conjuncts(inner, two_valued=True)]
    return [e]
