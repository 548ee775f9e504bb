"""Certifying with Z3: check a sub-query against the program the runtime builds (bounded)
or prove a template instance (unbounded), record the result as a certificate
(:mod:`superop.verify.certificate` has the format and the z3-free structural check), and
re-check a certificate by re-running it on its inputs (memoized per process).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import z3

from ..dsl import Program
from ..dsl.identity import program_sha256, sha256_of
from ..families.coverage import covers_of, match_of, runtime_program
from ..families.instances import find, find_by
from ..ir import lower, shape
from ..ir.keys import KEYS_ENTRY
from .certificate import (BOUNDED_ASSUMPTIONS, GIVEN, MOMENT_ASSUMPTION, RUNTIME, TIE_ASSUMPTION, now,
                          produced_by, structural_check)
from .check import check_rewrite, check_sql
from .emitted import check_emitted
from .result import UNSUPPORTED, VERIFIED, Result
from .streamability import check_streamability, find_match
from .template_proofs import prove_instance


def _z3_version() -> str:
    return z3.get_version_string()


# ---------------------------------------------------------------------------
# bounded
# ---------------------------------------------------------------------------
def bounded_certificate(sql: str, schema: dict, program, result: Result, timeout_ms: int = 20000, *,
                        program_source: str = GIVEN, emitted: Optional[dict] = None, form: str = "") -> dict:
    """Certificate for ``check_equivalence`` of ``sql`` (over ``schema``) and ``program``."""
    inputs = {"kind": "bounded-equivalence", "sql": sql, "schema": schema,
              "program": program.to_json(), "K": result.K, "timeout_ms": timeout_ms,
              "ansi": True, "emit_outputs": "guarded",
              # runtime-template: the program replaces the query's match, as the runtime does;
              # given: the program replaces the whole query
              "replaces": "match" if program_source == RUNTIME else "query"}
    if form:     # the family's alternative form (its covers' variant): what the runtime runs in it
        inputs["form"] = form
    try:
        pattern = shape(lower(sql, schema).plan)
    except Exception:  # the certificate is still valid without a pattern string
        pattern = None
    try:
        cov = covers_of(match_of(sql, schema))
        covers = (replace(cov, variant=form) if form else cov).to_json()
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
                a.func in ("stddev_samp", "var_samp") for a in program.accumulators) else []),
        "inputs": inputs, "inputs_sha256": sha256_of(inputs),
    }
    if covers and covers.get("premises"):
        cert["premises"] = covers["premises"]
    if emitted is not None:
        cert["emitted_sql"] = emitted
    st = _streamability(sql, schema)
    if st is not None:
        cert["streamability"] = st
    if result.status != VERIFIED:
        cert["reason"] = result.reason
    return cert


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


def check_and_certify(sql: str, schema: dict, program=None, K: int = 4, timeout_ms: int = 20000, *,
                      emitted: bool = False, form: str = "") -> dict:
    """Check ``program`` against the whole query ``sql`` and certify the result. Default: the
    program the runtime builds for the query's match, checked as the runtime applies it
    (the match replaced by the program, everything around it as written).
    ``emitted``: also cover the SQL the runtime emits (see :mod:`superop.verify.emitted`).
    ``form``: the family's alternative form (e.g. Min & Join's ``group-limit``) — its
    program and its emitted SQL; the certificate covers the instance in that form only."""
    source = GIVEN
    if program is None:
        program, source = runtime_program(sql, schema, form), RUNTIME
    r = _check(sql, schema, program, K, timeout_ms, "match" if source == RUNTIME else "query")
    em = None
    if emitted and r.status == VERIFIED:
        em = check_emitted(sql, schema, K=K, timeout_ms=timeout_ms, form=form)
        if em.get("checked_by") == "bounded" and em.get("status") != VERIFIED:
            r = Result(em.get("status", "unknown"), K=r.K, seconds=r.seconds,
                       reason=f"the SQL the runtime emits is {em.get('status')}: {em.get('reason', '')}")
    return _remember(bounded_certificate(sql, schema, program, r, timeout_ms, program_source=source, emitted=em,
                                         form=form))


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
def inductive_certificate(result: Result, instance, timeout_ms: int = 20000) -> dict:
    """Certificate for :func:`superop.verify.template_proofs.prove_instance` of
    ``instance`` (a family's ``ProofInstance``)."""
    det = result.details
    inputs = {"kind": "template-proof", "template": instance.name,
              "instance_sql": instance.sql, "functions": dict(instance.functions),
              "program_sha256": det.get("program_sha256"), "emit_outputs": det.get("emit_outputs"),
              "timeout_ms": timeout_ms}
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
    if result.status != VERIFIED:
        cert["reason"] = result.reason
    return cert


def prove_and_certify(instance, timeout_ms: int = 20000, **params) -> dict:
    """Prove a template instance and certify the result. ``instance``: a family's
    ``ProofInstance``, an instance name (``"DJ/left"``), or a family name with
    :func:`superop.verify.instances.find_by`'s parameters (``"MJ", join_kind="full"``)."""
    if isinstance(instance, str):
        instance = find(instance) if "/" in instance else find_by(instance, **params)
    r = prove_instance(instance, timeout_ms=timeout_ms)
    return _remember(inductive_certificate(r, instance, timeout_ms))


_RERUN: dict = {}   # _rerun_key -> (holds, why): re-running a check is a pure function of its inputs


def _rerun_key(cert: dict) -> str:
    return sha256_of([cert.get("inputs_sha256"), cert.get("streamability"), cert.get("emitted_sql")])


def _remember(cert: dict) -> dict:
    """A verified certificate just produced in this process is what re-running its inputs
    in this process gives: remember it (the structural checks still run every time)."""
    if cert.get("status") == VERIFIED and cert.get("inputs_sha256") == sha256_of(cert.get("inputs")):
        _RERUN[_rerun_key(cert)] = (True, f"holds (checked in this process, {cert.get('method')})")
    return cert


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
    if kind == "bounded-equivalence":
        if cert.get("streamability", {}).get("ok"):
            st = _streamability(inputs["sql"], inputs["schema"])
            if not (st and st.get("ok")):
                return False, "the recorded streamability check no longer holds"
        em = cert.get("emitted_sql") or {}
        if em.get("checked_by") == "bounded":
            now = check_emitted(inputs["sql"], inputs["schema"], K=int(inputs["K"]),
                                timeout_ms=int(inputs.get("timeout_ms", 20000)), form=str(inputs.get("form") or ""))
            if now.get("sql") != em.get("sql"):
                return False, "the runtime now emits different SQL for this pattern"
            if now.get("status") != VERIFIED:
                return False, f"the emitted SQL re-checks {now.get('status')}: {now.get('reason', '')}"
    return True, f"re-checked ({cert.get('method')}, {r.seconds:.2f}s)"
