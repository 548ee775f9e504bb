"""The catalog report renders as Markdown whose tables survive `|` in rule shapes, and as
real HTML (tables, headings, code blocks), not Markdown inside <pre>."""
from __future__ import annotations

import re
from html.parser import HTMLParser

from superop.rules_out.catalog import make_catalog, make_rule
from superop.rules_out.report import to_html, to_markdown


def catalog():
    cat = make_catalog([make_rule("DJ", join_kinds=["inner", "left"]),
                        make_rule("DU", branches=3)], version="t")
    cat["rejected"] = [{"candidate": "DJ-1", "shape": "(σ|γ, γ)⋈", "reason": "refuted: a|b"}]
    cat["report"] = {"queries_read": 10, "rules": 2}
    return cat


def md_cells(line: str) -> list[str]:
    """Cells of a GFM table row: split on '|' not escaped by a backslash."""
    inner = line.strip()[1:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", inner)]


def test_markdown_tables_keep_their_columns():
    md = to_markdown(catalog())
    tables, cur = [], []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            tables.append(cur)
            cur = []
    assert len(tables) == 3                    # run summary, rules, not admitted
    for t in tables:
        width = len(md_cells(t[0]))
        assert all(len(md_cells(row)) == width for row in t), t
    rules = tables[1]
    assert md_cells(rules[2])[1].startswith("`(") and "\\|γ\\|" in md_cells(rules[2])[1]
    assert md_cells(tables[2][2])[2] == "refuted: a\\|b"


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.cells: list[list[str]] = []
        self._row = None
        self._cell = None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._row is not None:
            self._row.append(self._cell)
            self._cell = None
        elif tag == "tr":
            self.cells.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def test_html_is_real_html():
    page = to_html(catalog())
    p = _Tags()
    p.feed(page)
    assert p.tags.count("table") == 3 and "h1" in p.tags and "h3" in p.tags
    assert "pre" in p.tags                    # tree drawings only
    rules_header = next(r for r in p.cells if r and r[0] == "id")
    assert len(rules_header) == 7
    dj = next(r for r in p.cells if r and r[0] == "dj-inner-left")
    assert len(dj) == 7 and dj[1].startswith("([σπρ]*|γ|")    # the shape's '|' kept as text
    assert "| id |" not in page and "```" not in page          # no Markdown left in it
    assert "<script" not in page.lower()
