"""Parametric certificates: an instance's literals in value positions as typed parameters
(superop.families.parametric). One bounded certificate of the parametric form covers every
instance of the template whose literals have the same types — and only when binding the
parameters gives back exactly the program the runtime builds and the SQL it compiles;
literals elsewhere (ordinals, LIMIT, a function's option) stay as written."""
from __future__ import annotations

import json

import pytest
import sqlglot
from sqlglot import exp

from superop.families.identity import instance_of_sql
from superop.families.parametric import parametric_of, value_literals
from superop.ir.parameters import literal_type, parameter_type
from superop.rewrite.proofs import parametric_covers
from superop.rewrite.rewriter import Rewriter, rewrite_structural
from superop.rules_out.catalog import make_catalog
from superop.rules_out.coverage import covered_rule
from superop.sparkutil import bag
from superop.verify.certify import check_and_certify, recheck_detail
from superop.verify.check import check_sql

from .runtime_fixtures import SCHEMA

DJ = ("SELECT x.a, x.t, y.n FROM (SELECT a, sum(s) AS t FROM ops WHERE b > {lo} GROUP BY a) x "
      "JOIN (SELECT a, count(*) AS n FROM ops WHERE c < {hi} GROUP BY a) y ON x.a = y.a")


def test_spark_types_of_literals():
    assert literal_type("5") == "int" and literal_type("3000000000") == "bigint"
    assert literal_type("2.5") == "decimal(2,1)" and literal_type("0.05") == "decimal(2,2)"
    assert literal_type("12.50") == "decimal(4,2)" and literal_type("1e3") is None
    assert parameter_type("p0_int") == ("int", 32) and parameter_type("p3_decimal_2_1") == ("real", None)
    assert parameter_type("p0_string") is None and parameter_type("x") is None


def test_value_positions_become_parameters_and_bind_back():
    inst = instance_of_sql(DJ.format(lo=0, hi=2.5), SCHEMA)
    par = parametric_of(inst)
    assert par is not None
    assert dict(par.bindings) == {"p0_int": "0", "p1_decimal_2_1": "2.5"}
    assert ":p0_int" in par.instance.sql and ":p1_decimal_2_1" in par.instance.sql
    assert par.bind(par.instance.sql) == inst.sql
    # the same template with other literals of the same types: one parametric form
    other = parametric_of(instance_of_sql(DJ.format(lo=7, hi=9.9), SCHEMA))
    assert other is not None and other.instance.key == par.instance.key
    # another type (decimal(3,2)) is another parametric form
    wider = parametric_of(instance_of_sql(DJ.format(lo=7, hi=9.95), SCHEMA))
    assert wider is not None and wider.instance.key != par.instance.key


def test_literals_outside_value_positions_stay():
    tree = sqlglot.parse_one("SELECT a, round(sum(s), 2) FROM ops WHERE b > 1 GROUP BY 1 LIMIT 5", read="spark")
    assert [lit.this for lit in value_literals(tree)] == ["1"]
    assert isinstance(value_literals(tree)[0].parent, exp.GT)


def test_no_literal_no_parametric_form():
    q = "SELECT a, sum(s) AS t FROM ops GROUP BY a UNION ALL SELECT a, count(*) FROM ops GROUP BY a"
    assert parametric_of(instance_of_sql(q, SCHEMA)) is None


@pytest.fixture(scope="module")
def par_cert():
    inst = instance_of_sql(DJ.format(lo=0, hi=3), SCHEMA)
    par = parametric_of(inst)
    c = check_and_certify(par.instance.sql, par.instance.schema, K=4, timeout_ms=60000)
    assert c["status"] == "verified", c.get("reason")
    assert c["instance"] == par.instance.key and c["emitted_sql"]["status"] == "verified"
    assert parametric_covers(c, inst)
    return c


@pytest.fixture(scope="module")
def par_catalog(par_cert):
    return make_catalog([covered_rule("DJ", [par_cert], rule_id="dj-inner-parametric")], version="t")


def test_a_parametric_certificate_rechecks(par_cert):
    ok, why = recheck_detail(par_cert, require_runtime=True)
    assert ok, why


