"""The lowerer: the layers of the lowering, one module per seam, stacked
(base < setops < from_items < subqueries < select)."""
from __future__ import annotations

from .select import SelectLowering


class Lowerer(SelectLowering):
    """Lowers one qualified query AST; ``reasons`` collects why parts became Opaque."""
