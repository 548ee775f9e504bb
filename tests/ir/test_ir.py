"""Plan-IR unit tests without Spark: sharing, shapes, rendering, renames, join sides,
hidden columns, windows, DISTINCT, LIMIT, UNION ALL, join kinds, opaque fallback, errors."""
from __future__ import annotations

import re

import pytest
from sqlglot import exp

from superop.errors import SqlError
from superop.ir import (
    Aggregate,
    Field,
    Join,
    Limit,
    Opaque,
    Project,
    Rename,
    Scan,
    Select,
    Sort,
    UnionAll,
    Window,
    binary_unions,
    lower,
    render,
    shape,
    shared_nodes,
    to_sql,
    walk,
)
from superop.ir.lower import unresolved
from superop.workloads.paper import PAPER_SCHEMA as S
from superop.workloads.paper import TABLE2_CORPUS
from superop.workloads.tpch import QUERIES, TPCH_SCHEMA


def plan(sql):
    return lower(sql, S).plan


def nodes(p, cls):
    return [n for n in walk(p) if isinstance(n, cls)]


# -- sharing ------------------------------------------------------------------------
def test_cte_used_twice_is_one_node():
    p = plan("WITH t AS (SELECT a, SUM(s) AS x FROM ops GROUP BY a) "
             "SELECT * FROM t t1 JOIN t t2 ON t1.a = t2.a")
    assert isinstance(p, Join)
    assert isinstance(p.left, Rename) and isinstance(p.right, Rename)
    assert p.left.child is p.right.child
    assert isinstance(p.left.child, Aggregate)
    assert p.left.child in shared_nodes(p)


def test_identical_subqueries_are_one_node():
    sub = "(SELECT a, SUM(s) AS x FROM ops WHERE b > 1 GROUP BY a)"
    p = plan(f"SELECT * FROM {sub} l JOIN {sub} r ON l.a = r.a")
    assert p.left.child is p.right.child
    assert [type(n) for n in shared_nodes(p)] == [Aggregate]   # the Spool sits above γ


def test_different_filters_share_only_the_scan():
    p = plan("SELECT a, SUM(s) AS x FROM ops WHERE s < 100 GROUP BY a UNION ALL "
             "SELECT a, SUM(s) AS x FROM ops WHERE s > 100 GROUP BY a")
    assert isinstance(p, UnionAll)
    assert p.inputs[0] is not p.inputs[1]
    assert p.inputs[0].child is not p.inputs[1].child            # the two σ differ
    assert shared_nodes(p) == [Scan("ops", tuple(S["ops"].items()))]


def test_different_tables_are_not_shared():
    p = plan("SELECT a FROM ops UNION ALL SELECT a FROM accounts")
    assert shared_nodes(p) == []
    assert {n.table for n in nodes(p, Scan)} == {"ops", "accounts"}


def test_same_aggregate_different_items_not_merged():
    p = plan("SELECT a, SUM(b) AS f FROM ops GROUP BY a UNION ALL "
             "SELECT a, SUM(c) AS f FROM ops GROUP BY a")
    assert p.inputs[0] is not p.inputs[1]
    assert len(nodes(p, Aggregate)) == 2


# -- shapes -------------------------------------------------------------------------
@pytest.mark.parametrize("q", TABLE2_CORPUS, ids=[q.id for q in TABLE2_CORPUS])
def test_corpus_shape(q):
    assert shape(plan(q.sql)) == q.shape


def test_shapes_distinguish_corpus_entries():
    """Negative: different Table-2 rows lower to different shapes unless the paper
    lists the same shape for both (rows 8 and 12)."""
    by_shape = {}
    for q in TABLE2_CORPUS:
        by_shape.setdefault(shape(plan(q.sql)), []).append(q.id)
    dups = {s: ids for s, ids in by_shape.items() if len(ids) > 1}
    assert dups == {"(σ|γ|ρ, σ|γ)⋈": ["t2-08", "t2-12"]}


