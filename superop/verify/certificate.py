"""Certificates: one self-contained JSON record per verified item, and re-checking.

Two kinds, both carrying everything a re-check needs (``inputs``, hashed into
``inputs_sha256``), what they cover (``covers``) and the program they are about
(``program_sha256``; template certificates also the program itself):

* **bounded** (``method: bounded``) — ``check_equivalence`` of one sub-query (SQL + schema)
  and one program, for input tables of at most K rows. ``program_source`` says whose
  program it is: ``runtime-template`` (what ``build_program`` returns for the sub-query:
  what the runtime runs) or ``given`` (any other program, e.g. the synthesizer's).
  ``emitted_sql`` says how the SQL the runtime emits for the pattern is covered:
  ``checked_by: bounded`` (lowered and checked plan vs plan) or ``differential-tests``.
* **inductive** (``method: inductive``) — the unbounded proof of a template program for a
  symbolic instance (:mod:`superop.verify.template_proofs`), with its obligations.

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

from .. import __version__
from ..dsl import Program
from ..dsl.identity import program_sha256, sha256_of
from ..families.coverage import certificate_covers, runtime_program
from ..families.instances import find, program_of
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


def _structural_bounded(cert: dict, inputs: dict) -> tuple[bool, str]:
    prog = Program.from_json(inputs["program"])
    h = program_sha256(prog)
    if cert.get("program_sha256") != h:
        return False, "program_sha256 is not the hash of the program checked"
    if cert.get("program_source") == RUNTIME:
        if inputs.get("replaces") != "match":
            return False, "a runtime-template certificate must check the program in place of the match"
        now = program_sha256(runtime_program(inputs["sql"], inputs["schema"], str(inputs.get("form") or "")))
        if now != h:
            return False, "the runtime now builds a different program for this pattern (templates changed)"
    return True, ""


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
    return True, ""
