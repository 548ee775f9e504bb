"""Certificates: one self-contained JSON record per verified item, and re-checking.

A certificate carries everything needed to re-check it — the sub-plan SQL + schema + the
program JSON + K (bounded), or the template id + parameters (inductive) — and the sha256
of those inputs, so :func:`recheck_certificate` needs nothing else. It fits the rule
catalog's certificate entries (``status``, ``method``, ``produced_by`` required, extra
fields allowed; see ``superop/rules_out/catalog.schema.json``).

Fields: status, method (bounded | inductive), K (None for inductive), produced_by,
checked_at, z3_version, seconds, claim (what was proven, in words), assumptions,
pattern (shape string, bounded), inputs, inputs_sha256, and for inductive proofs the
obligations with their status.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
from typing import Optional

from .result import VERIFIED, Result

BOUNDED_ASSUMPTIONS = [
    "input tables of at most K rows (every row present or absent, every value nullable)",
    "integers are unbounded, doubles are exact reals (no overflow, no rounding, no NaN or infinities)",
    "division by zero is NULL (Spark non-ANSI); ANSI errors are outside the model",
    "bag semantics: outputs compared by multiplicity of NULL-safe equal rows",
    "row emits see running values when the program is streaming, final values when buffering",
]


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_of(obj) -> str:
    return "sha256:" + hashlib.sha256(canonical(obj).encode("utf-8")).hexdigest()


def _produced_by() -> str:
    from .. import __version__
    return f"superop.verify {__version__}"


def _z3_version() -> str:
    import z3
    return z3.get_version_string()


def bounded_certificate(sql: str, schema: dict, program, result: Result,
                        timeout_ms: int = 20000) -> dict:
    """Certificate for ``check_equivalence`` of ``sql`` (over ``schema``) and ``program``."""
    from ..ir import lower, shape
    inputs = {"kind": "bounded-equivalence", "sql": sql, "schema": schema,
              "program": program.to_json(), "K": result.K, "timeout_ms": timeout_ms}
    try:
        pattern = shape(lower(sql, schema).plan)
    except Exception:  # the certificate is still valid without a pattern string
        pattern = None
    cert = {
        "status": result.status, "method": "bounded", "K": result.K,
        "produced_by": _produced_by(), "checked_at": _now(), "z3_version": _z3_version(),
        "seconds": round(result.seconds, 4), "pattern": pattern,
        "claim": (f"the {program.memory} program outputs the same bag as the SQL sub-plan on every "
                  f"input table of at most {result.K} rows"),
        "assumptions": BOUNDED_ASSUMPTIONS,
        "inputs": inputs, "inputs_sha256": sha256_of(inputs),
    }
    st = _streamability(sql, schema)
    if st is not None:
        cert["streamability"] = st
    if result.status != VERIFIED:
        cert["reason"] = result.reason
    return cert


def _streamability(sql: str, schema: dict) -> Optional[dict]:
    """Algorithms 1-3 on the sub-plan when it is one of the Fig. 6 trees (else None)."""
    try:
        from ..ir import lower
        from .streamability import check_streamability, find_match
        plan = lower(sql, schema).plan
        if find_match(plan) is None:
            return None
        return check_streamability(plan).to_json()
    except Exception:  # streamability is an extra; the equivalence claim stands alone
        return None


def inductive_certificate(result: Result, params: dict, timeout_ms: int = 20000) -> dict:
    """Certificate for :func:`superop.verify.inductive.prove_template` with ``params``."""
    inputs = {"kind": "template-proof", "template": result.details.get("template"),
              "params": dict(params), "timeout_ms": timeout_ms}
    return {
        "status": result.status, "method": "inductive", "K": None,
        "produced_by": _produced_by(), "checked_at": _now(), "z3_version": _z3_version(),
        "seconds": round(result.seconds, 4),
        "claim": result.details.get("covers"),
        "assumptions": result.details.get("assumptions"),
        "obligations": [{"name": o["name"], "text": o["text"], "status": o["status"]}
                        for o in result.details.get("obligations", [])],
        "inputs": inputs, "inputs_sha256": sha256_of(inputs),
    }


def prove_and_certify(family: str, timeout_ms: int = 20000, **params) -> dict:
    from .inductive import prove_template
    p = dict(family=family, **params)
    r = prove_template(timeout_ms=timeout_ms, **p)
    return inductive_certificate(r, p, timeout_ms)


def check_and_certify(sql: str, schema: dict, program, K: int = 4, timeout_ms: int = 20000) -> dict:
    from .check import check_sql
    r = check_sql(sql, schema, program, K=K, timeout_ms=timeout_ms)
    return bounded_certificate(sql, schema, program, r, timeout_ms)


def recheck_detail(cert: dict) -> tuple[bool, str]:
    """(holds, why). A certificate holds iff it records ``verified``, its inputs hash to
    ``inputs_sha256``, and re-running the check on those inputs gives ``verified`` again."""
    if not isinstance(cert, dict):
        return False, "not a certificate object"
    if cert.get("status") != VERIFIED:
        return False, f"records status {cert.get('status')!r}, not verified"
    inputs = cert.get("inputs")
    if not isinstance(inputs, dict):
        return False, "carries no inputs to re-check (not produced by superop.verify)"
    if sha256_of(inputs) != cert.get("inputs_sha256"):
        return False, "inputs do not match inputs_sha256 (tampered)"
    kind = inputs.get("kind")
    try:
        if kind == "bounded-equivalence":
            from ..synth.dsl import Program
            from .check import check_sql
            prog = Program.from_json(inputs["program"])
            r = check_sql(inputs["sql"], inputs["schema"], prog, K=int(inputs["K"]),
                          timeout_ms=int(inputs.get("timeout_ms", 20000)))
        elif kind == "template-proof":
            from .inductive import prove_template
            r = prove_template(timeout_ms=int(inputs.get("timeout_ms", 20000)), **inputs["params"])
            if r.details.get("template") != inputs.get("template"):
                return False, "template id does not match its parameters"
        else:
            return False, f"unknown certificate kind {kind!r}"
    except Exception as e:  # a malformed certificate does not hold; never crash the re-check
        return False, f"cannot re-check: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    if r.status != VERIFIED:
        return False, f"re-check gives {r.status}: {r.reason}"
    if kind == "bounded-equivalence" and cert.get("streamability", {}).get("ok"):
        st = _streamability(inputs["sql"], inputs["schema"])
        if not (st and st.get("ok")):
            return False, "the recorded streamability check no longer holds"
    return True, f"re-checked ({cert.get('method')}, {r.seconds:.2f}s)"


def recheck_certificate(cert: dict) -> bool:
    return recheck_detail(cert)[0]