@pytest.mark.parametrize("sql, expected", [
    ("SELECT x.a, COUNT(*) AS n FROM ops x GROUP BY x.a", "γ"),          # FROM alias: no ρ
    ("SELECT acct, COUNT(*) AS n FROM (SELECT a AS acct FROM ops) r GROUP BY acct", "ρ|γ"),
    ("SELECT a, COUNT(*) AS n FROM (SELECT a, b FROM ops) r GROUP BY a", "π|γ"),  # restriction
    ("SELECT a, SUM(x) AS n FROM (SELECT a, b + 1 AS x FROM ops WHERE s > 1) r GROUP BY a", "σπ|γ"),
    ("SELECT a, SUM(x) AS n FROM (SELECT a, b + 1 AS x FROM ops) r WHERE x > 1 GROUP BY a", "πσ|γ"),
    ("SELECT a, n FROM (SELECT a, COUNT(*) AS n FROM ops GROUP BY a) g ORDER BY n LIMIT 2", "γ|τ|λ"),
    ("SELECT a, SUM(b) OVER (PARTITION BY a) AS w FROM ops", "ω|ρ"),
    ("SELECT * FROM ops JOIN accounts ON ops.a = accounts.a", "(, )⋈"),
    ("SELECT * FROM ops LEFT JOIN accounts ON ops.a = accounts.a", "(, )⟕"),
    ("SELECT * FROM ops WHERE s > 1", "σ"),
    ("SELECT * FROM ops", ""),
])
def test_shape_examples(sql, expected):
    assert shape(plan(sql)) == expected


def test_shape_negatives():
    fig7 = "SELECT a, SUM(b) AS f FROM ops GROUP BY a UNION ALL SELECT a, MAX(c) AS f FROM ops GROUP BY a"
    fig8 = ("SELECT a, SUM(b) AS f FROM ops WHERE s < 100 GROUP BY a UNION ALL "
            "SELECT a, MAX(c) AS f FROM ops GROUP BY a HAVING MAX(c) > 5")
    assert shape(plan(fig7)) == "(γ, γ)∪"
    assert shape(plan(fig8)) != shape(plan(fig7))
    # A filter after the aggregate is not a filter before it.
    assert shape(plan("SELECT a, COUNT(*) AS n FROM ops GROUP BY a HAVING COUNT(*) > 1")) == "γ|σ"
    assert shape(plan("SELECT a, COUNT(*) AS n FROM ops WHERE s > 1 GROUP BY a")) == "σ|γ"


def test_shape_counts_only_add_subscripts():
    for q in TABLE2_CORPUS:
        p = plan(q.sql)
        assert re.sub(r"\d+", "", shape(p, counts=True)) == shape(p)


# -- rendering ----------------------------------------------------------------------
def test_render_golden():
    p = plan("SELECT a, COUNT(*) AS n FROM ops WHERE s < 100 GROUP BY a "
             "HAVING COUNT(*) > 1 ORDER BY n DESC LIMIT 3")
    assert render(p) == "\n".join([
        "Limit 3",
        "  Sort n DESC",
        "    Select n > 1",
        "      Aggregate keys=[ops.a] ops.a, COUNT(*) AS n",
        "        Select ops.s < 100",
        "          Scan ops [a:int, b:int, c:int, d:string, s:int]",
    ])


def test_render_golden_shared():
    p = plan("SELECT a, 'small' AS kind, COUNT(*) AS cnt FROM ops WHERE s < 100 GROUP BY a "
             "UNION ALL SELECT a, 'large' AS kind, COUNT(*) AS cnt FROM ops WHERE s > 100 GROUP BY a")
    assert render(p) == "\n".join([
        "UnionAll n=2",
        "  Aggregate keys=[ops.a] ops.a, 'small' AS kind, COUNT(*) AS cnt",
        "    Select ops.s < 100",
        "      #1 Scan ops [a:int, b:int, c:int, d:string, s:int]",
        "  Aggregate keys=[ops.a] ops.a, 'large' AS kind, COUNT(*) AS cnt",
        "    Select ops.s > 100",
        "      -> #1",
    ])


