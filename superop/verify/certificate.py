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
:func:`superop.verify.certify.recheck_detail` adds the Z3 re-run. A certificate that
records anything but ``verified`` never holds. This module imports no z3: certificates are
made and re-run in :mod:`superop.verify.certify`.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any

from .. import __version__
from ..dsl import Program
from ..dsl.identity import program_sha256, sha256_of
from ..families.coverage import certificate_covers, min_bound, runtime_program
from ..families.identity import Instance, is_canonical
from ..families.instances import find, program_of
from .emitted_claim import BOUNDED, DIFFERENTIAL, NOT_MODELLED, claim_of, lowers_fully
from .result import VERIFIED

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
# added when the instance computes integer arithmetic of parameters alone (superop.ir.parameters)
PARAMETER_ARITHMETIC_ASSUMPTION = ("integer arithmetic of the parameters alone (e.g. :p2_int + :p3_int) does not "
                                   "overflow its type: the runtime binds only literals for which it does not")
# added when the program folds stddev_samp / var_samp (superop.verify.folds)
MOMENT_ASSUMPTION = ("stddev_samp/var_samp: proved computed from the same (count, sum, sum of squares) of the "
                     "same non-NULL values on both sides; the statistic itself is an uninterpreted function of "
                     "them, and DOUBLE rounding (which depends on the order Spark reads rows, in the query as "
                     "in the program) is not modelled")
RUNTIME, GIVEN = "runtime-template", "given"


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def produced_by() -> str:
    return f"superop.verify {__version__}"


# ---------------------------------------------------------------------------
# re-checking
# ---------------------------------------------------------------------------
def structural_check(cert: dict, require_runtime: bool = False, rederive: bool = True) -> tuple[bool, str]:
    """(holds so far, why) without Z3: status, inputs hash, program hash, the program is the
    one the current templates build (runtime-template / inductive), ``covers`` is what
    the inputs cover (:func:`certificate_covers`). ``require_runtime``: a certificate
    about any other program does not hold (a rule catalog's certificates must be about
    what the runtime runs).
    ``rederive`` False: only what the certificate's own fields show (status, hashes, the
    bound, the emitted-SQL claim, the instance key of its inputs) — what a catalog load
    checks, in microseconds per certificate: a catalog signed by THIS build was re-derived
    by its signer with this code (``superop.rules_out.signing``: the signature binds the
    build), and an instance key that is not canonical is one the runtime never looks up."""
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
            ok, why = _structural_bounded(cert, inputs, rederive)
        elif kind == "template-proof":
            ok, why = _structural_template(cert, inputs) if rederive else _shown_template(cert, inputs)
        else:
            return False, f"unknown certificate kind {kind!r}"
    except Exception as e:  # a malformed certificate does not hold; never crash the check
        return False, f"cannot re-check: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    if not ok:
        return ok, why
    # a catalog's certificates must say what they cover
    if rederive and (require_runtime or cert.get("covers") is not None):
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


def _program_hash(program_json: Any, shown: Any) -> str:
    """program_sha256 of a program's JSON: the hash of the JSON itself when that is the hash
    shown (``Program.to_json`` is canonical: parsing and writing it back gives the same JSON),
    else of the parsed program."""
    h = sha256_of(program_json)
    return h if h == shown else program_sha256(Program.from_json(program_json))


def _structural_bounded(cert: dict, inputs: dict, rederive: bool = True) -> tuple[bool, str]:
    h = _program_hash(inputs["program"], cert.get("program_sha256"))
    if cert.get("program_sha256") != h:
        return False, "program_sha256 is not the hash of the program checked"
    if cert.get("program_source") == RUNTIME:
        if inputs.get("replaces") != "match":
            return False, "a runtime-template certificate must check the program in place of the match"
        form = str(inputs.get("form") or "")
        if rederive:
            ok, why = is_canonical(inputs["sql"], inputs["schema"], form)
            if not ok:
                return False, why
        if cert.get("instance") != Instance(inputs["sql"], inputs["schema"], form).key:
            return False, "its instance key is not the key of the instance it checks"
        if not rederive:
            why = _emitted_problem(cert, inputs, inputs["schema"], rederive)
            return (False, why) if why else (True, "")
        now = program_sha256(runtime_program(inputs["sql"], inputs["schema"], form))
        if now != h:
            return False, "the runtime now builds a different program for this pattern (templates changed)"
        why = _emitted_problem(cert, inputs, inputs["schema"])
        if why:
            return False, why
    return True, ""


def _emitted_problem(cert: dict, inputs: dict, schema: dict, rederive: bool = True) -> str:
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
    if not rederive:     # whether the SQL lowers is this build's to say: its signer said it
        return ""
    lowers = bool(sql) and lowers_fully(sql, schema)[0]
    if lowers and not str(claim.get("reason") or "").startswith(NOT_MODELLED):
        return "its emitted SQL lowers but the certificate says it was left to differential tests"
    return ""


def _shown_template(cert: dict, inputs: dict) -> tuple[bool, str]:
    """A template proof's own fields agree: its program hashes as recorded, its emitted-SQL
    claim holds up (what the symbolic instance is, this build's signer re-derived)."""
    h = inputs.get("program_sha256")
    if cert.get("program_sha256") != h or cert.get("program") is None \
            or _program_hash(cert["program"], h) != h:
        return False, "the certificate's program does not hash to program_sha256"
    why = _emitted_problem(cert, inputs, {}, rederive=False)
    return (False, why) if why else (True, "")


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
