"""Deterministic text rendering of plans and the paper's shape strings."""
from __future__ import annotations

from typing import Sequence

from sqlglot import exp

from .dialect import DIALECT
from .nodes import (
    Aggregate,
    GroupingAggregate,
    Join,
    Limit,
    Node,
    Opaque,
    Project,
    Rename,
    Scan,
    Select,
    Sort,
    UnionAll,
    Window,
    expressions_of,
    parents,
)

JOIN_SYMBOL = {"inner": "⋈", "left": "⟕", "right": "⟖", "full": "⟗", "semi": "⋉", "anti": "▷",
               "cross": "×"}


def sql_of(e: exp.Expr) -> str:
    return e.sql(dialect=DIALECT)


def _items(items: Sequence[tuple[exp.Expr, str]]) -> str:
    return ", ".join(f"{sql_of(e)} AS {n}" if not (isinstance(e, exp.Column) and e.name == n)
                     else sql_of(e) for e, n in items)


def describe(node: Node) -> str:
    """One line: operator and its attributes."""
    if isinstance(node, Scan):
        return f"Scan {node.table} [{', '.join(f'{c}:{t}' for c, t in node.columns)}]"
    if isinstance(node, Opaque):
        return f"Opaque [{', '.join(node.output)}] ({node.reason}) {node.sql}"
    if isinstance(node, Select):
        return f"Select {sql_of(node.predicate)}"
    if isinstance(node, Project):
        q = f" as {node.qualifier}" if node.qualifier else ""
        return f"Project {_items(node.items)}{q}"
    if isinstance(node, Rename):
        maps = ", ".join(f"{f} -> {n}" for f, n in node.mapping)
        return f"Rename {node.qualifier or '-'} [{maps}]"
    if isinstance(node, Aggregate):
        keys = ", ".join(sql_of(k) for k in node.keys)
        q = f" as {node.qualifier}" if node.qualifier else ""
        return f"Aggregate keys=[{keys}] {_items(node.items)}{q}"
    if isinstance(node, GroupingAggregate):
        q = f" as {node.qualifier}" if node.qualifier else ""
        return f"GroupingAggregate {sql_of(node.group)} {_items(node.items)}{q}"
    if isinstance(node, Join):
        eq = " AND ".join(f"{sql_of(a)} = {sql_of(b)}" for a, b in node.equi)
        res = f" residual={sql_of(node.residual)}" if node.residual is not None else ""
        return f"Join {node.kind} on [{eq}]{res}"
    if isinstance(node, UnionAll):
        return f"UnionAll n={len(node.inputs)}" + (f" as {node.qualifier}" if node.qualifier else "")
    if isinstance(node, Sort):
        return "Sort " + ", ".join(sql_of(o) for o in node.order)
    if isinstance(node, Limit):
        return f"Limit {node.limit}" + (f" offset {node.offset}" if node.offset else "")
    if isinstance(node, Window):
        return f"Window {_items(node.items)}"
    return node.op


def render(root: Node) -> str:
    """Indented tree, children in order. A shared node gets a label ``#k`` at its
    first (pre-order) occurrence and is printed as ``-> #k`` afterwards."""
    ps = parents(root)
    labels: dict[int, int] = {}
    lines: list[str] = []

    def go(n: Node, depth: int) -> None:
        pad = "  " * depth
        shared = len(ps.get(id(n), ())) >= 2
        if shared and id(n) in labels:
            lines.append(f"{pad}-> #{labels[id(n)]}")
            return
        tag = ""
        if shared:
            labels[id(n)] = len(labels) + 1
            tag = f"#{labels[id(n)]} "
        lines.append(f"{pad}{tag}{describe(n)}")
        for c in n.children:
            go(c, depth + 1)

    go(root, 0)
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Shape strings (Table 2 of the super-operator paper)
# ---------------------------------------------------------------------------
def _used_columns(n: Node) -> int:
    cols = set()
    for e in expressions_of(n):
        for c in e.find_all(exp.Column):
            cols.add(c.name)
    if isinstance(n, Rename):
        return len(n.renames)
    return len(cols)


def symbol(n: Node, counts: bool = False) -> str:
    """The operator's symbol in a shape string ('' for ops shapes omit)."""
    if isinstance(n, Select):
        s = "σ"
    elif isinstance(n, Project):
        s = "π"
    elif isinstance(n, Rename):
        if n.is_identity():
            return ""  # a FROM alias is not an operator
        s = "ρ"
    elif isinstance(n, Aggregate):
        s = "γ"
    elif isinstance(n, GroupingAggregate):
        s = "Γ"                    # γ over grouping sets: no family reads it
    elif isinstance(n, Sort):
        s = "τ"
    elif isinstance(n, Limit):
        s = "λ"
    elif isinstance(n, Window):
        s = "ω"
    elif isinstance(n, Join):
        s = JOIN_SYMBOL[n.kind]
    elif isinstance(n, UnionAll):
        s = "∪"
    else:
        return ""
    if counts and not isinstance(n, (UnionAll,)):
        k = _used_columns(n)
        if k:
            s += str(k)
    return s


OPTIONAL_SYMBOLS = ("σ", "π", "ρ")


def shape(root: Node, counts: bool = False) -> str:
    """Post-order shape string: optional operators (σ π ρ) are written together,
    core operators (γ, joins, ∪, τ, λ, ω) separated by '|'; a multi-input operator
    writes its inputs' shapes in parentheses before its symbol. A branch stops at
    a shared node (the Spool), a scan, or an opaque node — none of them printed.

    e.g. ``(σπ|γ|σ, σ|γ|πρ)∪`` for the paper's query 1."""
    ps = parents(root)

    def branch(n: Node, is_root: bool) -> list[str]:
        # Returns segments bottom-up; optional runs are merged into one segment.
        if not is_root and len(ps.get(id(n), ())) >= 2:
            return []
        if isinstance(n, (Scan, Opaque)):
            return []
        if isinstance(n, (Join, UnionAll)):
            inner = ", ".join("|".join(branch(c, False)) for c in n.children)
            return [f"({inner}){symbol(n, counts)}"]
        below = branch(n.children[0], False)
        sym = symbol(n, counts)
        if not sym:
            return below
        if sym[0] in OPTIONAL_SYMBOLS:
            if below and below[-1] and below[-1][0] in OPTIONAL_SYMBOLS and "(" not in below[-1]:
                return below[:-1] + [below[-1] + sym]
            return below + [sym]
        return below + [sym]

    return "|".join(branch(root, True))
