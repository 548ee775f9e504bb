"""Rules from the families' template proofs alone (no mined patterns): for every family in
the registry and every template instance it supports (branch counts, join kinds, aggregate
sides, folds — ``Family.proof_params``), the proof is run by ``superop.verify`` (Z3, ~0.2 s
each) and the rule admits exactly what the verified proofs cover (``Family.proof_covers``).

``per="family"``: one rule per family and branch count (the benchmarks' built-in catalog);
``per="skeleton"``: one rule per core skeleton, named like mined rules (``Family.rule_id``).
"""
from __future__ import annotations

from typing import Any, Optional

from .. import families
from ..families import Covers
from .catalog import make_rule


def _maximal(records: list[Covers]) -> list[Covers]:
    from .generalize import maximal
    return maximal(records)


def builtin_rules(per: str = "family", timeout_ms: int = 20000, max_union_branches: int = 3) -> list[dict]:
    from ..verify.certificate import prove_and_certify   # z3: only here, never in the runtime
    if per not in ("family", "skeleton"):
        raise ValueError(f"per must be 'family' or 'skeleton', not {per!r}")
    groups: dict[tuple, list[dict]] = {}
    for fam in families.REGISTRY:
        top = fam.max_branches if fam.max_branches is not None else max_union_branches
        for n in range(fam.min_branches, top + 1):
            for kind in fam.join_kinds or (None,):
                for side in fam.sides:
                    sk = (fam.name, n, kind, side.value if side is not None else None)
                    key = (fam.name, n) if per == "family" else sk
                    for p in fam.proof_params(sk, fam.aggregates):
                        c = prove_and_certify(fam.name, timeout_ms=timeout_ms, **p)
                        if c["status"] == "verified":
                            groups.setdefault(key, []).append(dict(c, covers=fam.proof_covers(p).to_json()))
    rules = []
    for key, certs in groups.items():
        fam = families.get(key[0])
        admits = _maximal([Covers.from_json(c["covers"]) for c in certs])
        kinds = sorted({k for a in admits for k in a.join_kinds})
        sides = sorted({a.agg_side for a in admits if a.agg_side})
        hull = [sorted({o for a in admits for o in a.edges[i]}) for i in range(len(admits[0].edges))]
        rid: Optional[str] = fam.rule_id(key) if per == "skeleton" else None
        extra: dict[str, Any] = {"description": fam.describe(key, 0).split(";")[0]} if per == "skeleton" else {}
        rules.append(make_rule(fam.name, rule_id=rid, branches=key[1], join_kinds=kinds,
                               agg_sides=sides or None, edges=hull,
                               aggregates=sorted({x for a in admits for x in a.aggregates}),
                               admits=admits, certificates=certs, **extra))
    return sorted(rules, key=lambda r: r["id"])