@pytest.mark.parametrize("lo,hi", [(0, 3), (4, 1), (100, 0), (2, 2)])
def test_it_covers_every_literal_of_the_types(spark, ops, par_catalog, lo, hi):
    q = DJ.format(lo=lo, hi=hi)
    r = rewrite_structural(Rewriter(par_catalog), q, SCHEMA)
    assert r.applied == ["dj-inner-parametric"], r.explanation
    assert "of parametric instance" in r.explanation and f"p0={lo}" in r.explanation
    assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(q).collect())


@pytest.mark.parametrize("q", [
    DJ.format(lo=0, hi=2.5),                          # another literal type: another instance
    DJ.format(lo=-4, hi=3),                           # a sign before the parameter: another form
    DJ.format(lo=0, hi=3).replace("c < 3", "c <= 3"),  # another predicate
    DJ.format(lo=0, hi=3).replace("sum(s)", "max(s)"),  # another aggregate
])
def test_keep_unchanged_what_it_does_not_cover(par_catalog, q):
    r = rewrite_structural(Rewriter(par_catalog), q, SCHEMA)
    assert not r.changed and r.sql == q, r.explanation


def test_a_proof_that_needs_the_literals_value_is_not_parametric():
    # x > 5 OR x <= 5 is TRUE for every non-NULL x, but only because the two literals are
    # equal: a "program" that drops the filter is right for the instance and wrong for the
    # parametric form (the parameters are independent), which Z3 refutes
    from superop.dsl import Program
    q = "SELECT a, sum(s) AS t FROM ops WHERE b > 5 OR b <= 5 GROUP BY a"
    inst = "SELECT a, sum(s) AS t FROM ops WHERE b > :p0_int OR b <= :p1_int GROUP BY a"
    prog = Program.from_json({"keys": ["a"], "output": ["a", "t"], "output_types": [], "memory": "streaming",
                              "sort": [], "accumulators": [{"name": "f1", "func": "sum", "arg": "row.s",
                                                            "guard": "NOT row.b IS NULL"}],
                              "flags": [{"name": "any", "guard": "NOT row.b IS NULL"}],
                              "partition_emits": [{"guard": "COALESCE(flag.any, FALSE)",
                                                   "outputs": ["key.a", "acc.f1"]}], "row_emits": []})
    assert check_sql(q, SCHEMA, prog, K=3).status == "verified"
    assert check_sql(inst, SCHEMA, prog, K=3).status == "refuted"


def test_a_program_that_reads_a_literals_value_does_not_bind(par_cert):
    # the certificate's program with a literal changed inside it is not what the parametric
    # form binds to: the runtime checks the binding, not only the key
    inst = instance_of_sql(DJ.format(lo=0, hi=3), SCHEMA)
    par = parametric_of(inst)
    from superop.dsl import Program
    from superop.rewrite.proofs import bound_equal, instance_proof
    from superop.families.coverage import runtime_program
    general = runtime_program(par.instance.sql, par.instance.schema)
    actual = runtime_program(inst.sql, inst.schema)
    proof = instance_proof(par_cert)
    assert bound_equal(par, general, actual, proof)
    tampered = Program.from_json(json.loads(json.dumps(actual.to_json()).replace("> 0", "> 1")))
    assert not bound_equal(par, general, tampered, proof)


def test_first_sight_certifies_a_sample_moment_instance_itself(monkeypatch):
    """stddev_samp / var_samp make a parametric check several times slower than the
    instance's (their nonlinear definitions): first sight (on a time budget) checks such an
    instance itself — and still tries the parametric form first for other instances."""
    import superop.verify.certify as certify_mod
    from superop import families
    from superop.families.parametric import slow_parametric
    from superop.ir import lower
    from superop.ir.parameters import PLACEHOLDER
    from superop.runtime.first_sight import FirstSight
    moment = DJ.format(lo=0, hi=3).replace("sum(s)", "stddev_samp(s)")
    assert slow_parametric(instance_of_sql(moment, SCHEMA))
    assert not slow_parametric(instance_of_sql(DJ.format(lo=0, hi=3), SCHEMA))
    seen: list[bool] = []

    def record(sql, schema, **kw):
        seen.append(bool(PLACEHOLDER.search(sql)))
        return {"status": "unknown", "reason": "recorded only"}
    monkeypatch.setattr(certify_mod, "check_and_certify", record)

    def no_types(node):
        raise RuntimeError("no Spark here")
    for q, want in ((moment, [False]), (DJ.format(lo=0, hi=3), [True, False])):
        seen.clear()
        m = families.first_match(lower(q, SCHEMA).plan, finished=True)
        assert FirstSight(no_types)(instance_of_sql(q, SCHEMA), m, "") is None
        assert seen == want, q


