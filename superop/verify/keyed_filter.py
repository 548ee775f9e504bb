"""The keyed filter join lemma: the step of the canonical form
:mod:`superop.families.kit.keyedfilter` that reads a keyed inner join as a filter on one
shared input, proved bounded by Z3 over two symbolic tables with the key declared.

The lemma is about the canonical form the matching path makes, not a copy of it: a
symbolic instance (a fact table ``t``, a table ``d`` joined on its declared key ``pk``,
with an uninterpreted filter on each: every filter) is lowered and canonicalized by
``superop.families.regroup``; each global aggregate's input in the query as written is
compared with its input in the canonical plan, as bags of the columns it can read (the
inner join's columns for the joined branch, ``t``'s for the other) —
:func:`superop.verify.plans.check_plans_equivalent` over every pair of tables of at most K
rows, only tables satisfying ``d``'s declared key considered. Bag-equal inputs give every
aggregate, HAVING and projection above them the same value, so the rest of the claim is
the global-aggregate diamond's template proof (GA/n, over any source). Without the key Z3
refutes the second equality for concrete filters (a repeated ``pk`` repeats rows of the
left join): :func:`prove_lemma` with ``declared_keys=False, concrete=True`` shows it.
"""
from __future__ import annotations

import time
from typing import Any

from sqlglot import exp

from .. import families
from ..families.kit.keyedfilter import PREMISE_TEXT, premise_of
from ..ir.lower import lower
from ..ir.nodes import Aggregate, Join, Node, Project, walk
from .plans import check_plans_equivalent
from .result import UNSUPPORTED, VERIFIED, Result

LEMMA_K = 4
# the filters are uninterpreted predicates of the columns they read (LIKE is not modelled:
# superop.verify.plans makes it an "atom", any deterministic function, NULL or raising
# included), so the lemma holds for EVERY filter on the shared input and on the joined table
LEMMA_SCHEMA: dict[str, Any] = {"t": {"k": "int", "a": "int", "b": "string"}, "d": {"pk": "int", "x": "string"},
                                "$keys": {"d": "pk"}}
LEMMA_SQL = ("SELECT u1.s1, u2.s2 FROM (SELECT sum(t.a) AS s1 FROM t JOIN d ON t.k = d.pk "
             "WHERE t.b LIKE 'p%' AND d.x LIKE 'q%') u1 CROSS JOIN "
             "(SELECT sum(t.a) AS s2 FROM t WHERE t.b LIKE 'p%') u2")
# the same step with concrete filters, which Z3 can refute without the key (a counterexample:
# the premise is needed; an uninterpreted filter leaves such a difference undecided)
CONCRETE_SCHEMA: dict[str, Any] = {"t": {"k": "int", "a": "int", "b": "int"}, "d": {"pk": "int", "x": "int"},
                                   "$keys": {"d": "pk"}}
CONCRETE_SQL = ("SELECT u1.s1, u2.s2 FROM (SELECT sum(t.a) AS s1 FROM t JOIN d ON t.k = d.pk "
                "WHERE (t.b > t.a OR t.b IS NULL) AND (d.x = 1 OR d.x IS NULL)) u1 CROSS JOIN "
                "(SELECT sum(t.a) AS s2 FROM t WHERE (t.b > t.a OR t.b IS NULL)) u2")
ASSUMPTIONS = (
    "the joined table's join column is a declared key (unique, NOT NULL): the premise",
    "the filters are deterministic predicates, uninterpreted in the lemma (any function of the columns "
    "they read, TRUE, FALSE or NULL — TRUE on a NULL-extended row too, which the pk IS NOT NULL guard "
    "excludes): the canonical form evaluates each filter on the same rows as the query",
    "every aggregate reads its input by column name, so bag-equal inputs give every aggregate, "
    "HAVING and projection above them the same value (the GA template proof covers those)",
    "one table stands for the shared input (in a query, a join of several tables: its rows move whole) "
    "and one column per kind for every column: the lemma reads no value but the join columns and the "
    "filters' arguments",
)


def _inputs(plan: Node) -> list[Aggregate]:
    return [n for n in walk(plan) if isinstance(n, Aggregate) and not n.keys]


def _columns(inp: Node, names: list[str]) -> Node:
    fields = {f.name: f for f in inp.fields}
    return Project(inp, tuple((exp.column(n, fields[n].qualifier) if fields[n].qualifier else exp.column(n), n)
                              for n in names))


def prove_lemma(K: int = LEMMA_K, timeout_ms: int = 120000, declared_keys: bool = True,
                concrete: bool = False) -> Result:
    """The lemma (module doc) at bound ``K``; ``declared_keys=False``: the same check
    without the key; ``concrete``: with concrete filters (:data:`CONCRETE_SQL`), where Z3
    can give the counterexample that shows the premise is needed."""
    t0 = time.perf_counter()
    sql, schema = (CONCRETE_SQL, CONCRETE_SCHEMA) if concrete else (LEMMA_SQL, LEMMA_SCHEMA)
    plan = lower(sql, schema).plan
    canon = families.regroup(plan)
    srcs = [n for n in walk(canon) if isinstance(n, Join) and premise_of(n) is not None]
    if canon is plan or len(srcs) != 1:
        return Result(UNSUPPORTED, method="bounded", K=K, reason="the canonical form did not take the lemma's instance")
    before, after = _inputs(plan), _inputs(canon)
    if len(before) != 2 or len(after) != 2:
        return Result(UNSUPPORTED, method="bounded", K=K, reason="expected two global aggregates")
    checks = []
    for b, a in zip(before, after):
        names = [f.name for f in b.child.fields]
        r = check_plans_equivalent(_columns(b.child, names), _columns(a.child, names), K, timeout_ms,
                                   declared_keys=declared_keys)
        checks.append(r)
        if r.status != VERIFIED:
            return Result(r.status, method="bounded", K=K, seconds=time.perf_counter() - t0,
                          reason=f"an aggregate's input differs in the canonical form: {r.reason}",
                          counterexample=r.counterexample, details=_details(checks, declared_keys, sql))
    return Result(VERIFIED, method="bounded", K=K, seconds=time.perf_counter() - t0,
                  reason=f"no tables of at most {K} rows each (the key declared) make an aggregate's input "
                         f"differ in the canonical form", details=_details(checks, declared_keys, sql))


def _details(checks: list[Result], declared_keys: bool, sql: str) -> dict:
    schema = LEMMA_SCHEMA if sql == LEMMA_SQL else CONCRETE_SCHEMA
    return {"lemma": PREMISE_TEXT, "sql": sql, "schema": schema, "declared_keys": declared_keys,
            "assumptions": list(ASSUMPTIONS), "checks": [{"status": r.status, "reason": r.reason} for r in checks]}


# premise text -> its lemma's proof (template proofs whose covers carry the premise need it)
LEMMAS = {PREMISE_TEXT: prove_lemma}
