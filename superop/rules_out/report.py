"""Catalog export: Markdown and HTML reports (abstract tree drawing, shape, support,
certificates, an example before/after per rule)."""
from __future__ import annotations

import datetime as _dt
import html
import json
from dataclasses import dataclass
from typing import Callable, Optional

from .. import families
from ..families import Side
from ..families.coverage import admitted


def draw_tree(rule: dict) -> str:
    """A text drawing of the rule's abstract operator tree (the family draws it), root on
    top; the Spool is the one shared leaf every path reaches."""
    fam = families.get(rule["family"])
    sides = rule.get("agg_sides") or []
    side = Side(sides[0]) if len(sides) == 1 else None
    if side is None and (rule.get("template", {}).get("parameters") or {}).get("agg_side"):
        side = Side(rule["template"]["parameters"]["agg_side"])
    return "\n".join(fam.draw_tree(rule["abstract_edges"], rule.get("join_kinds") or [],
                                    rule.get("branches", 2), side))


def _cert_summary(rule: dict) -> str:
    certs = rule.get("certificates", [])
    by = {}
    for c in certs:
        key = (c.get("status"), c.get("method"))
        by[key] = by.get(key, 0) + 1
    parts = [f"{n}× {s} ({m}{', K=' + str(_k(rule, m)) if m == 'bounded' else ''})"
             for (s, m), n in sorted(by.items(), key=lambda kv: str(kv[0]))]
    return ", ".join(parts) or "none"


def _k(rule: dict, method: str):
    ks = sorted({c.get("K") for c in rule.get("certificates", []) if c.get("method") == method and c.get("K")})
    return "/".join(str(k) for k in ks) or "?"


# ---------------------------------------------------------------------------------------
# Rendering: the report is built once as blocks, then written as Markdown or as HTML.
# Inline code is marked with backticks in block text; everything else is plain text.
# ---------------------------------------------------------------------------------------
@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Para:
    text: str


@dataclass
class Bullets:
    items: list


@dataclass
class Table:
    header: list
    rows: list


@dataclass
class Code:
    text: str
    lang: str = ""
    label: str = ""


def report_blocks(catalog: dict, after: Optional[Callable[[str], str]] = None) -> list:
    """The report's content. ``after(sql)`` gives the rewritten SQL of an example (e.g. the
    runtime rewriter); without it the report shows the verified program instead."""
    src = catalog.get("source") or {}
    out: list = [Heading(1, f"superop rule catalog {catalog.get('version')}"), Bullets([
        f"created: {catalog.get('created_at')} by superop {catalog.get('tool_version')}",
        f"source log: `{src.get('log')}` (content {src.get('content_hash')}), window "
        f"{json.dumps(src.get('window'))}",
        f"rules: {len(catalog['rules'])}; checksum `{catalog.get('checksum')}`"])]
    extra = catalog.get("report") or {}
    if extra:
        out += [Heading(2, "Run summary"), Table(["metric", "value"], [
            [k, str(v)] for k, v in extra.items() if not isinstance(v, (dict, list))])]
    out += [Heading(2, "Rules"), Table(
        ["id", "shape", "patterns", "queries", "executions", "cost share", "proof"],
        [[f"`{r['id']}`", f"`{r['shape']}`", str(r['support'].get('patterns')),
          str(r['support'].get('distinct_queries')), str(r['support'].get('executions')),
          f"{r['support'].get('cost_share', 0):.4f}", str(r.get('proof', '?'))]
         for r in catalog["rules"]])]
    for r in catalog["rules"]:
        s = r["support"]
        out += [Heading(3, f"`{r['id']}`")]
        if r.get("description"):
            out.append(Para(r["description"]))
        out += [Code(draw_tree(r)), Bullets([
            f"shape: `{r['shape']}`",
            f"streamability check: {r['streamability']}; template: {r['template']['name']}",
            f"support: {s.get('patterns')} patterns, {s.get('distinct_queries')} distinct "
            f"queries, {s.get('executions')} executions, cost share {s.get('cost_share', 0):.4f}",
            f"seen: {r.get('first_seen')} … {r.get('last_seen')}",
            f"certificates: {_cert_summary(r)}"]
            + [f"admits: {c.describe()}" for c in admitted(r)])]
        ex = (r["template"].get("parameters") or {}).get("examples") or []
        if ex:
            e = ex[0]
            out.append(Code(e["sql"], "sql", "Example before:"))
            rewritten = None
            if after is not None:
                try:
                    rewritten = after(e["sql"])
                except Exception as err:  # the report must not die on one example
                    rewritten = f"-- rewrite failed: {type(err).__name__}: {err}"
            if rewritten:
                out.append(Code(rewritten, "sql", "After (runtime rewriter):"))
            if e.get("pseudo_code"):
                out.append(Code(e["pseudo_code"], "", "Verified super-operator program:"))
    out += section_blocks(catalog.get("sharing_opportunities"))
    rej = catalog.get("rejected") or []
    if rej:
        out += [Heading(2, "Patterns not admitted"), Table(["candidate", "shape", "reason"], [
            [str(x.get("candidate")), f"`{x.get('shape')}`", str(x.get("reason"))] for x in rej])]
    return out


