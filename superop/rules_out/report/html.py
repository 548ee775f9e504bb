"""Report blocks as one self-contained HTML page: no script, no external resource (charts
and the symbol font are data URIs), so MLflow's artifact viewer and a mail client show it
as written. The layout follows the screen: the content column is at most 1180 px wide,
tables take the column's width and wrap their cells, code scrolls inside its box, and
side-by-side pairs stack on a narrow screen."""
from __future__ import annotations

import base64
import html
import re
from typing import Sequence

from .blocks import Block, Bullets, Code, Facts, Figure, Group, Heading, Para, Table
from .fonts import FAMILY, font_face_css

_LINK = re.compile(r"\[([^\]]+)\]\(#([A-Za-z0-9_.-]+)\)")

_SANS = (f'"{FAMILY}",system-ui,-apple-system,"Segoe UI","Noto Sans","DejaVu Sans","Liberation Sans",'
         'Arial,"Noto Sans Math","STIX Two Math",sans-serif')
_MONO = (f'"{FAMILY}",ui-monospace,SFMono-Regular,"DejaVu Sans Mono","Liberation Mono",Menlo,Consolas,'
         '"Noto Sans Math",monospace')

_CSS = """
:root{color-scheme:light;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg2:#f6f8fa;--accent:#1f5f9e;--warn:#d9822b}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 SANS;color:var(--fg);background:#fff}
main{max-width:1180px;margin:0 auto;padding:1.2rem clamp(.75rem,3vw,2rem) 4rem}
h1{font-size:1.6rem;line-height:1.25;margin:.3em 0 .2em}
h2{font-size:1.3rem;margin:2.2em 0 .6em;padding-bottom:.3em;border-bottom:1px solid var(--line)}
h3{font-size:1.05rem;margin:0 0 .5em}
a{color:var(--accent)}
code,pre{font-family:MONO;font-size:.87em}
code{background:var(--bg2);padding:.05em .3em;border-radius:4px;overflow-wrap:anywhere}
pre{background:var(--bg2);border:1px solid var(--line);border-radius:6px;padding:.7em .9em;margin:.3em 0 1em;
 overflow:auto;max-height:24em;line-height:1.35;tab-size:2}
pre code{background:none;padding:0;overflow-wrap:normal;font-size:1em}
.label{margin:.2em 0 .1em;color:var(--muted);font-size:.9em}
.table-wrap{overflow-x:auto;margin:.8em 0 1.2em}
table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid var(--line);padding:.4em .6em;text-align:left;vertical-align:top;overflow-wrap:break-word}
th{background:var(--bg2);font-weight:600;font-size:.92em}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td.num{white-space:nowrap}
td code{overflow-wrap:anywhere}
.card{border:1px solid var(--line);border-radius:8px;padding:1em 1.2em;margin:1.2em 0}
.pair{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,400px),1fr));gap:.4em 1.2em;align-items:start}
.pair>*{min-width:0}
dl.facts{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.3em 1em;margin:.3em 0 1em}
dl.facts dt{color:var(--muted)}
dl.facts dd{margin:0;overflow-wrap:anywhere}
p.hint{border-left:4px solid var(--warn);background:#fdf3e8;padding:.55em .9em;border-radius:0 6px 6px 0}
p.note{color:var(--muted);font-size:.92em}
figure{margin:1em 0 1.4em}
figure img{display:block;max-width:100%;height:auto}
figcaption{color:var(--muted);font-size:.9em;margin-top:.3em}
nav.toc{display:flex;flex-wrap:wrap;gap:.3em 1.2em;padding:.6em 0;border-bottom:1px solid var(--line);font-size:.95em}
details{margin:.3em 0 .8em}
details>summary{cursor:pointer;color:var(--accent)}
.glance{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:.8em;margin:1em 0}
.glance>div{border:1px solid var(--line);border-radius:8px;padding:.6em .8em}
.glance b{display:block;font-size:1.5rem;line-height:1.2}
.glance span{color:var(--muted);font-size:.88em}
.legend{color:var(--muted);font-size:.9em}
@media (max-width:640px){dl.facts{grid-template-columns:minmax(0,1fr)}dl.facts dd{margin-bottom:.4em}}
""".replace("SANS", _SANS).replace("MONO", _MONO)


