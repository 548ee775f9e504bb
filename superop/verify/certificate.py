"""Certificates: one self-contained JSON record per verified item, and re-checking.

Two kinds, both carrying everything a re-check needs (``inputs``, hashed into
``inputs_sha256``), what they cover (``covers``) and the program they are about
(``program_sha256``; template certificates also the program itself):

* **bounded** (``method: bounded``) — ``check_equivalence`` of one sub-query (SQL + schema)
  and one program, for input tables of at most K rows. ``program_source`` says whose
  program it is: ``runtime-template`` (what ``build_program`` returns for the sub-query:
  what the runtime runs) or ``given`` (any other program, e.g. the synthesizer's). A
  runtime-template certificate is about ONE instance: its SQL is the match alone,
  canonical (:mod:`superop.families.identity`; no context around it), ``instance`` its
  key — what the runtime looks up before it applies a match.
* **inductive** (``method: inductive``) — the unbounded proof of a template program for a
  symbolic instance (:mod:`superop.verify.template_proofs`), with its obligations.

Both carry ``emitted_sql``, how the SQL the runtime emits for the instance is covered —
``checked_by: bounded`` (lowered and checked plan vs plan, ``status``) or
``differential-tests`` (``reason``) — and its claim (the SQL and the verdict) is part of
the hashed inputs, re-derived on every check: it cannot be dropped, swapped or
downgraded. The bound too: ``K`` shown equals ``inputs.K``, which is at least
:func:`superop.families.coverage.min_bound` (3; configurable upward only).

``covers`` (the shape the rule catalog uses to admit exactly what is covered)::

    {"family": "DJ", "join_kinds": ["left"], "branches": 2, "agg_side": null|"left"|"right",
     "aggregates": ["sum", ...], "edges": [["Select","Project","Rename"], ...]}

a :class:`superop.families.Covers` record (``edges`` in the family's abstract-edge order): for a
bounded certificate the instance its SQL matches (``Family.point``), for a template proof
its symbolic instance's record (``Family.proof_instances``).

Re-checking. :func:`structural_check` needs no Z3 (the runtime uses it on load): the
inputs hash, the program hash, that the program is what the CURRENT template builder
returns for the certificate's query / instance (for runtime-template and inductive
certificates), and that ``covers`` is what the query / instance covers.
:func:`recheck_detail` adds the Z3 re-run. A certificate that records anything but
``verified`` never holds.
"""
from __future__ import annotations

import datetime as _dt
from typing import Optional

from .. import __version__
from ..dsl import Program
from ..dsl.identity import program_sha256, sha256_of
from ..families.coverage import certificate_covers, covers_of, match_of, min_bound, runtime_program
from ..families.identity import Instance, instance_of_sql, is_canonical
from ..families.instances import find, find_by, form_of, program_of
from ..ir import lower, shape
from ..ir.keys import KEYS_ENTRY
from .check import check_rewrite, check_sql
from .emitted import BOUNDED, DIFFERENTIAL, NOT_MODELLED, check_emitted, claim_of, lowers_fully
from .result import UNSUPPORTED, VERIFIED, Result
from .streamability import check_streamability, find_match
from .template_proofs import prove_instance

BOUNDED_ASSUMPTIONS = [
    "input tables of at most K rows (every row present or absent, every value nullable)",
    "integers are mathematical integers with ANSI overflow checks by type width; doubles are exact "
    "reals (no rounding, no NaN or infinities)",
    "ANSI mode: division / remainder by zero, integer overflow and invalid casts raise; the program may "
    "not raise where the query does not, and returns the same bag where the query does not raise",
    "bag semantics: outputs compared by multiplicity of NULL-safe equal rows",
    "row emits see running values when the program is streaming, final values when buffering",
    "emit outputs are evaluated only where the emit's guard holds (the DSL's semantics)",
]
# added when the program folds max_by / min_by (superop.verify.folds.extremum_by)
TIE_ASSUMPTION = ("rows tied on a max_by/min_by ordering value: the same bag for EVERY order in which ties are "
                  "resolved, the query and the program reading the same order (Spark reads one order per "
                  "aggregate node): the program returns a result the query could have returned")
# added when the program folds stddev_samp / var_samp (superop.verify.folds)
MOMENT_ASSUMPTION = ("stddev_samp/var_samp: proved computed from the same (count, sum, sum of squares) of the "
                     "same non-NULL values on both sides; the statistic itself is an uninterpreted function of "
                     "them, and DOUBLE rounding (which depends on the order Spark reads rows, in the query as "
                     "in the program) is not modelled")
RUNTIME, GIVEN = "runtime-template", "given"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def produced_by() -> str:
    return f"superop.verify {__version__}"


