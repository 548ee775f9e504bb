"""The report's rules: the overview table and, per rule, its abstract tree, what it covers,
its support and proof, and its example before and after the rewrite."""
from __future__ import annotations

from typing import Callable, Optional

from ... import families
from ...families import Side
from ...families.coverage import admitted
from ...ir.dialect import pretty_sql
from . import labels as L
from .blocks import Block, Code, Facts, Group, Heading, Para, Table

# the rewritten example: the caller's rewriter (``after``) or what the catalog records
After = Optional[Callable[[str], str]]


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


def _bounds(rule: dict, method: str) -> str:
    ks = sorted({c.get("K") for c in rule.get("certificates", []) if c.get("method") == method and c.get("K")})
    return "/".join(str(k) for k in ks)


def certificates_in_words(rule: dict) -> str:
    """``2 verified (bounded, inputs up to 4 rows), 1 verified (inductive)``."""
    by: dict[tuple[str, str], int] = {}
    for c in rule.get("certificates", []):
        key = (str(c.get("status") or "unknown"), str(c.get("method") or "unknown"))
        by[key] = by.get(key, 0) + 1
    parts = []
    for (status, method), n in sorted(by.items()):
        k = _bounds(rule, method) if method == "bounded" else ""
        parts.append(f"{n} {status} ({method}{f', inputs up to {k} rows' if k else ''})")
    return ", ".join(parts) or "none"


def proof_in_words(rule: dict) -> str:
    p = rule.get("proof")
    if p == "unbounded":
        return "unbounded: an inductive proof of the template holds for inputs of any size"
    if p == "bounded":
        k = _bounds(rule, "bounded")
        return f"bounded: checked on every input of at most {k or 'K'} rows"
    return str(p) if p else "unknown"


def join_kinds(rule: dict) -> Optional[str]:
    kinds = rule.get("join_kinds") or []
    return ", ".join(L.JOIN_WORDS.get(k, k) for k in kinds) or None


def exchanges(ex: Optional[dict]) -> str:
    """``4 → 2`` (shuffle exchanges before and after), or why they are not known."""
    if not ex or ex.get("exchanges_before") is None:
        return "unknown"
    after = ex.get("exchanges_after")
    return f"{ex['exchanges_before']} → {'unknown' if after is None else after}"


def overview(catalog: dict) -> Table:
    examples = catalog.get("rule_examples") or {}
    rows = []
    for r in catalog["rules"]:
        s = r.get("support") or {}
        rows.append([f"[{r['id']}](#rule-{r['id']})", L.family_name(r["family"]), f"`{r['shape']}`",
                     L.count(s.get("distinct_queries")), L.count(s.get("executions")),
                     L.pct(s.get("cost_share")), exchanges(examples.get(r["id"])),
                     str(r.get("proof") or "unknown")])
    return Table(["Rule", "Family", "Shape", "Queries", "Executions", "Share of log time",
                  "Shuffles (before → after)", "Proof"], rows, numeric=(3, 4, 5, 6))


def _facts(rule: dict) -> Facts:
    s = rule.get("support") or {}
    fam = rule["family"]
    pairs = [("Family", f"{L.family_name(fam)} — {L.family_description(fam)}"),
             ("Shape", f"`{rule['shape']}`"),
             ("Join kinds", join_kinds(rule)),
             ("Support", f"{L.count(s.get('distinct_queries'))} distinct queries, "
                         f"{L.count(s.get('executions'))} executions, {L.pct(s.get('cost_share'))} of the "
                         f"log's query time ({L.count(s.get('patterns'))} verified patterns)"),
             ("Seen", L.span(rule.get("first_seen"), rule.get("last_seen"))),
             ("Proof", proof_in_words(rule)),
             ("Certificates", certificates_in_words(rule)),
             ("Template", (rule.get("template") or {}).get("name"))]
    return Facts([(k, v) for k, v in pairs if v])


def _example(rule: dict, ex: Optional[dict], after: After) -> list[Block]:
    params = (rule.get("template") or {}).get("parameters") or {}
    recorded = (params.get("examples") or [{}])[0]
    sql = recorded.get("sql") or (ex or {}).get("sql")
    if not sql:
        return []
    rewritten, how = None, ""
    if after is not None:
        try:
            rewritten, how = after(sql), "the runtime rewriter"
        except Exception as err:  # the report must not die on one example
            rewritten, how = f"-- rewrite failed: {type(err).__name__}: {err}", "the runtime rewriter"
    elif ex and ex.get("rewritten_sql"):
        rewritten, how = pretty_sql(ex["rewritten_sql"]), "the structural rewrite, no benefit gate"
    before = Code(pretty_sql(sql), "sql", "Example sub-query from the log (before):")
    out: list[Block] = []
    if rewritten:
        out.append(Group("pair", [before, Code(rewritten, "sql", f"After ({how}):")]))
    else:
        out.append(before)
    if ex and ex.get("exchanges_before") is not None:
        out.append(Para(f"Shuffle exchanges in Spark {ex.get('spark_version', '')}'s physical plan of the "
                        f"example (tables of the log's schema): {exchanges(ex)}.", "note"))
    elif ex and ex.get("error"):
        out.append(Para(f"Spark did not plan the example: {ex['error']}", "note"))
    if recorded.get("pseudo_code"):
        out.append(Group("fold", [Para("Verified super-operator program"), Code(recorded["pseudo_code"])]))
    return out


def rule_blocks(rule: dict, ex: Optional[dict], after: After = None) -> list[Block]:
    """One rule: heading, description, tree and facts side by side, what it admits, its
    example before and after."""
    out: list[Block] = [Heading(3, f"`{rule['id']}`", f"rule-{rule['id']}")]
    if rule.get("description"):
        out.append(Para(rule["description"]))
    out.append(Group("pair", [Code(draw_tree(rule), "", "Abstract tree (root on top):"), _facts(rule)]))
    covers = [c.describe() for c in admitted(rule)]
    if covers:
        out.append(Group("fold", [Para(f"Admits {len(covers)} instance class{'es' if len(covers) > 1 else ''}"),
                                  Code("\n".join(covers))]))
    out += _example(rule, ex, after)
    return [Group("card", out)]
