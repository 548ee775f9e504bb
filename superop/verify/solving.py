"""Z3 checks with randomized restarts.

Z3's run time on one formula is heavy-tailed and depends on things that do not change the
question: the bounded check of TPC-DS q39's pivot join answers ``unsat`` in 0.2 s in a fresh
process, and times out after 20 s once a handful of unrelated terms exist in the context (term
ids steer the search); of four random seeds, two answer in 0.4 s and two do not within 10 s.
A nightly job or a test run that has built millions of terms before must not turn a proof into
"unknown" by that accident.

:class:`RestartingSolver` therefore runs a check as a sequence of fresh solvers over the same
assertions, seeds 0, 1, 2, ..., in doubling time slices until the budget is spent. Soundness
does not depend on the seed: each run is a complete decision procedure on the same assertions
and only its search order differs, so any ``sat`` / ``unsat`` answer is THE answer; only a
timeout leads to the next seed (any other ``unknown`` — an incomplete theory — is final).
"""
from __future__ import annotations

import time
from typing import Callable, Optional

import z3

# the first slice: the common check answers well within it; a heavy-tailed one is cut short
FIRST_SLICE_MS = 1000
_GAVE_UP = ("timeout", "canceled")


def tactic_solver() -> z3.Solver:
    """Preprocessing before the SMT core (measured 2-5x faster on the Table 2 corpus at
    K = 5): the encodings have many definitional equalities and unconstrained terms."""
    return z3.Then("simplify", "propagate-values", "solve-eqs", "elim-uncnstr", "smt").solver()


def slices(budget_ms: int, first_ms: int = FIRST_SLICE_MS) -> list[int]:
    """The time slices of a budget: doubling from ``first_ms``; a remainder shorter than the
    slice it would follow joins the last slice (no run gets less than the one before)."""
    out: list[int] = []
    left, size = max(1, int(budget_ms)), max(1, int(first_ms))
    while left > 0:
        this = left if left < 2 * size else size
        out.append(this)
        left -= this
        size *= 2
    return out


class RestartingSolver:
    """The part of ``z3.Solver``'s interface the checks use (``add``, ``assertions``, ``check``,
    ``model``, ``reason_unknown``), answered by restarts (module doc). ``timeout_ms`` is the
    budget of each :meth:`check` call, wall clock."""

    def __init__(self, timeout_ms: int, make: Callable[[], z3.Solver] = tactic_solver,
                 first_slice_ms: int = FIRST_SLICE_MS):
        self.timeout_ms = max(1, int(timeout_ms))
        self._make = make
        self._first = first_slice_ms
        self._assertions: list = []
        self._last: Optional[z3.Solver] = None
        self._reason = ""
        self.runs = 0          # solvers started by the last check (1 when the first answered)

    def add(self, *constraints) -> None:
        for c in constraints:
            if isinstance(c, (list, tuple, z3.AstVector)):
                self.add(*c)
            else:
                self._assertions.append(c)

    def assertions(self) -> list:
        return list(self._assertions)

    def check(self) -> z3.CheckSatResult:
        t0 = time.perf_counter()
        self.runs = 0
        for seed, slice_ms in enumerate(slices(self.timeout_ms, self._first)):
            left = self.timeout_ms - (time.perf_counter() - t0) * 1000
            if left < 1:
                break
            s = self._make()
            s.set("timeout", int(min(slice_ms, left)))
            s.set("random_seed", seed)
            s.add(*self._assertions)
            self._last, self.runs = s, self.runs + 1
            r = s.check()
            self._reason = s.reason_unknown() if r == z3.unknown else ""
            if r != z3.unknown or self._reason not in _GAVE_UP:
                return r
        self._reason = "timeout"
        return z3.unknown

    def model(self) -> z3.ModelRef:
        if self._last is None:
            raise z3.Z3Exception("model is not available: check() was not called")
        return self._last.model()

    def reason_unknown(self) -> str:
        return self._reason
