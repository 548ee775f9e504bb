"""Rules from the families' template proofs alone (no mined patterns): for every family in
the registry and every template instance it supports (branch counts, join kinds, aggregate
sides, folds — ``Family.proofs_for``), the proof of each symbolic instance is run by
``superop.verify`` (Z3, 0.4-3 s each; each proved once per process) and the rule admits
exactly what the verified proofs cover (each instance's ``covers``; a record proved in
parts only when every part is).

``per="family"``: one rule per family and branch count (the benchmarks' built-in catalog);
``per="skeleton"``: one rule per core skeleton, named like mined rules (``Family.rule_id``).
"""
from __future__ import annotations

from typing import Any, Optional

from .. import families
from ..verify.certify import prove_and_certify
from .coverage import covered_rule


def builtin_rules(per: str = "family", timeout_ms: int = 20000, max_union_branches: int = 3) -> list[dict]:
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
                    insts = fam.proofs_for(sk, fam.aggregates)
                    certs = [prove_and_certify(i, timeout_ms=timeout_ms) for i in insts]
                    ok = {i.name for i, c in zip(insts, certs) if c["status"] == "verified"}
                    for i, c in zip(insts, certs):     # a record counts only with all its parts
                        if all(j.name in ok for j in insts if j.covers == i.covers):
                            groups.setdefault(key, []).append(c)
    rules = []
    for key, certs in groups.items():
        fam = families.get(key[0])
        rid: Optional[str] = fam.rule_id(key) if per == "skeleton" else None
        extra: dict[str, Any] = {"description": fam.describe(key, 0).split(";")[0]} if per == "skeleton" else {}
        rules.append(covered_rule(fam.name, certs, rule_id=rid, **extra))
    return sorted(rules, key=lambda r: r["id"])