def test_render_and_sql_are_deterministic():
    for q in TABLE2_CORPUS:
        a, b = lower(q.sql, S), lower(q.sql, S)
        assert render(a.plan) == render(b.plan)
        assert to_sql(a.plan) == to_sql(b.plan) == to_sql(a.plan)
        assert a.plan == b.plan and hash(a.plan) == hash(b.plan)


def test_generated_sql_golden():
    p = plan("SELECT a, COUNT(*) AS n FROM ops WHERE s < 100 GROUP BY a HAVING COUNT(*) > 1")
    assert to_sql(p) == ("SELECT _s1.a, _s1.n FROM (SELECT ops.a, COUNT(*) AS n FROM ops AS ops "
                         "WHERE ops.s < 100 GROUP BY ops.a) AS _s1 WHERE _s1.n > 1")


# -- Rename ---------------------------------------------------------------------------
def test_from_alias_is_identity_rename():
    p = plan("SELECT * FROM ops x")
    assert isinstance(p, Rename) and p.is_identity() and p.renames == ()
    assert p.qualifier == "x" and [f.qualifier for f in p.fields] == ["x"] * 5


def test_renaming_select_is_rename():
    p = plan("SELECT a AS acct, b FROM ops")
    assert isinstance(p, Rename) and not p.is_identity()
    assert p.renames == (("a", "acct"),)
    assert p.names == ("acct", "b")


def test_renaming_derived_table_column_list():
    p = plan("SELECT * FROM (SELECT a, b FROM ops) t(x, y)")
    # qualify() moves the column list into the derived table's select list.
    assert p.names == ("x", "y")
    assert [r.renames for r in nodes(p, Rename) if r.renames] == [(("a", "x"), ("b", "y"))]


def test_expression_select_is_project():
    p = plan("SELECT a, b + c AS bc FROM ops")
    assert isinstance(p, Project) and p.names == ("a", "bc")


# -- joins ----------------------------------------------------------------------------
def _only_join(p):
    (j,) = nodes(p, Join)
    return j


def test_join_side_detection_reversed_equality():
    j = _only_join(plan("SELECT * FROM ops JOIN accounts ON accounts.a = ops.a + 1"))
    ((l, r),) = j.equi
    assert l.sql() == "ops.a + 1" and r.sql() == "accounts.a"
    assert j.residual is None


def test_join_residual_for_one_sided_and_non_equi():
    j = _only_join(plan("SELECT * FROM ops JOIN accounts ON ops.a = accounts.a AND ops.s > 10 "
                        "AND ops.b < accounts.tier AND ops.a = ops.b"))
    assert [(l.sql(), r.sql()) for l, r in j.equi] == [("ops.a", "accounts.a")]
    assert j.residual.sql() == "ops.s > 10 AND ops.b < accounts.tier AND ops.a = ops.b"


def test_comma_join_where_equality_becomes_join_condition():
    p = plan("SELECT * FROM ops, accounts WHERE ops.a = accounts.a AND ops.s > 1")
    assert isinstance(p, Select) and p.predicate.sql() == "ops.s > 1"
    j = p.child
    assert j.kind == "inner" and [(l.sql(), r.sql()) for l, r in j.equi] == [("ops.a", "accounts.a")]


def test_where_above_outer_join_stays_above():
    p = plan("SELECT * FROM ops LEFT JOIN accounts ON ops.a = accounts.a WHERE accounts.tier = ops.b")
    assert isinstance(p, Select) and isinstance(p.child, Join) and p.child.kind == "left"
    assert len(p.child.equi) == 1 and p.child.residual is None


def test_self_join_sides():
    j = _only_join(plan("SELECT * FROM ops x JOIN ops y ON y.a = x.a AND x.s < y.s"))
    assert [(l.sql(), r.sql()) for l, r in j.equi] == [("x.a", "y.a")]
    assert j.left.child is j.right.child                     # one shared scan


@pytest.mark.parametrize("clause, kind", [
    ("JOIN", "inner"), ("INNER JOIN", "inner"), ("LEFT JOIN", "left"),
    ("LEFT OUTER JOIN", "left"), ("RIGHT JOIN", "right"), ("FULL OUTER JOIN", "full"),
    ("LEFT SEMI JOIN", "semi"), ("LEFT ANTI JOIN", "anti"), ("SEMI JOIN", "semi"),
    ("ANTI JOIN", "anti"),
])
def test_join_kinds(clause, kind):
    j = _only_join(plan(f"SELECT * FROM ops {clause} accounts ON ops.a = accounts.a"))
    assert j.kind == kind
    assert len(j.fields) == (5 if kind in ("semi", "anti") else 8)


