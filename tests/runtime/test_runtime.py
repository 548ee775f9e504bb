"""Runtime behaviour beyond the differential matrix: untouched queries, rule restrictions,
composition, the benefit gate, PushedFilters, fail-safety, thread-safety, explain, the
native compiler against the reference interpreter, the generic executor and the CLI."""
from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pandas as pd
import pytest

from superop.dsl import BUFFERING, STREAMING, Accumulator, Flag, PartitionEmit, Program, RowEmit, SortKey, e
from superop.dsl.interpreter import run_program
from superop.rules_out.catalog import make_catalog, make_rule, write_catalog
from superop.rules_out.signing import signing_key
from superop.rules_out.trust import recheck_locally
from superop.runtime import SuperOpSession, compile_program, run_generic
from superop.runtime.plan import analyze_plan
from superop.sparkutil import bag

from .runtime_fixtures import OPS_ROWS, STREAMING_FOLDS, rule_certificates

DU_Q = ("SELECT a, sum(s) AS t FROM ops WHERE b > 0 GROUP BY a "
        "UNION ALL SELECT a, count(*) AS t FROM ops WHERE c < 5 GROUP BY a")
DJ_Q = ("SELECT * FROM (SELECT a, sum(s) AS t FROM ops GROUP BY a) x "
        "JOIN (SELECT a AS k, max(b) AS mb FROM ops WHERE c > 0 GROUP BY a) y ON x.a = y.k")
MJ_Q = ("SELECT o.a, o.s, m.mn FROM ops o JOIN (SELECT a, min(s) AS mn FROM ops GROUP BY a) m "
        "ON o.a = m.a")

UNCOVERED = [
    "SELECT a, sum(s) FROM ops GROUP BY a",
    "select o.a, r.region\n  from ops o join accounts r on o.a = r.a -- a comment\n",
    # DU grouped on different keys (Algorithm 1 fails)
    "SELECT a, count(*) FROM ops GROUP BY a UNION ALL SELECT b, count(*) FROM ops GROUP BY b",
    # DJ joined on a non-key column (the join does not imply key equality)
    "SELECT * FROM (SELECT a, sum(s) t FROM ops GROUP BY a) x JOIN "
    "(SELECT a, count(*) n FROM ops GROUP BY a) y ON x.t = y.n",
    # MJ with sum (Algorithm 3 admits only one min/max)
    "SELECT o.a, m.t FROM ops o JOIN (SELECT a, sum(s) t FROM ops GROUP BY a) m ON o.a = m.a",
    # global aggregates have no partition key
    "SELECT sum(s) FROM ops UNION ALL SELECT count(*) FROM ops",
    # two different tables
    "SELECT a, count(*) FROM ops GROUP BY a UNION ALL SELECT a, count(*) FROM accounts GROUP BY a",
    "SELECT   a ,d FROM ops WHERE s > 3 ORDER BY a LIMIT 3",
]


@pytest.mark.parametrize("sql", UNCOVERED)
def test_uncovered_queries_come_back_byte_for_byte(so, sql):
    r = so.rewrite(sql)
    assert not r.changed and r.applied == [] and r.error is None
    assert r.sql == sql


