"""The search space of the synthesizer: its points and their enumeration.

A candidate fixes one choice per *dimension*: partition keys; per aggregate path whether
its accumulators are guarded by the path's summary predicate and whether an emptiness
flag guards its output; which emit cases exist (for a join: matched / left-only /
right-only rows); whether NULL keys are excluded from matching; whether negated guards
are NULL-safe; and, for row emits, the sort order and memory class. Every combination
is a program; the synthesizer tries them smallest first. Dimensions that make no
difference for a sub-plan (a guard when the path has no filter) are not enumerated.

Candidate partition keys: each γ's keys traced down to source columns (TraverseDown,
Algorithm 4), the source columns the join equates, and their union. A point is built into
a program by :mod:`superop.synth.program_builder`.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

from sqlglot import exp

from ..dsl import BUFFERING, STREAMING, SortKey
from ..ir.nodes import Join
from .parts import Parts, RowPath, tr, unparen


# ---------------------------------------------------------------------------
# the points of the search space
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class PathChoice:
    guarded: bool       # accumulators fold only rows passing the path's summary predicate
    flagged: bool       # an emptiness flag guards the path's output


@dataclass(frozen=True)
class Choice:
    keys: tuple[str, ...]
    paths: tuple[PathChoice, ...]        # per AggPath
    emits: tuple[str, ...] = ("all",)   # DU: ("all",); joins: subset of both/left/right
    null_keys: bool = True               # exclude NULL keys from matching
    null_safe_not: bool = True
    sort: tuple[SortKey, ...] = ()
    memory: str = STREAMING

    def describe(self) -> str:
        parts = [f"keys={list(self.keys)}"]
        for i, p in enumerate(self.paths):
            parts.append(f"path{i + 1}(guard={'y' if p.guarded else 'n'}, flag={'y' if p.flagged else 'n'})")
        parts.append(f"emits={list(self.emits)}")
        parts.append(f"null-key-guard={'y' if self.null_keys else 'n'}")
        parts.append(f"null-safe-not={'y' if self.null_safe_not else 'n'}")
        if self.sort:
            parts.append("sort=" + ", ".join(s.pretty() for s in self.sort))
        parts.append(self.memory)
        return " ".join(parts)


def key_candidates(parts: Parts) -> list[tuple[str, ...]]:
    """Partition-key sets to try, smallest first: each γ's keys traced down to the source,
    the columns the join equates, and the union of all of them."""
    sets: list[tuple[str, ...]] = []

    def add(cols, allow_empty=False):
        t = tuple(dict.fromkeys(cols))
        if (t or allow_empty) and t not in sets:
            sets.append(t)

    for p in parts.agg_paths:
        ks = p.key_columns()
        if ks is None:
            # a computed key (GROUP BY a + 1): partitioning by the columns it reads is
            # right when the expression is injective; the tests decide
            ks = [c.name for k in p.keys for c in k.find_all(exp.Column)]
        # a global aggregate: one partition (the whole input)
        add(ks, allow_empty=not p.keys)
    if isinstance(parts.core, Join):
        add(_join_source_columns(parts))
    allc: list[str] = []
    for s in sets:
        allc += s
    add(allc)
    sets.sort(key=len)
    return sets


def _join_source_columns(parts: Parts) -> list[str]:
    """Source columns that both sides of an equi conjunct carry unchanged."""
    j: Join = parts.core
    out = []
    for le, re_ in j.equi:
        a = _side_source(parts.paths[0], le)
        b = _side_source(parts.paths[1], re_)
        if a is not None and a == b:
            out.append(a)
    return out


def _side_source(path, e: exp.Expression) -> Optional[str]:
    """The source column an expression at a core input carries unchanged (or None)."""
    if isinstance(path, RowPath):
        x = unparen(tr(e, path.top_fields, path.out))
        return x.name if isinstance(x, exp.Column) and x.table == "row" else None
    x = unparen(tr(e, path.top_fields, path.up_map))
    x = unparen(tr(x, path.agg.fields, path.items))
    if isinstance(x, exp.Column):
        return x.name
    return None


# ---------------------------------------------------------------------------
# enumerating choices
# ---------------------------------------------------------------------------
def _subsets(items: Sequence[str]) -> list[tuple[str, ...]]:
    out = []
    for r in range(1, len(items) + 1):
        out.extend(itertools.combinations(items, r))
    return out


def choices(parts: Parts) -> Iterator[Choice]:
    """Every point of the search space (unordered; the caller sorts by program size)."""
    path_opts = []
    for p in parts.agg_paths:
        if p.low_pred is None:
            path_opts.append([PathChoice(False, False)])
        else:
            path_opts.append([PathChoice(g, f) for g in (False, True) for f in (False, True)])
    keysets = key_candidates(parts)
    if parts.product:
        # a global aggregate's row exists whatever its filter keeps: no emptiness flags
        opts = [[PathChoice(g, False) for g in ((False, True) if p.low_pred is not None else (False,))]
                for p in parts.agg_paths]
        for pcs in itertools.product(*opts):
            yield Choice((), tuple(pcs))
        return
    if parts.is_union:
        for ks in keysets:
            for pcs in itertools.product(*path_opts):
                yield Choice(ks, tuple(pcs))
        return
    j: Join = parts.core
    if parts.row_side is None:
        cases = ("both", "left") if j.kind in ("semi", "anti") else ("both", "left", "right")
        emit_sets = _subsets(cases)
        sorts_mem = [((), STREAMING)]
    else:
        cases = ("both", "left") if j.kind in ("semi", "anti") else ("both", "left", "right")
        emit_sets = _subsets(cases)
        sorts_mem = [(s, STREAMING) for s in _sort_options(parts)] + [((), BUFFERING)]
    for ks in keysets:
        for pcs in itertools.product(*path_opts):
            for em in emit_sets:
                has_neg = any(x != "both" for x in em)
                for nk in (False, True):
                    for ns in ((False, True) if has_neg else (True,)):
                        for s, mem in sorts_mem:
                            yield Choice(ks, tuple(pcs), em, nk, ns, s, mem)


def _sort_options(parts: Parts) -> list[tuple[SortKey, ...]]:
    """No sort, or a sort on a column an aggregate's argument reads (asc/desc, NULLs
    first/last) — the orders under which a running value may equal the final one (for
    min(b + 0) a sort on b does; for min(b + c) none does, and the search finds out)."""
    opts: list[tuple[SortKey, ...]] = [()]
    for p in parts.agg_paths:
        for item in p.items:
            for call in item.find_all(exp.AggFunc):
                if call.this is None or isinstance(call.this, exp.Star):
                    continue
                for col in call.this.find_all(exp.Column):
                    for asc in (True, False):
                        for nf in (False, True):
                            s = (SortKey(col.name, asc, nf),)
                            if s not in opts:
                                opts.append(s)
    return opts
