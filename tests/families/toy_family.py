"""A family that exists only in the tests, to show that a new family is one module plus one
registry line: a UNION ALL of exactly three aggregates of one input ("TU"), with the DU
template. Registered in front of DU by the ``toy_registry`` fixture."""
from __future__ import annotations

from typing import Any, Optional

from superop.families.du import DiamondUnionAll
from superop.families.kit.diamond import Shape
from superop.families.kit.records import CatalogNames, Match, NearMiss


class TriUnion(DiamondUnionAll):
    name = "TU"
    catalog = CatalogNames("tri-union", "SuperOp_TU", "three aggregates of one input glued by UNION ALL")
    min_branches = 3
    max_branches = 3

    def recognize(self, shape: Shape) -> Optional[Match | NearMiss]:
        if len(shape.paths) != 3:
            return None
        r = super().recognize(shape)
        if r is None:
            return None
        return Match(self.name, r.root, r.source, r.branches, keys=r.keys) if isinstance(r, Match) else \
            NearMiss(self.name, r.root, r.reason, r.detail, r.join_kind, r.n_inputs, r.source)

    def rule_id(self, skeleton: tuple[Any, ...]) -> str:
        return self.catalog.long_name

    def examples(self) -> tuple:
        return ()

    def near_miss_examples(self) -> tuple:
        return ()


TU = TriUnion()
