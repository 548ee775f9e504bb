"""Certifying with Z3: check a sub-query against the program the runtime builds (bounded)
or prove a template instance (unbounded), record the result as a certificate
(:mod:`superop.verify.certificate` has the format and the z3-free structural check), and
re-check a certificate by re-running it on its inputs (memoized per process).
"""
from __future__ import annotations

import functools
import threading
from dataclasses import replace
from typing import Any, Callable, Optional, TypeVar

import sqlglot
import z3
from sqlglot import exp

from .. import families
from ..dsl import Program
from ..dsl.identity import program_sha256, sha256_of
from ..families.coverage import covers_of, match_of, runtime_program
from ..families.identity import Instance, instance_of_sql
from ..families.instances import find, find_by, form_of
from ..ir import lower, shape
from ..ir.dialect import DIALECT
from ..ir.keys import KEYS_ENTRY
from ..ir.parameters import is_parameter_arithmetic
from .certificate import (BOUNDED_ASSUMPTIONS, GIVEN, MOMENT_ASSUMPTION, PARAMETER_ARITHMETIC_ASSUMPTION,
                          RUNTIME, TIE_ASSUMPTION, now,
                          produced_by, structural_check)
from .check import check_rewrite, check_sql
from .emitted import check_emitted
from .emitted_claim import BOUNDED, claim_of
from .result import UNSUPPORTED, VERIFIED, Result
from .streamability import check_streamability, find_match
from .template_proofs import prove_instance


# Z3's Python API works in one global context: checks from two threads (a session's
# background first sight and a caller's own check) must not interleave in it
Z3_LOCK = threading.RLock()
_F = TypeVar("_F", bound=Callable[..., Any])


def _serialized(fn: _F) -> _F:
    @functools.wraps(fn)
    def locked(*args: Any, **kw: Any) -> Any:
        with Z3_LOCK:
            return fn(*args, **kw)
    return locked  # type: ignore[return-value]


def _z3_version() -> str:
    return z3.get_version_string()


# ---------------------------------------------------------------------------
# bounded
# ---------------------------------------------------------------------------
def bounded_certificate(sql: str, schema: dict, program, result: Result, timeout_ms: int = 20000, *,
                        program_source: str = GIVEN, emitted: Optional[dict] = None, form: str = "",
                        output_types: Optional[list] = None, input_types: Optional[dict] = None) -> dict:
    """Certificate for ``check_equivalence`` of ``sql`` (over ``schema``) and ``program``."""
    inputs = {"kind": "bounded-equivalence", "sql": sql, "schema": schema,
              "program": program.to_json(), "K": result.K, "timeout_ms": timeout_ms,
              "ansi": True, "emit_outputs": "guarded",
              # runtime-template: the program replaces the query's match, as the runtime does;
              # given: the program replaces the whole query
              "replaces": "match" if program_source == RUNTIME else "query"}
    if form:     # the family's alternative form (its covers' variant): what the runtime runs in it
        inputs["form"] = form
    if program_source == RUNTIME:
        # the column types the emitted SQL is compiled with (the runtime compiles an
        # instance this certificate covers with them) and the emitted SQL's claim
        inputs["output_types"] = list(output_types) if output_types is not None else None
        inputs["input_types"] = dict(input_types) if input_types is not None else None
        inputs["emitted_sql"] = claim_of(emitted or {})
    try:
        pattern = shape(lower(sql, schema).plan)
    except Exception:  # the certificate is still valid without a pattern string
        pattern = None
    try:
        cov = covers_of(match_of(sql, schema))
        fam = families.get(cov.family)
        covers = (replace(cov, variant=fam.form_variant(cov.variant, form)) if form else cov).to_json()
    except Exception:
        covers = None
    cert = {
        "status": result.status, "method": "bounded", "K": result.K,
        "produced_by": produced_by(), "checked_at": now(), "z3_version": _z3_version(),
        "seconds": round(result.seconds, 4), "pattern": pattern, "covers": covers,
        "program_source": program_source, "program_sha256": program_sha256(program),
        "claim": (f"the {program.memory} program "
                  f"({'the one the runtime builds' if program_source == RUNTIME else 'given'}) "
                  f"has the same outcome as the SQL sub-plan on every input table of at most {result.K} rows"),
        "assumptions": BOUNDED_ASSUMPTIONS + _key_assumptions(schema) + ([TIE_ASSUMPTION] if any(
            a.func in ("max_by", "min_by") for a in program.accumulators) else []) + ([MOMENT_ASSUMPTION] if any(
                a.func in ("stddev_samp", "var_samp") for a in program.accumulators) else [])
                       + ([PARAMETER_ARITHMETIC_ASSUMPTION] if _parameter_arithmetic(sql) else []),
        "inputs": inputs, "inputs_sha256": sha256_of(inputs),
    }
    if covers and covers.get("premises"):
        cert["premises"] = covers["premises"]
    if emitted is not None:
        cert["emitted_sql"] = emitted
    if program_source == RUNTIME:
        cert["instance"] = Instance(sql, schema, form).key
    st = _streamability(sql, schema)
    if st is not None:
        cert["streamability"] = st
    if result.status != VERIFIED:
        cert["reason"] = result.reason
    return cert


