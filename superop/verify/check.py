"""Bounded equivalence: ``check_equivalence(sub_plan, program, K)``.

Asks Z3 for an input table of at most K rows (each row present or not, every value
nullable) on which the outcomes differ: the program raises an error (ANSI) where the
sub-plan does not, or neither raises and the output bags differ.
unsat -> ``verified`` (bounded by K), sat -> ``refuted`` with the concrete table and
both outcomes, anything else -> ``unknown``. :func:`check_outcomes` is the same decision
for any two relations built over one symbolic table (e.g. plan vs plan).
"""
from __future__ import annotations

import time
from collections import Counter
from typing import Callable, Optional, Sequence

import z3

from .. import families
from ..dsl import BUFFERING, SET_FUNCS, STREAMING, Program
from ..dsl.interpreter import run_program_rows
from ..dsl.plan_eval import eval_plan
from ..families.coverage import match_of_plan
from ..ir import lower
from ..ir.nodes import Node, Scan, walk
from .bags import concrete_rel, outcomes_differ, raises
from .exprs import encoding
from .neighbours import declared_key_constraints, requires_constraints
from .plan_encoder import PlanEncoder
from .program_encoder import GUARDED, ProgramEncoder
from .relations import Rel, Table
from .result import REFUTED, UNKNOWN, UNSUPPORTED, VERIFIED, Counterexample, Result, Unsupported
from .solving import RestartingSolver
from .values import EPOCH, lt, not_distinct

DEFAULT_K = 4
DEFAULT_TIMEOUT_MS = 20000
# counterexamples re-asked for when stddev_samp/var_samp's uninterpreted function invented one
OPAQUE_RETRIES = 2

# what a pair of relations built over one symbolic table is: (original, candidate)
Build = Callable[[Table], tuple[Rel, Rel]]


def base_table(sub_plan: Node) -> Scan:
    scans = {}
    for n in walk(sub_plan):
        if isinstance(n, Scan):
            scans.setdefault(n.table, n)
    if len(scans) != 1:
        raise Unsupported(f"the sub-plan must read exactly one base table, reads {sorted(scans)}")
    return next(iter(scans.values()))


def _nice_bounds(table: Table) -> list:
    """Constraints that make a counterexample readable and replayable on Spark
    (small ints, short lowercase strings). Only used AFTER a counterexample exists."""
    cs = []
    for _, vals in table.rows:
        for v in vals:
            if v.kind in ("int", "date"):
                cs += [v.v >= -20, v.v <= 20]
            elif v.kind == "real":
                cs += [v.v >= -20, v.v <= 20]
            elif v.kind == "str":
                cs += [z3.Length(v.v) <= 2,
                       z3.InRe(v.v, z3.Star(z3.Range("a", "e")))]
    return cs


def _key_le(a, b) -> z3.BoolRef:
    """Lexicographic a <= b over nullable key values, NULL first."""
    out = z3.BoolVal(True)
    for x, y in reversed(list(zip(a, b))):
        both = z3.And(z3.Not(x.null), z3.Not(y.null))
        less = z3.Or(z3.And(x.null, z3.Not(y.null)), z3.And(both, lt(x.v, y.v, x.kind)))
        out = z3.Or(less, z3.And(not_distinct(x, y), out))
    return out


def new_solver(timeout_ms: int) -> RestartingSolver:
    """A solver whose ``check`` restarts with new seeds in doubling slices of the budget
    (:mod:`superop.verify.solving`: Z3's time on one formula is heavy-tailed)."""
    return RestartingSolver(timeout_ms)


def _solver(table: Table, differ, timeout_ms: int, keys=()) -> RestartingSolver:
    s = new_solver(timeout_ms)
    s.add(differ)
    # Symmetry breaking. Sound because the original is order-free and the candidate
    # depends only on the relative order of rows WITHIN a partition (sort ties): every
    # table can be stably permuted so that (1) present rows come first and (2) present
    # rows are ordered by partition key, without changing either output.
    idx = [table.col_index(k) for k in keys]
    for i in range(1, table.K):
        (p0, v0), (p1, v1) = table.rows[i - 1], table.rows[i]
        s.add(z3.Implies(p1, p0))
        if idx:
            s.add(z3.Implies(p1, _key_le([v0[j] for j in idx], [v1[j] for j in idx])))
    return s


