"""Spark's own merge rules as one more candidate form of a query, set for that query only.

Spark 4.3's ``MergeSubplans`` merges non-grouping aggregates over the same input (scalar
sub-queries, and aggregates joined to each other as in TPC-DS q28/q88/q90) into one scan
whose aggregates carry ``FILTER (WHERE ...)`` clauses — but only the ones with the same
filter unless two settings, both off by default, are on: the symmetric filter propagation
(two different filters become ``OR(f1, f2)`` below one aggregate; Spark's docs warn that
it may cost IO pruning) and propagation through joins (:data:`MERGE_FLAGS`). A user who
wants Spark's own answer would switch them on; the runtime prices "the original query with
these settings" (:data:`FORM`) — and superop's best rewrite with them — next to its own
rewrites with the same benefit gate, so that it is never behind that peer and says which
form won and why.

*For this query only.* A setting on the caller's session would leak into every query the
session runs afterwards or concurrently. The flag forms are therefore planned, and run, in a
**clone** of the caller's session (:func:`session_with`): its own SQL settings, a copy of the
temporary views, functions and current database taken when the query is decided or run; the
caller's session is never modified. Classic sessions clone in the JVM
(``SparkSession.cloneSession``, tens of milliseconds); Spark Connect sessions clone on the
server (``SparkSession.cloneSession``, Spark 4.1+), and the server-side clone is released as
soon as the last DataFrame made from it is garbage-collected (or by the server's idle
timeout). One consequence for callers: the DataFrame of a query that runs in its flag form
belongs to the clone, so a temporary view created from it lives in the clone.

The forms are offered only when the query has two different SELECTs that aggregate without a
GROUP BY over the same tables (:func:`may_merge`, read off the query's AST: no planning) —
MergeSubplans merges only plans with the same leaves, so nothing the flags act on otherwise;
aggregates inside a view's text are not seen. A form whose plan the settings leave
unchanged is refused as such.
"""
from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field
from typing import Optional

from sqlglot import exp

from ..explain import PlanInfo
from ..ir.dialect import parse_one
from .tablestats import is_connect

FORM = "spark-merge-flags"
SUFFIX = "+" + FORM

_RULE = "spark.sql.optimizer.mergeSubplans."
_PREFIX = _RULE + "filterPropagation."
#: The settings of Spark's own peer form (Spark 4.3 names, read from ``SET -v``; the first
#: is on by default, set so that the form does not depend on a session that turned it off).
MERGE_FLAGS: dict[str, str] = {
    _PREFIX + "enabled": "true",
    _PREFIX + "symmetricFilterPropagation.enabled": "true",
    _PREFIX + "throughJoin.enabled": "true",
}


def describe(conf: dict) -> str:
    """How an explanation names the flag form."""
    short = ", ".join(k[len(_RULE):].removesuffix(".enabled") if k.startswith(_RULE) else k
                      for k in conf)
    return f"{FORM} (Spark's MergeSubplans with {short} on, for this query only)"


def may_merge(ast: Optional[exp.Expression]) -> bool:
    """Could the merge settings change this query's plan? Only when two different SELECTs
    aggregate without a GROUP BY over the same set of tables: filter propagation merges
    non-grouping aggregates of one input only (a ranking window such as ``RANK() OVER`` is
    not an aggregate; the same SELECT twice, a CTE read twice, is one plan Spark reuses)."""
    if ast is None:
        return False
    ctes = {c.alias_or_name.lower(): c.this for c in ast.find_all(exp.CTE)}
    by_tables: dict[frozenset[str], set[str]] = {}
    for sel in ast.find_all(exp.Select):
        if sel.args.get("group") is not None or not _aggregates(sel):
            continue
        seen = by_tables.setdefault(_tables(sel, ctes, ()), set())
        seen.add(sel.sql())
        if len(seen) >= 2:
            return True
    return False


def _aggregates(sel: exp.Select) -> bool:
    """An aggregate of ``sel`` itself: not one of a nested SELECT, not a window's function."""
    return any(not isinstance(agg.parent, exp.Window) and agg.find_ancestor(exp.Select) is sel
               for e in sel.expressions for agg in e.find_all(exp.AggFunc))


