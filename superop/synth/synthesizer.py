"""Counterexample-guided synthesis of super-operator programs.

    synthesize(sub_plan, schema=None, K=4, timeout_s=60) -> SynthResult

1. :mod:`superop.synth.parts` reads the parts of the sub-plan (edges captured with
   Algorithm 5, the root's emit structure), :mod:`superop.synth.space` enumerates the
   points of the search space (keys traced with Algorithm 4) and
   :mod:`superop.synth.program_builder` builds each into a candidate program; they are
   tried smallest first (streaming before buffering, so a streaming program wins when one
   exists).
2. Each candidate runs (:mod:`superop.synth.interpreter`) on a test set of input tables
   and is compared as a bag with the sub-plan's own output on the same table
   (:mod:`superop.synth.plan_eval`). The test set starts with generated tables — small
   key domains (so groups collide), NULLs, duplicates, the constants of the sub-plan's
   predicates ±1 (so filters both pass and fail, including groups where no row passes) —
   (:mod:`superop.synth.testdata`) and grows with every counterexample; a failing table moves to the front, so most
   wrong candidates die on their first table.
3. A candidate that passes every test goes to the Z3 verifier
   (``superop.verify.check_equivalence``, bounded by K rows). ``verified`` ends the search;
   a counterexample joins the test set and the search continues (CEGIS).

Statuses: ``verified`` (Z3 proved it for inputs of ≤K rows), ``unknown`` (the solver
timed out, the verifier could not model something, or the search ran out of time —
then ``program`` may still hold the best *tested* candidate), ``no_program`` (every
candidate failed; ``counterexample`` killed the last one), ``unsupported`` (the
sub-plan is not a shape any program in the space can implement).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from .. import families
from ..dsl import STREAMING, Program
from ..dsl.expr_eval import EvalError
from ..dsl.interpreter import Compiled, ProgramError
from ..dsl.plan_eval import PlanEvalError, eval_plan
from ..ir import lower
from ..ir.nodes import Node, Scan, walk
from ..sparkutil import bag
from ..verify.check import check_equivalence
from ..verify.result import Result
from .parts import NotSupported, Parts, analyze, strip_order
from .program_builder import NotExpressible, build
from .result import NO_PROGRAM, REFUTED, UNKNOWN, UNSUPPORTED, VERIFIED, SynthResult
from .space import Choice, choices
from .subplan import output_types
from .testdata import CheckTable, Inputs, satisfy_requires, sort_rows


# ---------------------------------------------------------------------------
# the search
# ---------------------------------------------------------------------------
class Synthesizer:
    def __init__(self, sub_plan: Node, K: int = 4, timeout_s: float = 60.0, verify: bool = True,
                 require_streaming: bool = False, max_candidates: int = 20000, seed: int = 7,
                 verify_timeout_s: float = 20.0, initial_tests: int = 48):
        self.plan = strip_order(sub_plan)
        self.K, self.timeout_s, self.use_verifier = K, timeout_s, verify
        self.require_streaming = require_streaming
        self.max_candidates, self.seed = max_candidates, seed
        self.verify_timeout_s = verify_timeout_s
        self.initial_tests = initial_tests     # generated tables before any counterexample

    # -- reference ---------------------------------------------------------
    def _expected(self, data) -> Any:
        tables = {leaf.table: data[id(leaf)] for leaf in self.parts.sources}
        return bag(eval_plan(self.plan, tables=tables))

    def _add_test(self, data, origin: str, front: bool = False) -> CheckTable:
        t = CheckTable(data, self._expected(data), origin)
        if front:
            self.tests.insert(0, t)
        else:
            self.tests.append(t)
        return t

    def _cex(self, t: CheckTable, program: Program, actual, choice: Choice) -> dict:
        src = self.parts.sources
        d = {"origin": t.origin, "candidate": program.pretty(), "candidate_program": program.to_json(),
             "choice": choice.describe()}
        if len(src) == 1:
            d["table"] = src[0].table
            d["columns"] = [c for c, _ in src[0].columns]
            d["types"] = [ty for _, ty in src[0].columns]
            d["rows"] = sort_rows(t.data[id(src[0])])
        else:
            d["tables"] = {s.table: {"columns": [c for c, _ in s.columns],
                                     "types": [ty for _, ty in s.columns],
                                     "rows": sort_rows(t.data[id(s)])} for s in src}
            d["program_reads"] = src[0].table
        d["plan_output"] = sort_rows(list(t.expected.elements()))
        d["program_output"] = sort_rows(actual)
        return d

    # -- candidate checking -------------------------------------------------
    def _run(self, comp: Compiled, t: CheckTable) -> list[tuple]:
        return comp.run(t.data[id(self.parts.sources[0])])

    def _test(self, program: Program, choice: Choice) -> Optional[CheckTable]:
        """None if the candidate agrees with the sub-plan on every test, else the failing test."""
        comp = Compiled(program, [c for c, _ in self.parts.sources[0].columns])
        for i, t in enumerate(self.tests):
            out = self._run(comp, t)
            if bag(out) != t.expected:
                if i > 0:   # CEGIS: the killer goes first for the next candidate
                    self.tests.insert(0, self.tests.pop(i))
                return t
        return None

    def explain(self, pred) -> Optional[dict]:
        """The (minimized) counterexample that killed the first tried candidate whose
        Choice satisfies ``pred`` — for asking *why* a candidate was rejected."""
        for ch, prog, failed in getattr(self, "trace", []):
            if pred(ch) and failed is not None:
                return self._minimal_cex(failed, prog, ch)
        return None

    def _minimal_cex(self, t: CheckTable, program: Program, choice: Choice) -> dict:
        """Shrink a failing table (drop rows while the outputs still differ) and render it:
        a 2-row counterexample explains a wrong candidate better than an 8-row one."""
        comp = Compiled(program, [c for c, _ in self.parts.sources[0].columns])
        data = {k: list(v) for k, v in t.data.items()}
        for leaf in self.parts.sources:
            i = 0
            while i < len(data[id(leaf)]):
                trial = dict(data)
                trial[id(leaf)] = data[id(leaf)][:i] + data[id(leaf)][i + 1:]
                exp_bag = self._expected(trial)
                if bag(comp.run(trial[id(self.parts.sources[0])])) != exp_bag:
                    data = trial
                else:
                    i += 1
        small = CheckTable(data, self._expected(data), t.origin)
        return self._cex(small, program, comp.run(data[id(self.parts.sources[0])]), choice)

    def _verify(self, program: Program):
        if not self.use_verifier or not self.parts.shared:
            return None
        remaining = max(1.0, self.deadline - time.perf_counter())
        try:
            return check_equivalence(self.plan, program, self.K,
                                     timeout_ms=int(1000 * min(self.verify_timeout_s, remaining)))
        except Exception as e:  # a verifier crash is "not decided", never "verified"
            return Result(UNKNOWN, K=self.K, reason=f"verifier error: {type(e).__name__}: {e}")

    def _family_template(self, res: SynthResult, why: Optional[str] = None) -> bool:
        """A sub-plan outside the search space (the space enumerates DU/DJ/MJ-shaped
        choices) that a registered family matches as a whole (a pivot join, a neighbour
        self-join: LAG/LEAD over a ranked view): the ONE candidate is the family's template
        program — what the runtime runs. It is tested on generated inputs, then checked by
        the bounded verifier against the sub-plan reading the match's shared source as one
        table (:func:`superop.families.over_source`), on inputs that satisfy the program's
        preconditions (which the match establishes for the real source). Statuses as above
        (``checked_by`` z3); False when no family matches the whole sub-plan."""
        m = families.first_match(self.plan, finished=True)
        if m is None or m.program is None or m.root != families.regroup(self.plan):
            return False
        searched = res.reason
        res.family, res.search_space = m.family, max(res.search_space, 1)
        res.candidates_tried = max(res.candidates_tried, 1)
        prog = m.program
        tried = f"the {m.family} template ({why or f'the search space has no program for this shape: {searched}'})"
        over = families.over_source(m.root, m.source)
        if over is None and prog.requires:
            res.status, res.program = UNKNOWN, None
            res.reason = f"{tried}; NOT verified: its preconditions are on a source whose column types are unknown"
            return True
        sub = over[0] if over is not None else m.root
        leaves = {n.table: n for n in walk(sub) if isinstance(n, Scan)}
        if len(leaves) == 1:         # the program reads one table: test it before Z3
            leaf = next(iter(leaves.values()))
            self.plan = sub
            self.parts = Parts(m.family, m.root, [], None, [], [leaf], sub.names)
            keys = set(prog.keys) | {c for r in prog.requires for c in r.reads()}
            gen = Inputs(self.parts, sub, keys, self.seed)
            self.tests = []
            try:
                for data in gen.initial(self.initial_tests):
                    self._add_test(satisfy_requires(prog, leaf, data, gen.rng), "generated")
            except (PlanEvalError, EvalError) as e:
                res.status = UNKNOWN
                res.reason = f"{tried}; the sub-plan cannot be evaluated on test data: {e}"
                return True
            res.tests = len(self.tests)
            failed = self._test(prog, Choice((), ()))
            if failed is not None:
                res.status = NO_PROGRAM
                res.counterexample = self._cex(failed, prog, self._run(
                    Compiled(prog, [c for c, _ in leaf.columns]), failed), Choice((), ()))
                res.reason = f"{tried} fails a test"
                return True
        elif prog.requires:
            res.status, res.program = UNKNOWN, None
            res.reason = f"{tried}; NOT verified: its preconditions need the source read as one table"
            return True
        if not self.use_verifier:
            res.status, res.program = UNKNOWN, prog
            res.reason = f"{tried}; NOT verified (verification disabled)"
            return True
        remaining = max(1.0, self.deadline - time.perf_counter())
        try:
            v = check_equivalence(sub, prog, self.K, timeout_ms=int(1000 * min(self.verify_timeout_s, remaining)))
        except Exception as e:  # a verifier crash is "not decided", never "verified"
            res.status, res.reason = UNKNOWN, f"{tried}; verifier error: {type(e).__name__}: {e}"
            return True
        res.verifier = v.to_json()
        res.checked_by = "z3"
        pre = "; on inputs satisfying its preconditions" if prog.requires else ""
        if v.status == VERIFIED:
            res.status, res.program = VERIFIED, replace(prog, output_types=prog.output_types or output_types(m.root))
            res.streaming = res.program.memory == STREAMING
            res.counterexample = None
            res.reason = f"{tried}; verified by Z3 for every input of at most {self.K} rows{pre}"
            return True
        if v.status == REFUTED:
            res.status = NO_PROGRAM
            res.counterexample = v.counterexample.to_json() if v.counterexample is not None else None
            res.reason = f"{tried}; refuted by Z3: {v.reason}"
            return True
        res.status, res.program = UNKNOWN, prog
        res.reason = f"{tried}; Z3 {v.status}: {v.reason}{pre}"
        return True

    def _template_after_unknown(self, res: SynthResult) -> None:
        """The search ended undecided — a candidate passed the tests but Z3 did not decide
        it (a timeout), or the search ran out of time. An undecided search candidate says
        nothing about the family's template (TPC-DS q4/q11: the only search candidate
        partitions by the fixed key too and never emits; the tests, whose key domains miss
        ``1998 + 1``, did not catch it and Z3 timed out at K=4 and K=3 although it refutes it
        at K=2): when a family matches the whole sub-plan, check its template as
        :meth:`_family_template` does. It is adopted only when Z3 VERIFIES it (it is what
        the runtime runs, and what the certificate is about); otherwise the search's
        unknown stands, with the template's outcome appended."""
        saved = (self.plan, self.parts, self.tests)
        alt = SynthResult(NO_PROGRAM)
        searched = res.reason
        if not self._family_template(alt, why=f"tried after the search's candidate stayed undecided: {searched}"):
            self.plan, self.parts, self.tests = saved
            return
        if alt.status != VERIFIED:
            self.plan, self.parts, self.tests = saved
            res.reason = f"{searched}; the {alt.family} template: {alt.status} ({alt.reason})"
            return
        res.status, res.program, res.streaming = alt.status, alt.program, alt.streaming
        res.reason, res.checked_by, res.verifier = alt.reason, alt.checked_by, alt.verifier
        res.family, res.counterexample = alt.family, None

    def run(self) -> SynthResult:
        t0 = time.perf_counter()
        self.deadline = t0 + self.timeout_s
        res = SynthResult(UNSUPPORTED)
        try:
            self.parts = analyze(self.plan)
        except NotSupported as why:
            res.reason = str(why)
            self._family_template(res)
            res.seconds = time.perf_counter() - t0
            return res
        res.family = self.parts.family
        st = _Search()
        cands = self._candidates(res, st)
        if cands is None or not self._initial_tests(cands, res) or self._search(cands, res, st):
            res.seconds = time.perf_counter() - t0
            return res
        self._conclude(res, st)
        res.seconds = time.perf_counter() - t0
        return res

    def _candidates(self, res: SynthResult, st: _Search) -> Optional[list[tuple[tuple, Program, Choice]]]:
        """Every distinct program of the search space, smallest first (streaming ones before
        buffering ones); None when there is none (``res`` says why)."""
        parts = self.parts
        cands: list[tuple[tuple, Program, Choice]] = []
        seen: set = set()
        cache: dict = {}
        for i, ch in enumerate(choices(parts)):
            if len(cands) >= self.max_candidates:
                break
            try:
                prog = build(parts, ch, cache)
            except NotExpressible as why:
                st.unbuildable.append(str(why))
                continue
            except NotSupported as why:
                res.reason = str(why)
                return None
            if prog in seen:       # structural (dataclass + sqlglot) equality
                continue
            seen.add(prog)
            cands.append(((prog.memory != STREAMING, prog.size, i), prog, ch))
        cands.sort(key=lambda c: c[0])
        res.search_space = len(cands)
        if not cands:
            res.reason = ("no candidate program can be written for this sub-plan"
                          + (f": {st.unbuildable[0]}" if st.unbuildable else ""))
            return None
        return cands

    def _initial_tests(self, cands: list[tuple[tuple, Program, Choice]], res: SynthResult) -> bool:
        """The generated test tables, before any counterexample (False when the sub-plan
        cannot be evaluated on them: ``res`` says why)."""
        key_cols = set()
        for ch in (c[2] for c in cands):
            key_cols.update(ch.keys)
        gen = Inputs(self.parts, self.plan, key_cols, self.seed)
        self.tests: list[CheckTable] = []
        try:
            for data in gen.initial(self.initial_tests):
                self._add_test(data, "generated")
            # Tables on which the sub-plan returns nothing separate few candidates: top up
            # with larger NULL-free tables until enough tests have a non-empty output.
            extra = 0
            while (self.initial_tests and extra < 4 * self.initial_tests
                   and sum(1 for t in self.tests if t.expected) < min(12, self.initial_tests // 4)):
                self._add_test(gen.table(4 + extra % 9, null_p=0.05 if extra % 2 else 0.0), "generated")
                extra += 1
        except (PlanEvalError, EvalError) as why:
            res.reason = f"the sub-plan cannot be evaluated on test data: {why}"
            return False
        return True

    def _search(self, cands: list[tuple[tuple, Program, Choice]], res: SynthResult, st: _Search) -> bool:
        """CEGIS over the candidates in order: test, then verify what passes. True when
        ``res`` is final already (a candidate cannot be evaluated)."""
        parts = self.parts
        self.z3_cex = 0
        self.trace = []     # (choice, program, failing test or None) per candidate tested
        for _, prog, ch in cands:
            if time.perf_counter() > self.deadline:
                res.status = UNKNOWN
                res.reason = f"search timed out after {st.tried} candidates"
                return False
            if self.require_streaming and prog.memory != STREAMING:
                continue
            try:
                failed = self._test(prog, ch)
            except ProgramError as why:
                if not parts.shared:
                    # it reads a column only another input has: not a program over one input
                    st.unbuildable.append(f"the program reads only {parts.sources[0].table}: {why}")
                    continue
                res.status = UNSUPPORTED
                res.reason = f"a candidate cannot be evaluated: {why}"
                return True
            except EvalError as why:
                res.status = UNSUPPORTED
                res.reason = f"a candidate cannot be evaluated: {why}"
                res.candidates_tried = st.tried
                return True
            st.tried += 1
            self.trace.append((ch, prog, failed))
            if failed is not None:
                st.last_cex = (failed, prog, ch)
                if prog.memory == STREAMING and prog.row_emits:
                    st.last_stream_cex = st.last_cex
                continue
            if self._decide(prog, ch, res, st):
                return False
        res.status = NO_PROGRAM
        res.reason = (f"all {st.tried} candidates fail" + ("" if not st.unbuildable else
                      f" ({len(st.unbuildable)} more choices are not expressible, e.g. {st.unbuildable[0]})"))
        if not parts.shared:
            res.reason = (f"the inputs are not one shared source ({', '.join(s.table for s in parts.sources)}); "
                          + res.reason)
        return False

    def _decide(self, prog: Program, ch: Choice, res: SynthResult, st: _Search) -> bool:
        """A candidate that passed every test goes to the verifier: True when that ends the
        search (verified, or not decided), False when its counterexample joins the tests."""
        parts = self.parts
        v = self._verify(prog)
        if v is None:
            # no verifier for this input (not one base table / verifier missing)
            res.status = UNKNOWN
            res.program = prog
            res.checked_by = "testing"
            why = ("inputs are not one shared source" if not parts.shared else
                   "verification disabled" if not self.use_verifier else "Z3 verifier unavailable")
            res.reason = f"passed {len(self.tests)} test tables; NOT verified ({why})"
            return True
        res.verifier = v.to_json() if hasattr(v, "to_json") else {"status": getattr(v, "status", str(v))}
        status = getattr(v, "status", None)
        if status == VERIFIED:
            res.status = VERIFIED
            res.program = prog
            res.checked_by = "z3"
            res.reason = f"verified by Z3 for every input of at most {self.K} rows; " + (
                getattr(v, "reason", "") or "")
            return True
        if status == REFUTED and getattr(v, "counterexample", None) is not None:
            z = v.counterexample
            rows = [tuple(r) for r in z.rows]
            order = [c for c, _ in parts.source.columns]
            if list(z.columns) != order:
                idx = [list(z.columns).index(c) for c in order]
                rows = [tuple(r[i] for i in idx) for r in rows]
            t = self._add_test({id(parts.source): rows}, "z3", front=True)
            comp = Compiled(prog, order)
            out = self._run(comp, t)
            st.last_cex = (t, prog, ch)
            self.z3_cex += 1
            if bag(out) == t.expected:
                # The verifier's model and our reference semantics disagree on this
                # table: record it (a bug in one of them) and keep searching.
                d = self._cex(t, prog, out, ch)
                d["disagreement"] = ("Z3 claims the outputs differ, the interpreter and "
                                     "the IR evaluator agree")
                res.verifier["disagreement"] = d
            if prog.memory == STREAMING and prog.row_emits:
                st.last_stream_cex = st.last_cex
            return False
        # unknown / unsupported by the verifier: keep the tested program, say so
        res.status = UNKNOWN
        res.program = prog
        res.checked_by = "testing"
        res.reason = f"passed {len(self.tests)} test tables; Z3: {status}: {getattr(v, 'reason', '')}"
        return True

    def _conclude(self, res: SynthResult, st: _Search) -> None:
        """After the search: the family's template where the search found nothing or stayed
        undecided, the minimized counterexamples, the output types and the counts."""
        if res.status == NO_PROGRAM and self._family_template(res):
            st.last_cex = st.last_stream_cex = None
        elif res.status == UNKNOWN and self.use_verifier:
            self._template_after_unknown(res)
        if res.status == NO_PROGRAM and st.last_cex is not None:
            res.counterexample = self._minimal_cex(*st.last_cex)
            if self.require_streaming:
                res.reason = "no streaming program: " + res.reason
        if res.program is not None:
            if not res.program.output_types:
                res.program = replace(res.program, output_types=output_types(self.plan))
            res.streaming = res.program.memory == STREAMING
            if not res.streaming and st.last_stream_cex is not None:
                res.streaming_counterexample = self._minimal_cex(*st.last_stream_cex)
                res.reason += "; no streaming candidate survived (see streaming_counterexample)"
        res.candidates_tried = st.tried
        res.z3_counterexamples = self.z3_cex
        res.tests = len(self.tests)


@dataclass
class _Search:
    """Where the candidate search stands: choices that cannot be written as programs, the
    candidates tested, and the last (streaming) candidate a test or Z3 killed, as
    (failing test, program, choice)."""
    unbuildable: list[str] = field(default_factory=list)
    tried: int = 0
    last_cex: Optional[tuple[CheckTable, Program, Choice]] = None
    last_stream_cex: Optional[tuple[CheckTable, Program, Choice]] = None



def synthesize(sub_plan: Node, schema: Optional[dict] = None, K: int = 4, timeout_s: float = 60.0,
               verify: bool = True, require_streaming: bool = False, **kw) -> SynthResult:
    """Synthesize the smallest program equivalent to ``sub_plan`` (an IR node; or SQL text,
    lowered with ``schema``)."""
    if isinstance(sub_plan, str):
        low = lower(sub_plan, schema or {})
        if not low.fully_lowered:
            return SynthResult(UNSUPPORTED, reason="; ".join(low.opaque_reasons))
        sub_plan = low.plan
    return Synthesizer(sub_plan, K=K, timeout_s=timeout_s, verify=verify,
                       require_streaming=require_streaming, **kw).run()