def inline(text: str) -> str:
    """Block text as HTML: `code` in backticks, [text](#anchor) as a link, the rest escaped."""
    out = []
    for i, part in enumerate(str(text).split("`")):
        esc = html.escape(part)
        out.append(f"<code>{esc}</code>" if i % 2 else _LINK.sub(r'<a href="#\2">\1</a>', esc))
    return "".join(out)


def _table(b: Table) -> str:
    def cls(i: int) -> str:
        return ' class="num"' if i in b.numeric else ""
    head = "".join(f"<th{cls(i)}>{inline(h)}</th>" for i, h in enumerate(b.header))
    rows = "".join("<tr>" + "".join(f"<td{cls(i)}>{inline(c)}</td>" for i, c in enumerate(row)) + "</tr>"
                   for row in b.rows)
    return f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>'


def _code(b: Code) -> str:
    label = f'<p class="label">{inline(b.label)}</p>' if b.label else ""
    lang = f' class="language-{b.lang}"' if b.lang else ""
    return f'<div class="code">{label}<pre><code{lang}>{html.escape(b.text)}</code></pre></div>'


def _figure(b: Figure) -> str:
    src = f"data:{b.mime};base64,{base64.b64encode(b.data).decode('ascii')}"
    cap = f"<figcaption>{inline(b.caption)}</figcaption>" if b.caption else ""
    return f'<figure><img src="{src}" alt="{html.escape(b.alt)}">{cap}</figure>'


def _group(b: Group) -> str:
    if b.cls == "fold" and b.blocks and isinstance(b.blocks[0], Para):
        return (f"<details><summary>{inline(b.blocks[0].text)}</summary>"
                + render_blocks(b.blocks[1:]) + "</details>")
    if b.cls == "glance" and all(isinstance(x, Facts) for x in b.blocks):
        cells = "".join(f"<div><b>{inline(v)}</b><span>{inline(k)}</span></div>"
                        for f in b.blocks if isinstance(f, Facts) for k, v in f.pairs)
        return f'<div class="glance">{cells}</div>'
    return f'<div class="{html.escape(b.cls)}">{render_blocks(b.blocks)}</div>'


def render_block(b: Block) -> str:
    if isinstance(b, Heading):
        anchor = f' id="{html.escape(b.anchor)}"' if b.anchor else ""
        return f"<h{b.level}{anchor}>{inline(b.text)}</h{b.level}>"
    if isinstance(b, Para):
        cls = f' class="{html.escape(b.cls)}"' if b.cls else ""
        return f"<p{cls}>{inline(b.text)}</p>"
    if isinstance(b, Bullets):
        return "<ul>" + "".join(f"<li>{inline(i)}</li>" for i in b.items) + "</ul>"
    if isinstance(b, Facts):
        return '<dl class="facts">' + "".join(f"<dt>{inline(k)}</dt><dd>{inline(v)}</dd>" for k, v in b.pairs) + "</dl>"
    if isinstance(b, Table):
        return _table(b)
    if isinstance(b, Code):
        return _code(b)
    if isinstance(b, Figure):
        return _figure(b)
    return _group(b)


def render_blocks(blocks: Sequence[Block]) -> str:
    return "\n".join(render_block(b) for b in blocks)


def _toc(blocks: Sequence[Block]) -> str:
    links = [f'<a href="#{html.escape(b.anchor)}">{inline(b.text)}</a>'
             for b in blocks if isinstance(b, Heading) and b.level == 2 and b.anchor]
    return f'<nav class="toc">{"".join(links)}</nav>' if links else ""


def render_html(blocks: Sequence[Block], title: str) -> str:
    """The page: the first block (the title) and the blocks up to the first section, a
    table of contents of the sections, then the sections."""
    first = next((i for i, b in enumerate(blocks) if isinstance(b, Heading) and b.level == 2), len(blocks))
    body = render_blocks(blocks[:first]) + "\n" + _toc(blocks) + "\n" + render_blocks(blocks[first:])
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(title)}</title><style>{font_face_css()}{_CSS}</style></head>\n"
            f"<body><main>\n{body}\n</main></body></html>\n")
