"""SQL -> plan IR, one module per seam of the lowering, stacked as layers
(each builds on the one before):

* :mod:`.base`        — state, CTEs, the query dispatch and the Opaque fallback;
* :mod:`.setops`      — UNION [ALL], ORDER BY / LIMIT on a query;
* :mod:`.from_items`  — FROM items, joins and join predicates found in WHERE;
* :mod:`.subqueries`  — decorrelation of sub-queries (semi/anti joins, scalar aggregates);
* :mod:`.select`      — one SELECT block (grouping, HAVING, windows, DISTINCT, ORDER BY);
* :mod:`.lowerer`     — the top layer, :class:`Lowerer`;

with :mod:`.exprs` (expression helpers) and :mod:`.scope` (name resolution) below them.
The entry points (``lower``, ``parse``, ``qualified``) live in :mod:`superop.ir.lower`.
"""
from .base import Unsupported
from .lowerer import Lowerer

__all__ = ["Lowerer", "Unsupported"]
