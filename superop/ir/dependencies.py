"""Functional dependencies of a plan node, derived from the declared keys on its scans
(``superop.ir.keys``) through filters, projections, renames and the preserved sides of
joins: which output columns determine which."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from sqlglot import exp

from .nodes import Join, Limit, Node, Project, Rename, Scan, Select, Sort, resolve_field


@dataclass(frozen=True)
class Dependency:
    """Rows of a node that agree (NULL-safe) on the output positions ``by`` agree on
    ``on``; ``origin`` is the declaration it comes from (``table: key``)."""
    by: frozenset[int]
    on: frozenset[int]
    origin: str


def dependencies(node: "Node") -> list[Dependency]:
    """The dependencies among ``node``'s output columns that its tables' declared keys
    give. Conservative: carried through filters, sorts, bare-column projections and
    renames, and the sides of joins whose rows are never NULL-padded (both sides of an
    inner/cross join, the preserved side of an outer join, the left of a semi/anti join);
    nothing through aggregates, windows, unions or computed columns."""
    if isinstance(node, Scan):
        names = [c.lower() for c, _ in node.columns]
        out = []
        for k in node.keys:
            try:
                by = frozenset(names.index(c.lower()) for c in k.columns)
                on = (frozenset(range(len(names))) if k.determines is None
                      else frozenset(names.index(c.lower()) for c in k.determines))
            except ValueError:
                continue
            out.append(Dependency(by, on, f"{node.table}: {k.text()}"))
        return out
    if isinstance(node, (Select, Sort, Limit)):
        return dependencies(node.children[0])
    if isinstance(node, (Project, Rename)):
        child = node.children[0]
        carried: dict[int, list[int]] = {}      # child position -> output positions
        for i in range(len(node.fields)):
            j = _carried_from(node, i)
            if j is not None:
                carried.setdefault(j, []).append(i)
        out = []
        for d in dependencies(child):
            if not all(j in carried for j in d.by):
                continue
            on = frozenset(i for j in d.on | d.by if j in carried for i in carried[j])
            out.append(Dependency(frozenset(carried[j][0] for j in d.by), on, d.origin))
        return out
    if isinstance(node, Join):
        nl = len(node.left.fields)
        left = dependencies(node.left) if node.kind in ("inner", "cross", "left", "semi", "anti") else []
        right = dependencies(node.right) if node.kind in ("inner", "cross", "right") else []
        return left + [Dependency(frozenset(i + nl for i in d.by), frozenset(i + nl for i in d.on), d.origin)
                       for d in right]
    return []


def _carried_from(node: "Node", i: int) -> Optional[int]:
    """The child position output ``i`` of a projection/rename carries unchanged."""
    child = node.children[0]
    try:
        if isinstance(node, Rename):
            return resolve_field(child.fields, node.mapping[i][0].column())
        assert isinstance(node, Project)
        e = node.items[i][0]
        while isinstance(e, (exp.Paren, exp.Alias)):
            e = e.this
        return resolve_field(child.fields, e) if isinstance(e, exp.Column) else None
    except KeyError:
        return None


def closure(start: frozenset[int], deps: Sequence[Dependency]) -> tuple[frozenset[int], tuple[Dependency, ...]]:
    """The positions ``start`` determines, and the dependencies used to reach them."""
    have = set(start)
    used: list[Dependency] = []
    changed = True
    while changed:
        changed = False
        for d in deps:
            if d.by <= have and not d.on <= have:
                have |= d.on
                used.append(d)
                changed = True
    return frozenset(have), tuple(used)


# ---------------------------------------------------------------------------
# the premise a rewrite relies on
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Determines:
    """A premise on an input: rows that agree (NULL-safe) on ``by`` agree on
    ``determined`` (column names of the input). A match that needs it records it (with
    ``origins``, the declarations it was derived from — not part of what is proved); a
    program that relies on it lists it in ``Program.requires`` and the verifier proves
    the program for the inputs that satisfy it."""
    by: tuple[str, ...]
    determined: tuple[str, ...]
    origins: tuple[str, ...] = field(default=(), compare=False)

    def text(self) -> str:
        return f"{', '.join(self.by)} -> {', '.join(self.determined)}"

    def pretty(self) -> str:
        return f"requires {self.text()} (declared key)"

    def reads(self) -> tuple[str, ...]:
        return self.by + self.determined

    def to_json(self) -> dict[str, list[str]]:
        return {"by": list(self.by), "determined": list(self.determined)}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Determines":
        return Determines(tuple(d["by"]), tuple(d["determined"]))
