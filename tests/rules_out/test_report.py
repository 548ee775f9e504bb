"""The catalog report: Markdown whose tables survive `|` in rule shapes; real HTML (tables,
headings, code, charts as data URIs, no script, no external resource); readable words (no
snake_case keys, no None/null); the near-miss section with the hint each reason declares;
the embedded font covers the join symbols."""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from superop.families import reason_codes
from superop.ir.render import JOIN_SYMBOL
from superop.rules_out.catalog import SCHEMA_PATH, generated_schema, problems
from superop.rules_out.report import fonts, plots, to_html, to_markdown

from .report_catalog import report_catalog


def md_cells(line: str) -> list[str]:
    """Cells of a GFM table row: split on '|' not escaped by a backslash."""
    inner = line.strip()[1:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", inner)]


def md_tables(md: str) -> list[list[str]]:
    tables, cur = [], []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            tables.append(cur)
            cur = []
    return tables


def test_markdown_tables_keep_their_columns():
    md = to_markdown(report_catalog())
    tables = md_tables(md)
    assert len(tables) == 3                    # rules, near-misses, not admitted
    for t in tables:
        width = len(md_cells(t[0]))
        assert all(len(md_cells(row)) == width for row in t), t
    rules = tables[0]
    assert md_cells(rules[2])[0] == "dj-inner-left-right-full"          # the in-page link's text
    assert md_cells(rules[2])[2].startswith("`(") and "\\|γ\\|" in md_cells(rules[2])[2]
    assert md_cells(tables[2][2])[2] == "refuted: a\\|b"
    assert "data:image" not in md                                        # charts are HTML only


class Page(HTMLParser):
    """Tags, table cells, image sources and the text a reader sees outside <code>/<pre>."""

    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.cells: list[list[str]] = []
        self.images: list[str] = []
        self.prose: list[str] = []
        self._row = None
        self._cell = None
        self._code = 0
        self._style = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = ""
        elif tag in ("code", "pre"):
            self._code += 1
        elif tag == "img":
            self.images.append(dict(attrs)["src"])
        self._style = tag in ("style", "title")

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._row is not None:
            self._row.append(self._cell)
            self._cell = None
        elif tag == "tr":
            self.cells.append(self._row)
            self._row = None
        elif tag in ("code", "pre"):
            self._code -= 1
        self._style = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data
        if not self._code and not self._style:
            self.prose.append(data)


def parse(text: str) -> Page:
    p = Page()
    p.feed(text)
    return p


@pytest.fixture(scope="module")
def html_page() -> tuple[str, Page]:
    """The report catalog's page, rendered once for the tests that only read it."""
    text = to_html(report_catalog())
    return text, parse(text)


def test_html_is_real_html_and_self_contained(html_page):
    text, p = html_page
    assert p.tags.count("table") == 3 and "h1" in p.tags and "h3" in p.tags and "pre" in p.tags
    header = next(r for r in p.cells if r and r[0] == "Rule")
    dj = next(r for r in p.cells if r and r[0] == "dj-inner-left-right-full")
    assert len(dj) == len(header) == 8 and dj[2].startswith("([σπρ]*|γ|")   # the shape's '|' kept
    assert dj[6] == "3 → 1"                                                   # shuffles before → after
    assert "| Rule |" not in text and "```" not in text                       # no Markdown left in it
    assert "<script" not in text.lower()
    # nothing is fetched: every src/href is in the page
    assert not re.search(r"""(src|href)=["'](?!#|data:)""", text)
    assert re.search(r"url\(data:font/woff;base64,", text)


def test_labels_are_words(html_page):
    _, p = html_page
    prose = " ".join(p.prose)
    assert not re.search(r"\b(None|null|nan)\b", prose), prose
    assert not re.findall(r"\b[a-z]+_[a-z_]+\b", prose)                       # no snake_case keys
    assert "Candidates recurring in one template" in prose and "Malformed log lines" in prose
    assert "seen" not in prose.lower().split()                               # no first/last seen known
    assert "Log window" not in prose                                         # the window is not known


def test_near_miss_section_says_what_to_change(html_page):
    cat = report_catalog()
    _, p = html_page
    prose = " ".join(p.prose)
    assert "Near-misses: what to change in the query" in prose
    for nm in cat["near_misses"]["items"]:
        assert reason_codes()[nm["reason"]].hint in prose                     # the family's own hint
    assert "12 near-miss variants found, 3 recurring" in prose
    md = to_markdown(cat)
    assert "> What to change: " + reason_codes()["join_on_subset_of_keys"].hint in md
    # an old catalog without the summary says so instead of pretending there are none
    del cat["near_misses"]
    assert "carries no near-miss summary" in to_markdown(cat)


@pytest.mark.skipif(plots.unavailable() is not None, reason="matplotlib is not installed")
def test_charts_are_svg_data_uris(html_page):
    _, p = html_page
    assert len(p.images) == 2                           # cost share, exchanges before/after
    assert all(src.startswith("data:image/svg+xml;base64,") for src in p.images)


def test_without_matplotlib_the_report_says_so(monkeypatch):
    monkeypatch.setattr(plots, "unavailable", lambda: "charts need matplotlib")
    text = to_html(report_catalog())
    p = parse(text)
    assert p.images == [] and "No charts in this report: charts need matplotlib." in text


def test_symbol_font_covers_the_join_symbols():
    from fontTools.ttLib import TTFont
    cmap = TTFont(str(fonts.FONT_PATH)).getBestCmap()
    wanted = set("".join(JOIN_SYMBOL.values()) + "∪")
    assert {ord(c) for c in wanted} <= set(cmap)
    assert fonts.FAMILY in fonts.font_face_css() and "U+27D7" in fonts.font_face_css()
    name = {r.nameID: str(r) for r in TTFont(str(fonts.FONT_PATH))["name"].names}
    assert "STIX" not in name[1] + name[4] + name[6]    # a modified OFL font drops the reserved name


def test_the_catalog_schema_file_is_the_generated_one():
    assert json.loads(SCHEMA_PATH.read_text()) == generated_schema()


def test_report_sections_are_part_of_the_catalog_schema():
    cat = report_catalog()
    cat.pop("rejected"), cat.pop("report")
    assert problems(cat, require_verified=False) == []
    del cat["near_misses"]["items"][0]["reason"]
    cat["rule_examples"]["dj-inner-left-right-full"]["exchanges_before"] = "3"
    found = problems(cat, require_verified=False)
    assert any(p.startswith("near_misses/items/0") and "'reason'" in p for p in found)
    assert any(p.startswith("rule_examples/dj-inner-left-right-full/exchanges_before") for p in found)
