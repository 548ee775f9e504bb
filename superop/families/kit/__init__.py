"""The generic kit below the family declarations: typed records, diamond tracing on the IR
(:mod:`.diamond`), the program-building kit of the templates (:mod:`.program`), covers
records (:mod:`.covers`), the family interface (:mod:`.family`) and the planting interface
of the log generator (:mod:`.planting`), the proof kit of symbolic instances (:mod:`.symbolic`).
Nothing here names a family."""
from .covers import EDGE_OPS, Covers, covered_by
from .records import (Branch, CatalogNames, EdgeDecl, Finding, KeyPremise, Match, NearMiss, Reason,
                      ReasonCode, Side, TemplateError)

__all__ = ["EDGE_OPS", "Covers", "covered_by", "Branch", "CatalogNames", "EdgeDecl", "Finding",
           "KeyPremise", "Match", "NearMiss", "Reason", "ReasonCode", "Side", "TemplateError"]