def test_catalog_without_the_family_and_edge_restrictions(spark, ops):
    only_du = SuperOpSession(spark, recheck_locally(make_catalog([make_rule(
        "DU", aggregates=STREAMING_FOLDS, certificates=rule_certificates("du-2way"))])))
    assert only_du.rewrite(DU_Q).changed
    assert only_du.rewrite(DJ_Q).sql == DJ_Q
    # the spool->γ edges admit only ρ: the σ's of DU_Q are outside the abstract tree
    rho_only = make_rule("DU", rule_id="du-rho", aggregates=STREAMING_FOLDS,
                         edges=[("Rename",), ("Rename",), ("Select", "Project", "Rename"),
                                ("Select", "Project", "Rename")], certificates=rule_certificates("du-2way"))
    s = SuperOpSession(spark, recheck_locally(make_catalog([rho_only])))
    r = s.rewrite(DU_Q)
    assert not r.changed and "Select on an edge" in r.explanation
    assert s.rewrite(DU_Q.replace(" WHERE b > 0", "").replace(" WHERE c < 5", "")).changed
    # a join-kind restricted rule does not fire on another kind
    left_only = SuperOpSession(spark, recheck_locally(make_catalog([make_rule(
        "DJ", join_kinds=["left"], aggregates=STREAMING_FOLDS, certificates=rule_certificates("dj-left"))])))
    assert left_only.rewrite(DJ_Q).sql == DJ_Q
    assert left_only.rewrite(DJ_Q.replace(" JOIN ", " LEFT JOIN ", 1)).applied == ["dj-left"]


def test_two_independent_diamonds_are_both_rewritten(spark, so):
    q = ("SELECT x.a, x.t, y.mb FROM (SELECT a, sum(s) AS t FROM ops GROUP BY a) x "
         " JOIN (SELECT a, max(b) AS mb FROM ops WHERE c > 0 GROUP BY a) y ON x.a = y.a "
         "UNION ALL "
         "SELECT u.a, u.n, v.mt FROM (SELECT a, count(*) AS n FROM accounts GROUP BY a) u "
         " FULL JOIN (SELECT a, max(tier) AS mt FROM accounts WHERE region IS NOT NULL GROUP BY a) v "
         " ON u.a = v.a")
    r = so.rewrite(q)
    assert r.changed and sorted(r.applied) == ["dj-full", "dj-inner"], r.explanation
    assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(q).collect())
    assert r.exchanges_after < r.exchanges_before


def test_benefit_gate_refuses_when_no_shuffle_is_saved(spark, so):
    # With a broadcast join the original Min & Join shuffles once (the aggregate), as the
    # window form would: the gate must keep the original.
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", str(10 * 1024 * 1024))
    try:
        r = so.rewrite(MJ_Q)
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    assert not r.changed and r.sql == MJ_Q
    assert "benefit gate (exchanges)" in r.explanation and r.exchanges_before == 1
    assert so.rewrite(MJ_Q).changed


def test_pushed_filters_survive(spark, so, tmp_path):
    path = str(tmp_path / "ops_pq")
    spark.table("ops").write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("ops_pq")
    q = DU_Q.replace("FROM ops", "FROM ops_pq")
    r = so.rewrite(q)
    assert r.changed
    before, after = analyze_plan(spark, q), analyze_plan(spark, r.sql)
    assert any("GreaterThan(b,0)" in f for f in before.pushed_filters)
    assert after.pushed_filters and all("Or(" in f for f in after.pushed_filters), after.pushed_filters
    assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(q).collect())
    # an inner diamond join keeps its inferred IsNotNull on the key
    dj = DJ_Q.replace("FROM ops", "FROM ops_pq")
    r2 = so.rewrite(dj)
    assert r2.changed
    assert any("IsNotNull(a)" in f for f in analyze_plan(spark, r2.sql).pushed_filters)


def test_fail_safe(spark, so):
    for bad in ("SELEC a FROM ops", "SELECT a FROM no_such_table", ""):
        r = so.rewrite(bad)
        assert not r.changed and r.sql == bad and r.error
    df = so.sql("SELECT count(*) AS n FROM ops")            # uncovered: runs the original
    assert df.collect()[0].n == len(OPS_ROWS)


def test_thread_safe(spark, so):
    qs = [DU_Q, DJ_Q, MJ_Q, UNCOVERED[0]] * 2
    serial = [so.rewrite(q).sql for q in qs[:4]] * 2
    with ThreadPoolExecutor(4) as ex:
        par = list(ex.map(lambda q: so.rewrite(q).sql, qs))
    assert par == serial