def test_cross_join_kinds():
    assert _only_join(plan("SELECT * FROM ops CROSS JOIN accounts")).kind == "cross"
    assert _only_join(plan("SELECT * FROM ops, accounts")).kind == "cross"


def test_exists_and_in_become_semi_anti_joins():
    p = plan("SELECT * FROM accounts ac WHERE EXISTS (SELECT 1 FROM ops WHERE ops.a = ac.a "
             "AND ops.s > 100) AND NOT EXISTS (SELECT 1 FROM ops WHERE ops.a = ac.a AND ops.b = 0)")
    assert [j.kind for j in nodes(p, Join)] == ["semi", "anti"]
    p = plan("SELECT * FROM accounts ac WHERE ac.tier IN (SELECT b FROM ops WHERE ops.a = ac.a)")
    (j,) = nodes(p, Join)
    assert j.kind == "semi" and lower("SELECT 1 AS x FROM ops", S).fully_lowered


def test_not_in_correlated_is_opaque():
    # NOT IN differs from an anti join when NULLs occur: never rewritten.
    low = lower("SELECT * FROM accounts ac WHERE ac.tier NOT IN "
                "(SELECT b FROM ops WHERE ops.a = ac.a)", S)
    assert not low.fully_lowered and isinstance(low.plan, Opaque)


def test_correlated_scalar_aggregate_becomes_left_join():
    p = plan("SELECT * FROM ops o1 WHERE s > (SELECT AVG(s) FROM ops o2 WHERE o2.a = o1.a)")
    (j,) = nodes(p, Join)
    assert j.kind == "left" and isinstance(j.right.child, Aggregate)


def test_correlated_count_is_opaque():
    # COUNT over no rows is 0, not NULL: a left join would change the result.
    low = lower("SELECT * FROM ops o1 WHERE 1 < (SELECT COUNT(*) FROM ops o2 WHERE o2.a = o1.a)", S)
    assert not low.fully_lowered


# -- hidden columns, windows, DISTINCT, LIMIT, UNION ----------------------------------
def test_having_hidden_aggregate():
    p = plan("SELECT a FROM ops GROUP BY a HAVING SUM(s) > 100")
    assert isinstance(p, Project) and p.names == ("a",)
    sel = p.child
    assert isinstance(sel, Select) and isinstance(sel.child, Aggregate)
    assert len(sel.child.items) == 2 and sel.child.items[1][0].sql() == "SUM(ops.s)"


def test_order_by_hidden_aggregate_and_column():
    p = plan("SELECT a FROM ops GROUP BY a ORDER BY SUM(s) DESC, a LIMIT 3")
    assert isinstance(p, Project) and p.names == ("a",)
    assert isinstance(p.child, Limit) and isinstance(p.child.child, Sort)
    p = plan("SELECT a, b FROM ops ORDER BY s")
    assert p.names == ("a", "b") and nodes(p, Sort)


def test_window_node():
    p = plan("SELECT a, SUM(b) OVER (PARTITION BY a) AS w, "
             "ROW_NUMBER() OVER (PARTITION BY a ORDER BY s) AS rn FROM ops")
    (w,) = nodes(p, Window)
    assert all(isinstance(e, exp.Window) for e, _ in w.items) and len(w.items) == 2
    assert p.names == ("a", "w", "rn")


def test_distinct_is_aggregate_without_functions():
    p = plan("SELECT DISTINCT a, d FROM ops")
    assert isinstance(p, Aggregate) and len(p.keys) == 2
    assert not any(e.find(exp.AggFunc) for e, _ in p.items)


def test_limit_offset():
    p = plan("SELECT a FROM ops ORDER BY a LIMIT 5 OFFSET 2")
    (lim,) = nodes(p, Limit)
    assert (lim.limit, lim.offset) == (5, 2)


