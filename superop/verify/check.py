"""Bounded equivalence: ``check_equivalence(sub_plan, program, K)``.

Asks Z3 for an input table of at most K rows (each row present or not, every value
nullable) on which the sub-plan's output bag and the program's output bag differ.
unsat -> ``verified`` (bounded by K), sat -> ``refuted`` with the concrete table and
both outputs, anything else -> ``unknown``.
"""
from __future__ import annotations

import time
from typing import Optional

import z3

from ..ir.nodes import Node, Scan, walk
from ..synth.dsl import Program
from .encode import (PlanEncoder, ProgramEncoder, Table, _lt, bags_differ, concrete_rel,
                     not_distinct)
from .neighbours import requires_constraints
from .result import (REFUTED, UNKNOWN, UNSUPPORTED, VERIFIED, Counterexample, Result,
                     Unsupported)

DEFAULT_K = 4
DEFAULT_TIMEOUT_MS = 20000


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


def _encode(sub_plan: Node, program: Program, K: int, abstract: bool):
    from . import encode as enc
    enc.ABSTRACT_NONLINEAR[0] = abstract
    enc.NONLINEAR_USED[0] = False
    try:
        scan = base_table(sub_plan)
        table = Table(scan.table, scan.columns, K)
        plan_rel = PlanEncoder(table).encode(sub_plan)
        prog_rel = ProgramEncoder(table, program).encode()
        # only inputs that satisfy the program's preconditions (superop.verify.neighbours)
        differ = z3.And(bags_differ(plan_rel, prog_rel), *requires_constraints(program, table.rows, table.col_index))
        return scan, table, plan_rel, prog_rel, differ, enc.NONLINEAR_USED[0]
    finally:
        enc.ABSTRACT_NONLINEAR[0] = False


def _key_le(a, b) -> z3.BoolRef:
    """Lexicographic a <= b over nullable key values, NULL first."""
    out = z3.BoolVal(True)
    for x, y in reversed(list(zip(a, b))):
        both = z3.And(z3.Not(x.null), z3.Not(y.null))
        lt = z3.Or(z3.And(x.null, z3.Not(y.null)), z3.And(both, _lt(x.v, y.v, x.kind)))
        out = z3.Or(lt, z3.And(not_distinct(x, y), out))
    return out


def _new_solver(timeout_ms: int) -> z3.Solver:
    # Preprocessing before the SMT core (measured 2-5x faster on the Table 2 corpus at
    # K = 5): the encodings have many definitional equalities and unconstrained terms.
    s = z3.Then("simplify", "propagate-values", "solve-eqs", "elim-uncnstr", "smt").solver()
    s.set("timeout", max(1, int(timeout_ms)))
    return s


def _solver(table: Table, differ, timeout_ms: int, keys=()) -> z3.Solver:
    s = _new_solver(timeout_ms)
    s.add(differ)
    # Symmetry breaking. Sound because the plan is order-free and the program depends
    # only on the relative order of rows WITHIN a partition (sort ties): every table can
    # be stably permuted so that (1) present rows come first and (2) present rows are
    # ordered by partition key, without changing either output.
    idx = [table.col_index(k) for k in keys]
    for i in range(1, table.K):
        (p0, v0), (p1, v1) = table.rows[i - 1], table.rows[i]
        s.add(z3.Implies(p1, p0))
        if idx:
            s.add(z3.Implies(p1, _key_le([v0[j] for j in idx], [v1[j] for j in idx])))
    return s