def _parameter_arithmetic(sql: str) -> bool:
    """Does ``sql`` compute integer arithmetic of parameters alone (a premise of its proof)?"""
    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except sqlglot.errors.ParseError:
        return False
    return any(is_parameter_arithmetic(e) for e in tree.find_all(exp.Add, exp.Sub, exp.Mul, exp.Neg))


def _key_assumptions(schema: dict) -> list[str]:
    """The declared keys the check assumed (the schema's ``$keys``, superop.ir.keys)."""
    decl = schema.get(KEYS_ENTRY) if isinstance(schema, dict) else None
    if not decl:
        return []
    return ["declared keys hold on the input tables (vouched for by the user, not checked): "
            + "; ".join(f"{t}: {d}" for t, d in sorted(decl.items()))]


def _streamability(sql: str, schema: dict) -> Optional[dict]:
    """Algorithms 1-3 on the sub-plan when it is one of the Fig. 6 trees (else None)."""
    try:
        plan = lower(sql, schema).plan
        if find_match(plan) is None:
            return None
        return check_streamability(plan).to_json()
    except Exception:  # streamability is an extra; the equivalence claim stands alone
        return None


@_serialized
def check_and_certify(sql: str, schema: dict, program=None, K: int = 4, timeout_ms: int = 20000, *,
                      form: str = "", output_types: Optional[list] = None,
                      input_types: Optional[dict] = None) -> dict:
    """Certify the instance of ``sql``'s match. Default (``program`` None): the program the
    runtime builds for it, checked on the match ALONE — the query's top-most match as its
    canonical instance (:mod:`superop.families.identity`), whatever context ``sql`` has
    around it — and the SQL the runtime emits for it (:mod:`superop.verify.emitted`),
    compiled with ``output_types`` / ``input_types`` (Spark's types of the match's output
    and of its source's columns, when the caller knows them: the runtime compiles an
    instance this certificate covers with exactly these). ``form``: the family's
    alternative form (e.g. Min & Join's ``group-limit``) — its program and its emitted
    SQL; the certificate covers the instance in that form only. A ``program`` given is
    checked against the whole query (a certificate no catalog accepts)."""
    if program is not None:
        r = _check(sql, schema, program, K, timeout_ms, "query")
        return _remember(bounded_certificate(sql, schema, program, r, timeout_ms, program_source=GIVEN))
    inst = instance_of_sql(sql, schema, form)
    sql, schema = inst.sql, inst.schema
    program = runtime_program(sql, schema, form)
    r = _check(sql, schema, program, K, timeout_ms, "match")
    em = check_emitted(sql, schema, K=K, timeout_ms=timeout_ms, form=form, output_types=output_types,
                       input_types=input_types)
    if r.status == VERIFIED and em.get("checked_by") == BOUNDED and em.get("status") != VERIFIED:
        r = Result(em.get("status", "unknown"), K=r.K, seconds=r.seconds,
                   reason=f"the SQL the runtime emits is {em.get('status')}: {em.get('reason', '')}")
    return _remember(bounded_certificate(sql, schema, program, r, timeout_ms, program_source=RUNTIME, emitted=em,
                                         form=form, output_types=output_types, input_types=input_types))


