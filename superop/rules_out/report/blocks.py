"""The report's building blocks: the content is built once as blocks, then written as
Markdown (:mod:`.markdown`) or HTML (:mod:`.html`). In block text, inline code is marked
with backticks; everything else is plain text (the renderers escape it)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence, Union


@dataclass
class Heading:
    level: int
    text: str
    anchor: str = ""            # an id to link to (HTML)


@dataclass
class Para:
    text: str
    cls: str = ""               # "note" (muted), "hint" (what to change), "lead"


@dataclass
class Bullets:
    items: list[str]


@dataclass
class Facts:
    """Label -> value pairs (a definition list; a two-column table in Markdown)."""
    pairs: list[tuple[str, str]]


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    numeric: Sequence[int] = ()     # right-aligned columns


@dataclass
class Code:
    text: str
    lang: str = ""
    label: str = ""


@dataclass
class Figure:
    """A picture embedded in the page (``data``: the file's bytes, ``mime`` its type);
    ``alt`` says in words what it shows."""
    data: bytes
    mime: str
    alt: str
    caption: str = ""


@dataclass
class Group:
    """Blocks laid out together (HTML: a ``div`` of class ``cls``, e.g. "card", "pair"
    for two columns on a wide screen); Markdown writes the blocks one after the other."""
    cls: str
    blocks: list["Block"] = field(default_factory=list)


Block = Union[Heading, Para, Bullets, Facts, Table, Code, Figure, Group]
