"""The lowerer: every seam's mixin over the shared state."""
from __future__ import annotations

from .from_items import FromLowering
from .select import SelectLowering
from .setops import SetOpLowering
from .subqueries import SubqueryLowering


class Lowerer(SelectLowering, SubqueryLowering, FromLowering, SetOpLowering):
    """Lowers one qualified query AST; ``reasons`` collects why parts became Opaque."""