def check_outcomes(scan: Scan, build: Build, K: int = DEFAULT_K, timeout_ms: int = DEFAULT_TIMEOUT_MS,
                   *, keys: Sequence[str] = (), ansi: bool = True,
                   functions: Optional[dict] = None,
                   assume: Optional[Callable[[Table], Sequence[z3.BoolRef]]] = None,
                   confirm: Optional[Callable[[Counterexample], Optional[bool]]] = None) -> Result:
    """Bounded refinement of two relations built over ONE symbolic table of at most K rows
    (``build(table) -> (original, candidate)``): no table makes the candidate raise where
    the original does not, or return a different bag. Never raises for unmodelled input.
    ``assume(table)``: constraints every table considered satisfies (a program's
    preconditions); only tables satisfying them can refute — as do the scan's declared
    keys (:mod:`superop.ir.keys`, ``Scan.keys``).

    Nonlinear terms are first abstracted by uninterpreted functions (sound for
    ``verified``); a counterexample found under the abstraction is re-decided with the
    exact encoding before it is reported. An aggregate whose value stays uninterpreted
    in the exact encoding too (stddev_samp / var_samp, :mod:`superop.verify.folds`) makes
    a counterexample possibly invented by the function: it is reported only when
    ``confirm(counterexample)`` (the reference semantics run on its table) says the
    outcomes really differ; otherwise the result is ``unknown``."""
    t0 = time.perf_counter()
    elapsed_ms = lambda: (time.perf_counter() - t0) * 1000  # noqa: E731

    def encode(abstract: bool, exact_moments: bool = False):
        with encoding(ansi=ansi, abstract_nonlinear=abstract, functions=functions,
                      exact_moments=exact_moments) as enc:
            table = Table(scan.table, scan.columns, K)
            a, b = build(table)
            differ = z3.And(outcomes_differ(a, b), *table.domain())
            if assume is not None:
                differ = z3.And(differ, *assume(table))
            if scan.keys:      # the table's declared keys hold (the user vouches for them)
                differ = z3.And(differ, *declared_key_constraints(scan.keys, table.rows, table.col_index))
            opaque[0] = opaque[0] or enc.opaque_used
            differ = z3.And(differ, *enc.side)    # the definitions of stddev_samp / var_samp
            return table, a, b, differ, enc.nonlinear_used
    opaque = [False]
    try:
        table, a, b, differ, abstracted = encode(True)
        if a.rows and b.rows and len(a.rows[0][1]) != len(b.rows[0][1]):
            return Result(UNSUPPORTED, K=K, seconds=time.perf_counter() - t0,
                          reason=f"arity differs: original {len(a.rows[0][1])} columns, "
                                 f"candidate {len(b.rows[0][1])}")
    except Unsupported as why:
        return Result(UNSUPPORTED, K=K, seconds=time.perf_counter() - t0, reason=str(why))
    s = _solver(table, differ, timeout_ms, keys)
    r = s.check()
    if r == z3.sat and opaque[0] and confirm is not None:
        # the abstract model's table, if the reference semantics confirm it, is a real
        # counterexample: no need for the (nonlinear) definitions of stddev_samp/var_samp
        first = _nice_cex(s, table, scan, a, b, timeout_ms)
        try:
            real = confirm(first)
        except Exception:
            real = None
        if real:
            return Result(REFUTED, K=K, seconds=time.perf_counter() - t0, counterexample=first,
                          reason=_refuted_why(first) + _REDECIDED)
    if r != z3.unsat and abstracted:
        # the abstraction may have invented a difference: decide with exact arithmetic
        # (with stddev_samp/var_samp: their definitions, other nonlinear terms still
        # abstracted — the reference semantics re-decide that counterexample below)
        table, a, b, differ, _ = encode(opaque[0], exact_moments=opaque[0])
        s = _solver(table, differ, timeout_ms - elapsed_ms(), keys)
        r = s.check() if timeout_ms - elapsed_ms() > 0 else z3.unknown
    if r == z3.unsat:
        return Result(VERIFIED, K=K, seconds=time.perf_counter() - t0,
                      reason=f"no input table of at most {K} rows distinguishes the outcomes")
    if r == z3.unknown:
        why = s.reason_unknown() if timeout_ms - elapsed_ms() > 0 else "timeout"
        return Result(UNKNOWN, K=K, seconds=time.perf_counter() - t0, reason=f"solver: {why}")
    cex = _nice_cex(s, table, scan, a, b, timeout_ms)
    if opaque[0]:
        confirmed = _confirmed(cex, s, table, scan, a, b, confirm, timeout_ms - elapsed_ms())
        if isinstance(confirmed, str):
            return Result(UNKNOWN, K=K, seconds=time.perf_counter() - t0, reason=confirmed)
        cex = confirmed
    why = _refuted_why(cex) + (_REDECIDED if opaque[0] else "")
    return Result(REFUTED, K=K, seconds=time.perf_counter() - t0, reason=why, counterexample=cex)


