"""Trap test through ``SuperOpSession.sql(...).collect()`` (issue 11 item 5): the Min & Join
"some row matched" flag of a FULL join whose HAVING drops a key. The join residual divides
by zero on that key's rows; the query never evaluates it there (no group to pair with,
and Spark pushes no residual into either side of a full join), so ``spark.sql`` returns
rows. The template evaluates the residual only behind the group's survival (a HAVING on
the key) or the family refuses (a HAVING on the aggregate: near-miss
``residual_behind_aggregate_filter``); the template as it was raised
DIVIDE_BY_ZERO at ``collect()``, after ``so.sql`` had returned."""
from __future__ import annotations

import pytest

from superop import families
from superop.dsl import e
from superop.rules_out.catalog import make_catalog
from superop.rules_out.coverage import covered_rule
from superop.sparkutil import bag

T = "proofs_mj_trap"          # a view of its own (temp views are global to the test session)
# key 2 has s = 2: 10 / (o.s - m.a) divides by zero on its rows; key 1 keeps its group
ROWS = [(1, 5, 7), (1, 3, 0), (2, 4, 2), (2, 6, 3), (3, -1, 9), (None, 1, 1)]
Q = (f"SELECT m.a, m.mn, o.a AS oa, o.s FROM (SELECT a, min(b) AS mn FROM {T} GROUP BY a HAVING {{having}}) m "
     f"FULL JOIN (SELECT a, s FROM {T}) o ON m.a = o.a AND 10 / (o.s - m.a) > 1")
KEY_HAVING, AGG_HAVING = "a <> 2", "min(b) < 4"


@pytest.fixture(scope="module")
def so(spark, tmp_path_factory):
    from superop.runtime import SuperOpSession
    from superop.verify.certify import prove_and_certify
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    # a file-backed table, as in production (Spark would fold an inline VALUES table at
    # planning time, where the runtime's fail-safe catches an error)
    path = str(tmp_path_factory.mktemp("mjtrap") / "t.parquet")
    spark.createDataFrame(ROWS, "a int, b int, s int").coalesce(1).write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView(T)
    # the rule for FULL joins with the MIN on the left: both parts of its template proof
    insts = [i for i in families.get("MJ").proofs_for(("MJ", 2, "full", "left")) if "/min" in i.name]
    rule = covered_rule("MJ", [prove_and_certify(i) for i in insts], rule_id="mj-full-agg-left")
    yield SuperOpSession(spark, make_catalog([rule]), gate=False)
    spark.sql(f"DROP VIEW IF EXISTS {T}")


def test_a_key_filter_keeps_the_residual_behind_the_groups_survival(spark, so):
    q = Q.format(having=KEY_HAVING)
    r = so.rewrite(q)
    assert r.applied == ["mj-full-agg-left"], r.explanation
    expected = bag(spark.sql(q).collect())
    assert bag(so.sql(q).collect()) == expected
    assert any(row[2] == 2 and row[0] is None for row in expected)     # key 2: null-extended rows


def test_a_filter_on_the_aggregate_is_refused_with_its_reason_and_runs_unchanged(spark, so):
    from superop.families.mj import MJReason
    from superop.ir import lower
    q = Q.format(having=AGG_HAVING)
    near = [f for f in families.scan(lower(q, {T: {"a": "int", "b": "int", "s": "int"}}).plan)
            if isinstance(f, families.NearMiss)]
    assert [f.reason for f in near] == [MJReason.RESIDUAL_BEHIND_AGGREGATE_FILTER]
    r = so.rewrite(q)
    assert not r.changed and "group survives" in r.explanation, r.explanation
    assert bag(so.sql(q).collect()) == bag(spark.sql(q).collect())


def test_the_template_as_it_was_raises_where_spark_does_not(spark, so, monkeypatch):
    """The flag without the guard (the residual on every row): so.sql returns, collect()
    raises DIVIDE_BY_ZERO, while spark.sql(q) returns rows."""
    from superop.families.mj import template as mj_template
    monkeypatch.setattr(mj_template, "_group_survives_per_row", lambda A, b, keys: e("TRUE"))
    monkeypatch.setattr(so, "cache", None)    # decide again: the cached decision is the fixed template's
    q = Q.format(having=KEY_HAVING)
    assert so.rewrite(q).changed
    df = so.sql(q)
    with pytest.raises(Exception, match="DIVIDE_BY_ZERO"):
        df.collect()
    assert len(spark.sql(q).collect()) > 0