def test_sql_and_explain(spark, so):
    df = so.sql(DJ_Q)
    assert bag(df.collect()) == bag(spark.sql(DJ_Q).collect())
    text = so.explain(DJ_Q)
    assert "rewritten" in text and "dj-inner" in text
    assert "exchanges before: 2 shuffle" in text and "exchanges after:  1 shuffle" in text
    assert "== physical plan after ==" in text and "Exchange hashpartitioning" in text


def test_the_dataframe_the_gate_planned_is_the_one_that_runs(spark, ops, catalog, monkeypatch):
    """``sql`` runs the DataFrame the gate planned and priced: each form's text goes to
    Spark once (no second parse and planning, no separate EXPLAIN), rewritten or kept."""
    so = SuperOpSession(spark, catalog, gate="exchanges", cache=False)
    rewritten = so.rewrite(DJ_Q).sql
    real, seen = spark.sql, []
    monkeypatch.setattr(spark, "sql", lambda q, *a, **k: (seen.append(q), real(q, *a, **k))[1])
    df = so.sql(DJ_Q)
    assert rewritten != DJ_Q and seen.count(rewritten) == 1 and seen.count(DJ_Q) == 1
    assert not [q for q in seen if q.lstrip().upper().startswith("EXPLAIN")]
    assert bag(df.collect()) == bag(real(DJ_Q).collect())
    # kept by the gate (a broadcast join saves no shuffle): the original's planned DataFrame runs
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", str(10 * 1024 * 1024))
    try:
        seen.clear()
        kept = so.sql(MJ_Q)
        assert seen.count(MJ_Q) == 1 and so.rewrite(MJ_Q).changed is False
        assert bag(kept.collect()) == bag(real(MJ_Q).collect())
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")

# ---------------------------------------------------------------------------
# the native compiler and the generic executor against the reference interpreter
# ---------------------------------------------------------------------------
def _ops_df():
    return pd.DataFrame(OPS_ROWS, columns=["a", "b", "c", "d", "s"]).astype(object)