def check_equivalence(sub_plan: Node, program: Program, K: int = DEFAULT_K,
                      timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Result:
    """Bounded equivalence of an IR sub-plan over ONE base table and a DSL program
    reading that table's rows. Never raises for unmodelled input: returns ``unsupported``.

    Nonlinear terms are first abstracted by uninterpreted functions (sound for
    ``verified``); a counterexample found under the abstraction is re-checked with the
    exact encoding before it is reported."""
    t0 = time.perf_counter()
    elapsed_ms = lambda: (time.perf_counter() - t0) * 1000  # noqa: E731
    try:
        scan, table, plan_rel, prog_rel, differ, abstracted = _encode(sub_plan, program, K, True)
        if plan_rel.rows and prog_rel.rows and len(plan_rel.rows[0][1]) != len(prog_rel.rows[0][1]):
            return Result(UNSUPPORTED, K=K, seconds=time.perf_counter() - t0,
                          reason=f"arity differs: plan {len(plan_rel.rows[0][1])} columns, "
                                 f"program {len(prog_rel.rows[0][1])}")
    except Unsupported as why:
        return Result(UNSUPPORTED, K=K, seconds=time.perf_counter() - t0, reason=str(why))
    s = _solver(table, differ, timeout_ms, program.keys)
    r = s.check()
    if r != z3.unsat and abstracted:
        # the abstraction may have invented a difference: decide with exact arithmetic
        scan, table, plan_rel, prog_rel, differ, _ = _encode(sub_plan, program, K, False)
        s = _solver(table, differ, timeout_ms - elapsed_ms(), program.keys)
        r = s.check() if timeout_ms - elapsed_ms() > 0 else z3.unknown
    if r == z3.unsat:
        return Result(VERIFIED, K=K, seconds=time.perf_counter() - t0,
                      reason=f"no input table of at most {K} rows distinguishes the outputs")
    if r == z3.unknown:
        why = s.reason_unknown() if timeout_ms - elapsed_ms() > 0 else "timeout"
        return Result(UNKNOWN, K=K, seconds=time.perf_counter() - t0, reason=f"solver: {why}")
    model = s.model()
    # Prefer a small, readable counterexample when one exists (a fresh solver: the
    # tactic-based solver is not incremental).
    nice = _new_solver(max(1000, min(10000, timeout_ms)))
    nice.add(*s.assertions())
    nice.add(*_nice_bounds(table))
    if nice.check() == z3.sat:
        model = nice.model()
    cex = counterexample_from_model(model, table, scan, plan_rel, prog_rel)
    return Result(REFUTED, K=K, seconds=time.perf_counter() - t0,
                  reason="the outputs differ on the counterexample table", counterexample=cex)


def counterexample_from_model(model, table: Table, scan: Scan, plan_rel, prog_rel) -> Counterexample:
    rows = concrete_rel(model, table.rel())
    return Counterexample(table=scan.table, columns=[c for c, _ in scan.columns],
                          types=[t for _, t in scan.columns], rows=rows,
                          plan_output=concrete_rel(model, plan_rel),
                          program_output=concrete_rel(model, prog_rel))


def check_sql(sql: str, schema: dict, program: Program, K: int = DEFAULT_K,
              timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Result:
    """Lower ``sql`` and check it; an SQL that does not fully lower is ``unsupported``."""
    from ..ir import lower
    low = lower(sql, schema)
    if not low.fully_lowered:
        return Result(UNSUPPORTED, K=K, reason="; ".join(low.opaque_reasons))
    return check_equivalence(low.plan, program, K=K, timeout_ms=timeout_ms)


def check_memory_class(sub_plan: Node, program: Program, K: int = DEFAULT_K,
                       timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Optional[str]:
    """The memory class a program actually achieves (checked, not declared):
    ``streaming`` if it is equivalent when row emits see running values and it keeps only
    constant state (no COUNT DISTINCT), else ``buffering`` if equivalent with final
    values, else None (not equivalent / not decided)."""
    from dataclasses import replace
    from ..synth.dsl import BUFFERING, STREAMING
    constant_state = not any(a.func == "count_distinct" for a in program.accumulators)
    if constant_state:
        r = check_equivalence(sub_plan, replace(program, memory=STREAMING), K, timeout_ms)
        if r.status == VERIFIED:
            return STREAMING
    r = check_equivalence(sub_plan, replace(program, memory=BUFFERING), K, timeout_ms)
    return BUFFERING if r.status == VERIFIED else None


def _fix_rows(table: Table, rows) -> list:
    """Constraints pinning the symbolic table to concrete rows (None = NULL)."""
    import datetime as _dt
    from .encode import EPOCH
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


def evaluate(sub_plan: Node, rows, program: Optional[Program] = None) -> list[tuple]:
    """The encodings run forwards: the output the Z3 encoding of ``sub_plan`` (or of
    ``program`` over the sub-plan's base table) gives for concrete input ``rows``. Used
    to test the encodings against Spark and the reference interpreter."""
    scan = base_table(sub_plan)
    table = Table(scan.table, scan.columns, max(1, len(rows)))
    rel = ProgramEncoder(table, program).encode() if program is not None else PlanEncoder(table).encode(sub_plan)
    s = z3.Solver()
    s.add(*_fix_rows(table, rows))
    if s.check() != z3.sat:  # pragma: no cover - pinned inputs are always satisfiable
        raise RuntimeError("cannot evaluate the encoding on the given rows")
    return concrete_rel(s.model(), rel)
