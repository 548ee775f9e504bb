"""Super-operator families: each declared once (``du.py``, ``ga.py``, ``dj.py``, ``mj/``,
``nb.py``, ``pivot.py``), listed in
one registry (:data:`REGISTRY`), read by every stage. See README.md.

    from superop import families
    families.REGISTRY                 # (DU, GA, DJ, MJ, NB, PJ)
    families.get("DJ").join_kinds     # what the family supports
    families.scan(plan)               # every Match / NearMiss in a plan (mining, runtime)
    families.first_match(plan)        # the top-most instance (synthesis, verification)
    families.build_program(match)     # the family's Fig. 10 template program
    families.regroup(plan)            # the canonical plan scan's findings are nodes of
                                      #   (kit.regroup, then kit.keyedfilter)
    families.over_source(root, source) # a match's sub-plan reading its source as one table
"""
from .kit import EDGE_OPS, Branch, Covers, Finding, Match, NearMiss, Reason, ReasonCode, Side, TemplateError
from .kit.diamond import over_source
from .kit.family import Family
from .matching import build_program, finish, first_match, match_at, reason_codes, recognize_at, scan
from .matching import canonical as regroup
from .registry import REGISTRY, get, names

__all__ = ["REGISTRY", "get", "names", "Family", "Match", "NearMiss", "Finding", "Branch", "Covers",
           "Reason", "ReasonCode", "Side", "TemplateError", "EDGE_OPS", "scan", "first_match",
           "match_at", "recognize_at", "finish", "build_program", "reason_codes", "regroup",
           "over_source"]