def _z3_version() -> str:
    import z3
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
        from dataclasses import replace
        cov = covers_of(match_of(sql, schema))
        covers = (replace(cov, variant=form) if form else cov).to_json()
    except Exception:
        covers = None
    cert = {
        "status": result.status, "method": "bounded", "K": result.K,
        "produced_by": produced_by(), "checked_at": _now(), "z3_version": _z3_version(),
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
    if program_source == RUNTIME:
        cert["instance"] = Instance(sql, schema, form).key
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
        "produced_by": produced_by(), "checked_at": _now(), "z3_version": _z3_version(),
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


# ---------------------------------------------------------------------------
# re-checking
# ---------------------------------------------------------------------------
def structural_check(cert: dict, require_runtime: bool = False) -> tuple[bool, str]:
    """(holds so far, why) without Z3: status, inputs hash, program hash, the program is the
    one the current templates build (runtime-template / inductive), ``covers`` is what
    the inputs cover (:func:`certificate_covers`). ``require_runtime``: a certificate
    about any other program does not hold (a rule catalog's certificates must be about
    what the runtime runs)."""
    if not isinstance(cert, dict):
        return False, "not a certificate object"
    if cert.get("status") != VERIFIED:
        return False, f"records status {cert.get('status')!r}, not verified"
    inputs = cert.get("inputs")
    if not isinstance(inputs, dict):
        return False, "carries no inputs to re-check (not produced by superop.verify)"
    if sha256_of(inputs) != cert.get("inputs_sha256"):
        return False, "inputs do not match inputs_sha256 (tampered)"
    if cert.get("method") == "bounded" or inputs.get("kind") == "bounded-equivalence":
        why = _bound_problem(cert, inputs)
        if why:
            return False, why
    if require_runtime and cert.get("program_source") != RUNTIME:
        return False, "is about a program the runtime does not build (not a runtime-template certificate)"
    kind = inputs.get("kind")
    try:
        if kind == "bounded-equivalence":
            ok, why = _structural_bounded(cert, inputs)
        elif kind == "template-proof":
            ok, why = _structural_template(cert, inputs)
        else:
            return False, f"unknown certificate kind {kind!r}"
    except Exception as e:  # a malformed certificate does not hold; never crash the check
        return False, f"cannot re-check: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    if not ok:
        return ok, why
    if require_runtime or cert.get("covers") is not None:   # a catalog's certificates must say what they cover
        _, why = certificate_covers(cert)
        if why:
            return False, why
    return True, "structure holds"


def _bound_problem(cert: dict, inputs: dict) -> str:
    """Why the bound of a bounded certificate does not hold up ("" when it does): the
    shown K must be the K checked, and at least the minimum bound."""
    K = inputs.get("K")
    if not isinstance(K, int) or isinstance(K, bool):
        return "carries no integer bound inputs.K"
    if cert.get("K") != K:
        return f"shows K={cert.get('K')} but its inputs were checked at K={K}"
    if K < min_bound():
        return f"holds for tables of at most {K} rows, below the minimum bound {min_bound()}"
    return ""


def _structural_bounded(cert: dict, inputs: dict) -> tuple[bool, str]:
    prog = Program.from_json(inputs["program"])
    h = program_sha256(prog)
    if cert.get("program_sha256") != h:
        return False, "program_sha256 is not the hash of the program checked"
    if cert.get("program_source") == RUNTIME:
        if inputs.get("replaces") != "match":
            return False, "a runtime-template certificate must check the program in place of the match"
        form = str(inputs.get("form") or "")
        ok, why = is_canonical(inputs["sql"], inputs["schema"], form)
        if not ok:
            return False, why
        if cert.get("instance") != Instance(inputs["sql"], inputs["schema"], form).key:
            return False, "its instance key is not the key of the instance it checks"
        now = program_sha256(runtime_program(inputs["sql"], inputs["schema"], form))
        if now != h:
            return False, "the runtime now builds a different program for this pattern (templates changed)"
        why = _emitted_problem(cert, inputs, inputs["schema"])
        if why:
            return False, why
    return True, ""


def _emitted_problem(cert: dict, inputs: dict, schema: dict) -> str:
    """Why the certificate's claim about the SQL the runtime emits does not hold up without
    Z3 ("" when it does): the claim is in the hashed inputs, the displayed record agrees
    with it, a bounded verdict is ``verified``, and a SQL that lowers is left to
    differential tests only where the encoder does not model it. That the SQL is what the
    runtime emits now, and the verdict what the check gives, the re-check re-derives
    (:func:`_emitted_rerun`); the runtime compiles an instance a certificate covers with
    the column types the certificate records, so the SQL it runs is this SQL."""
    claim = inputs.get("emitted_sql")
    if not isinstance(claim, dict) or claim.get("checked_by") not in (BOUNDED, DIFFERENTIAL):
        return "carries no emitted_sql claim in its inputs (how the SQL the runtime emits is covered)"
    shown = cert.get("emitted_sql")
    if not isinstance(shown, dict) or claim_of(shown) != claim:
        return "its emitted_sql record differs from the claim in its inputs"
    if claim["checked_by"] == BOUNDED:
        if claim.get("status") != VERIFIED:
            return f"the SQL the runtime emits is {claim.get('status')}, not verified"
        return ""
    sql = claim.get("sql")
    lowers = bool(sql) and lowers_fully(sql, schema)[0]
    if lowers and not str(claim.get("reason") or "").startswith(NOT_MODELLED):
        return "its emitted SQL lowers but the certificate says it was left to differential tests"
    return ""


def _structural_template(cert: dict, inputs: dict) -> tuple[bool, str]:
    try:
        inst = find(str(inputs.get("template")))
    except ValueError as e:
        return False, str(e)
    if cert.get("template") != inst.name:
        return False, "template id does not match its inputs"
    if inputs.get("instance_sql") != inst.sql or inputs.get("functions") != inst.functions:
        return False, "the symbolic instance differs from this version's"
    h = program_sha256(program_of(inst))
    if cert.get("program_sha256") != h or inputs.get("program_sha256") != h:
        return False, "the program proved is not the program the template builds now"
    if cert.get("program") is None or program_sha256(Program.from_json(cert["program"])) != h:
        return False, "the certificate's program does not hash to program_sha256"
    why = _emitted_problem(cert, inputs, inst.schema)
    if why:
        return False, why
    return True, ""


_RERUN: dict = {}   # _rerun_key -> (holds, why): re-running a check is a pure function of its inputs


def _rerun_key(cert: dict) -> str:
    return sha256_of([cert.get("inputs_sha256"), cert.get("streamability")])


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
