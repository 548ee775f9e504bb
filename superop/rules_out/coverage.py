"""A rule admits exactly what its certificates cover (no Spark, no Z3).

Every certificate covers a set of instances (:class:`superop.families.Covers`): a template
proof what its family says the proof is about (``Family.proof_covers`` of its parameters),
a bounded certificate the instance of its sub-query (``Family.point`` of the match on its
SQL). The recorded ``covers`` of a certificate must equal what its inputs give (it cannot be
widened by editing the JSON: the inputs are what ``superop verify`` re-proves). A rule's
admitted set (:func:`superop.rules_out.catalog.admitted`) must lie inside the union of its
certificates' covers, and the fields a rule lists for reading (edges, join kinds, sides,
aggregates) must be exactly the hull of what it admits.

``superop verify --catalog`` runs :func:`coverage_problems` on every rule.
"""
from __future__ import annotations

import itertools
from typing import Any, Optional

from .. import families
from ..families import Covers
from .catalog import OPTIONAL_OPS, admitted


def derived_covers(cert: dict[str, Any]) -> Optional[Covers]:
    """What a certificate covers, re-derived from the inputs it carries (None when it
    carries none that say: not produced by superop.verify)."""
    inputs = cert.get("inputs")
    if not isinstance(inputs, dict):
        return None
    kind = inputs.get("kind")
    try:
        if kind == "template-proof":
            params = dict(inputs.get("params") or {})
            fam = families.get(str(params.pop("family")))
            return fam.proof_covers(params)
        if kind == "bounded-equivalence":
            from ..ir import lower
            m = families.first_match(lower(inputs["sql"], inputs["schema"]).plan)
            return families.get(m.family).point(m) if m is not None else None
    except Exception:  # a malformed certificate covers nothing
        return None
    return None


def certificate_covers(cert: dict[str, Any]) -> tuple[Optional[Covers], str]:
    """(what the certificate covers, problem or ""). A recorded ``covers`` must equal the
    re-derived one; without a record the re-derived one counts."""
    derived = derived_covers(cert)
    rec = cert.get("covers")
    if rec is None:
        if derived is None:
            return None, "records no covers and carries no inputs to derive them from"
        return derived, ""
    try:
        recorded = Covers.from_json(rec)
    except ValueError as e:
        return None, str(e)
    if derived is None:
        return None, "covers cannot be re-derived from the certificate's inputs"
    if recorded != derived:
        return None, f"records covers {recorded.describe()} but its inputs prove {derived.describe()}"
    return recorded, ""


def _maximal_points(rec: Covers) -> list[Covers]:
    """The largest instances a record admits: one join kind at a time, each largest set of
    functions one instance may fold (the family says: all, or one MIN/MAX), every edge
    operator."""
    fam = families.get(rec.family)
    kinds: list[tuple[str, ...]] = [(k,) for k in rec.join_kinds] or [()]
    aggs = fam.maximal_aggregate_sets(rec.aggregates) if rec.aggregates else [frozenset()]
    return [Covers.make(rec.family, join_kinds=k, branches=rec.branches, agg_side=rec.agg_side,
                        aggregates=a, edges=rec.edges, variant=rec.variant)
            for k, a in itertools.product(kinds, aggs)]


def coverage_problems(rule: dict[str, Any]) -> list[str]:
    """Why the rule admits something no certificate covers (empty: it does not)."""
    out: list[str] = []
    covers: list[Covers] = []
    for i, c in enumerate(rule.get("certificates") or []):
        cov, why = certificate_covers(c)
        if why:
            out.append(f"certificate #{i}: {why}")
        if cov is not None and c.get("status") == "verified":
            covers.append(cov)
    try:
        admits = admitted(rule)
    except (KeyError, ValueError) as e:
        return out + [f"cannot read what the rule admits: {e}"]
    for a in admits:
        for p in _maximal_points(a):
            if not any(c.contains(p) for c in covers):
                out.append(f"admits {p.describe()}, which no certificate covers")
    if rule.get("admits"):
        out += _hull_problems(rule, admits)
    return out


def _hull_problems(rule: dict[str, Any], admits: list[Covers]) -> list[str]:
    """The fields a rule lists for reading must be the hull of its ``admits``."""
    out = []
    edges = [e["optional"] for e in rule["abstract_edges"]]
    hull = [[o for o in OPTIONAL_OPS if any(o in a.edges[i] for a in admits)] for i in range(len(edges))]
    for e, h, listed in zip(rule["abstract_edges"], hull, edges):
        if sorted(listed) != sorted(h):
            out.append(f"edge {e['name']} lists {listed} but the rule admits {h}")
    kinds = sorted({k for a in admits for k in a.join_kinds})
    if sorted(rule.get("join_kinds") or []) != kinds:
        out.append(f"join_kinds {rule.get('join_kinds')} but the rule admits {kinds}")
    sides = sorted({a.agg_side for a in admits if a.agg_side})
    if sides and sorted(rule.get("agg_sides") or []) != sides:
        out.append(f"agg_sides {rule.get('agg_sides')} but the rule admits {sides}")
    aggs = sorted({x for a in admits for x in a.aggregates})
    if rule.get("aggregates") is not None and sorted(rule["aggregates"]) != aggs:
        out.append(f"aggregates {rule['aggregates']} but the rule admits {aggs}")
    return out
