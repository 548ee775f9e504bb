"""One physical operator's text as ``EXPLAIN`` prints it, taken apart: attribute ids
(``a#12``), the first balanced ``[...]`` list, top-level splits that respect brackets, the
ids a projection list produces, and whether a Window orders its partitions. Pure string
work for :mod:`superop.runtime.plan_cost`; no Spark.
"""
from __future__ import annotations

import re
from typing import Optional

ATTR = re.compile(r"([\w$]+)#(\d+)L?")


def attr_ids(s: str) -> list[str]:
    return [m.group(2) for m in ATTR.finditer(s)]


def bracket(s: str, start: int = 0) -> Optional[str]:
    """The first balanced ``[...]`` in ``s`` from ``start`` (without the brackets)."""
    i = s.find("[", start)
    if i < 0:
        return None
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "[":
            depth += 1
        elif s[j] == "]":
            depth -= 1
            if depth == 0:
                return s[i + 1:j]
    return s[i + 1:]


def split_top(s: str, sep: str = ",") -> list[str]:
    out, depth, cur = [], 0, []
    i = 0
    while i < len(s):
        ch = s[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if depth == 0 and s.startswith(sep, i):
            out.append("".join(cur).strip())
            cur = []
            i += len(sep)
            continue
        cur.append(ch)
        i += 1
    if cur or out:
        out.append("".join(cur).strip())
    return [x for x in out if x]


def window_orders(text: str) -> bool:
    """Does a physical ``Window [functions], [partition keys], [order keys]`` order its
    partitions (a third, non-empty list; a partition-wide window prints two)?"""
    i = text.find("[")
    groups = split_top(text[i:]) if i >= 0 else []
    return len(groups) >= 3 and groups[2].strip() not in ("[]", "")


def named_outputs(items: str) -> list[str]:
    """Attribute ids a projection list produces (``x#1`` or ``expr AS y#2``)."""
    out = []
    for it in split_top(items):
        m = re.search(r" AS [\w$`]+#(\d+)L?\s*$", it)
        if m:
            out.append(m.group(1))
        else:
            ids = attr_ids(it)
            if ids:
                out.append(ids[-1])
    return out


def strip_parens(s: str) -> str:
    s = s.strip()
    while s.startswith("(") and s.endswith(")"):
        depth = 0
        for i, ch in enumerate(s):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and i < len(s) - 1:
                return s
        s = s[1:-1].strip()
    return s