def test_union_all_is_n_ary():
    p = plan("SELECT a FROM ops UNION ALL SELECT b FROM ops UNION ALL SELECT c FROM ops "
             "UNION ALL SELECT tier FROM accounts")
    assert isinstance(p, UnionAll) and len(p.inputs) == 4
    b = binary_unions(p)
    assert len(b.inputs) == 2 and isinstance(b.inputs[0], UnionAll)
    assert p.names == ("a",)


# -- opaque fallback and errors ---------------------------------------------------------
OPAQUE_SQL = [
    "SELECT a, (SELECT COUNT(*) FROM ops o2 WHERE o2.a = o1.a) AS n FROM ops o1",
    "SELECT a FROM ops INTERSECT SELECT a FROM accounts",
    "SELECT a FROM ops EXCEPT SELECT a FROM accounts",
    "SELECT a, x FROM ops LATERAL VIEW explode(array(b, c)) t AS x",
    "SELECT a, COUNT(*) AS n FROM ops GROUP BY ROLLUP(1)",          # ordinal in a grouping set
    "SELECT a, COUNT(*) AS n FROM ops GROUP BY ROLLUP(a + rand())",
    "SELECT 1 AS one",
    "SELECT * FROM VALUES (1, 2) AS v(x, y)",
    "SELECT a FROM ops QUALIFY ROW_NUMBER() OVER (PARTITION BY a ORDER BY s) = 1",
    "SELECT a FROM ops TABLESAMPLE (10 PERCENT)",
    "SELECT x.a FROM ops AS x TABLESAMPLE (10 PERCENT) JOIN accounts ON x.a = accounts.a",
    "SELECT a FROM ops UNION ALL BY NAME SELECT a FROM accounts",
    "SELECT * FROM ops SORT BY a",
    "SELECT a, s FROM ops CLUSTER BY a",
    "SELECT * FROM ops PIVOT (SUM(s) FOR d IN ('read', 'write'))",
    "SELECT * FROM ops o WHERE o.a IN (SELECT a FROM accounts WHERE accounts.tier = o.b) OR o.s > 100",
    "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r",
]


@pytest.mark.parametrize("sql", OPAQUE_SQL)
def test_unmodeled_sql_becomes_opaque(sql):
    low = lower(sql, S)                        # never an exception
    assert not low.fully_lowered and low.opaque_reasons
    ops = nodes(low.plan, Opaque)
    assert ops and all(o.reason for o in ops)
    assert to_sql(low.plan)                    # and it still generates SQL


def test_opaque_inside_a_modeled_plan():
    low = lower("SELECT i.a, COUNT(*) AS n FROM (SELECT a FROM ops INTERSECT "
                "SELECT a FROM accounts) i GROUP BY i.a", S)
    assert isinstance(low.plan, Aggregate) and low.opaque_reasons == ["INTERSECT"]
    assert shape(low.plan) == "γ"


@pytest.mark.parametrize("sql, msg", [
    ("SELEC a FROM ops", "cannot parse SQL"),
    ("SELECT a FROM ops WHERE", "cannot parse SQL"),
    ("SELECT a FROM nope", "unknown table: nope"),
    ("SELECT zz FROM ops", "cannot resolve SQL"),
    ("SELECT ops.zz FROM ops", "cannot resolve SQL"),
    ("SELECT a FROM ops; SELECT b FROM ops", "expected one SQL statement"),
    ("INSERT INTO ops VALUES (1, 2, 3, 'x', 4)", "not a query"),
    ("", "expected one SQL statement"),
])
def test_errors_are_one_line_sql_errors(sql, msg):
    with pytest.raises(SqlError) as e:
        lower(sql, S)
    assert msg in str(e.value) and "\n" not in str(e.value)


def test_fields_and_resolution():
    p = plan("SELECT * FROM ops x JOIN accounts y ON x.a = y.a")
    assert p.fields[0] == Field("x", "a") and p.fields[5] == Field("y", "a")
    assert p.names == ("a", "b", "c", "d", "s", "a", "region", "tier")


