"""Spark is the judge: for every program the search finds in the corpus, the interpreter's
output equals Spark's output of the original sub-query on generated data; and the IR
reference evaluator the search tests against agrees with Spark on every corpus query."""
from __future__ import annotations

import pytest

from superop.dsl.interpreter import run_program
from superop.dsl.plan_eval import eval_plan
from superop.sparkutil import bag
from superop.synth.corpus import CORPUS

OPS_COLS = ["a", "b", "c", "d", "s"]
N_DATASETS = 1


@pytest.fixture(scope="module")
def spark_outputs(spark, register_views, datasets):
    """(dataset index, corpus name) -> Spark's bag of the original SQL."""
    out = {}
    assert len(datasets[0]) == N_DATASETS
    old = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "1")   # tiny data: one task per stage
    try:
        for i in range(N_DATASETS):
            register_views(i)
            for name, sql, _, _ in CORPUS:
                df = spark.sql(sql)
                out[(i, name)] = bag(df.collect())
                out[("types", name)] = tuple(f.dataType.simpleString() for f in df.schema.fields)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", old)
    return out


@pytest.mark.parametrize("i", range(N_DATASETS))
def test_synthesized_programs_match_spark(corpus_results, spark_outputs, datasets, i):
    ops, _ = datasets[0][i]
    frame = datasets[1]
    checked = 0
    for name, (_sql, _plan, r) in corpus_results.items():
        if r.program is None:
            continue
        got = bag(run_program(r.program, frame(ops, OPS_COLS)))
        assert got == spark_outputs[(i, name)], f"{name}:\n{r.program.pretty()}"
        checked += 1
    assert checked >= 20
    nonempty = [n for n, (_, _, r) in corpus_results.items() if r.program is not None and spark_outputs[(i, n)]]
    assert len(nonempty) >= 15      # the comparison is not vacuous: most queries return rows


@pytest.mark.parametrize("i", range(N_DATASETS))
def test_reference_evaluator_matches_spark(corpus_results, spark_outputs, datasets, i):
    ops, acc = datasets[0][i]
    for name, (_sql, plan, _) in corpus_results.items():
        got = bag(eval_plan(plan, tables={"ops": ops, "accounts": acc}))
        assert got == spark_outputs[(i, name)], name


def test_counterexamples_separate_on_spark(spark, corpus_results):
    """A no_program counterexample is real: Spark's output of the sub-query on the
    counterexample table differs from the killed candidate's output."""
    from superop.dsl import Program
    from superop.dsl.interpreter import run_program_rows
    n = 0
    for name, (sql, _plan, r) in corpus_results.items():
        if r.status != "no_program":
            continue
        cex = r.counterexample
        tables = cex["tables"] if "tables" in cex else {cex["table"]: cex}
        for t, d in tables.items():
            ddl = ", ".join(f"{c} {ty}" for c, ty in zip(d["columns"], d["types"]))
            spark.createDataFrame([tuple(x) for x in d["rows"]], ddl).createOrReplaceTempView(t)
        read = cex.get("program_reads", cex.get("table"))
        prog = Program.from_json(cex["candidate_program"])
        got = bag(run_program_rows(prog, tables[read]["columns"], [tuple(x) for x in tables[read]["rows"]]))
        want = bag(spark.sql(sql).collect())
        assert want == bag(map(tuple, cex["plan_output"])), name
        assert got != want, name
        n += 1
    assert n == 4


def test_output_types_are_sparks(corpus_results, spark_outputs):
    """A found program carries the sub-query's output types (for typing NULL outputs)."""
    n = 0
    for name, (_, _, r) in corpus_results.items():
        if r.program is not None:
            assert r.program.output_types == spark_outputs[("types", name)], name
            n += 1
    assert n >= 20


def test_typed_columns_date_bool_double(spark):
    """Dates, booleans and doubles: synthesized by search, judged by Spark."""
    import datetime as dt

    from superop.synth.synthesizer import synthesize
    schema = {"ev": {"id": "int", "name": "string", "amt": "double", "ok": "boolean", "day": "date"}}
    sql = ("SELECT name, AVG(amt) AS v, MAX(day) AS last FROM ev WHERE ok AND day >= DATE '2020-01-02' "
           "GROUP BY name UNION ALL SELECT name, SUM(amt) AS v, MIN(day) AS last FROM ev GROUP BY name")
    r = synthesize(sql, schema, verify=False)
    assert r.program is not None and r.program.output_types == ("string", "double", "date")
    d = dt.date
    rows = [(1, "x", 2.5, True, d(2020, 1, 3)), (2, "x", 1.0, False, d(2020, 1, 5)),
            (3, "y", None, True, d(2019, 12, 31)), (4, "y", 4.0, None, None), (5, None, 3.0, True, d(2021, 1, 1)),
            (5, None, 3.0, True, d(2021, 1, 1))]
    spark.createDataFrame(rows, "id INT, name STRING, amt DOUBLE, ok BOOLEAN, day DATE").createOrReplaceTempView("ev")
    import pandas as pd
    got = bag(run_program(r.program, pd.DataFrame(rows, columns=list(schema["ev"]), dtype=object)))
    assert got == bag(spark.sql(sql).collect())
