"""What the report says, in order: the catalog at a glance, its rules (a table and
charts), the near-misses with what to change in the query, one card per rule, sharing
opportunities, the patterns not admitted and the run's summary."""
from __future__ import annotations

from typing import Optional

from . import labels as L
from . import plots
from .blocks import Block, Facts, Group, Heading, Para, Table
from .near_misses import near_miss_blocks
from .rules import After, overview, rule_blocks
from .sharing import section_blocks


def title(catalog: dict) -> str:
    return f"superop rule catalog {catalog.get('version') or ''}".strip()


def _header(catalog: dict) -> list[Block]:
    src = catalog.get("source") or {}
    window = src.get("window") or {}
    pairs = [("Created", f"{L.iso_day(catalog.get('created_at')) or 'unknown'} by superop "
                         f"{catalog.get('tool_version') or '(version unknown)'}"),
             ("Source log", f"`{src['log']}`" if src.get("log") else None),
             ("Log window", L.span(window.get("start"), window.get("end"))),
             ("Log content", f"`{src['content_hash']}`" if src.get("content_hash") else None),
             ("Rules checksum", f"`{catalog['checksum']}`" if catalog.get("checksum") else None)]
    return [Heading(1, title(catalog)), Facts([(k, v) for k, v in pairs if v])]


def _glance(catalog: dict) -> Group:
    run = catalog.get("report") or {}
    rules = catalog.get("rules") or []
    near = catalog.get("near_misses") or {}
    shown = [e for e in (catalog.get("rule_examples") or {}).values() if e.get("exchanges_after") is not None]
    near_share = sum(float(n.get("cost_share") or 0) for n in near.get("items") or [])
    cards = [("rules in the catalog", L.count(len(rules))),
             (f"shuffle exchanges in {len(shown)} rule examples, before → after",
              f"{sum(e['exchanges_before'] for e in shown)} → {sum(e['exchanges_after'] for e in shown)}"
              if shown else None),
             ("queries read", L.value(run.get("queries_read"))),
             ("candidates verified", f"{L.count(run['verified'])} of {L.count(run.get('candidates'))}"
              if run.get("verified") is not None else None),
             (f"recurring near-misses, {L.pct(near_share)} of the log's query time",
              L.count(near.get("recurring", len(near.get("items") or []))) if near else None)]
    return Group("glance", [Facts([(k, v) for k, v in cards if v])])


def _rules(catalog: dict, charts: bool) -> list[Block]:
    """The rules at a glance: the overview table, the symbols' legend and the charts."""
    rules = catalog.get("rules") or []
    out: list[Block] = [Heading(2, "Rules", "rules")]
    if not rules:
        return out + [Para("The catalog has no rules: no candidate was verified and generalized.")]
    legend = "; ".join(f"{s} {w}" for s, w in L.LEGEND)
    out += [overview(catalog),
            Para(f"Shapes list each path from the shared input up, operators separated by |: {legend}; "
                 "[σπρ]* any number of filters, projections and renames; [∅]* none.", "legend")]
    figures: list[Block] = [f for f in (plots.cost_share_chart(catalog), plots.exchanges_chart(catalog))
                            if f is not None] if charts else []
    if figures:
        out.append(Group("pair", figures))
    return out


def _details(catalog: dict, after: After) -> list[Block]:
    """One card per rule."""
    rules = catalog.get("rules") or []
    if not rules:
        return []
    examples = catalog.get("rule_examples") or {}
    out: list[Block] = [Heading(2, "Rule details", "rule-details")]
    for r in rules:
        out += rule_blocks(r, examples.get(r["id"]), after)
    return out


def _rejected(catalog: dict) -> list[Block]:
    rej = catalog.get("rejected") or []
    if not rej:
        return []
    return [Heading(2, "Patterns not admitted", "not-admitted"),
            Para("Candidates that did not become (part of) a rule, and why.", "note"),
            Table(["Candidate", "Shape", "Reason"],
                  [[str(x.get("candidate") or "unknown"), f"`{x.get('shape')}`" if x.get("shape") else "unknown",
                    str(x.get("reason") or "unknown")] for x in rej])]


def _summary(catalog: dict) -> list[Block]:
    run = catalog.get("report") or {}
    pairs = [(L.label(k), L.value(v)) for k, v in run.items() if not isinstance(v, (dict, list))]
    pairs = [(k, v) for k, v in pairs if v is not None]
    if not pairs:
        return []
    return [Heading(2, "Run summary", "run-summary"), Facts(pairs)]


def report_blocks(catalog: dict, after: After = None, charts: Optional[bool] = None) -> list[Block]:
    """The report's content. ``after(sql)`` gives the rewritten SQL of a rule's example
    (e.g. the runtime rewriter); without it the report shows what the catalog's
    ``rule_examples`` record. ``charts``: draw charts (default: when matplotlib is there)."""
    why_not = plots.unavailable()
    draw = charts is not False and why_not is None
    out = _header(catalog) + [_glance(catalog)]
    if charts is not False and why_not is not None:
        out.append(Para(f"No charts in this report: {why_not}.", "note"))
    out += _rules(catalog, draw)
    out += near_miss_blocks(catalog.get("near_misses"))
    out += _details(catalog, after)
    out += section_blocks(catalog.get("sharing_opportunities"))
    out += _rejected(catalog) + _summary(catalog)
    return out
