"""Self EXISTS over PAIRS (TPC-DS q95): a self-join ``π_k(t t1 ⋈ t t2 ON t1.k = t2.k AND t1.w θ
t2.w)`` read only through ``x IN (SELECT k FROM pairs)`` — the right side of a semi join,
where only the SET of its keys matters — is the semi self-join ``t1 ⋉ t2`` on the same ON
clause (``superop.families.kit.existence``), a self-EXISTS instance decided by the key's
MIN / MAX. Bounded Z3 proofs (K = 4) of the whole statement as written against what the
runtime runs and of the set identity behind it; traps where multiplicities or the other
input's columns matter stay unchanged; original vs rewritten on Spark over NULL keys, NULL
values, duplicates, one-value keys and an empty table, compared as bags."""
from __future__ import annotations

import pytest

from superop import families
from superop.dsl import GROUPED
from superop.ir import lower
from superop.rewrite.rewriter import Rewriter, rewrite_structural
from superop.sparkutil import bag
from superop.workloads.tpcds import TPCDS_SCHEMA, queries

from ..runtime.runtime_fixtures import values_view

S = {"t": {"k": "int", "w": "int", "x": "int"}, "u": {"k": "int", "y": "int"}}
PAIRS = ("WITH p AS (SELECT t1.k, t1.w AS w1, t2.w AS w2 FROM t AS t1 JOIN t AS t2 "
         "ON t1.k = t2.k AND t1.w {op} t2.w) ")
OPS = ("<>", "<", ">", "<=", ">=")
VARIANT = {"<>": "ne", "<": "lt", ">": "gt", "<=": "le", ">=": "ge"}

# q95's two uses: the pairs' keys directly, and through an inner join with another table
IN_PAIRS = PAIRS + "SELECT t.k, t.x FROM t WHERE t.k IN (SELECT k FROM p)"
IN_JOINED = PAIRS + "SELECT u.k, u.y FROM u WHERE u.k IN (SELECT u2.k FROM u AS u2, p WHERE u2.k = p.k)"
IN_OTHER_SIDE = PAIRS + "SELECT u.k, u.y FROM u WHERE u.y IN (SELECT w2 FROM p)"

# multiplicities matter, or the dropped input's columns are read: unchanged
TRAPS = [
    PAIRS + "SELECT k, COUNT(*) AS n FROM p GROUP BY k",                       # the pairs counted
    PAIRS + "SELECT k, w1, w2 FROM p",                                         # the pairs themselves
    PAIRS + "SELECT u.k, u.y FROM u WHERE u.k IN (SELECT k FROM p WHERE w2 > 0)",   # both sides read
    PAIRS + "SELECT u.k, u.y FROM u WHERE u.k IN (SELECT k FROM p) OR u.y > 3",     # not a WHERE conjunct
    PAIRS + "SELECT u.k, u.y FROM u WHERE u.k NOT IN (SELECT k FROM p)",       # NOT IN: NULL-aware
]


def _matches(sql, schema=S):
    return [(type(f).__name__, f.family, f.join_kind) for f in families.scan(lower(sql, schema).plan)]


def test_q95_is_one_self_exists_instance():
    """ws_wh, read by both IN sub-queries (directly and joined with web_returns), is one
    instance: web_sales semi joined with itself on the order and ``<>`` of the warehouse."""
    from superop.mining.detect import detect
    plan = lower(queries()["q95"], TPCDS_SCHEMA).plan
    found = families.scan(plan)
    assert [(type(f).__name__, f.family, f.join_kind) for f in found] == [("Match", "EX", "semi")]
    # mining reports it (the same matching path)
    assert [(str(f.status), f.family, f.join_kind) for f in detect(plan)] == [("candidate", "EX", "semi")]
    prog = found[0].program
    assert prog.keys == ("ws_order_number",)
    assert sorted((a.func, a.arg.name) for a in prog.accumulators) == [("max", "ws_warehouse_sk"),
                                                                       ("min", "ws_warehouse_sk")]
    assert families.get("EX").point(found[0]).variant == "ne"


@pytest.mark.parametrize("op", OPS)
def test_pairs_under_in_are_a_self_exists_instance(op):
    for sql in (IN_PAIRS, IN_JOINED, IN_OTHER_SIDE):
        found = families.scan(lower(sql.format(op=op), S).plan)
        assert [(type(f).__name__, f.family, f.join_kind) for f in found] == [("Match", "EX", "semi")], sql
    # the kept input is the one the IN reads: w2 is the right input's value, flipped
    want = {"<>": "ne", "<": "gt", ">": "lt", "<=": "ge", ">=": "le"}[op]
    assert families.get("EX").point(families.scan(lower(IN_OTHER_SIDE.format(op=op), S).plan)[0]).variant == want
    assert families.get("EX").point(families.scan(lower(IN_PAIRS.format(op=op), S).plan)[0]).variant == VARIANT[op]


@pytest.mark.parametrize("sql", TRAPS)
def test_where_multiplicities_or_the_other_side_matter_nothing_matches(sql, proof_catalog):
    assert _matches(sql.format(op="<>")) == []
    r = rewrite_structural(Rewriter(proof_catalog), sql.format(op="<>"), S)
    assert not r.changed and r.sql == sql.format(op="<>"), r.explanation


def test_an_in_over_one_base_table_stays_an_expression():
    """Only a sub-query over a CTE or a join becomes a semi join (the others keep the plan
    every family has always matched)."""
    from superop.ir import Join, walk
    plan = lower("SELECT t.k FROM t WHERE t.k IN (SELECT k FROM u WHERE y > 0)", S).plan
    assert not [n for n in walk(plan) if isinstance(n, Join)]
    plan = lower("WITH v AS (SELECT k FROM u WHERE y > 0) SELECT t.k FROM t WHERE t.k IN (SELECT k FROM v)", S).plan
    assert [n.kind for n in walk(plan) if isinstance(n, Join)] == ["semi"]


