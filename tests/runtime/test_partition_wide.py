"""Min & Join's partition-wide form (the window form's program reading the partition's final
MIN/MAX: ``f(v) OVER (PARTITION BY keys)``, no sort on ``v``): original vs rewritten on
Spark over data with NULL keys, NULL arguments, ties, duplicates and groups emptied by a
filter; the form's program and its proof (a wrong form program is refuted); keep-unchanged
where the form is not admitted."""
from __future__ import annotations

from dataclasses import replace

import pytest

from superop.dsl import BUFFERING, STREAMING, e
from superop.families import TemplateError
from superop.families.instances import find, match_of, program_of
from superop.families.mj import PARTITION_WIDE, PartitionWideReason, partition_wide_program
from superop.rewrite.rewriter import rewrite_structural
from superop.sparkutil import bag_of
from superop.verify.certify import check_and_certify
from superop.verify.template_proofs import prove_instance

from .runtime_fixtures import SCHEMA

_MIN = "(SELECT a, min(s) AS mn FROM ops GROUP BY a)"
ADMITTED = {
    # the micro benchmark's mj_core: every row with its group's MIN (NULL key dropped, a=5 all-NULL s)
    "inner-min": f"SELECT o.a, o.b, o.d, o.s, m.mn FROM ops o JOIN {_MIN} m ON o.a = m.a",
    # mj_left_pirho: every row kept, the NULL key's rows NULL-extended
    "left-max-rows-first": "SELECT o.acct, o.size, m.mx FROM (SELECT a AS acct, s AS size FROM ops) o "
                           "LEFT JOIN (SELECT a, max(s) AS mx FROM ops GROUP BY a) m ON o.acct = m.a",
    # aggregate first, a filter on the aggregate (empties groups) and on the rows
    "right-min-sigma": "SELECT m.a, m.mn, o.b FROM (SELECT a, mn FROM {_MIN} t WHERE mn < 7) m "
                       "RIGHT JOIN (SELECT * FROM ops WHERE b > 0) o ON m.a = o.a".replace("{_MIN}", _MIN),
    # the aggregate side emitted alone (partition emit) next to the row emits
    "full-max": "SELECT o.a AS oa, o.c, m.a, m.mx FROM ops o FULL JOIN "
                "(SELECT a, mx FROM (SELECT a, max(c) AS mx FROM ops GROUP BY a) t WHERE a > 1) m ON o.a = m.a",
    "anti-min": f"SELECT o.* FROM ops o LEFT ANTI JOIN {_MIN} m ON o.a = m.a AND o.s > m.mn",
}
# a semi join with the aggregate on the left emits the aggregate side alone: no row emit reads a
# running MIN, the window form already folds whole partitions
NOT_ADMITTED = f"SELECT m.* FROM {_MIN} m LEFT SEMI JOIN ops o ON m.a = o.a"



@pytest.mark.parametrize("name", sorted(ADMITTED))
def test_partition_wide_form_preserves_rows(spark, ops, rw, name):
    sql = ADMITTED[name]
    r = rewrite_structural(rw, sql, SCHEMA, form=PARTITION_WIDE)
    assert r.changed and "partition-wide form" in r.explanation, r.explanation
    # the final MIN/MAX over the partition: no running frame, no order on the argument
    assert "ROWS BETWEEN" not in r.sql and " OVER (PARTITION BY a)" in r.sql, r.sql
    want = bag_of(spark, sql)
    assert bag_of(spark, r.sql) == want and want, r.sql


def test_partition_wide_form_not_admitted_keeps_the_query(rw):
    r = rewrite_structural(rw, NOT_ADMITTED, SCHEMA, form=PARTITION_WIDE)
    assert not r.changed and r.sql == NOT_ADMITTED
    assert "no partition-wide form — no_running_state" in r.explanation, r.explanation


def test_the_form_program_is_the_window_program_on_final_state():
    window = program_of(find("MJ/left/agg-right/max"))
    form = partition_wide_program(window)
    assert window.memory == STREAMING and window.sort and form.memory == BUFFERING and not form.sort
    assert form.row_emits == window.row_emits and form.accumulators == window.accumulators
    # the proof instance of the form proves exactly that program
    inst = find("MJ/left/agg-right/max/partition-wide")
    assert inst.covers.variant == PARTITION_WIDE and program_of(inst) == form
    with pytest.raises(TemplateError) as ei:
        partition_wide_program(form)                    # already final: no second form
    assert ei.value.code is PartitionWideReason.NO_RUNNING_STATE


def test_a_wrong_partition_wide_program_is_refuted():
    """The verifier checks the form's program itself: the final MIN over a filtered fold, or
    the final MAX for a MIN, fails the row emission, by proof and at a bound."""
    from superop.verify.check import check_equivalence
    inst = find("MJ/inner/agg-right/min/partition-wide")
    p = program_of(inst)
    assert prove_instance(inst, program=p).status == "verified"
    (acc,) = p.accumulators
    for wrong in (replace(p, accumulators=(replace(acc, guard=e("row.b > 0")),)),
                  replace(p, accumulators=(replace(acc, func="max"),))):
        r = prove_instance(inst, program=wrong)
        failed = {o["name"] for o in r.details["obligations"] if o["status"] == "failed"}
        assert r.status == "refuted" and failed == {"emit.row"}, (r.status, failed)
        b = check_equivalence(match_of(inst).root, wrong, K=2, functions=inst.functions)
        assert b.status == "refuted"


def test_the_rules_admit_the_form_where_a_proof_covers_it(catalog):
    variants = {r["id"]: {a.get("variant", "") for a in r["admits"]} for r in catalog["rules"]}
    assert all(PARTITION_WIDE in variants[f"mj-{k}"] for k in ("inner", "left", "right", "full", "semi", "anti"))
    semi = next(r for r in catalog["rules"] if r["id"] == "mj-semi")
    # ... but for a semi join only with the rows on the left (the other side has no row emit)
    assert {a["agg_side"] for a in semi["admits"] if a.get("variant") == PARTITION_WIDE} == {"right"}


@pytest.mark.parametrize("name", ["inner-min", "left-max-rows-first"])
def test_bounded_certificate_of_the_emitted_partition_wide_sql(name):
    c = check_and_certify(ADMITTED[name], SCHEMA, K=2, emitted=True, form=PARTITION_WIDE)
    assert c["status"] == "verified" and c["covers"]["variant"] == PARTITION_WIDE
    em = c["emitted_sql"]
    assert em["checked_by"] == "bounded" and em["status"] == "verified" and "ROWS BETWEEN" not in em["sql"]
    # the left join's matched / NULL-extended rows: one CASE per cell, no generator
    assert name != "left-max-rows-first" or ("CASE WHEN" in em["sql"] and "INLINE" not in em["sql"].upper())
