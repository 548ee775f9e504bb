"""Rules from the families' template proofs alone (no mined patterns): every symbolic
instance a family declares (``Family.proof_instances``) is proved by ``superop.verify``
(Z3, each proved once per process), grouped by the rule skeleton its covers record belongs
to (``Family.skeleton``), and each rule admits exactly what its verified proofs cover (a
record proved in parts only when every part is).

``per="family"``: one rule per family and branch count (the benchmarks' built-in catalog);
``per="skeleton"``: one rule per core skeleton, named like mined rules (``Family.rule_id``).
``max_branches``: instances of more branches are left out (their proofs grow with the
branch count; the nightly job proves what its patterns need).
"""
from __future__ import annotations

from typing import Any, Optional

from .. import families
from ..verify.certify import prove_and_certify
from .coverage import covered_rule


def template_certificates(timeout_ms: int = 20000, max_branches: int = 3) -> dict[str, dict]:
    """Every declared symbolic instance's certificate (proved by ``superop.verify``), by name."""
    return {i.name: prove_and_certify(i, timeout_ms=timeout_ms)
            for fam in families.REGISTRY for i in fam.proof_instances() if i.covers.branches <= max_branches}


def builtin_rules(per: str = "family", timeout_ms: int = 20000, max_branches: int = 3,
                  certificates: Optional[dict[str, dict]] = None) -> list[dict]:
    """The rules (module doc). ``certificates``: :func:`template_certificates` already made
    (by name; e.g. computed once and read back), else proved here."""
    if per not in ("family", "skeleton"):
        raise ValueError(f"per must be 'family' or 'skeleton', not {per!r}")
    made = certificates if certificates is not None else template_certificates(timeout_ms, max_branches)
    groups: dict[tuple, list[dict]] = {}
    for fam in families.REGISTRY:
        insts = [i for i in fam.proof_instances() if i.covers.branches <= max_branches]
        certs = {i.name: made[i.name] for i in insts if i.name in made}
        ok = {n for n, c in certs.items() if c["status"] == "verified"}
        for i in insts:
            # a record counts only with all its parts
            if not all(j.name in ok for j in insts if j.covers == i.covers):
                continue
            sk = fam.skeleton(i.covers)
            key = (fam.name, i.covers.branches) if per == "family" else sk
            groups.setdefault(key, []).append(certs[i.name])
    rules = []
    for key, certs_of in groups.items():
        fam = families.get(key[0])
        rid: Optional[str] = fam.rule_id(key) if per == "skeleton" else None
        extra: dict[str, Any] = {"description": fam.describe(key, 0).split(";")[0]} if per == "skeleton" else {}
        rules.append(covered_rule(fam.name, certs_of, rule_id=rid, **extra))
    return sorted(rules, key=lambda r: r["id"])
