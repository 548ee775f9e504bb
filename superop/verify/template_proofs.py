"""Unbounded proofs of the template programs the runtime runs, for every table size.

The program side of a proof is the program the family's template
(``superop.families.build_program``) returns for a symbolic instance the family declares
(``Family.proof_instances()``: SQL whose edge predicates and projections are
uninterpreted functions; matched by ``superop.families.first_match``, see
:mod:`superop.families.instances`). The induction over the input rows is
:mod:`superop.verify.proof_engine`'s; what the plan outputs per key, and so the
obligations that end a proof, depend on the family's shape
(:mod:`superop.verify.proof_shapes`). ``verified`` only if every obligation is proved;
``unknown`` (timeout) never counts. Results are kept per process.
"""
from __future__ import annotations

import copy
import time
from typing import Optional

from ..dsl import Program
from ..dsl.identity import program_sha256, sha256_of
from ..families.instances import find_by, match_of, program_of
from ..families.kit.family import ProofInstance
from .exprs import encoding
from .keyed_filter import LEMMAS
from .program_encoder import GUARDED
from .proof_engine import Obligation, ProofSetupError, Unmodelled, prove_all, unmodelled
from .proof_shapes import models_of, shape_of
from .result import REFUTED, UNKNOWN, UNSUPPORTED, VERIFIED, Result, Unsupported
from .values import FALSE, V, fresh, int_width, kind_of_type


def parameters(inst: ProofInstance) -> dict[str, V]:
    """The literals the instance's proof quantifies over, each a symbolic non-NULL value of
    its type (``ProofInstance.parameters``)."""
    out = {}
    for text, typ in inst.parameters.items():
        kind = kind_of_type(typ)
        out[text] = V(fresh(kind, f"param!{text}"), FALSE, kind, FALSE, int_width(typ))
    return out


def obligations(inst: ProofInstance, program: Optional[Program] = None,
                emit_outputs: str = GUARDED) -> tuple[list[Obligation], Program]:
    m = match_of(inst)
    prog = program if program is not None else program_of(inst)
    with encoding(ansi=True, functions=inst.functions, parameters=parameters(inst)):
        return shape_of(m.family)(inst, m, prog, emit_outputs).obligations(), prog


# (instance name, instance SQL, functions, program hash, emit_outputs, timeout) -> Result: a
# proof is a pure function of these (and of this code), so one process proves each once
# (the nightly job, the built-in catalog and the tests share the work). Unknown is not kept.
_PROVED: dict[str, Result] = {}


def prove_instance(inst: ProofInstance, timeout_ms: int = 20000, *, program: Optional[Program] = None,
                   emit_outputs: str = GUARDED) -> Result:
    """Prove the template program of ``inst`` (default: what the family's template builds
    for it now) for every table size. ``verified`` only if every obligation is proved."""
    t0 = time.perf_counter()
    prog = program
    try:
        prog = program if program is not None else program_of(inst)
        why = unmodelled(prog, models_of(shape_of(inst.family), prog))
        if why:     # no claim, either way, about what the proof does not model
            return Result(UNSUPPORTED, method="inductive", K=None, seconds=time.perf_counter() - t0,
                          reason=why, details=_details(inst, prog, [], emit_outputs))
        key = sha256_of([inst.name, inst.sql, inst.functions, inst.parameters, program_sha256(prog), emit_outputs,
                         timeout_ms])
        if key in _PROVED:
            return copy.deepcopy(_PROVED[key])
        obs, prog = obligations(inst, prog, emit_outputs)
    except Unmodelled as e:
        return Result(UNSUPPORTED, method="inductive", K=None, seconds=time.perf_counter() - t0,
                      reason=str(e), details=_details(inst, prog, [], emit_outputs))
    except (ProofSetupError, Unsupported, ValueError) as e:
        return Result(REFUTED if isinstance(e, ProofSetupError) else UNKNOWN, method="inductive", K=None,
                      seconds=time.perf_counter() - t0, reason=f"cannot set up the proof: {e}",
                      details=_details(inst, prog, [], emit_outputs))
    except Exception as e:  # the template refuses its own instance (TemplateError) ...
        return Result(REFUTED, method="inductive", K=None, seconds=time.perf_counter() - t0,
                      reason=f"the template builder refuses the instance: {type(e).__name__}: {e}",
                      details=_details(inst, prog, [], emit_outputs))
    prove_all(obs, timeout_ms)
    statuses = {o.status for o in obs}
    status = VERIFIED if statuses == {"proved"} else (REFUTED if "failed" in statuses else UNKNOWN)
    failed = [o.name for o in obs if o.status != "proved"]
    reason = (f"all {len(obs)} obligations proved for every table size" if status == VERIFIED
              else f"obligations not proved: {', '.join(failed)}")
    det = _details(inst, prog, obs, emit_outputs)
    # a premise whose canonical form has a lemma of its own (superop.verify.keyed_filter):
    # the claim holds only with it
    for text in inst.covers.premises:
        if text in LEMMAS:
            lem = LEMMAS[text]()
            det.setdefault("lemmas", []).append({"premise": text, "status": lem.status, "method": lem.method,
                                                 "K": lem.K, "reason": lem.reason, **lem.details})
            if lem.status != VERIFIED and status == VERIFIED:
                status, reason = lem.status, f"the lemma of premise {text!r} is {lem.status}: {lem.reason}"
            elif status == VERIFIED:
                reason += f"; the lemma of premise {text!r}: {lem.reason} (bounded, K={lem.K})"
    det["program_sha256"] = program_sha256(prog)
    r = Result(status, method="inductive", K=None, seconds=time.perf_counter() - t0, reason=reason,
               details=det)
    if status != UNKNOWN:
        _PROVED[key] = copy.deepcopy(r)
    return r


def _details(inst: ProofInstance, prog, obs, emit_outputs) -> dict:
    return {"template": inst.name, "instance_sql": inst.sql, "functions": dict(inst.functions),
            "obligations": [o.to_json() for o in obs], "assumptions": list(inst.assumptions),
            "covers": inst.covers.to_json(), "emit_outputs": emit_outputs,
            "program": prog.to_json() if prog is not None else None, "claim": claim(inst)}


def prove_template(family: str, join_kind: Optional[str] = None, agg_left: bool = True,
                   branches: int = 2, func: str = "min", timeout_ms: int = 20000, part: str = "",
                   **kw) -> Result:
    """:func:`prove_instance` of the instance with these parameters
    (:func:`superop.families.instances.find_by`)."""
    return prove_instance(find_by(family, join_kind, agg_left, branches, func, part), timeout_ms, **kw)


def claim(inst: ProofInstance) -> str:
    return (f"For every input table (any size, NULLs, duplicates) and every deterministic edge predicate and "
            f"projection (uninterpreted, possibly raising), the program the {inst.family} template builds for "
            f"the symbolic instance {inst.name} has the same outcome as the instance's query: the same bag of "
            f"rows, and no error where the query raises none. It stands for every instance its covers record "
            f"describes ({inst.covers.describe()}) under the assumptions listed.")
