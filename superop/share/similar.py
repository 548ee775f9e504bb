"""Similar sub-expressions (SEs): the paper's Algorithm 1 over the units of a batch.

Fingerprint. A unit's fingerprint is the Merkle fingerprint of its normalized plan
(:func:`superop.share.canonical.fingerprint_tree`) computed by the nightly job's
:class:`superop.mining.fingerprint.Fingerprinter`: loose for σ and π (their predicates and
columns are not hashed), strict for joins and aggregates (join conditions, grouping
keys). Because that fingerprint abstracts literals inside strict operators too, units
with one fingerprint are split further by their exact strict signature (a join on
``a.x = b.y + 1`` is not one on ``a.x = b.y + 2``). Scans are the same relation only when
the IR gives them the same table identity (``Scan.table``, which carries the qualified
name ``db.t`` where the IR resolves it).

Lookup (Algorithm 1). Every query's units are visited top-down (an aggregate before its
block, a block before the inputs of its joins). A unit whose fingerprint occurs at least
``k`` times in the batch is added to the fingerprint table; the lookup goes below it
only if it contains a join (the paper's cache-unfriendly operator), so a shared
sub-expression is found as high in the tree as possible and its join-free parts are not
offered again. One deviation: the paper adds every cache-friendly root to the table and
never looks below a join-free one; we look below a unit that no other query has (it can
never become an SE), so a shared scan under two aggregates with different keys is found.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from ..ir.nodes import Node
from ..mining.fingerprint import Fingerprinter
from .blocks import Unit, blocks_of, units_of
from .canonical import canon_of, conjunct_text, fingerprint_tree, strict_signature, unit_parts


@dataclass
class SimilarSubexpression:
    """ω: units of the batch with one fingerprint (and one strict signature)."""
    id: str
    kind: str                       # "spj" | "agg"
    fingerprint: str
    tables: tuple[str, ...]
    members: list[Unit] = field(default_factory=list)
    parent: str = ""                # a narrower SE: the SE whose members it keeps
    shared: tuple[str, ...] = ()    # ... the filter conjuncts those members all have
    narrow_key: Optional[tuple] = None   # the planner's key of a narrower SE (blocking)
    restricted: bool = False        # a narrower SE of the members a chosen CE leaves unserved

    @property
    def queries(self) -> list[int]:
        return sorted({m.query for m in self.members})

    def describe(self) -> str:
        sub = (f" ⊂ {self.parent} restricted to the queries no chosen CE serves" if self.restricted
               else f" ⊂ {self.parent} sharing {' AND '.join(self.shared)}" if self.parent else "")
        return f"{self.id} {self.kind}[{', '.join(self.tables)}] x{len(self.members)} (queries {self.queries}){sub}"


def all_units(forest: list[Unit]):
    stack = list(forest)
    while stack:
        u = stack.pop()
        yield u
        stack.extend(u.children)


def units_of_plan(plan: Node, query: int, grouping_sets: bool = True) -> list[Unit]:
    return units_of(blocks_of(plan, query, grouping_sets))


def label(units: list[Unit]) -> None:
    """Canonical form, fingerprint and SE key of every eligible unit. (One Fingerprinter
    per tree: it memoizes by node identity, and these trees are short-lived.)"""
    for u in units:
        if u.why_not or u.key is not None:
            continue
        u.canon = canon_of(u)
        u.fingerprint = Fingerprinter()(fingerprint_tree(u))
        u.key = (u.fingerprint, strict_signature(u))


def identify(forests: list[list[Unit]], k: int = 2, blocked: frozenset = frozenset()) -> list[SimilarSubexpression]:
    """Algorithm 1 (module doc). ``forests[q]`` are query q's units, top-down. Keys in
    ``blocked`` (SEs that got no sound CE) count as not shared, so the lookup goes below."""
    for forest in forests:
        label([u for u in all_units(forest) if u.key is None])
    counts = Counter(u.key for forest in forests for u in all_units(forest)
                     if u.key is not None and u.key not in blocked)
    table: dict[tuple, list[Unit]] = {}
    for forest in forests:
        stack = list(reversed(forest))
        while stack:
            u = stack.pop()
            shared = u.key is not None and counts[u.key] >= k
            if shared:
                table.setdefault(u.key, []).append(u)
            if not shared or len(u.S) >= 2:
                stack.extend(reversed(u.children))
    out, ids = [], set()
    for key, members in table.items():
        if len(members) < k:
            continue
        m0 = members[0]
        sid = f"se-{key[0][:8]}"          # stable across lookups: from the fingerprint
        while sid in ids:
            sid += "'"
        ids.add(sid)
        out.append(SimilarSubexpression(sid, m0.kind, key[0], tuple(t[0] for t in m0.canon.tables), members))
    return out


NARROWER_PER_SE = 3      # narrower SEs offered per SE (the largest member groups)


def narrower(se: SimilarSubexpression, k: int = 2, limit: int = NARROWER_PER_SE,
             blocked: frozenset = frozenset()) -> list[SimilarSubexpression]:
    """Narrower SEs of a select-project-join SE over a join: the groups of its members
    that have a filter conjunct in common (``d_moy = 11``) or that each filter one table
    (``<a filter on item>``: q53, q63 and q89 without q36, which reads every item), at
    least ``k`` and fewer than all of them, the ``limit`` largest groups (ties: more
    shared conjuncts first).

    The CE of an SE ORs every member's filters: one member that reads a whole year makes
    the CE of a dozen one-month members hold that year. The CE of a narrower SE ORs only
    its members' filters, so it stays as small as what they share. Each is built, proved
    and valued like any SE; its consumers are also consumers of the SE's own CE, so the
    two CEs conflict and the knapsack takes at most one of them for a consumer (the
    paper's groups of mutually exclusive options). Only SEs over a join: a filtered scan
    of one table is what parquet already does well (filter pushdown), a filtered join
    result is what one read of a cache replaces."""
    if se.kind != "spj" or len(se.tables) < 2 or len(se.members) <= k:
        return []
    per, filtered = [], []
    for u in se.members:
        _, filters, _ = unit_parts(u)
        per.append({conjunct_text(f) for fs in filters.values() for f in fs})
        filtered.append({j for j, fs in filters.items() if fs})
    if all(p == per[0] for p in per):
        return []                       # the SE's CE is exact already
    groups: dict[frozenset, set[str]] = {}
    for c in set().union(*per):
        idx = frozenset(i for i, p in enumerate(per) if c in p)
        if k <= len(idx) < len(se.members):
            groups.setdefault(idx, set()).add(c)
    # The members that filter one table, each its own way (q53, q63, q89: three item
    # predicates), without the member that reads that table whole (q36): its CE ORs
    # their filters only instead of holding every row of the table.
    for j, table in enumerate(se.tables):
        idx = frozenset(i for i, f in enumerate(filtered) if j in f)
        if k <= len(idx) < len(se.members):
            groups.setdefault(idx, set()).add(f"<a filter on {table}>")
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[0]), -len(kv[1]), sorted(kv[1])))
    out = []
    for idx, conj in ranked:
        if len(out) >= limit:
            break
        key = ("narrower", se.members[0].key, tuple(sorted(idx)))
        if key in blocked:
            continue
        out.append(SimilarSubexpression(f"{se.id}/{len(out) + 1}", se.kind, se.fingerprint, se.tables,
                                        [se.members[i] for i in sorted(idx)], parent=se.id,
                                        shared=tuple(sorted(conj)), narrow_key=key))
    return out


def root_of(se: SimilarSubexpression) -> str:
    """The SE a narrower or restricted SE was cut from (itself otherwise)."""
    return se.parent or se.id


def served_by(chosen: list[tuple[SimilarSubexpression, list[Unit]]], se: SimilarSubexpression) -> dict[int, frozenset]:
    """Per query, the footprint that the chosen CEs' consumer units replace (``chosen``:
    each chosen CE's SE and its consumers' units), for cutting ``se`` down
    (:func:`restricted`). A chosen CE of ``se``'s own SE (the same root: e.g. its
    restriction to three queries) is left out: it is an alternative to a CE of ``se``,
    not a reason to cut it — a query left unserved may join those three in a CE the
    knapsack weighs against theirs (q36 with q43, q98 and q65)."""
    served: dict[int, frozenset] = {}
    for ce_se, units in chosen:
        if root_of(ce_se) == root_of(se):
            continue
        for u in units:
            served[u.query] = served.get(u.query, frozenset()) | u.footprint()
    return served


def restricted(se: SimilarSubexpression, served: dict[int, frozenset], k: int = 2,
               blocked: frozenset = frozenset()) -> Optional[SimilarSubexpression]:
    """The SE cut down to the members that no chosen CE serves: ``served[q]`` is the
    footprint (``Unit.footprint``) that query q's chosen consumers replace (the planner
    passes :func:`served_by`, which leaves out the chosen CEs of the SE's own root). A member
    that meets it cannot read this SE's CE as well, so the whole CE conflicts with the
    chosen one and the knapsack could take only one of them. Its CE built over the
    other members alone (a smaller OR of filters, fewer columns) conflicts with nothing
    chosen, and is built, proved, valued and gated like any SE. None when fewer than
    ``k`` members are left or none is cut."""
    keep = [m for m in se.members if not (served.get(m.query, frozenset()) & m.footprint())]
    if len(keep) < k or len(keep) == len(se.members):
        return None
    key = ("restricted", se.members[0].key, tuple(sorted(id(m) for m in keep)))
    if key in blocked:
        return None
    tag = ".".join(str(q) for q in sorted({m.query for m in keep}))
    return SimilarSubexpression(f"{se.id}/r{tag}", se.kind, se.fingerprint, se.tables,
                                keep, parent=se.id, narrow_key=key, restricted=True)
