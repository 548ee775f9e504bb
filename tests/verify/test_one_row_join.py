"""The one-row product lemma (superop.verify.one_row_join): the canonical form's push of a
product with a global aggregate below a GROUP BY is proved bounded (K=4) on the query the
matching path reads it from; forced on a global outer aggregate the same push is refuted
with the empty input (its one row against none), and the checker tells a changed HAVING
apart — so the check can fail."""
from __future__ import annotations

from superop.families.kit.onerow import one_row_products
from superop.ir import lower
from superop.verify.one_row_join import CONCRETE_SCHEMA, LEMMA_SQL, prove_lemma
from superop.verify.plans import check_plans_equivalent


def test_the_lemma_is_proved():
    r = prove_lemma()
    assert (r.status, r.method, r.K) == ("verified", "bounded", 4), r.reason
    assert r.details["variant"] == "" and r.details["assumptions"]


def test_the_push_over_a_global_outer_aggregate_is_refuted():
    r = prove_lemma(variant="global_outer")
    assert r.status == "refuted", r.reason
    cex = r.counterexample
    # an input the outer filter empties (the empty table, or rows it drops: Z3 picks):
    # the query still has its one row, the pushed plan none
    assert cex is not None and all(not (b > a or b is None) for _, a, b in cex.rows
                                   if a is not None and b is not None) \
        and all(b is not None for _, _, b in cex.rows)
    assert len(cex.plan_output) == 1 and cex.program_output == []


def test_the_checker_tells_a_changed_having_apart():
    """The lemma's query with concrete filters against the canonical form of the same query
    whose HAVING says >= instead of >: refuted (the check is not vacuous)."""
    sql = LEMMA_SQL.replace("LIKE 'p%'", "> a").replace("LIKE 'q%'", "= 1")
    plan = lower(sql, CONCRETE_SCHEMA).plan
    other = one_row_products(lower(sql.replace("HAVING SUM(a) >", "HAVING SUM(a) >="), CONCRETE_SCHEMA).plan)
    assert check_plans_equivalent(plan, one_row_products(plan), 4, 60000).status == "verified"
    assert check_plans_equivalent(plan, other, 4, 60000).status == "refuted"