def _md_cell(text: str) -> str:
    # a '|' would end the cell (also inside `code`); a newline would end the row
    return " ".join(str(text).split()).replace("|", "\\|")


def to_markdown(catalog: dict, after: Optional[Callable[[str], str]] = None) -> str:
    return render_markdown(report_blocks(catalog, after))


def render_markdown(blocks: list) -> str:
    """Markdown of report blocks (Heading, Para, Bullets, Table, Code)."""
    lines: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            lines += ["#" * b.level + " " + b.text, ""]
        elif isinstance(b, Para):
            lines += [b.text, ""]
        elif isinstance(b, Bullets):
            lines += [f"- {i}" for i in b.items] + [""]
        elif isinstance(b, Table):
            lines.append("| " + " | ".join(_md_cell(h) for h in b.header) + " |")
            lines.append("|" + "---|" * len(b.header))
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            lines.append("")
        elif isinstance(b, Code):
            fence = "```"
            while fence in b.text:
                fence += "`"
            lines += ([b.label, ""] if b.label else []) + [fence + b.lang, b.text, fence, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _inline_html(text: str) -> str:
    parts = str(text).split("`")
    return "".join(f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p)
                   for i, p in enumerate(parts))


_CSS = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;"
        "line-height:1.45}table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid "
        "#d0d7de;padding:.3em .6em;text-align:left;vertical-align:top}th{background:#f6f8fa}"
        "pre{background:#f6f8fa;padding:1em;overflow-x:auto}code{font-family:ui-monospace,"
        "monospace}td code{white-space:nowrap}")


def to_html(catalog: dict, after: Optional[Callable[[str], str]] = None) -> str:
    """A standalone HTML page (headings, tables, code blocks; no scripts, no external
    resources), e.g. for MLflow's artifact viewer."""
    body: list[str] = []
    for b in report_blocks(catalog, after):
        if isinstance(b, Heading):
            body.append(f"<h{b.level}>{_inline_html(b.text)}</h{b.level}>")
        elif isinstance(b, Para):
            body.append(f"<p>{_inline_html(b.text)}</p>")
        elif isinstance(b, Bullets):
            body.append("<ul>" + "".join(f"<li>{_inline_html(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            head = "".join(f"<th>{_inline_html(h)}</th>" for h in b.header)
            rows = "".join("<tr>" + "".join(f"<td>{_inline_html(c)}</td>" for c in row) + "</tr>"
                           for row in b.rows)
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif isinstance(b, Code):
            if b.label:
                body.append(f"<p>{_inline_html(b.label)}</p>")
            cls = f' class="language-{b.lang}"' if b.lang else ""
            body.append(f"<pre><code{cls}>{html.escape(b.text)}</code></pre>")
    title = html.escape(f"superop rule catalog {catalog.get('version')}")
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{title}</title><style>{_CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def _when(ts: Optional[float]) -> str:
    if ts is None:
        return "?"
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def section_blocks(section: Optional[dict]) -> list:
    """The report blocks of the sharing opportunities a catalog carries (what
    ``superop.share.opportunities.SharingReport.to_json`` stored); none when it has none."""
    if not section:
        return []
    out: list = [Heading(2, "Sharing opportunities")]
    if section.get("error"):
        return out + [Para(f"Not computed: {section['error']}")]
    opps = section.get("opportunities") or []
    paying = [o for o in opps if o.get("would_pay")]
    how = "estimated from Spark's statistics" if section.get("estimated") else \
        "proved covering expressions; value not estimated (tables not in the Spark catalog)"
    out.append(Para(f"{len(paying)} of {section.get('examined')} examined log windows "
                    f"({section.get('windows')} windows of two or more queries, {section.get('window_seconds')} s "
                    f"each, {section.get('queries')} queries) would have paid for sharing ({how})."))
    if section.get("truncated") or section.get("out_of_time"):
        out.append(Para(f"Bounded: {section.get('truncated')} window(s) cut to their first queries, "
                        f"{section.get('out_of_time')} window(s) not planned (time budget)."))
    if not opps:
        return out
    rows = []
    for o in opps:
        ces = "; ".join(f"{c['id']} {c['kind']} {c['template']} over {', '.join(c['tables'])} "
                        f"({len(c['consumers'])} consumers{', chosen' if c.get('chosen') else ''})"
                        for c in o.get("covering_expressions") or [])
        val = "?" if o.get("estimated_value") is None else f"{o['estimated_value']:.3g}"
        rows.append([f"{_when(o.get('start'))} … {_when(o.get('end'))}", str(len(o.get("queries") or [])),
                     str(o.get("similar_subexpressions")), ces, val, "yes" if o.get("would_pay") else "no"])
    out.append(Table(["window", "queries", "SEs", "covering expressions", "value (bytes)", "pays"], rows))
    return out


def markdown_section(section: Optional[dict]) -> list[str]:
    """Markdown lines of :func:`section_blocks`."""
    blocks = section_blocks(section)
    return render_markdown(blocks).splitlines() if blocks else []
