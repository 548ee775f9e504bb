"""The identity of one super-operator instance: what a bounded certificate is about, and
what the runtime looks up before it applies a match.

An instance is the match's sub-plan ALONE — from the match's root down to its shared
source, nothing of the query around it — canonicalized:

* its source is read as ONE table of the source's columns and types
  (:func:`superop.families.over_source`): a base table is named by its resolved identity
  (the table's own name: ``ops``, ``sales.ops`` and a temp view ``ops`` are one instance —
  the certificate quantifies over every content of a table with those columns, so the
  namespace adds nothing); a computed source (a join with dimensions, a union) becomes the
  table ``__source``; a family that recognizes its sub-plan by what the source computes (a
  neighbour self-join's ranked view) keeps that computation and is cut below it, where the
  source's chain of one-input operators stops;
* an uncorrelated sub-query's value on the match (:mod:`superop.ir.subqueries`) is a
  parameter that may be any number or NULL (``:q0_number``): the instance holds for every
  value the sub-query can have, and does not read the sub-query's tables (a sub-query
  that is not a numeric comparison operand: no instance);
* the sub-plan is rendered by the IR's SQL generator (predicates, projections, column
  names, types and literals as the plan holds them), so two spellings of one plan are one
  instance and a change of any predicate, projection, literal or column type is another.

``key`` is the sha256 of the canonical JSON of (SQL, schema, form). The canonical form is a
fixpoint: the instance of the instance's own SQL is the instance itself — which is how a
certificate's SQL is shown to be the match itself, with no context around it (a context
such as ``WHERE 1 = 0`` makes any program look equivalent).

Pure IR: no Spark, no Z3.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional

from ..ir.lower import lower_fixed
from ..dsl.identity import sha256_of
from ..ir.generate import to_sql
from ..ir.keys import KEYS_ENTRY, keys_entry
from ..ir.nodes import Node, Scan, replace
from ..ir.parameters import VALUE_PLACEHOLDER
from ..ir.subqueries import tokens_as_parameters
from .kit.diamond import over_source, single_input_base
from .kit.records import Match
from .matching import first_match
from .registry import get



@dataclass(frozen=True)
class Instance:
    """One instance, canonical: the SQL of the match's sub-plan alone over ``schema``, in
    the family's ``form`` ("" = the template's default program)."""
    sql: str
    schema: dict[str, Any]
    form: str = ""

    @property
    def key(self) -> str:
        return sha256_of({"sql": self.sql, "schema": self.schema, "form": self.form})

    @property
    def reads_subquery_values(self) -> bool:
        """Does the instance read a sub-query's value (a ``:q<i>_number`` parameter)? Its
        bounded certificate is about the parameter, not the sub-query the runtime's program
        evaluates: only an unbounded proof covers such a match at run time."""
        return VALUE_PLACEHOLDER.search(self.sql) is not None

    @property
    def short(self) -> str:
        return self.key.split(":", 1)[1][:12]


def _named_by_identity(root: Node, schema: dict[str, Any]) -> tuple[Node, dict[str, Any]]:
    """A base-table source renamed to its resolved identity's own name."""
    scans = [n for n in _walk(root) if isinstance(n, Scan)]
    if len(scans) != 1:
        return root, schema
    s = scans[0]
    name = s.identity[-1] if s.identity else s.qualifier
    if not name or name == s.table:
        return root, schema
    leaf = Scan(name, s.columns, keys=s.keys)
    sch: dict[str, Any] = {name: dict(s.columns)}
    if s.keys:
        sch[KEYS_ENTRY] = keys_entry({name: s.keys})
    return replace(root, {id(s): leaf}), sch


def _walk(n: Node) -> Iterator[Node]:
    seen: set[int] = set()
    stack = [n]
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        stack.extend(x.children)


def _same_instance(a: Match, b: Optional[Match]) -> bool:
    if b is None or b.family != a.family:
        return False
    fam = get(a.family)
    try:
        return fam.point(a) == fam.point(b)
    except Exception:  # a template that refuses one of them: not the same instance
        return False


def _rendered(m: Match) -> Optional[tuple[str, dict[str, Any]]]:
    """The match's sub-plan over its source as one table, as SQL, and that table's schema."""
    for cut in (m.source, single_input_base(m.source)):
        over = over_source(m.root, cut)
        if over is None:
            continue
        plan, schema = over
        again = first_match(plan, finished=True)
        if not _same_instance(m, again):
            continue        # the family needs what the source computes: cut lower
        plan, schema = _named_by_identity(plan, schema)
        param = tokens_as_parameters(plan)     # a sub-query's value: any number or NULL
        return None if param is None else (to_sql(param, structural=True), schema)
    return None


def instance_of(m: Match, form: str = "") -> Optional[Instance]:
    """The canonical instance of the match ``m`` (None when its source cannot be read as
    one table — a column of unknown type, repeated column names — or its SQL does not
    lower back to the same instance). The SQL is rendered, lowered and rendered once more:
    the second rendering is the fixpoint (the first may still differ in how the parser
    nests a conjunction)."""
    first = _rendered(m)
    if first is None:
        return None
    low = lower_fixed(*first)
    again = first_match(low.plan, finished=True) if low.fully_lowered else None
    if again is None or not _same_instance(m, again):
        return None
    second = _rendered(again)
    return None if second is None else Instance(second[0], second[1], form)


def instance_of_sql(sql: str, schema: dict[str, Any], form: str = "") -> Instance:
    """The canonical instance of the top-most match of a query (ValueError if none)."""
    low = lower_fixed(sql, schema)
    if not low.fully_lowered:
        raise ValueError("; ".join(low.opaque_reasons) or "the SQL does not lower")
    m = first_match(low.plan, finished=True)
    if m is None:
        raise ValueError("no super-operator instance the runtime would match")
    inst = instance_of(m, form)
    if inst is None:
        raise ValueError("the match's source cannot be read as one table (a column of unknown type "
                         "or repeated column names)")
    return inst


def is_canonical(sql: str, schema: dict[str, Any], form: str = "") -> tuple[bool, str]:
    """(the SQL is exactly the canonical instance of its own match, why not): a
    certificate's SQL must be the match itself — no context around it."""
    try:
        inst = instance_of_sql(sql, schema, form)
    except ValueError as e:
        return False, str(e)
    if inst.sql != sql:
        return False, ("its SQL is not the match alone: the certified query has context around the "
                       "super-operator instance (a filter, projection, join or aggregate above it), "
                       "under which a wrong program can look equivalent")
    if inst.schema != schema:
        return False, "its schema is not the instance's (tables or types other than the match reads)"
    return True, ""
