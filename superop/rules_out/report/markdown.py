"""Report blocks as Markdown (GitHub-flavoured). Charts are in report.html only."""
from __future__ import annotations

import re
from typing import Sequence

from .blocks import Block, Bullets, Code, Facts, Figure, Group, Heading, Para, Table

_LINK = re.compile(r"\[([^\]`]+)\]\(#[^)]+\)")


def _text(text: str) -> str:
    # in-page links point at HTML anchors: Markdown keeps their text
    return _LINK.sub(r"\1", str(text))


def _cell(text: str) -> str:
    # a '|' would end the cell (also inside `code`); a newline would end the row
    return " ".join(_text(text).split()).replace("|", "\\|")


def render_markdown(blocks: Sequence[Block]) -> str:
    """Markdown of report blocks."""
    lines: list[str] = []
    _render(blocks, lines)
    return "\n".join(lines).rstrip("\n") + "\n"


def _render(blocks: Sequence[Block], lines: list[str]) -> None:
    for b in blocks:
        if isinstance(b, Heading):
            lines += ["#" * b.level + " " + _text(b.text), ""]
        elif isinstance(b, Para):
            lines += [("> " if b.cls == "hint" else "") + _text(b.text), ""]
        elif isinstance(b, Bullets):
            lines += [f"- {_text(i)}" for i in b.items] + [""]
        elif isinstance(b, Facts):
            lines += [f"- {k}: {_text(v)}" for k, v in b.pairs] + [""]
        elif isinstance(b, Table):
            lines.append("| " + " | ".join(_cell(h) for h in b.header) + " |")
            lines.append("|" + "".join("---:|" if i in b.numeric else "---|" for i in range(len(b.header))))
            lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in b.rows]
            lines.append("")
        elif isinstance(b, Code):
            fence = "```"
            while fence in b.text:
                fence += "`"
            lines += ([_text(b.label), ""] if b.label else []) + [fence + b.lang, b.text, fence, ""]
        elif isinstance(b, Group) and b.cls == "glance":    # figures first: "13 rules in the catalog"
            lines += [f"- {_text(v)} {_text(k)}" for f in b.blocks if isinstance(f, Facts) for k, v in f.pairs]
            lines.append("")
        elif isinstance(b, Group):
            _render(b.blocks, lines)
        elif isinstance(b, Figure):
            continue
