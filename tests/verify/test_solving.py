"""Randomized restarts (superop.verify.solving): the budget's slices, answers as Z3's, a
timeout as "unknown" after the whole budget, and the heavy-tailed check that made a
certificate "unknown" once other terms existed in Z3's context now verifies."""
from __future__ import annotations

import time

import z3

from superop.verify.certify import check_and_certify
from superop.verify.solving import RestartingSolver, slices

from ..families.test_stddev import Q39, SD_SCHEMA


def test_slices_double_and_spend_the_whole_budget():
    assert slices(20000) == [1000, 2000, 4000, 13000]
    assert slices(1500) == [1500]
    assert slices(7000, first_ms=1000) == [1000, 2000, 4000]
    for budget in (1, 999, 3001, 60000):
        out = slices(budget)
        assert sum(out) == budget and all(b >= a for a, b in zip(out, out[1:]))


def test_answers_are_z3s():
    x, y = z3.Ints("x y")
    s = RestartingSolver(5000)
    s.add(x > 2, [y == x + 1])
    assert s.check() == z3.sat and s.model().eval(y - x).as_long() == 1 and s.runs == 1
    s.add(y < 3)
    assert s.check() == z3.unsat and len(s.assertions()) == 3


def test_a_timeout_is_unknown_after_the_budget():
    # factoring a 62-bit semiprime as nonlinear integer arithmetic: no answer in 0.3 s
    p, q = z3.Ints("p q")
    s = RestartingSolver(300, make=z3.Solver, first_slice_ms=50)
    s.add(p > 1, q > 1, p * q == 2147483647 * 2147483629)
    t0 = time.perf_counter()
    assert s.check() == z3.unknown
    assert s.reason_unknown() == "timeout" and s.runs >= 2
    assert time.perf_counter() - t0 < 3


def test_a_heavy_tailed_check_verifies_with_other_terms_in_the_context():
    # with seed 0 alone this check timed out once any few terms existed before it
    junk = [z3.Int(f"solving_junk{i}") + i for i in range(50)]
    assert junk
    cert = check_and_certify(Q39, SD_SCHEMA, K=4, timeout_ms=20000)
    assert cert["status"] == "verified", cert.get("reason")
