"""Self EXISTS (superop/families/ex.py) beyond the fixture table: TPC-DS q16/q94 match as ONE
instance each (the EXISTS sunk onto the fact table it reads); the unbounded proofs fail for
a wrong fold or without the NULL-key guard; both forms (windows; the rows semi / anti
joined with the GROUP BY of their keys) return the original's rows on Spark (NULL keys,
NULL values, duplicates, one-row groups, an empty input); the grouped form is a semi join
in Spark's plan."""
from __future__ import annotations

from dataclasses import replace

import pytest

from superop import families
from superop.ir import lower
from superop.rewrite.rewriter import Rewriter, rewrite_structural
from superop.sparkutil import bag
from superop.dsl import GROUPED, RowEmit, e
from superop.families.instances import find, program_of
from superop.verify.template_proofs import prove_instance
from superop.workloads.tpcds import TPCDS_SCHEMA, queries


def test_q16_and_q94_are_one_self_exists_instance_each():
    for name, key, value in (("q16", "cs_order_number", "cs_warehouse_sk"),
                             ("q94", "ws_order_number", "ws_warehouse_sk")):
        found = families.scan(lower(queries()[name], TPCDS_SCHEMA).plan)
        assert [(type(f).__name__, f.family, f.join_kind) for f in found] == [("Match", "EX", "semi")], name
        prog = found[0].program
        assert prog.keys == (key,), name
        assert sorted((a.func, a.arg.name) for a in prog.accumulators) == [("max", value), ("min", value)]
        assert families.get("EX").point(found[0]).variant == "ne"


def test_not_equal_written_as_not_of_an_equality_is_the_ne_variant():
    # DataFrame code's i.b != o.b reaches the plan as NOT (i.b = o.b)
    sql = "SELECT o.a, o.b FROM ops AS o WHERE EXISTS (SELECT * FROM ops AS i WHERE i.a = o.a AND NOT (i.b = o.b))"
    found = families.scan(lower(sql, {"ops": {"a": "int", "b": "int"}}).plan)
    assert [(type(f).__name__, f.family, f.join_kind) for f in found] == [("Match", "EX", "semi")]
    assert families.get("EX").point(found[0]).variant == "ne"


F = "F(row.k, row.a, row.b)"


@pytest.mark.parametrize("name,old,new", [
    ("EX/semi/ne", f"acc.f2 > {F}", f"acc.f2 >= {F}"),       # MAX(v) >= u holds for v = u too
    ("EX/semi/lt", f"acc.f1 > {F}", f"acc.f1 >= {F}"),
    ("EX/semi/gt", f"acc.f1 < {F}", f"acc.f1 <= {F}"),
    ("EX/anti/ne", "NOT key.k IS NULL AND", "TRUE AND"),      # a NULL key never joins
    ("EX/semi/keys", "NOT key.k IS NULL AND", "TRUE AND"),
])
def test_the_proofs_fail_for_a_wrong_program(name, old, new):
    inst = find(name)
    good = program_of(inst)
    assert prove_instance(inst).status == "verified"
    guard = good.row_emits[0].guard.sql(dialect="spark")
    assert old in guard, guard
    bad = replace(good, row_emits=(RowEmit(e(guard.replace(old, new)), good.row_emits[0].outputs),))
    assert prove_instance(inst, program=bad).status == "refuted"


DIFFERENTIAL = [
    "SELECT o.a, o.b FROM ops AS o WHERE EXISTS (SELECT * FROM ops AS i WHERE i.a = o.a AND i.b <> o.b)",
    "SELECT o.a, o.b, o.s FROM ops AS o WHERE NOT EXISTS (SELECT * FROM ops AS i WHERE i.a = o.a AND i.b <> o.b)",
    "SELECT o.a, o.s FROM ops AS o WHERE EXISTS (SELECT * FROM ops AS i WHERE o.a = i.a AND i.s >= o.s)",
    "SELECT o.a, o.c FROM ops AS o WHERE NOT EXISTS (SELECT * FROM ops AS i WHERE i.a = o.a AND i.c < o.c)",
    "SELECT o.a, o.d FROM ops AS o WHERE o.b > 0 AND EXISTS (SELECT * FROM ops AS i WHERE i.a = o.a AND i.c > 0)",
    "SELECT o.a, o.d, x.region FROM ops AS o, accounts AS x WHERE x.a = o.a AND "
    "EXISTS (SELECT * FROM ops AS i WHERE i.a = o.a AND i.d <> o.d)",
]


@pytest.mark.parametrize("sql", DIFFERENTIAL)
@pytest.mark.parametrize("form", ["", GROUPED])
def test_differential_on_spark(sql, form, proof_catalog, tables, ops_empty, spark):
    for table in ("ops", "ops_empty"):
        q = sql.replace("FROM ops", f"FROM {table}")
        schema = ops_empty if table == "ops_empty" else tables
        r = rewrite_structural(Rewriter(proof_catalog), q, schema, form=form)
        assert r.changed and all(a.startswith("self-exists-") for a in r.applied), r.explanation
        assert ("LEFT SEMI JOIN" in r.sql) == (form == GROUPED), r.sql
        assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(q).collect()), q


def test_the_grouped_form_is_a_semi_join_in_sparks_plan(proof_catalog, tables, spark):
    r = rewrite_structural(Rewriter(proof_catalog), DIFFERENTIAL[0], tables, form=GROUPED)
    plan = spark.sql(r.sql)._jdf.queryExecution().executedPlan().toString()
    assert "LeftSemi" in plan and "Window" not in plan, plan
