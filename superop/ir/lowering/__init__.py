"""SQL -> plan IR, one module per seam of the lowering:

* :mod:`.exprs`       — expression helpers (conjuncts, nested queries, aggregates, windows);
* :mod:`.scope`       — name resolution against a node's fields, correlation, column types;
* :mod:`.base`        — the lowerer's state, CTEs, the query dispatch and the Opaque fallback;
* :mod:`.setops`      — UNION [ALL], ORDER BY / LIMIT on a query;
* :mod:`.from_items`  — FROM items, joins and join predicates found in WHERE;
* :mod:`.subqueries`  — decorrelation of sub-queries (semi/anti joins, scalar aggregates);
* :mod:`.select`      — one SELECT block (grouping, HAVING, windows, DISTINCT, ORDER BY);
* :mod:`.lowerer`     — the lowerer assembled from the above.

The entry points (``lower``, ``parse``, ``qualified``) live in :mod:`superop.ir.lower`.
"""
from .base import Unsupported
from .lowerer import Lowerer

__all__ = ["Lowerer", "Unsupported"]