def _confirmed(cex: Counterexample, s: RestartingSolver, table: Table, scan: Scan, a: Rel, b: Rel,
               confirm: Optional[Callable[[Counterexample], Optional[bool]]],
               remaining_ms: float) -> Counterexample | str:
    """A counterexample found with stddev_samp / var_samp uninterpreted may be the
    function's invention: keep it only if the reference semantics (``confirm``) confirm
    it; else block that table and ask again (a few times, within ``remaining_ms``). The
    confirmed counterexample, or why the difference stays undecided."""
    t0 = time.perf_counter()
    left = lambda: remaining_ms - (time.perf_counter() - t0) * 1000  # noqa: E731
    blocked: list = []
    while True:
        try:
            real = confirm(cex) if confirm is not None else None
        except Exception:                     # the reference cannot run it: not decided
            real = None
        if real:
            return cex
        if real is None or len(blocked) >= OPAQUE_RETRIES or left() <= 0:
            return ("Z3 found a difference with stddev_samp/var_samp left uninterpreted; " + (
                f"on {len(blocked) + 1} tables the reference semantics give equal outcomes (the "
                "function invented the difference)" if real is False
                else "it was not re-decided concretely"))
        blocked.append(z3.Not(z3.And(*_fix_rows(table, cex.rows))))
        for bounds in (_nice_bounds(table), []):    # readable values if any table has them
            again = new_solver(max(1000, int(left())))
            again.add(*s.assertions(), *blocked, *bounds)
            if again.check() == z3.sat:
                break
        else:
            return ("Z3 found differences with stddev_samp/var_samp left uninterpreted; the "
                    "reference semantics give equal outcomes on each table tried")
        cex = counterexample_from_model(again.model(), table, scan, a, b)


_REDECIDED = " (re-decided with the reference semantics: stddev_samp/var_samp are uninterpreted in Z3)"


def _refuted_why(cex: Counterexample) -> str:
    return ("the program raises an error where the original does not" if cex.program_error
            else "the outputs differ on the counterexample table")


def _nice_cex(s: RestartingSolver, table: Table, scan: Scan, a: Rel, b: Rel, timeout_ms: int) -> Counterexample:
    """The counterexample of a ``sat`` solver ``s``; a small, readable one when one exists
    (a fresh solver: the tactic-based solver is not incremental)."""
    model = s.model()
    nice = new_solver(max(1000, min(10000, timeout_ms)))
    nice.add(*s.assertions())
    nice.add(*_nice_bounds(table))
    if nice.check() == z3.sat:
        model = nice.model()
    return counterexample_from_model(model, table, scan, a, b)


def check_equivalence(sub_plan: Node, program: Program, K: int = DEFAULT_K,
                      timeout_ms: int = DEFAULT_TIMEOUT_MS, *, ansi: bool = True,
                      emit_outputs: str = GUARDED, functions: Optional[dict] = None) -> Result:
    """Bounded equivalence of an IR sub-plan over ONE base table and a DSL program
    reading that table's rows (errors as outcomes: see :mod:`superop.verify.bags`).
    ``emit_outputs``: when the program's emit outputs are evaluated (``guarded``: only
    where the emit's guard holds, the DSL's semantics; ``eager``: always). Only tables that
    satisfy the program's preconditions (``Program.requires``,
    :func:`superop.verify.neighbours.requires_constraints`) are considered: the match that
    builds such a program establishes them for the source it reads."""
    try:
        scan = base_table(sub_plan)
    except Unsupported as why:
        return Result(UNSUPPORTED, K=K, reason=str(why))

    def build(table: Table):
        return (PlanEncoder(table).encode(sub_plan),
                ProgramEncoder(program, table, emit_outputs=emit_outputs).encode())
    assume = (lambda table: requires_constraints(program, table.rows, table.col_index)) if program.requires else None

    def confirm(cex: Counterexample) -> Optional[bool]:
        return reference_outcomes_differ(sub_plan, program, scan, cex)
    return check_outcomes(scan, build, K, timeout_ms, keys=program.keys, ansi=ansi, functions=functions,
                          assume=assume, confirm=None if functions else confirm)


