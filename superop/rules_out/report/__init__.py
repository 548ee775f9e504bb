"""The catalog report an engineer reads (report.md, report.html): the rules with their
trees, support, proofs and an example before and after; charts of where the log's time
goes and what the rewrite saves; the recurring near-misses with what to change in the
query; sharing opportunities; what was not admitted.

``content`` decides what is said (as blocks), ``markdown`` and ``html`` write it, ``plots``
draws the charts (matplotlib), ``fonts`` embeds the join symbols' font.
"""
from __future__ import annotations

from typing import Optional

from .blocks import Block
from .content import report_blocks, title
from .html import render_html
from .markdown import render_markdown
from .rules import After, draw_tree
from .sharing import section_blocks

__all__ = ["to_markdown", "to_html", "report_blocks", "render_markdown", "render_html", "draw_tree",
           "section_blocks", "markdown_section"]


def to_markdown(catalog: dict, after: After = None) -> str:
    """The report as Markdown (charts are in the HTML report only)."""
    return render_markdown(report_blocks(catalog, after, charts=False))


def to_html(catalog: dict, after: After = None, charts: Optional[bool] = None) -> str:
    """The report as one self-contained HTML page (no script, no external resource), e.g.
    for MLflow's artifact viewer. ``charts``: default when matplotlib is installed."""
    return render_html(report_blocks(catalog, after, charts), title(catalog))


def markdown_section(section: Optional[dict]) -> list[str]:
    """Markdown lines of the sharing section (:func:`section_blocks`)."""
    blocks: list[Block] = section_blocks(section)
    return render_markdown(blocks).splitlines() if blocks else []
