"""The multiple-choice knapsack solver against brute force, and the choice's reasons."""
from __future__ import annotations

import itertools
import random

import pytest

from superop.share.select import Item, Verdict, brute_force_mckp, choose, group_options, solve_mckp


def _random_instance(rng):
    groups = []
    for _ in range(rng.randint(1, 4)):
        groups.append([Item((f"g{len(groups)}i{j}",), rng.choice([-5, 0, 1, 3, 7, 10, 15, 22]) + rng.random(),
                            rng.randint(0, 12)) for j in range(rng.randint(1, 4))])
    return groups, rng.randint(0, 25)


@pytest.mark.parametrize("seed", range(60))
def test_dp_equals_brute_force(seed):
    rng = random.Random(seed)
    groups, cap = _random_instance(rng)
    sol = solve_mckp(groups, cap)
    assert sol.value == pytest.approx(brute_force_mckp(groups, cap))
    # the picks are feasible and add up to the reported value
    chosen = [g[p] for g, p in zip(groups, sol.picks) if p is not None]
    assert sum(int(it.weight) for it in chosen) <= cap
    assert sum(it.value for it in chosen) == pytest.approx(sol.value)
    assert all(it.value > 0 for it in chosen)


def test_at_most_one_item_per_group():
    groups = [[Item(("a",), 5, 1), Item(("b",), 6, 1)]]
    sol = solve_mckp(groups, 10)
    assert sol.picks == [1] and sol.value == 6


def test_compounds_only_of_non_conflicting():
    conflicts = {frozenset(("a", "b"))}
    opts = group_options(["a", "b", "c"], conflicts, {"a": 3, "b": 2, "c": 1}, {"a": 1, "b": 1, "c": 1})
    sets = {it.ces for it in opts}
    assert ("a", "c") in sets and ("a",) in sets and ("b",) in sets
    assert ("b", "c") not in sets        # same weight as (a, c), less value: never needed
    assert not any({"a", "b"} <= set(s) for s in sets)


def test_the_best_compound_is_offered_in_a_large_group():
    """Fifteen CEs, each conflicting with one partner; the four most valuable partners
    only conflict with one of the twelve others: the best option has several members,
    found although the pairs and triples alone exceed MAX_OPTIONS."""
    names = [f"c{i:02d}" for i in range(16)]
    conflicts = {frozenset((names[i], names[i + 1])) for i in range(0, 16, 2)}
    conflicts |= {frozenset((names[i], names[i + 2])) for i in range(0, 14, 2)}   # one component
    value = {c: 100.0 - i for i, c in enumerate(names)}
    weight = {c: 1.0 for c in names}
    opts = group_options(names, conflicts, value, weight)
    best = max(opts, key=lambda it: it.value)
    assert len(best.ces) >= 4
    assert not any(frozenset(p) in conflicts for p in itertools.combinations(best.ces, 2))
    assert best.value == brute_force_independent(names, conflicts, value)


def brute_force_independent(names, conflicts, value):
    best = 0.0
    for r in range(1, len(names) + 1):
        for combo in itertools.combinations(names, r):
            if not any(frozenset(p) in conflicts for p in itertools.combinations(combo, 2)):
                best = max(best, sum(value[c] for c in combo))
    return best


def test_choose_explains_every_ce():
    conflicts = {frozenset(("big", "small"))}
    value = {"big": 100.0, "small": 60.0, "neg": -3.0, "huge": 500.0, "other": 10.0}
    weight = {"big": 50.0, "small": 10.0, "neg": 1.0, "huge": 10_000.0, "other": 45.0}
    sel = choose(list(value), conflicts, value, weight, budget=60.0, unknown=frozenset())
    d = sel.decisions
    assert d["big"].verdict is Verdict.CHOSEN
    assert d["small"].verdict is Verdict.BETTER_IN_GROUP
    assert d["neg"].verdict is Verdict.NOT_PAYING
    assert d["huge"].verdict is Verdict.TOO_LARGE
    assert d["other"].verdict is Verdict.OUT_OF_BUDGET
    assert sel.total_weight <= 60.0


def test_scaled_weights_never_exceed_the_budget():
    rng = random.Random(3)
    for _ in range(30):
        names = [f"c{i}" for i in range(6)]
        value = {n: rng.uniform(1, 100) for n in names}
        weight = {n: rng.uniform(1, 1e6) for n in names}
        budget = rng.uniform(1e5, 3e6)
        sel = choose(names, set(), value, weight, budget, resolution=100)
        assert sel.total_weight <= budget


def test_unknown_and_never_are_not_chosen():
    value, weight = {"a": 10.0, "b": 10.0}, {"a": 1.0, "b": 1.0}
    sel = choose(["a", "b"], set(), value, weight, 100.0, unknown=frozenset({"a"}), never=frozenset({"b"}))
    assert sel.chosen == []
    assert sel.decisions["a"].verdict is Verdict.NO_ESTIMATE
    assert sel.decisions["b"].verdict is Verdict.NOT_PROVED


def test_a_ce_left_out_by_the_budget_alone_says_so_not_that_it_conflicts():
    # a - b - c: one conflict group, but c does not conflict with a. The budget takes a;
    # c is left out for lack of room, b for its conflict with a: the reasons must differ.
    conflicts = {frozenset(("a", "b")), frozenset(("b", "c"))}
    value = {"a": 100.0, "b": 30.0, "c": 20.0}
    weight = {"a": 50.0, "b": 10.0, "c": 20.0}
    sel = choose(list(value), conflicts, value, weight, budget=60.0)
    d = sel.decisions
    assert sel.chosen == ["a"]
    assert d["b"].verdict is Verdict.BETTER_IN_GROUP and "conflicts with the chosen a" in d["b"].reason
    assert d["c"].verdict is Verdict.OUT_OF_BUDGET
    assert "conflicts with none of the chosen a" in d["c"].reason and "> 60" in d["c"].reason
    # with room for it, c is taken next to a
    assert sorted(choose(list(value), conflicts, value, weight, budget=80.0).chosen) == ["a", "c"]