def _rounded_bag(rows) -> Counter:
    return Counter(tuple(round(x, 9) if isinstance(x, float) else x for x in r) for r in rows)


def reference_outcomes_differ(sub_plan: Node, program: Program, scan: Scan, cex: Counterexample) -> Optional[bool]:
    """Do the reference evaluators (``superop.synth.plan_eval`` for the plan, the DSL
    interpreter for the program) give different outcomes on the counterexample's table?
    None when either cannot evaluate it or the counterexample is about an error (floats
    compared to 9 decimals: the reference
    reads the rows in one order, Spark's DOUBLE rounding depends on it)."""
    if cex.plan_error or cex.program_error:   # the reference evaluators do not model errors
        return None
    try:
        orig = eval_plan(sub_plan, tables={scan.table: cex.rows})
        prog = run_program_rows(program, cex.columns, cex.rows)
    except Exception:
        return None
    return _rounded_bag(orig) != _rounded_bag(prog)


def check_rewrite(plan: Node, program: Program, K: int = DEFAULT_K, timeout_ms: int = DEFAULT_TIMEOUT_MS,
                  *, diamond=None, ansi: bool = True, emit_outputs: str = GUARDED) -> Result:
    """The query ``plan`` against the same query with its super-operator match (``diamond``,
    a ``superop.families.Match`` in ``plan``; default: the one the runtime matches) replaced
    by ``program`` reading the match's shared source — what the runtime does. Errors as
    outcomes."""
    try:
        d = diamond if diamond is not None else match_of_plan(plan)
        scan = base_table(plan)
        host, root = rewritten_host(plan, d)
    except (Unsupported, ValueError) as why:
        return Result(UNSUPPORTED, K=K, reason=str(why))
    direct = d.source is scan or (isinstance(d.source, Scan) and d.source.table == scan.table)

    def build(table: Table):
        original = PlanEncoder(table).encode(plan)
        src = PlanEncoder(table).encode(d.source)
        prog = ProgramEncoder(program, list(d.source.names), emit_outputs=emit_outputs).encode(rows=src)
        if len(d.root.fields) != len(program.output):
            raise Unsupported(f"the program outputs {len(program.output)} columns, the match {len(d.root.fields)}")
        return original, PlanEncoder(table, seeds={id(root): prog}).encode(host)
    return check_outcomes(scan, build, K, timeout_ms, keys=program.keys if direct else (), ansi=ansi)


def rewritten_host(plan: Node, d) -> tuple[Node, Node]:
    """(the plan the runtime replaces the match ``d`` in, the match's root in it): the
    canonical form the matching path finds it in (``superop.families.regroup(plan)``:
    sub-queries sunk, shared aggregates regrouped; a fresh object per call, so the root is
    found by structure — exactly one node), else ``plan`` itself. The original side of a
    check is ``plan`` as written, so the canonical rewrite is checked together with the
    program (a match that is a node of neither would leave the query unchanged: a vacuous
    check)."""
    for host in (plan, families.regroup(plan)):
        same = [n for n in walk(host) if n is d.root]
        same = same or [n for n in walk(host) if n == d.root]
        if len(same) == 1:
            return host, same[0]
    raise Unsupported("the match is not one node of the plan or of its canonical form")


def check_plans_outcomes(plan_a: Node, plan_b: Node, K: int = DEFAULT_K,
                         timeout_ms: int = DEFAULT_TIMEOUT_MS, *, ansi: bool = True) -> Result:
    """Bounded refinement of two IR plans over the same ONE base table (errors as outcomes:
    ``plan_b`` may not raise where ``plan_a`` does not). Multi-table plan-vs-plan checks
    without error outcomes: ``superop.verify.plans.check_plans_equivalent``."""
    try:
        scan = base_table(plan_a)
        other = base_table(plan_b)
    except Unsupported as why:
        return Result(UNSUPPORTED, K=K, reason=str(why))
    if (other.table, other.columns) != (scan.table, scan.columns):
        return Result(UNSUPPORTED, K=K, reason=f"the plans read different tables ({scan.table}, {other.table})")

    def build(table: Table):
        enc = PlanEncoder(table)
        return enc.encode(plan_a), enc.encode(plan_b)
    return check_outcomes(scan, build, K, timeout_ms, ansi=ansi)


