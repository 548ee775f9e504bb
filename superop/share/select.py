"""Choosing the CEs to cache: groups of mutually exclusive options (the paper's
Algorithm 2) and a dynamic-programming solver of the multiple-choice knapsack (MCKP).

Groups. Two CEs *conflict* when some query has a consumer of each and the two consumers
overlap (one replaces a part of the plan the other reads: an aggregate over a block and
a table of that block, or two CEs over the same table). A group is a connected component
of the conflict relation, and its options are the single CEs and the compounds of
pairwise non-conflicting CEs of the component that are not beaten in both value and
weight by another compound (``group_options``). This is the paper's Algorithm 2 ("the
largest CE, its descendants and the compounds of disjoint descendants") with the group
closed under conflicts, so that picking at most one option per group can never put two
conflicting CEs in the cache. As in the paper, a compound's value and weight are the
sums of its members'.

Solver. ``solve_mckp`` is the classic O(groups x items x capacity) dynamic program over
integer weights; :func:`choose` scales byte weights to ``resolution`` cells, rounding
up, so a chosen set never exceeds the budget.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Optional, Sequence

MAX_OPTIONS = 256
MAX_SETS = 1 << 14      # independent sets the compound search visits per group


@dataclass(frozen=True)
class Item:
    """One option of a group: a single CE or a compound of CEs."""
    ces: tuple[str, ...]
    value: float
    weight: float


@dataclass
class Solution:
    value: float
    picks: list[Optional[int]]          # per group: index of the chosen item, or None


def solve_mckp(groups: Sequence[Sequence[Item]], capacity: int) -> Solution:
    """Maximize the total value choosing at most one item per group with total
    (integer) weight <= capacity. Items with value <= 0 are never chosen."""
    if capacity < 0:
        raise ValueError("capacity must be >= 0")
    C = int(capacity)
    best = [0.0] * (C + 1)              # best[c]: best value within capacity c so far
    tables: list[list[Optional[int]]] = []
    for g in groups:
        new = best[:]
        arg: list[Optional[int]] = [None] * (C + 1)
        for idx, it in enumerate(g):
            w = int(it.weight)
            if it.value <= 0 or w > C or w < 0:
                continue
            for c in range(w, C + 1):
                v = best[c - w] + it.value
                if v > new[c] + 1e-12:
                    new[c], arg[c] = v, idx
        tables.append(arg)
        best = new
    picks: list[Optional[int]] = [None] * len(groups)
    c = C
    for gi in range(len(groups) - 1, -1, -1):
        idx = tables[gi][c]
        if idx is not None:
            picks[gi] = idx
            c -= int(groups[gi][idx].weight)
    return Solution(best[C], picks)


def brute_force_mckp(groups: Sequence[Sequence[Item]], capacity: int) -> float:
    """The optimum by enumeration (for tests on small instances)."""
    best = 0.0
    for combo in itertools.product(*[[None] + list(g) for g in groups]):
        w = sum(int(it.weight) for it in combo if it is not None)
        if w <= capacity:
            best = max(best, sum(it.value for it in combo if it is not None and it.value > 0))
    return best


# ---------------------------------------------------------------------------
# Groups (Algorithm 2 closed under conflicts)
# ---------------------------------------------------------------------------
def conflict_groups(ces: Sequence[str], conflicts: set[frozenset]) -> list[list[str]]:
    """Connected components of the conflict graph, in the order of ``ces``."""
    parent = {c: c for c in ces}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for pair in conflicts:
        a, b = tuple(pair)
        parent[find(a)] = find(b)
    comps: dict[str, list[str]] = {}
    for c in ces:
        comps.setdefault(find(c), []).append(c)
    return list(comps.values())


def group_options(group: Sequence[str], conflicts: set[frozenset], value: dict[str, float],
                  weight: dict[str, float]) -> list[Item]:
    """Every single CE (largest value first), then the compounds worth offering: the sets
    of two or more pairwise non-conflicting CEs of positive value (a member worth <= 0
    never makes a compound better) that no other set beats in both value and weight —
    picking one option per group, the knapsack never needs a dominated one. At most
    MAX_OPTIONS options; the search visits at most MAX_SETS sets, most valuable members
    first. (Session 7 took the first compounds in combination order, so a group of ~15
    CEs never offered a compound of four: the dashboard batch's best plan.)"""
    singles = sorted(group, key=lambda c: -value[c])
    out = [Item((c,), value[c], weight[c]) for c in singles]
    pos = [c for c in singles if value[c] > 0]
    clash = {c: {d for d in pos if frozenset((c, d)) in conflicts} for c in pos}
    found: list[Item] = []
    left = [MAX_SETS]

    def grow(i: int, members: tuple, banned: frozenset, v: float, w: float) -> None:
        if left[0] <= 0:
            return
        if i == len(pos):
            left[0] -= 1
            if len(members) > 1:
                found.append(Item(members, v, w))
            return
        c = pos[i]
        if c not in banned:             # with c first: the valuable sets are found first
            grow(i + 1, members + (c,), banned | clash[c], v + value[c], w + weight[c])
        grow(i + 1, members, banned, v, w)

    grow(0, (), frozenset(), 0.0, 0.0)
    frontier: list[Item] = []
    for it in sorted(found, key=lambda x: (x.weight, -x.value)):
        if not frontier or it.value > frontier[-1].value:
            frontier.append(it)
    frontier.sort(key=lambda x: -x.value)
    return out + frontier[:max(0, MAX_OPTIONS - len(out))]


# ---------------------------------------------------------------------------
# Decisions
# ---------------------------------------------------------------------------
class Verdict(str, Enum):
    CHOSEN = "chosen"
    NOT_PAYING = "does not pay"
    NO_ESTIMATE = "no size estimate"
    TOO_LARGE = "larger than the budget"
    BETTER_IN_GROUP = "another option of its group is better"
    OUT_OF_BUDGET = "the budget went to more valuable options"
    NOT_PROVED = "not enough proved consumers"
    NO_COVER = "no sound covering expression"


@dataclass
class CEDecision:
    """Why a CE was or was not cached."""
    ce: str
    verdict: Verdict
    reason: str
    value: float = 0.0
    weight: float = 0.0
    group: int = -1
    option: tuple = ()

    @property
    def chosen(self) -> bool:
        return self.verdict is Verdict.CHOSEN

    def to_json(self) -> dict:
        return {"ce": self.ce, "chosen": self.chosen, "verdict": self.verdict.value, "reason": self.reason,
                "value": self.value, "weight": self.weight, "group": self.group, "option": list(self.option)}


@dataclass
class Selection:
    budget: float
    groups: list[list[Item]] = field(default_factory=list)
    chosen: list[str] = field(default_factory=list)
    total_value: float = 0.0
    total_weight: float = 0.0
    decisions: dict[str, CEDecision] = field(default_factory=dict)


def choose(ces: Sequence[str], conflicts: set[frozenset], value: dict[str, float],
           weight: dict[str, float], budget: float, resolution: int = 2000,
           unknown: frozenset = frozenset(), never: frozenset = frozenset(),
           refused: Optional[dict[str, str]] = None) -> Selection:
    """Group the CEs, solve the MCKP under ``budget`` bytes and explain every decision.
    CEs in ``unknown`` (no size estimate), ``never`` (e.g. not proved) or ``refused``
    (CE id -> why it does not pay, e.g. too few consumers gain) are offered in no option,
    so they are never chosen."""
    refused = refused or {}
    sel = Selection(budget)
    comps = conflict_groups(list(ces), conflicts)
    out = unknown | never | frozenset(refused)
    sel.groups = [group_options([c for c in g if c not in out], conflicts, value, weight)
                  for g in comps]
    unit = max(float(budget) / resolution, 1e-9) if budget > 0 else 1.0
    cap = resolution if budget > 0 else 0
    scaled = [[Item(it.ces, it.value, math.ceil(it.weight / unit - 1e-9)) for it in g] for g in sel.groups]
    sol = solve_mckp(scaled, cap)
    taken = sum(g[p].weight for g, p in zip(sel.groups, sol.picks) if p is not None)
    cells = sum(g[p].weight for g, p in zip(scaled, sol.picks) if p is not None)   # as the solver counts
    for gi, (g, pick) in enumerate(zip(sel.groups, sol.picks)):
        chosen = g[pick] if pick is not None else None
        if chosen is not None:
            sel.chosen.extend(chosen.ces)
            sel.total_value += chosen.value
            sel.total_weight += chosen.weight
        for c in comps[gi]:
            v, w = value[c], weight[c]
            if chosen is not None and c in chosen.ces:
                others = ', '.join(x for x in chosen.ces if x != c)
                d = CEDecision(c, Verdict.CHOSEN, f"value {v:.3g} for {w:.3g} bytes"
                               + (f" (with {others})" if others else ""),
                               v, w, gi, chosen.ces)
            elif c in never and v > 0 and w <= budget:
                d = CEDecision(c, Verdict.NOT_PROVED, "its consumers have no full proof", v, w, gi)
            elif c in refused:
                d = CEDecision(c, Verdict.NOT_PAYING, refused[c], v, w, gi)
            elif c in unknown:
                d = CEDecision(c, Verdict.NO_ESTIMATE, "Spark has no size estimate for its inputs "
                               "(e.g. a DataFrame built from an RDD); not cached", v, w, gi)
            elif v <= 0:
                d = CEDecision(c, Verdict.NOT_PAYING, f"estimated value {v:.3g} <= 0: caching costs more "
                               "than recomputing", v, w, gi)
            elif w > budget:
                d = CEDecision(c, Verdict.TOO_LARGE, f"estimated size {w:.3g} bytes > budget {budget:.3g}", v, w, gi)
            elif chosen is not None and any(frozenset((c, x)) in conflicts for x in chosen.ces):
                clash = [x for x in chosen.ces if frozenset((c, x)) in conflicts]
                d = CEDecision(c, Verdict.BETTER_IN_GROUP, f"conflicts with the chosen {', '.join(clash)} "
                               f"(its option {', '.join(chosen.ces)}: value {chosen.value:.3g})", v, w, gi)
            elif chosen is not None and cells + math.ceil(w / unit - 1e-9) > cap:
                # it conflicts with none of the chosen CEs of its group: the budget kept it out
                d = CEDecision(c, Verdict.OUT_OF_BUDGET, f"value {v:.3g} for {w:.3g} bytes conflicts with none of "
                               f"the chosen {', '.join(chosen.ces)}, but the budget has no room for it "
                               f"({taken:.3g} bytes chosen + {w:.3g} > {budget:.3g})", v, w, gi)
            elif chosen is not None:
                d = CEDecision(c, Verdict.BETTER_IN_GROUP,
                               f"conflicts with none of the chosen {', '.join(chosen.ces)}, but no option of "
                               f"its group offered it with them (at most {MAX_OPTIONS} options, "
                               f"{MAX_SETS} sets searched)", v, w, gi)
            else:
                d = CEDecision(c, Verdict.OUT_OF_BUDGET, f"value {v:.3g} for {w:.3g} bytes did not make the "
                               f"cut (budget {budget:.3g} bytes)", v, w, gi)
            sel.decisions[c] = d
    return sel