def _tables(q: exp.Expression, ctes: dict, inside: tuple[str, ...]) -> frozenset[str]:
    """The names of the tables ``q`` reads, a CTE's name read through to the tables of its
    body. Names without their database: ``db.t`` and ``t`` may be one table, and offering
    the form once too often costs a planning, never a missed merge."""
    out: set[str] = set()
    for t in q.find_all(exp.Table):
        name = t.name.lower()
        if name in ctes and not t.db and name not in inside:
            out |= _tables(ctes[name], ctes, inside + (name,))
        else:
            out.add(name)
    return frozenset(out)


def _may_merge_sql(sql: str) -> bool:
    """:func:`may_merge` of SQL text; text that does not parse is offered (Spark decides)."""
    try:
        return may_merge(parse_one(sql))
    except Exception:   # noqa: BLE001 - offering a form costs a planning, never a wrong result
        return True


def session_with(spark, conf: dict):
    """``spark`` itself when ``conf`` is empty; else a clone of it (settings, temporary
    views, functions, current database as they are now) with ``conf`` set. The caller's
    session is not modified."""
    if not conf:
        return spark
    if is_connect(spark):
        clone = spark.cloneSession()
        client = clone._client
        # release the server-side session once nothing (no DataFrame) refers to the clone
        weakref.finalize(clone, _release, client)
    else:
        clone = type(spark)(spark.sparkContext, spark._jsparkSession.cloneSession())
    for k, v in conf.items():
        clone.conf.set(k, v)
    return clone


def _release(client) -> None:
    try:
        client.release_session()
    except Exception:  # best effort: the server's idle timeout releases it too
        pass


@dataclass
class FlagCandidate:
    """A candidate that runs ``sql`` with ``conf`` in a clone of the session: the original
    query (``matches`` empty) or one of superop's rewrites (``base``), Spark's merge
    settings on. Shaped like :class:`superop.rewrite.rewriter.Candidate` for the gate."""
    sql: str
    label: str
    conf: dict
    session: object
    matches: list = field(default_factory=list)
    original: Optional[PlanInfo] = None       # the original query's plan without the settings
    base: object = None                       # the rewrite this form sets the flags for
    plan: Optional[PlanInfo] = None

    def unchanged_by_flags(self) -> bool:
        """True when the settings leave the plan as it was without them (nothing merged)."""
        without = self.base.plan if self.base is not None else self.original
        return (without is not None and self.plan is not None
                and canonical_plan(without.tree) == canonical_plan(self.plan.tree))


def flag_candidates(spark, sql: str, before: Optional[PlanInfo], rewrites: list,
                    conf: Optional[dict] = None) -> list[FlagCandidate]:
    """The flag forms of ``sql``, planned in one clone: the original query, and the first
    of superop's ``rewrites`` (all its non-conflicting matches together; already planned,
    its ``plan`` is compared) with the settings on. ``before``: the original's plan, or None
    when it is planned beside them (the gate sets each form's ``original`` then)."""
    conf = dict(MERGE_FLAGS if conf is None else conf)
    clone = session_with(spark, conf)
    out = [FlagCandidate(sql, FORM, conf, clone, [], before)]
    if rewrites and _may_merge_sql(rewrites[0].sql):     # a GA rewrite leaves one aggregate
        top = rewrites[0]
        out.append(FlagCandidate(top.sql, top.label + SUFFIX, conf, clone, list(top.matches),
                                 before, top))
    return out


def base_label(label: str) -> Optional[str]:
    """The rewrite a label names without the flags: None for the original query's flag
    form, the rewrite's own label for ``<rewrite>+spark-merge-flags`` and for a rewrite."""
    if label == FORM:
        return None
    return label[:-len(SUFFIX)] if label.endswith(SUFFIX) else label


_EXPR_ID = re.compile(r"#\d+")
_PLAN_ID = re.compile(r"plan_id=\d+")


# a scan's metadata after its columns: Spark cuts each value at 100 characters, ids included,
# so two plannings of one scan cut it at different places
_SCAN_TAIL = re.compile(r"^(.*?\bFileScan \S+ \[[^\]]*\]).*$", re.MULTILINE)


def canonical_plan(tree: str) -> str:
    """A physical plan's text without expression and plan ids and without the scans'
    truncated metadata (two plannings of one query give the same text; what the merge
    settings change — filters, projections, aggregates, sub-queries — stays)."""
    return _SCAN_TAIL.sub(r"\1", _PLAN_ID.sub("plan_id", _EXPR_ID.sub("#", tree)))
