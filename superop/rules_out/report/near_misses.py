"""The report's near-miss section: the recurring sub-queries a family recognized by shape
but refused, each with what blocked it and what to change in the query so that it matches
(the hint its reason code declares, ``ReasonCode.hint`` in ``superop.families``)."""
from __future__ import annotations

import re
from typing import Optional

from ...families import ReasonCode, reason_codes
from ...ir.dialect import pretty_sql
from . import labels as L
from .blocks import Block, Code, Facts, Group, Heading, Para, Table


def reason_of(code: str) -> Optional[ReasonCode]:
    """The declared reason of a code (None for a code this version does not know)."""
    return reason_codes().get(code)


def plain(text: str) -> str:
    """A reason's text without the paper's words (Algorithm 1, Fig. 13, Spool)."""
    text = re.sub(r";\s*Algorithms? [\d-]+", "", text)
    text = re.sub(r"\s*\((Algorithms? [\d-]+|no Spool)\)", "", text)
    return re.sub(r"Fig\. \d+:\s*", "", text)


def reason_text(code: str) -> str:
    """What blocked the match, in words."""
    r = reason_of(code)
    return plain(r.text) if r is not None else code.replace("_", " ")


def hint_text(code: str) -> str:
    r = reason_of(code)
    return r.hint if r is not None and r.hint else "No hint is declared for this reason."


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _card(i: int, nm: dict) -> Group:
    tables = ", ".join(f"`{t}`" for t in nm.get("input_tables") or [])
    facts = [("Family", L.family_name(nm["family"])),
             ("Shape", f"`{nm['shape']}`"),
             ("Join", L.JOIN_WORDS.get(nm.get("join_kind") or "", "") or None),
             ("Recurs", f"{L.count(nm.get('templates'))} distinct queries, {L.count(nm.get('executions'))} "
                        f"executions, {L.pct(nm.get('cost_share'))} of the log's query time"),
             ("Reads", tables or None),
             ("Reason code", f"`{nm['reason']}`")]
    left: list[Block] = [Para(f"What to change: {hint_text(nm['reason'])}", "hint"),
                         Facts([(k, v) for k, v in facts if v])]
    if nm.get("example_sql"):
        left = [Group("pair", [Group("stack", left),
                               Code(pretty_sql(nm["example_sql"]), "sql", "Example sub-query from the log:")])]
    return Group("card", [Heading(3, f"{i}. {_sentence(reason_text(nm['reason']))}", f"near-miss-{i}"), *left])


def near_miss_blocks(section: Optional[dict]) -> list[Block]:
    """The section from the catalog's ``near_misses`` (:mod:`superop.mining.near_misses`);
    says so when the catalog carries none."""
    out: list[Block] = [Heading(2, "Near-misses: what to change in the query", "near-misses")]
    if not section:
        return out + [Para("This catalog carries no near-miss summary (it was not written by the nightly "
                           "job, or by a version that did not record near-misses).", "note")]
    items = section.get("items") or []
    found, recurring = section.get("found"), section.get("recurring", len(items))
    sel = f" (selection: {section['selection']})" if section.get("selection") else ""
    out.append(Para(f"Sub-queries that almost have a super-operator shape: a family recognized them but "
                    f"refused, for the reason shown. Changing the query as suggested lets the next nightly "
                    f"run prove a rule for them. {L.count(found)} near-miss variants found, "
                    f"{L.count(recurring)} recurring{sel}.", "lead"))
    if not items:
        return out
    if recurring and recurring > len(items):
        out.append(Para(f"The {len(items)} costliest are shown; near_misses.parquet lists all.", "note"))
    out.append(Table(["#", "Family", "Blocked by", "Share of log time", "Executions"], [
        [f"[{i}](#near-miss-{i})", L.family_name(nm["family"]), reason_text(nm["reason"]),
         L.pct(nm.get("cost_share")), L.count(nm.get("executions"))]
        for i, nm in enumerate(items, 1)], numeric=(0, 3, 4)))
    out += [_card(i, nm) for i, nm in enumerate(items, 1)]
    return out