def counterexample_from_model(model, table: Table, scan: Scan, plan_rel: Rel, prog_rel: Rel) -> Counterexample:
    rows = concrete_rel(model, table.rel())
    return Counterexample(table=scan.table, columns=[c for c, _ in scan.columns],
                          types=[t for _, t in scan.columns], rows=rows,
                          plan_output=concrete_rel(model, plan_rel),
                          program_output=concrete_rel(model, prog_rel),
                          plan_error=raises(model, plan_rel), program_error=raises(model, prog_rel))


def check_sql(sql: str, schema: dict, program: Program, K: int = DEFAULT_K,
              timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Result:
    """Lower ``sql`` and check it; an SQL that does not fully lower is ``unsupported``."""
    low = lower(sql, schema)
    if not low.fully_lowered:
        return Result(UNSUPPORTED, K=K, reason="; ".join(low.opaque_reasons))
    return check_equivalence(low.plan, program, K=K, timeout_ms=timeout_ms)


def check_memory_class(sub_plan: Node, program: Program, K: int = DEFAULT_K,
                       timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Optional[str]:
    """The memory class a program actually achieves (checked, not declared):
    ``streaming`` if it is equivalent when row emits see running values and it keeps only
    constant state (no set-valued COUNT(DISTINCT); its sorted fold is constant state
    and proved like any other), else ``buffering`` if equivalent with final
    values, else None (not equivalent / not decided)."""
    from dataclasses import replace
    constant_state = not any(a.func in SET_FUNCS for a in program.accumulators)
    if constant_state:
        r = check_equivalence(sub_plan, replace(program, memory=STREAMING), K, timeout_ms)
        if r.status == VERIFIED:
            return STREAMING
    r = check_equivalence(sub_plan, replace(program, memory=BUFFERING), K, timeout_ms)
    return BUFFERING if r.status == VERIFIED else None


def _fix_rows(table: Table, rows) -> list:
    """Constraints pinning the symbolic table to concrete rows (None = NULL)."""
    import datetime as _dt
    cs = []
    for i, (p, vals) in enumerate(table.rows):
        if i >= len(rows):
            cs.append(z3.Not(p))
            continue
        cs.append(p)
        for v, x in zip(vals, rows[i]):
            if x is None:
                cs.append(v.null)
                continue
            cs.append(z3.Not(v.null))
            if v.kind == "date":
                x = (x - EPOCH).days if isinstance(x, _dt.date) else x
                cs.append(v.v == x)
            elif v.kind == "real":
                cs.append(v.v == z3.RealVal(str(x)))
            elif v.kind == "str":
                cs.append(v.v == z3.StringVal(x))
            elif v.kind == "bool":
                cs.append(v.v == z3.BoolVal(bool(x)))
            else:
                cs.append(v.v == int(x))
    return cs


class RaisesError(Exception):
    """The encoding says that evaluating the relation on these rows raises (ANSI)."""


def evaluate(sub_plan: Node, rows, program: Optional[Program] = None, *, ansi: bool = True,
             emit_outputs: str = GUARDED) -> list[tuple]:
    """The encodings run forwards: the output the Z3 encoding of ``sub_plan`` (or of
    ``program`` over the sub-plan's base table) gives for concrete input ``rows``; raises
    :class:`RaisesError` when the encoding says the evaluation raises. Used to test the
    encodings against Spark and the reference interpreter."""
    scan = base_table(sub_plan)
    with encoding(ansi=ansi):
        table = Table(scan.table, scan.columns, max(1, len(rows)))
        rel = (ProgramEncoder(program, table, emit_outputs=emit_outputs).encode() if program is not None
               else PlanEncoder(table).encode(sub_plan))
    s = z3.Solver()
    s.add(*_fix_rows(table, rows))
    if s.check() != z3.sat:  # pragma: no cover - pinned inputs are always satisfiable
        raise RuntimeError("cannot evaluate the encoding on the given rows")
    if raises(s.model(), rel):
        raise RaisesError("the encoding raises on these rows")
    return concrete_rel(s.model(), rel)
