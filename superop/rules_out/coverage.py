"""A rule admits exactly what its certificates cover (no Spark, no Z3) — THE per-rule check
of a catalog: ``load_catalog`` / ``SuperOpSession`` (through ``superop.rules_out.trust``)
and ``superop verify --catalog`` run :func:`coverage_problems` on every rule.

Every certificate covers a set of instances (:class:`superop.families.Covers`): a template
proof its symbolic instance's record (``Family.proof_instances``), a bounded certificate
the instance of its sub-query (``Family.point`` of the match on its SQL). The recorded
``covers`` of a certificate must equal what its inputs give
(``superop.families.coverage.certificate_covers``: it cannot be widened by editing the
JSON; the inputs are what a re-check re-proves). A covers record proved in parts (several
symbolic instances with one record, e.g. Min & Join with and without a join residual)
counts only when the rule carries every part. A rule's admitted set
(:func:`superop.families.coverage.admitted`) must lie inside the union of its
certificates' covers, and the fields a rule lists for reading (edges, join kinds, sides,
aggregates) must be exactly the hull of what it admits.
"""
from __future__ import annotations

import itertools
from typing import Any, Optional

from .. import families
from ..families import Covers
from ..families.coverage import admitted, certificate_covers, derived_covers
from .catalog import OPTIONAL_OPS, make_rule
from .generalize import maximal

__all__ = ["coverage_problems", "covered_rule", "certificate_covers", "derived_covers"]


def _template(cert: dict[str, Any]) -> Optional[str]:
    inputs = cert.get("inputs")
    if isinstance(inputs, dict) and inputs.get("kind") == "template-proof":
        return str(inputs.get("template"))
    return None


def _missing_parts(cov: Covers, template: str, proved: set[str]) -> list[str]:
    """The other parts of a covers record proved in parts that the rule does not carry."""
    parts = [i.name for i in families.get(cov.family).proof_instances() if i.covers == cov]
    return [n for n in parts if n != template and n not in proved]


def _maximal_points(rec: Covers) -> list[Covers]:
    """The largest instances a record admits: one join kind at a time, each largest set of
    functions one instance may fold (the family says: all, or one MIN/MAX), every edge
    operator."""
    fam = families.get(rec.family)
    kinds: list[tuple[str, ...]] = [(k,) for k in rec.join_kinds] or [()]
    aggs = fam.maximal_aggregate_sets(rec.aggregates) if rec.aggregates else [frozenset()]
    return [Covers.make(rec.family, join_kinds=k, branches=rec.branches, agg_side=rec.agg_side,
                        aggregates=a, edges=rec.edges, variant=rec.variant, premises=rec.premises)
            for k, a in itertools.product(kinds, aggs)]


def coverage_problems(rule: dict[str, Any]) -> list[str]:
    """Why the rule admits something no certificate covers (empty: it does not)."""
    certs = rule.get("certificates") or []
    if not certs:
        return ["has no certificate"]
    out: list[str] = []
    covers: list[Covers] = []
    proved = {t for c in certs if c.get("status") == "verified" and (t := _template(c)) is not None}
    for i, c in enumerate(certs):
        cov, why = certificate_covers(c)
        if why:
            out.append(f"certificate #{i}: {why}")
        if cov is None or c.get("status") != "verified":
            continue
        t = _template(c)
        missing = _missing_parts(cov, t, proved) if t is not None else []
        if missing:
            out.append(f"certificate #{i}: {t} proves one part of {cov.describe()}; the rule lacks "
                       f"{', '.join(missing)}")
            continue
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


def covered_rule(family: str, certificates: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    """A rule admitting exactly what ``certificates`` cover: ``admits`` the maximal covers
    records of the verified ones, the fields listed for reading their hull (``kw`` goes to
    :func:`superop.rules_out.catalog.make_rule`: ``rule_id``, ``description``, ...)."""
    recs = [Covers.from_json(c["covers"]) for c in certificates
            if c.get("status") == "verified" and c.get("covers")]
    if not recs:
        raise ValueError(f"no verified certificate with a covers record for a {family} rule")
    admits = maximal(recs)
    hull = [sorted({o for a in admits for o in a.edges[i]}) for i in range(len(admits[0].edges))]
    return make_rule(family, branches=admits[0].branches,
                     join_kinds=sorted({k for a in admits for k in a.join_kinds}),
                     agg_sides=sorted({a.agg_side for a in admits if a.agg_side}) or None, edges=hull,
                     aggregates=sorted({x for a in admits for x in a.aggregates}), admits=admits,
                     certificates=certificates, **kw)