def _check(sql: str, schema: dict, program, K: int, timeout_ms: int, replaces: str) -> Result:
    if replaces == "query":
        return check_sql(sql, schema, program, K=K, timeout_ms=timeout_ms)
    low = lower(sql, schema)
    if not low.fully_lowered:
        return Result(UNSUPPORTED, K=K, reason="; ".join(low.opaque_reasons))
    return check_rewrite(low.plan, program, K=K, timeout_ms=timeout_ms)


# ---------------------------------------------------------------------------
# inductive
# ---------------------------------------------------------------------------
# the bound of the emitted-SQL check of a symbolic instance: its predicates, projections and
# residuals uninterpreted, the compiled SQL is checked for EVERY instantiation of them on
# every one-row table (guards, NULL typing, errors of partial cells, the prefilter, the
# emission); two rows cost ~10x more and time out under load. Each instance certificate
# checks its own emitted SQL at its own bound (K >= 3) besides.
SYMBOLIC_EMITTED_K = 1
SYMBOLIC_EMITTED_TIMEOUT_MS = 120000


def symbolic_emitted(instance, timeout_ms: int = SYMBOLIC_EMITTED_TIMEOUT_MS) -> dict:
    """The ``emitted_sql`` record of a template proof: the SQL the runtime emits for its
    symbolic instance, checked against the instance's query (bounded, the functions
    uninterpreted)."""
    return check_emitted(instance.sql, instance.schema, K=SYMBOLIC_EMITTED_K,
                         timeout_ms=max(timeout_ms, SYMBOLIC_EMITTED_TIMEOUT_MS),
                         form=form_of(instance), functions=dict(instance.functions))


def inductive_certificate(result: Result, instance, timeout_ms: int = 20000,
                          emitted: Optional[dict] = None) -> dict:
    """Certificate for :func:`superop.verify.template_proofs.prove_instance` of
    ``instance`` (a family's ``ProofInstance``)."""
    det = result.details
    inputs = {"kind": "template-proof", "template": instance.name,
              "instance_sql": instance.sql, "functions": dict(instance.functions),
              "program_sha256": det.get("program_sha256"), "emit_outputs": det.get("emit_outputs"),
              "timeout_ms": timeout_ms, "emitted_sql": claim_of(emitted or {})}
    cert = {
        "status": result.status, "method": "inductive", "K": None,
        "produced_by": produced_by(), "checked_at": now(), "z3_version": _z3_version(),
        "seconds": round(result.seconds, 4),
        "template": instance.name, "covers": instance.covers.to_json(),
        "program": det.get("program"), "program_sha256": det.get("program_sha256"),
        "program_source": RUNTIME,
        "claim": det.get("claim"),
        "assumptions": det.get("assumptions"),
        "obligations": [{"name": o["name"], "text": o["text"], "status": o["status"]}
                        for o in det.get("obligations", [])],
        "inputs": inputs, "inputs_sha256": sha256_of(inputs),
    }
    if emitted is not None:
        cert["emitted_sql"] = emitted
    if result.status != VERIFIED:
        cert["reason"] = result.reason
    return cert


_EMITTED: dict = {}      # instance name, program hash -> the emitted-SQL record (a pure function of both)


@_serialized
def prove_and_certify(instance, timeout_ms: int = 20000, **params) -> dict:
    """Prove a template instance and certify the result, with the check of the SQL the
    runtime emits for it. ``instance``: a family's ``ProofInstance``, an instance name
    (``"DJ/left"``), or a family name with :func:`superop.verify.instances.find_by`'s
    parameters (``"MJ", join_kind="full"``)."""
    if isinstance(instance, str):
        instance = find(instance) if "/" in instance else find_by(instance, **params)
    r = prove_instance(instance, timeout_ms=timeout_ms)
    em = None
    if r.status == VERIFIED:
        key = (instance.name, instance.sql, r.details.get("program_sha256"))
        if key not in _EMITTED:
            _EMITTED[key] = symbolic_emitted(instance, timeout_ms)
        em = _EMITTED[key]
        if em.get("checked_by") == BOUNDED and em.get("status") != VERIFIED:
            r = Result(em.get("status", "unknown"), method="inductive", K=None, seconds=r.seconds,
                       reason=f"the SQL the runtime emits is {em.get('status')}: {em.get('reason', '')}",
                       details=r.details)
    return _remember(inductive_certificate(r, instance, timeout_ms, em))