@pytest.mark.parametrize("op", OPS)
def test_bounded_proof_of_the_statement_as_written(op):
    """Z3, every table of at most 4 rows (NULLs included): the query as written (the pairs'
    IN) against what the runtime runs — the IN as a semi join, the pairs as the semi
    self-join, that join replaced by the self-EXISTS program."""
    from superop.verify.check import check_rewrite
    sql = IN_PAIRS.format(op=op)
    plan = lower(sql, {"t": S["t"]}).plan
    (m,) = [f for f in families.scan(plan) if isinstance(f, families.Match)]
    for form in ("", GROUPED):
        prog = families.get("EX").program_form(m, m.program, form)
        r = check_rewrite(plan, prog, K=4, timeout_ms=120000, diamond=m)
        assert r.status == "verified", (op, form, r.reason)


@pytest.mark.parametrize("op,having", [("<>", "MIN(w) < MAX(w)"), ("<", "MIN(w) < MAX(w)"),
                                       (">", "MIN(w) < MAX(w)"), ("<=", "COUNT(w) > 0"), (">=", "COUNT(w) > 0")])
def test_bounded_proof_of_the_set_identity(op, having):
    """DISTINCT of the pairs' keys is the grouped form: ``GROUP BY k HAVING MIN(w) < MAX(w)``
    (MIN / MAX ignore NULLs, a comparison with NULL is never TRUE, a NULL key never joins);
    for ``<=`` / ``>=`` a row pairs with itself, so any non-NULL ``w`` will do."""
    from superop.verify.check import check_plans_outcomes
    pairs = lower(PAIRS.format(op=op) + "SELECT DISTINCT k FROM p", {"t": S["t"]}).plan
    semi = lower(f"SELECT DISTINCT t1.k FROM t AS t1 LEFT SEMI JOIN t AS t2 ON t1.k = t2.k AND t1.w {op} t2.w",
                 {"t": S["t"]}).plan
    grouped = lower(f"SELECT k FROM t WHERE k IS NOT NULL GROUP BY k HAVING {having}", {"t": S["t"]}).plan
    for a, b in ((pairs, semi), (semi, pairs), (pairs, grouped), (grouped, pairs)):
        r = check_plans_outcomes(a, b, K=4, timeout_ms=120000)
        assert r.status == "verified", (op, r.reason)


def test_bounded_proof_refutes_the_rewrite_where_counts_matter():
    """The trap the matcher guards: counted, the pairs are NOT the semi join's rows."""
    from superop.verify.check import check_plans_outcomes
    pairs = lower(PAIRS.format(op="<>") + "SELECT k, COUNT(*) AS n FROM p GROUP BY k", {"t": S["t"]}).plan
    semi = lower("SELECT t1.k, COUNT(*) AS n FROM t AS t1 LEFT SEMI JOIN t AS t2 ON t1.k = t2.k AND t1.w <> t2.w "
                 "GROUP BY t1.k", {"t": S["t"]}).plan
    assert check_plans_outcomes(pairs, semi, K=4, timeout_ms=120000).status == "refuted"


# k: NULL keys (never join), NULL values (a comparison is never TRUE), duplicates, a key of
# one value (1), a key with one non-NULL value and NULLs (5), several values (2, 3)
T_ROWS = [(1, 10, 1), (1, 10, 2), (2, 10, 3), (2, 20, 4), (2, 20, 5), (3, 30, 6), (3, None, 7), (3, 10, 8),
          (None, 10, 9), (None, 20, 10), (4, None, 11), (5, 7, 12), (5, None, 13), (6, 1, 14), (6, 2, 15)]
U_ROWS = [(1, 100), (2, 200), (2, 201), (3, 300), (4, 400), (5, 500), (None, 600), (7, 700)]


@pytest.fixture(scope="module")
def pair_tables(spark, tmp_path_factory):
    values_view(spark, "t", "k int, w int, x int", T_ROWS)
    values_view(spark, "u", "k int, y int", U_ROWS)
    path = str(tmp_path_factory.mktemp("t_empty") / "t_empty")
    spark.table("t").limit(0).write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("t_empty")
    return dict(S, t_empty=S["t"])


@pytest.mark.parametrize("sql", [IN_PAIRS, IN_JOINED, IN_OTHER_SIDE])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("form", ["", GROUPED])
def test_differential_on_spark(sql, op, form, proof_catalog, pair_tables, spark):
    for table in ("t", "t_empty"):
        q = sql.format(op=op).replace("FROM t AS", f"FROM {table} AS").replace("JOIN t AS", f"JOIN {table} AS")
        q = q.replace("FROM t WHERE", f"FROM {table} AS t WHERE")
        r = rewrite_structural(Rewriter(proof_catalog), q, pair_tables, form=form)
        assert r.changed and r.applied == ["self-exists-semi"], r.explanation
        got, want = bag(spark.sql(r.sql).collect()), bag(spark.sql(q).collect())
        assert got == want, (q, r.sql)
        if table == "t" and sql is IN_PAIRS and op == "<>":
            assert want, "the data must make the IN select something"


@pytest.mark.parametrize("sql", TRAPS)
def test_traps_run_unchanged_on_spark(sql, proof_catalog, pair_tables, spark):
    q = sql.format(op="<>")
    r = rewrite_structural(Rewriter(proof_catalog), q, pair_tables)
    assert not r.changed
    spark.sql(q).collect()
