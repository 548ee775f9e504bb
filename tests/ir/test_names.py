"""Qualified and quoted table names survive lowering and generation; sharing uses the
resolved identity; names resolve case-sensitively when Spark does (no Spark here)."""
from __future__ import annotations

import pytest

from superop.errors import SqlError
from superop.ir import DictSchema, Scan, TableName, UnionAll, lower, render, shared_nodes, to_sql, walk
from superop.ir.lower import qualify_query

COLS = {"a": "int", "b": "int", "s": "int"}
S = {"ops": COLS, "sales.ops": COLS, "cat.db.t": COLS, "`group`.`order`": {"select": "int", "from": "int"}}


def scans(plan):
    return [n for n in walk(plan) if isinstance(n, Scan)]


@pytest.mark.parametrize("text, parts, quoted", [
    ("ops", ("ops",), (False,)),
    ("sales.ops", ("sales", "ops"), (False, False)),
    ("cat.db.t", ("cat", "db", "t"), (False, False, False)),
    ("`my db`.`t 1`", ("my db", "t 1"), (True, True)),
    ("`a``b`.c", ("a`b", "c"), (True, False)),
    ("SALES.Ops", ("SALES", "Ops"), (False, False)),
])
def test_table_name_round_trip(text, parts, quoted):
    n = TableName.parse(text)
    assert (n.parts, n.quoted) == (parts, quoted)
    assert TableName.parse(n.sql()) == n
    assert n.sql() == text


@pytest.mark.parametrize("bad", ["a b", "t AS x", "(SELECT 1)", "a.b.c.d"])
def test_not_a_table_name(bad):
    with pytest.raises(ValueError):
        TableName.parse(bad)


@pytest.mark.parametrize("q, written", [
    ("SELECT a FROM sales.ops", "FROM sales.ops AS ops"),
    ("SELECT sales.ops.a FROM sales.ops", "FROM sales.ops AS ops"),
    ("SELECT x.a FROM cat.db.t AS x", "FROM cat.db.t AS x"),
    ("SELECT a FROM `sales`.`ops`", "FROM `sales`.`ops` AS ops"),
    ("SELECT a FROM SALES.OPS", "FROM SALES.OPS AS ops"),
    ("SELECT `select` FROM `group`.`order` WHERE `from` > 1", "FROM `group`.`order` AS _s1"),
])
def test_qualified_names_are_generated_as_written(q, written):
    low = lower(q, S)
    assert low.fully_lowered, low.opaque_reasons
    assert written in to_sql(low.plan)


def test_plan_cli_shows_the_qualified_name(tmp_path, capsys):
    import json

    from superop.cli import main
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"sales.ops": COLS}))
    assert main(["plan", "--sql", "SELECT a FROM sales.ops", "--schema", str(f)]) == 0
    out = capsys.readouterr().out
    assert "Scan sales.ops" in out and "FROM sales.ops AS ops" in out


def test_two_databases_are_two_scans():
    p = lower("SELECT a, sum(s) AS t FROM sales.ops GROUP BY a "
              "UNION ALL SELECT a, count(*) FROM ops GROUP BY a", S).plan
    assert isinstance(p, UnionAll) and shared_nodes(p) == []
    assert sorted(n.table for n in scans(p)) == ["ops", "sales.ops"]
    assert {n.identity for n in scans(p)} == {("ops",), ("sales", "ops")}


def test_one_table_written_two_ways_is_one_scan():
    src = DictSchema({"default.ops": COLS, "sales.ops": COLS}, current_database="default")
    p = lower("SELECT a, sum(s) AS t FROM ops GROUP BY a "
              "UNION ALL SELECT a, count(*) FROM default.ops GROUP BY a", src).plan
    assert len(shared_nodes(p)) == 1 and scans(p)[0].identity == ("default", "ops")


def test_flat_schema_does_not_equate_a_qualified_name_with_a_bare_one():
    # {"ops": ...} knows no databases: sales.ops gets the columns, not the identity
    p = lower("SELECT a FROM sales.ops UNION ALL SELECT a FROM ops", {"ops": COLS}).plan
    assert {n.identity for n in scans(p)} == {("ops",), ("sales", "ops")}


def test_cte_shadows_only_unqualified_names():
    q = "WITH ops AS (SELECT a FROM sales.ops WHERE a > 1) SELECT ops.a FROM ops JOIN sales.ops s ON ops.a = s.a"
    p = lower(q, S).plan
    assert {n.table for n in scans(p)} == {"sales.ops"}          # never the table `ops`
    assert to_sql(p) == ("SELECT ops.a FROM sales.ops AS ops JOIN sales.ops AS s ON ops.a = s.a "
                         "WHERE ops.a > 1")


def test_cte_scoping_follows_sql():
    # the CTE named `ops` is visible in the main query only, not in the earlier CTE body
    q = "WITH x AS (SELECT a FROM ops), ops AS (SELECT a FROM x) SELECT a FROM ops"
    low = lower(q, {"ops": COLS})
    assert [n.table for n in scans(low.plan)] == ["ops"]


def test_unknown_qualified_table_is_an_error():
    with pytest.raises(SqlError, match="unknown table: nope.ops"):
        lower("SELECT a FROM nope.ops", {"sales.ops": COLS})


def test_case_sensitive_columns_are_kept_apart():
    src = DictSchema({"t": {"K": "int", "k": "int", "V": "int", "v": "int"}}, case_sensitive=True)
    low = lower("SELECT K, sum(v) AS t FROM t GROUP BY K", src)
    assert low.fully_lowered
    assert scans(low.plan)[0].columns == (("K", "int"), ("k", "int"), ("V", "int"), ("v", "int"))
    assert to_sql(low.plan) == "SELECT _s1.K, _s1.t FROM (SELECT t.K, SUM(t.v) AS t FROM t AS t GROUP BY t.K) AS _s1"


def test_case_insensitive_resolution_normalizes():
    low = lower("SELECT A, SUM(S) AS T FROM OPS GROUP BY a", {"ops": COLS})
    assert low.fully_lowered and "SUM(OPS.s)" not in to_sql(low.plan)
    assert scans(low.plan)[0].table == "OPS"
    assert "FROM OPS AS ops" in to_sql(low.plan)


def test_qualified_ast_keeps_written_names():
    q = qualify_query("SELECT a FROM sales.ops", S)
    assert "FROM sales.ops AS ops" in q.ast.sql()
    assert set(q.tables) == {("sales", "ops")}


def test_render_shows_the_qualified_scan():
    assert "Scan cat.db.t [a:int, b:int, s:int]" in render(lower("SELECT a FROM cat.db.t", S).plan)