def test_nondeterministic_lookalikes_are_not_merged():
    p = plan("SELECT * FROM (SELECT a, rand() AS r FROM ops) x "
             "JOIN (SELECT a, rand() AS r FROM ops) y ON x.a = y.a")
    assert p.left.child is not p.right.child
    assert [type(n) for n in shared_nodes(p)] == [Scan]
    assert not to_sql(p).startswith("WITH")


def test_shared_nondeterministic_cte_is_generated_once():
    p = plan("WITH t AS (SELECT a, rand() AS r FROM ops) SELECT * FROM t t1 JOIN t t2 ON t1.a = t2.a")
    assert p.left.child is p.right.child
    sql = to_sql(p)
    assert sql.startswith("WITH _cte1 AS (") and sql.count("RAND()") == 1


def test_lowered_plans_always_resolve():
    for sql in list(QUERIES.values()):
        assert unresolved(lower(sql, TPCH_SCHEMA).plan) is None
    for q in TABLE2_CORPUS:
        assert unresolved(plan(q.sql)) is None
    for sql in OPAQUE_SQL:
        assert not any(r.startswith("lowering error") for r in lower(sql, S).opaque_reasons)


def test_table_alias_column_list_and_group_by_all():
    p = plan("SELECT * FROM ops AS t(q, w, e, r, y) WHERE q > 2")
    assert p.names == ("q", "w", "e", "r", "y") and unresolved(p) is None
    p = plan("SELECT a, d, MAX(s) AS m FROM ops GROUP BY ALL")
    assert isinstance(p, Aggregate) and [k.sql() for k in p.keys] == ["ops.a", "ops.d"]


def test_window_over_aggregate():
    p = plan("SELECT d, SUM(s) AS t, SUM(s) * 1.0 / SUM(SUM(s)) OVER () AS share FROM ops "
             "GROUP BY d HAVING COUNT(*) > 2 ORDER BY t DESC LIMIT 3")
    assert shape(p) == "γ|σ|ω|π|τ|λ" and p.names == ("d", "t", "share")
    (agg,) = nodes(p, Aggregate)
    assert [e.sql() for e, _ in agg.items] == ["ops.d", "SUM(ops.s)", "COUNT(*)"]


def test_select_list_correlated_scalar_becomes_left_join():
    p = plan("SELECT ac.a, (SELECT SUM(s) FROM ops WHERE ops.a = ac.a) AS total FROM accounts ac")
    assert shape(p) == "(, γ)⟕|ρ" and p.names == ("a", "total")


def test_order_by_dropped_input_columns_sorts_below_projection():
    p = plan("SELECT a, b FROM ops ORDER BY s DESC LIMIT 3")
    assert shape(p) == "τ|λ|π" and isinstance(p, Project)
    # An output alias shadows the input column of the same name (Spark's rule).
    p = plan("SELECT a AS s FROM ops ORDER BY s")
    assert isinstance(p, Sort) and p.order[0].this.sql() == "s"


def test_opaque_root_is_emitted_verbatim():
    low = lower("SELECT * FROM range(10)", S)
    assert isinstance(low.plan, Opaque) and to_sql(low.plan) == low.plan.sql


def test_schema_names_are_case_insensitive():
    upper = {"OPS": {k.upper(): v.upper() for k, v in S["ops"].items()}}
    p = lower("SELECT A, COUNT(*) AS n FROM Ops GROUP BY a", upper).plan
    assert shape(p) == "γ" and nodes(p, Scan)[0].columns[0] == ("a", "int")


def test_union_distinct_is_distinct_over_union_all():
    p = plan("SELECT a FROM ops UNION SELECT b FROM ops UNION ALL SELECT c FROM ops")
    assert isinstance(p, UnionAll) and len(p.inputs) == 2          # ALL over (DISTINCT ∪)
    inner = p.inputs[0]
    assert isinstance(inner, Aggregate) and isinstance(inner.child, UnionAll)
    p = plan("SELECT a FROM ops UNION ALL SELECT b FROM ops UNION SELECT c FROM ops")
    assert isinstance(p, Aggregate) and len(p.child.inputs) == 3   # DISTINCT absorbs ALL
