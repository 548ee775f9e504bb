"""What a certificate is about and covers, and what a rule admits — without Z3.

A bounded certificate is about the match of its SQL (the top-most instance the registry's
matching path finds, through every check the runtime applies); a template certificate is
about a family's symbolic proof instance. Either covers one :class:`Covers` record
(``Family.point`` of the match, or the instance's declared record), re-derived here from
the certificate's inputs, so that a recorded ``covers`` cannot be widened by editing the
JSON. A rule admits the union of its ``admits`` records. The verifier, the rule catalog's
coverage check and the runtime all go through these functions.
"""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, Optional

from ..dsl import Program
from ..ir import Node, lower
from ..ir.lower import lower_fixed
from .instances import find
from .kit.covers import Covers
from .kit.records import Match
from .matching import build_program, first_match, scan
from .registry import get


def match_of_plan(plan: Node) -> Match:
    """The super-operator match a certificate is about: the top-most instance the
    registry's matching path finds in the plan, through every check the runtime applies
    (``superop.families.first_match(plan, finished=True)``); ValueError if none."""
    m = first_match(plan, finished=True)
    if m is None:
        near = [f for f in scan(plan) if not isinstance(f, Match)]
        why = f" ({near[0].family}: {near[0].why})" if near else ""
        raise ValueError(f"no super-operator instance the runtime would match{why}")
    return m


def match_of(sql: str, schema: dict[str, Any]) -> Match:
    """The super-operator match of a query (:func:`match_of_plan` of its lowered plan)."""
    low = lower_fixed(sql, schema) if isinstance(schema, dict) else lower(sql, schema)
    if not low.fully_lowered:
        raise ValueError("; ".join(low.opaque_reasons) or "the SQL does not lower")
    return match_of_plan(low.plan)


def runtime_program(sql: str, schema: dict[str, Any], form: str = "") -> Program:
    """The program the runtime runs for a sub-query: the family's template program of
    its match (``superop.families.build_program``; in ``form``: ``Family.program_form``)."""
    return match_program(match_of(sql, schema), form)


def match_program(m: Match, form: str = "") -> Program:
    """The program the runtime runs for the match ``m`` (in ``form``)."""
    prog = build_program(m)
    return get(m.family).program_form(m, prog, form) if form else prog


def covers_of(m: Match) -> Covers:
    """What a certificate about the concrete match ``m`` covers: the instance itself
    (``Family.point``)."""
    return get(m.family).point(m)


def derived_covers(cert: Any) -> Optional[Covers]:
    """What a certificate covers, re-derived from the inputs it carries (the template
    proof's symbolic instance, or the match of the bounded certificate's SQL); None when
    they say nothing (a malformed or foreign certificate covers nothing). The ONE
    derivation: :func:`structural_check` and the rule catalog's coverage check
    (``superop.rules_out.coverage``) both go through :func:`certificate_covers`."""
    inputs = cert.get("inputs") if isinstance(cert, dict) else None
    if not isinstance(inputs, dict):
        return None
    try:
        if inputs.get("kind") == "template-proof":
            return find(str(inputs["template"])).covers
        if inputs.get("kind") == "bounded-equivalence":
            cov = covers_of(match_of(inputs["sql"], inputs["schema"]))
            return replace(cov, variant=str(inputs["form"])) if inputs.get("form") else cov
    except Exception:  # a malformed certificate covers nothing
        return None
    return None


def certificate_covers(cert: Any) -> tuple[Optional[Covers], str]:
    """(what the certificate covers, problem or ""). The recorded ``covers`` must equal
    :func:`derived_covers` (it cannot be widened by editing the JSON: the inputs are what
    a re-check re-proves)."""
    rec = cert.get("covers") if isinstance(cert, dict) else None
    if rec is None:
        return None, "records no covers"
    try:
        recorded = Covers.from_json(rec)
    except ValueError as e:
        return None, str(e)
    derived = derived_covers(cert)
    if derived is None:
        return None, "covers cannot be re-derived from the certificate's inputs"
    if recorded != derived:
        return None, f"records covers {recorded.describe()} but its inputs prove {derived.describe()}"
    return recorded, ""


def admitted(rule: dict[str, Any]) -> list[Covers]:
    """What a rule admits, as covers records: its ``admits`` list, or (a rule without one)
    the product of its join kinds, aggregate sides, aggregates and edges."""
    if rule.get("admits"):
        return [Covers.from_json(a) for a in rule["admits"]]
    fam = get(rule["family"])
    sides = rule.get("agg_sides") or [s.value if s is not None else None for s in fam.sides]
    aggs = rule["aggregates"] if rule.get("aggregates") is not None else fam.aggregates
    edges = [e["optional"] for e in rule["abstract_edges"]]
    return [Covers.make(fam.name, join_kinds=rule.get("join_kinds") or (), branches=rule.get("branches", 2),
                        agg_side=s, aggregates=aggs, edges=edges) for s in sides]


# -- bounds -----------------------------------------------------------------------------
# The smallest bound a bounded certificate may hold for to be loaded at all: tables of at
# most K rows, K >= MIN_BOUND (0 checks empty tables only). SUPEROP_MIN_BOUND raises it,
# never lowers it. A bounded certificate makes the ONE instance it is about coverable at
# runtime only from COVER_BOUND rows (an unbounded template proof covers what its claim
# contains).
MIN_BOUND = 3
COVER_BOUND = 4


def _raised(var: str, floor: int) -> int:
    try:
        return max(floor, int(os.environ.get(var, floor)))
    except ValueError:
        return floor


def min_bound() -> int:
    """The minimum bound on load: :data:`MIN_BOUND`, raised by ``$SUPEROP_MIN_BOUND``."""
    return _raised("SUPEROP_MIN_BOUND", MIN_BOUND)


def cover_bound() -> int:
    """The bound from which a bounded certificate covers its instance at runtime:
    :data:`COVER_BOUND`, raised by ``$SUPEROP_COVER_BOUND`` (never below :func:`min_bound`)."""
    return max(min_bound(), _raised("SUPEROP_COVER_BOUND", COVER_BOUND))


def missing_parts(cov: Covers, template: str, proved: set[str]) -> list[str]:
    """The other parts of a covers record proved in parts (several symbolic instances with
    one record) that are not among ``proved``."""
    parts = [i.name for i in get(cov.family).proof_instances() if i.covers == cov]
    return [n for n in parts if n != template and n not in proved]
