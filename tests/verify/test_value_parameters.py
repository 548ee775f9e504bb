"""A sub-query's value parameter (``:q<i>_number``) is any number OR NULL to the verifier,
the same value wherever it occurs: a check over it holds for every value the sub-query can
have, and a difference only NULL (or only a fraction) shows is found."""
from __future__ import annotations

import pytest

from superop.dsl.expr_eval import compile_expr
from superop.ir import lower
from superop.verify.plans import check_plans_equivalent

SCHEMA = {"t": {"a": "int", "b": "int"}}


def _check(a: str, b: str) -> str:
    return check_plans_equivalent(lower(a, SCHEMA).plan, lower(b, SCHEMA).plan, K=3).status


@pytest.mark.parametrize("a, b", [
    # equal only when the value is never NULL
    ("SELECT a FROM t WHERE a = :q0_number OR :q0_number IS NULL", "SELECT a FROM t WHERE a = :q0_number"),
    # equal only for integral values
    ("SELECT a FROM t WHERE a < :q0_number", "SELECT a FROM t WHERE a <= :q0_number"),
    # two sub-queries are two values
    ("SELECT a FROM t WHERE a = :q0_number", "SELECT a FROM t WHERE a = :q1_number"),
])
def test_a_difference_some_value_shows_is_refuted(a, b):
    assert _check(a, b) == "refuted"


def test_an_equivalence_for_every_value_and_null_is_verified():
    assert _check("SELECT a FROM t WHERE a = :q0_number",
                  "SELECT a FROM t WHERE :q0_number = a AND a IS NOT NULL") == "verified"


def test_on_test_data_a_value_parameter_is_its_index():
    import sqlglot
    f = compile_expr(sqlglot.parse_one(":q2_number + 1"), lambda c: (lambda env: None))
    assert f({}) == 3