# a pivot join whose uses read the aggregate AFTER a filter on its output (q39's shape):
# the program evaluates the second use's guard `y = 1 + 1` on rows whose group the filter
# drops, so with parameters the guard's `:p2_int + :p3_int` could overflow in the program
# only — the parametric certificate assumes it does not, and the runtime checks that premise
PIVOT = ("WITH t AS (SELECT k, y, s FROM (SELECT k, y, sum(x) AS s FROM sd GROUP BY k, y) a WHERE s > 0) "
         "SELECT t1.k, t1.s, t2.s AS s2 FROM t t1 JOIN t t2 ON t1.k = t2.k "
         "WHERE t1.y = {a} AND t2.y = {b} + {c}")
SD = {"sd": {"k": "int", "y": "int", "x": "int"}}


def test_integer_arithmetic_of_parameters_is_checked_when_bound():
    from superop.ir.parameters import arithmetic_in_range, is_parameter_arithmetic
    tree = sqlglot.parse_one("SELECT * FROM t WHERE y = :p2_int + :p3_int AND z = :p4_bigint * 2 "
                             "AND w > :p5_decimal_2_1 + 1 AND v = y + :p6_int", read="spark")
    arith = [e for e in tree.find_all(exp.Add, exp.Mul) if is_parameter_arithmetic(e)]
    assert sorted(e.sql() for e in arith) == [":p2_int + :p3_int", ":p4_bigint * 2", ":p5_decimal_2_1 + 1"]
    ok = {"p2_int": "1", "p3_int": "1", "p4_bigint": "4000000000", "p5_decimal_2_1": "9.9", "p6_int": "7"}
    assert arithmetic_in_range(tree, ok)
    assert not arithmetic_in_range(tree, {**ok, "p2_int": "2147483647"})          # int + int overflows
    assert not arithmetic_in_range(tree, {**ok, "p4_bigint": str(1 << 62)})        # bigint * 2 overflows
    assert arithmetic_in_range(tree, {**ok, "p6_int": "2147483647"})               # y + p6: not parameters alone


def test_a_parametric_certificate_assumes_its_parameter_arithmetic_does_not_overflow(monkeypatch):
    from superop.verify import exprs
    from superop.verify.certificate import PARAMETER_ARITHMETIC_ASSUMPTION
    inst = instance_of_sql(PIVOT.format(a=1, b=1, c=1), SD)
    par = parametric_of(inst)
    assert par is not None and ":p2_int + :p3_int" in par.instance.sql, par and par.instance.sql
    c = check_and_certify(par.instance.sql, par.instance.schema, K=4, timeout_ms=120000)
    assert c["status"] == "verified", c.get("reason")
    assert PARAMETER_ARITHMETIC_ASSUMPTION in c["assumptions"]
    assert parametric_covers(c, inst)
    assert parametric_covers(c, instance_of_sql(PIVOT.format(a=5, b=5, c=1), SD))
    # bound to literals whose sum overflows, the premise fails: not covered
    assert not parametric_covers(c, instance_of_sql(PIVOT.format(a=1, b=2147483647, c=1), SD))
    # without the premise Z3 finds the overflow in the program's guard (a real difference)
    monkeypatch.setattr(exprs, "_premised", lambda e, v: v)
    bare = check_and_certify(par.instance.sql, par.instance.schema, K=4, timeout_ms=120000)
    assert bare["status"] == "refuted", bare.get("reason")
    assert "raises" in bare["reason"]