_RERUN: dict = {}   # _rerun_key -> (holds, why): re-running a check is a pure function of its inputs


def _rerun_key(cert: dict) -> str:
    return sha256_of([cert.get("inputs_sha256"), cert.get("streamability")])


def _remember(cert: dict) -> dict:
    """A verified certificate just produced in this process is what re-running its inputs
    in this process gives: remember it (the structural checks still run every time)."""
    if cert.get("status") == VERIFIED and cert.get("inputs_sha256") == sha256_of(cert.get("inputs")):
        _RERUN[_rerun_key(cert)] = (True, f"holds (checked in this process, {cert.get('method')})")
    return cert


@_serialized
def recheck_detail(cert: dict, require_runtime: bool = False) -> tuple[bool, str]:
    """(holds, why). A certificate holds iff its structure holds (:func:`structural_check`)
    and re-running the check on its inputs gives ``verified`` again (memoized per process
    by the inputs' hash: the same inputs re-checked by the same code give the same answer)."""
    ok, why = structural_check(cert, require_runtime)
    if not ok:
        return ok, why
    key = _rerun_key(cert)
    if key not in _RERUN:
        _RERUN[key] = _rerun(cert)
    return _RERUN[key]


def _rerun(cert: dict) -> tuple[bool, str]:
    inputs = cert["inputs"]
    kind = inputs["kind"]
    try:
        if kind == "bounded-equivalence":
            prog = Program.from_json(inputs["program"])
            r = _check(inputs["sql"], inputs["schema"], prog, int(inputs["K"]),
                       int(inputs.get("timeout_ms", 20000)), inputs.get("replaces", "query"))
        else:
            r = prove_instance(find(str(inputs["template"])), timeout_ms=int(inputs.get("timeout_ms", 20000)))
    except Exception as e:  # a malformed certificate does not hold; never crash the re-check
        return False, f"cannot re-check: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    if r.status != VERIFIED:
        return False, f"re-check gives {r.status}: {r.reason}"
    if kind == "bounded-equivalence" and cert.get("streamability", {}).get("ok"):
        st = _streamability(inputs["sql"], inputs["schema"])
        if not (st and st.get("ok")):
            return False, "the recorded streamability check no longer holds"
    why = _emitted_rerun(cert, inputs)
    if why:
        return False, why
    return True, f"re-checked ({cert.get('method')}, {r.seconds:.2f}s)"


def _emitted_rerun(cert: dict, inputs: dict) -> str:
    """Re-derive the emitted-SQL verdict with Z3: a claim the check does not give again
    (another verdict, a differential claim where the encoder now models the SQL) fails."""
    claim = inputs.get("emitted_sql") or {}
    timeout = int(inputs.get("timeout_ms", 20000))
    if inputs["kind"] == "bounded-equivalence":
        if cert.get("program_source") != RUNTIME:
            return ""
        now = check_emitted(inputs["sql"], inputs["schema"], K=int(inputs["K"]), timeout_ms=timeout,
                            form=str(inputs.get("form") or ""), output_types=inputs.get("output_types"),
                            input_types=inputs.get("input_types"))
    else:
        now = symbolic_emitted(find(str(inputs["template"])), timeout)
    if claim_of(now) != claim:
        if now.get("checked_by") == BOUNDED and now.get("status") != VERIFIED:
            return f"the emitted SQL re-checks {now.get('status')}: {now.get('reason', '')}"
        return (f"its emitted_sql claim ({claim.get('checked_by')}, {claim.get('status') or claim.get('reason')}) "
                f"is not what the check gives now ({now.get('checked_by')}, {now.get('status') or now.get('reason')})")
    return ""


def recheck_certificate(cert: dict, require_runtime: bool = False) -> bool:
    return recheck_detail(cert, require_runtime)[0]