PROGRAMS = {
    "partition-emits": Program(
        keys=("a",), output=("a", "x", "y"),
        accumulators=(Accumulator("n", "count_star", None, e("row.b > 0")),
                      Accumulator("nd", "count_distinct", e("row.d"), None),
                      Accumulator("m", "max", e("row.d"), e("row.c IS NOT NULL"))),
        flags=(Flag("pos", e("row.b > 0")),),
        partition_emits=(PartitionEmit(e("flag.pos"), (e("key.a"), e("acc.n"), e("acc.m"))),
                         PartitionEmit(e("acc.nd > 1"), (e("key.a"), e("acc.nd"), e("NULL"))),
                         PartitionEmit(e("NOT flag.pos"), (e("NULL"), e("NULL"), e("acc.m"))))),
    "row-and-partition-emits": Program(
        keys=("a",), output=("a", "s", "v"), memory=BUFFERING,
        accumulators=(Accumulator("mn", "min", e("row.s"), e("row.b > 0")),
                      Accumulator("av", "avg", e("row.c"), None)),
        flags=(Flag("big", e("row.s > 7")),),
        row_emits=(RowEmit(e("row.s = acc.mn"), (e("row.a"), e("row.s"), e("acc.av"))),),
        partition_emits=(PartitionEmit(e("NOT flag.big"), (e("key.a"), e("NULL"), e("acc.av"))),)),
    "streaming-running-min": Program(
        keys=("d",), output=("d", "s", "run"), memory=STREAMING,
        sort=(SortKey("s", True, False),),
        accumulators=(Accumulator("mn", "min", e("row.s"), None),),
        row_emits=(RowEmit(None, (e("row.d"), e("row.s"), e("acc.mn"))),)),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_compile_program_matches_interpreter(spark, ops, name):
    prog = PROGRAMS[name]
    want = bag(run_program(prog, _ops_df()))
    sql = compile_program(prog, "ops")
    assert bag(spark.sql(sql).collect()) == want, sql
    # the generic executor (repartition + sort + pandas interpreter) agrees too
    types = [f.dataType.simpleString() for f in spark.sql(sql).schema.fields]
    ddl = ", ".join(f"{n} {t}" for n, t in zip(prog.output, types))
    got = run_generic(spark, prog, spark.table("ops"), ddl).collect()
    assert bag(got) == want
    # one exchange: every aggregate/window of the program shares the partitioning
    assert analyze_plan(spark, sql).exchanges == 1


# ---------------------------------------------------------------------------
# the command line
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cli_files(tmp_path_factory, runtime_rules):
    d = tmp_path_factory.mktemp("cli")
    write_catalog(d / "catalog.json", make_catalog(runtime_rules), signer=signing_key())
    (d / "schema.json").write_text(json.dumps({"ops": {"a": "int", "b": "int", "c": "int", "d": "string",
                                                      "s": "int"}}))
    return d


def test_cli_rewrite(spark, ops, cli_files, capsys):
    from superop.cli import main
    cat, sch = str(cli_files / "catalog.json"), str(cli_files / "schema.json")
    assert main(["rewrite", "--catalog", cat, "--schema", sch, "--sql", DJ_Q, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["changed"] and out["applied"] == ["dj-inner"]
    assert out["exchanges_before"] == 2 and out["exchanges_after"] == 1
    assert bag(spark.sql(out["sql"]).collect()) == bag(spark.sql(DJ_Q).collect())
    q = UNCOVERED[1].replace("accounts", "ops")
    (cli_files / "q.sql").write_text(q)
    assert main(["rewrite", "--catalog", cat, "--schema", sch, "--sql-file", str(cli_files / "q.sql"),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sql"] == q and out["changed"] is False and out["applied"] == []
    assert main(["rewrite", "--catalog", cat, "--schema", sch, "--no-gate", "--sql", DU_Q]) == 0
    assert "INLINE(FILTER(ARRAY(" in "".join(capsys.readouterr().out.split())   # pretty-printed
    assert main(["rewrite", "--catalog", sch, "--sql", DU_Q]) == 2
    assert "refused" in capsys.readouterr().err


def test_runtime_imports_without_z3_and_mlflow():
    code = ("import sys; sys.modules['z3'] = None; sys.modules['mlflow'] = None\n"
            "import superop.runtime, superop.runtime.commands\n"
            "assert 'z3' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_analyze_tables_feeds_the_cost(spark, ops, catalog):
    spark.table("ops").write.mode("overwrite").saveAsTable("ops_stats")
    try:
        so = SuperOpSession(spark, catalog, analyze_tables=True)
        q = DJ_Q.replace("FROM ops", "FROM ops_stats")
        r = so.rewrite(q)
        assert r.changed and r.exchanges_after < r.exchanges_before
        stats = spark.sql("DESCRIBE TABLE EXTENDED ops_stats").collect()
        assert any(row.col_name == "Statistics" and "rows" in row.data_type for row in stats)
        assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(q).collect())
    finally:
        spark.sql("DROP TABLE IF EXISTS ops_stats")


def test_nested_diamonds_compose(spark, so):
    # the DU reads a CTE used twice whose body is itself a Diamond Join: the inner diamond
    # is rewritten first and the outer super-operator reads the rewritten source
    q = ("WITH j AS (SELECT x.a, x.t, y.mb FROM (SELECT a, sum(s) AS t FROM ops GROUP BY a) x "
         "LEFT JOIN (SELECT a, max(b) AS mb FROM ops WHERE c > 0 GROUP BY a) y ON x.a = y.a) "
         "SELECT a, count(*) AS n FROM j GROUP BY a "
         "UNION ALL SELECT a, max(t) FROM j WHERE mb IS NOT NULL GROUP BY a")
    r = so.rewrite(q)
    assert r.changed and sorted(r.applied) == ["dj-left", "du-2way"], r.explanation
    assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(q).collect())
    assert r.exchanges_after < r.exchanges_before
