"""The symbolic instances the template proofs are about, read from the family registry
(each family declares its own: ``Family.proof_instances()``, built with
``superop.families.kit.symbolic``), and the program the runtime builds for one: the
instance's SQL lowered by ``superop.ir.lower``, recognized by the registry's matching
path (``superop.families.first_match``) and built by the family's template
(``superop.families.build_program``).

Pure glue: no Z3 (the runtime's trust check recomputes a certificate's program hash)."""
from __future__ import annotations

import json
from typing import Optional

from ..dsl import Program
from ..ir import Node, lower
from .kit.family import ProofInstance
from .kit.records import Match
from .matching import build_program, first_match
from .registry import REGISTRY, get


def all_instances() -> list[ProofInstance]:
    """Every family's symbolic instances, in registry order."""
    return [i for fam in REGISTRY for i in fam.proof_instances()]


def find(name: str) -> ProofInstance:
    """The instance called ``name`` (``"DJ/left"``, ``"MJ/full/agg-left/min/residual"``)."""
    fam = name.split("/", 1)[0]
    try:
        return get(fam).proof_instance(name)
    except KeyError:
        raise ValueError(f"no symbolic instance {name!r}") from None


def find_by(family: str, join_kind: Optional[str] = None, agg_left: bool = True, branches: int = 2,
            func: str = "min", part: str = "") -> ProofInstance:
    """The instance of ``family`` for a join kind / aggregate side / function / branch
    count (``part="residual"``: the Min & Join part with a join residual)."""
    name = get(family).proof_instance_name(join_kind=join_kind, agg_left=agg_left, branches=branches,
                                           func=func)
    return find(name + (f"/{part}" if part else ""))


# (instance SQL, schema) -> (opaque reasons, plan). An instance's SQL is fixed, so its
# lowering (sqlglot qualification: most of program_of's cost, paid by every trust check of
# every SuperOpSession) runs once per process. Plans are immutable (frozen, interned); the
# match and the template's program are not kept, so a changed template is still seen.
_LOWERED: dict[tuple[str, str], tuple[list[str], Node]] = {}


def _lowered(inst: ProofInstance) -> tuple[list[str], Node]:
    key = (inst.sql, json.dumps(inst.schema, sort_keys=True))
    if key not in _LOWERED:
        low = lower(inst.sql, inst.schema)
        _LOWERED[key] = (list(low.opaque_reasons), low.plan)
    return _LOWERED[key]


def match_of(inst: ProofInstance) -> Match:
    """The instance's match: what the registry recognizes at the top of its plan."""
    reasons, plan = _lowered(inst)
    if reasons:
        raise ValueError(f"instance {inst.name} does not lower: {reasons}")
    m = first_match(plan)
    if m is None or m.family != inst.family:
        raise ValueError(f"instance {inst.name} is not a {inst.family} match")
    return m


def form_of(inst: ProofInstance) -> str:
    """The template form an instance is about: its covers' variant when that names one of
    the family's forms (Min & Join's ``group-limit``; self-exists' ``ne/grouped`` through
    ``Family.variant_form``); "" otherwise (a neighbour self-join's
    variant is its rank offsets, not a form)."""
    fam = get(inst.family)
    form = fam.variant_form(inst.covers.variant) if inst.covers.variant else ""
    return form if form in fam.forms else ""


def program_of(inst: ProofInstance) -> Program:
    """The program the family's template builds for the instance (what the runtime runs
    for every query the instance stands for)."""
    m = match_of(inst)
    # an instance of a template's alternative form proves that form's program
    return get(m.family).program_form(m, build_program(m), form_of(inst))
