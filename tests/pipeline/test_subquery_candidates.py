"""A mined candidate whose match compares with uncorrelated sub-queries is synthesized and
verified with their values as parameters (any number or NULL), never with their text; one
whose sub-query is not a numeric comparison operand is reported unsupported, not verified."""
from __future__ import annotations

from superop.pipeline.candidates import synthesize_candidate
from superop.pipeline.records import MinedCandidate, OutcomeStatus

SCHEMA = {"ops": {"a": "int", "b": "int", "s": "decimal(7,2)", "d": "string"},
          "dim": {"k": "int", "name": "string"}}
_J = "SELECT * FROM ({l}) x JOIN ({r}) y ON x.a = y.k"


def _outcome(sql: str):
    c = MinedCandidate("c", "DJ", "inner", "(σ|γ, σ|γ)⋈", sql, 1, 2, 0.5)
    return synthesize_candidate(c, SCHEMA, 3, 60, 120)


def test_subquery_values_on_a_diamond_join_are_parameters_of_a_verified_instance():
    o = _outcome(_J.format(
        l="SELECT a, sum(s) AS t FROM ops WHERE b = (SELECT max(k) FROM dim WHERE name = 'x') GROUP BY a "
          "HAVING sum(s) > (SELECT t FROM (SELECT avg(s) AS t FROM ops) z)",
        r="SELECT a AS k, count(*) AS n FROM ops WHERE b = (SELECT min(k) FROM dim) GROUP BY a"))
    assert o.status is OutcomeStatus.VERIFIED and o.family == "DJ", (o.reason, o.sql)
    assert ":q0_number" in o.sql and ":q2_number" in o.sql and "dim" not in o.sql
    assert "dim" not in (o.pseudo_code or "") and ":q1_number" in (o.pseudo_code or "")


def test_a_subquery_inside_arithmetic_on_the_match_is_unsupported():
    o = _outcome(_J.format(
        l="SELECT a, sum(s) AS t FROM ops WHERE b = (SELECT max(k) FROM dim) + 1 GROUP BY a",
        r="SELECT a AS k, count(*) AS n FROM ops GROUP BY a"))
    assert o.status is OutcomeStatus.UNSUPPORTED
    assert "not a numeric comparison operand" in (o.reason or "")
