"""Catalog export: Markdown and HTML reports (abstract tree drawing, shape, support,
certificates, an example before/after per rule)."""
from __future__ import annotations

import html
import json
from typing import Callable, Optional

from .. import families
from ..families import Side
from .catalog import admitted


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


def to_markdown(catalog: dict, after: Optional[Callable[[str], str]] = None) -> str:
    """``after(sql)`` gives the rewritten SQL of an example (e.g. the runtime rewriter);
    without it the report shows the verified program instead."""
    src = catalog.get("source") or {}
    out = [f"# superop rule catalog {catalog.get('version')}", "",
           f"- created: {catalog.get('created_at')} by superop {catalog.get('tool_version')}",
           f"- source log: `{src.get('log')}` (content {src.get('content_hash')}), window "
           f"{json.dumps(src.get('window'))}",
           f"- rules: {len(catalog['rules'])}; checksum `{catalog.get('checksum')}`", ""]
    extra = catalog.get("report") or {}
    if extra:
        out += ["## Run summary", "", "| metric | value |", "|---|---|"]
        out += [f"| {k} | {v} |" for k, v in extra.items() if not isinstance(v, (dict, list))]
        out.append("")
    out += ["## Rules", "", "| id | shape | patterns | queries | executions | cost share | proof |",
            "|---|---|---|---|---|---|---|"]
    for r in catalog["rules"]:
        s = r["support"]
        out.append(f"| `{r['id']}` | `{r['shape']}` | {s.get('patterns')} | {s.get('distinct_queries')} | "
                   f"{s.get('executions')} | {s.get('cost_share', 0):.4f} | {r.get('proof', '?')} |")
    out.append("")
    for r in catalog["rules"]:
        s = r["support"]
        out += [f"### `{r['id']}`", "", r.get("description", ""), "",
                "```", draw_tree(r), "```", "",
                f"- shape: `{r['shape']}`",
                f"- streamability check: {r['streamability']}; template: {r['template']['name']}",
                f"- support: {s.get('patterns')} patterns, {s.get('distinct_queries')} distinct queries, "
                f"{s.get('executions')} executions, cost share {s.get('cost_share', 0):.4f}",
                f"- seen: {r.get('first_seen')} … {r.get('last_seen')}",
                f"- certificates: {_cert_summary(r)}"]
        out += [f"- admits: {c.describe()}" for c in admitted(r)] + [""]
        ex = (r["template"].get("parameters") or {}).get("examples") or []
        if ex:
            e = ex[0]
            out += ["Example before:", "", "```sql", e["sql"], "```", ""]
            rewritten = None
            if after is not None:
                try:
                    rewritten = after(e["sql"])
                except Exception as err:  # the report must not die on one example
                    rewritten = f"-- rewrite failed: {type(err).__name__}: {err}"
            if rewritten:
                out += ["After (runtime rewriter):", "", "```sql", rewritten, "```", ""]
            if e.get("pseudo_code"):
                out += ["Verified super-operator program:", "", "```", e["pseudo_code"], "```", ""]
    rej = catalog.get("rejected") or []
    if rej:
        out += ["## Patterns not admitted", "", "| candidate | shape | reason |", "|---|---|---|"]
        out += [f"| {x.get('candidate')} | `{x.get('shape')}` | {x.get('reason')} |" for x in rej]
        out.append("")
    return "\n".join(out) + "\n"


def to_html(catalog: dict, after: Optional[Callable[[str], str]] = None) -> str:
    md = to_markdown(catalog, after)
    # Plain, dependency-free HTML: the Markdown in a styled <pre> per section is enough
    # to read in a browser and keeps one source of truth for the content.
    body = html.escape(md)
    return ("<!doctype html><html><head><meta charset='utf-8'><title>superop catalog "
            f"{html.escape(str(catalog.get('version')))}</title><style>body{{font-family:sans-serif;"
            "max-width:1100px;margin:2em auto}}pre{{white-space:pre-wrap;background:#f6f8fa;"
            "padding:1em}}</style></head><body><pre>" + body + "</pre></body></html>\n")
