"""Uncorrelated sub-queries as values (superop.ir.subqueries, superop.ir.subquery_types): the
lowering types each one, a CTE read only inside one does not make the query partly opaque,
and a match's sub-query values become parameters that may be any number or NULL in the
instance a certificate is about."""
from __future__ import annotations

import pytest
from sqlglot import exp

from superop.families import first_match
from superop.families.identity import instance_of, is_canonical
from superop.ir import lower
from superop.ir.dialect import DIALECT, SubqueryValue
from superop.ir.nodes import expressions_of, walk
from superop.ir.subqueries import has_tokens, opaque_subqueries, tokens_as_parameters
from superop.ir.subquery_types import NUMBER, TYPE_META, outermost_subqueries

SCHEMA = {"ops": {"a": "int", "b": "int", "s": "decimal(7,2)", "d": "string"},
          "dim": {"k": "int", "name": "string", "v": "double"}}
_J = "SELECT * FROM ({l}) x JOIN ({r}) y ON x.a = y.k"


def _types(sql: str) -> list:
    low = lower(sql, SCHEMA)
    return [s.meta.get(TYPE_META) for n in walk(low.plan) for e in expressions_of(n)
            for s in outermost_subqueries(e)]


@pytest.mark.parametrize("sub, want", [
    ("SELECT max(b) FROM ops", NUMBER),
    ("SELECT avg(s) FROM ops", NUMBER),             # a DECIMAL to Spark, a DOUBLE to sqlglot
    ("SELECT max(v) FROM dim WHERE name = 'x'", NUMBER),
    ("SELECT max(name) FROM dim", None),            # a string: no value type
    ("SELECT max(d) FROM ops", None),
])
def test_the_lowering_types_a_scalar_subquery(sub, want):
    assert _types(f"SELECT a FROM ops WHERE b > ({sub})") == [want]


def test_a_subquery_reading_a_cte_is_typed_through_it():
    sql = ("WITH m AS (SELECT avg(s) AS t FROM ops) "
           "SELECT a FROM ops WHERE s > (SELECT t FROM m)")
    assert _types(sql) == [NUMBER]


def test_a_cte_read_only_inside_a_subquery_leaves_the_query_fully_lowered():
    cte = "WITH c AS (SELECT a FROM ops INTERSECT SELECT k FROM dim) "
    only_in_subquery = lower(cte + "SELECT a, b FROM ops WHERE a IN (SELECT a FROM c)", SCHEMA)
    assert only_in_subquery.fully_lowered, only_in_subquery.opaque_reasons
    # read in a FROM, its INTERSECT is still an opaque part of the plan
    in_from = lower(cte + "SELECT ops.a FROM ops JOIN c ON ops.a = c.a", SCHEMA)
    assert in_from.opaque_reasons == ["INTERSECT"]
    unused = lower(cte + "SELECT a FROM ops", SCHEMA)
    assert unused.fully_lowered


def _tokens(sql: str) -> list[SubqueryValue]:
    plan = opaque_subqueries(lower(sql, SCHEMA).plan)
    return [t for n in walk(plan) for e in expressions_of(n) for t in e.find_all(SubqueryValue)]


def test_tokens_carry_the_type_and_render_as_written():
    (tok,) = _tokens("SELECT a FROM ops WHERE b = (SELECT max(b) FROM ops WHERE d = 'x')")
    assert tok.args.get("kind") == NUMBER
    text = tok.sql(dialect=DIALECT)
    assert "ops.d = 'x'" in text and text.startswith("(")


def _params(sql: str):
    return tokens_as_parameters(opaque_subqueries(lower(sql, SCHEMA).plan))


def test_scalar_values_in_comparisons_become_nullable_parameters_one_per_text():
    sql = ("SELECT a FROM ops WHERE b = (SELECT max(b) FROM ops) AND a < (SELECT min(a) FROM ops) "
           "AND a <> (SELECT max(b) FROM ops)")
    plan = _params(sql)
    assert plan is not None and not has_tokens(plan)
    names = sorted({p.this for n in walk(plan) for e in expressions_of(n) for p in e.find_all(exp.Placeholder)})
    assert names == ["q0_number", "q1_number"]       # the repeated max(b) is one value


@pytest.mark.parametrize("where", [
    "a IN (SELECT b FROM ops)",                        # a set, not a value
    "a = (SELECT max(b) FROM ops) + 1",                # an argument of arithmetic
    "d = (SELECT max(d) FROM ops)",                    # not a number
    "abs(a) = abs((SELECT max(b) FROM ops))",          # an argument of a function
])
def test_other_subqueries_have_no_parameter_form(where):
    assert _params(f"SELECT a FROM ops WHERE {where}") is None


def test_the_instance_of_a_match_reads_subquery_values_as_parameters():
    sql = _J.format(
        l="SELECT a, sum(s) AS t FROM ops WHERE b = (SELECT max(b) FROM dim JOIN ops ON k = a) GROUP BY a",
        r="SELECT a AS k, count(*) AS n FROM ops WHERE b = (SELECT min(k) FROM dim) GROUP BY a")
    m = first_match(lower(sql, SCHEMA).plan, finished=True)
    assert m is not None and m.family == "DJ"
    inst = instance_of(m)
    assert inst is not None
    assert ":q0_number" in inst.sql and ":q1_number" in inst.sql and "dim" not in inst.sql
    assert set(inst.schema) == {"ops"}                 # the sub-queries' tables are not read
    assert is_canonical(inst.sql, inst.schema) == (True, "")
    # the runtime's program evaluates the sub-queries, the certificate the parameters: only
    # an unbounded proof covers this match at run time
    assert inst.reads_subquery_values


def test_an_instance_without_subqueries_reads_no_values():
    sql = _J.format(l="SELECT a, sum(s) AS t FROM ops WHERE b = 3 GROUP BY a",
                    r="SELECT a AS k, count(*) AS n FROM ops GROUP BY a")
    inst = instance_of(first_match(lower(sql, SCHEMA).plan, finished=True))
    assert inst is not None and not inst.reads_subquery_values


def test_a_match_with_a_set_subquery_on_a_branch_has_no_instance():
    sql = _J.format(
        l="SELECT a, sum(s) AS t FROM ops WHERE b IN (SELECT k FROM dim) GROUP BY a",
        r="SELECT a AS k, count(*) AS n FROM ops GROUP BY a")
    m = first_match(lower(sql, SCHEMA).plan, finished=True)
    assert m is not None and m.family == "DJ"
    assert instance_of(m) is None
