"""DataFrame event logs: physical plans -> IR (superop.mining.physical) on a REAL event log
written by tests/mining/make_dataframe_eventlogs.py (committed in tests/mining/data/), and the
mining job finding the DataFrame diamonds in it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from superop.ir import Aggregate, Join, Opaque, Scan, Select, UnionAll, walk
from superop.mining.detect import detect
from superop.mining.eventlog import decompress
from superop.mining.job import run_mining
from superop.mining.physical import PLAN_MARKER, is_command, lower_physical, parse_description
from superop.workloads.loggen import LOG_SCHEMA

LOG = Path(__file__).parent / "data" / "dataframe-diamonds.zstd"
OPS = "spark_catalog.default.ops_t"


@pytest.fixture(scope="module")
def plans() -> list[str]:
    """The formatted physical plans of the log's root executions, in execution order."""
    out = []
    for line in decompress(LOG.read_bytes(), "zstd").decode().splitlines():
        e = json.loads(line)
        if e["Event"].endswith("SQLExecutionStart") and \
                e.get("rootExecutionId", e["executionId"]) == e["executionId"]:
            out.append(e["physicalPlanDescription"])
    return out


@pytest.fixture(scope="module")
def queries(plans) -> list[str]:
    return [p for p in plans if not is_command(p)]


def _findings(plan):
    return [(f.status, f.family, f.join_kind, f.shape) for f in detect(plan)]


def test_commands_and_queries_are_told_apart(plans, queries):
    # 3 temp views + 2 saveAsTable + 1 parquet write; 10 DataFrame queries
    assert (len(plans) - len(queries), len(queries)) == (6, 10)


def test_dataframe_union_diamond_lowers_to_a_du_candidate(queries):
    for desc in queries[:3]:                  # the same program with three literals
        low = lower_physical(desc, LOG_SCHEMA)
        assert low.fully_lowered, low.opaque_reasons
        assert isinstance(low.plan, UnionAll)
        scans = [n for n in walk(low.plan) if isinstance(n, Scan)]
        assert [s.table for s in scans] == [OPS]          # ONE shared input, qualified name
        aggs = [n for n in walk(low.plan) if isinstance(n, Aggregate)]
        assert len(aggs) == 2 and all(len(a.keys) == 1 for a in aggs)
        assert [a.items[1][0].sql() for a in aggs] == ["COUNT(*)", "COUNT(*)"]
        assert _findings(low.plan) == [("candidate", "DU", "", "(σπ|γ, σπ|γ)∪")]


def test_dataframe_join_diamond_lowers_to_a_dj_candidate(queries):
    for desc in queries[3:6]:
        low = lower_physical(desc, LOG_SCHEMA)
        assert low.fully_lowered, low.opaque_reasons
        joins = [n for n in walk(low.plan) if isinstance(n, Join)]
        assert len(joins) == 1 and joins[0].kind == "inner" and len(joins[0].equi) == 1
        aggs = sorted(a.items[1][0].sql() for a in walk(low.plan) if isinstance(a, Aggregate))
        assert aggs == ["COUNT(*)", "MAX(s)"]
        assert _findings(low.plan) == [("candidate", "DJ", "inner", "(σ|γ, σπ|γ)⋈")]


def test_dimension_join_path_scan_and_opaque_operators(queries):
    dim = lower_physical(queries[6], LOG_SCHEMA)
    assert dim.fully_lowered and _findings(dim.plan) == []
    assert sorted(s.table for s in walk(dim.plan) if isinstance(s, Scan)) == [
        "spark_catalog.default.accounts_t", OPS]
    top = lower_physical(queries[7], LOG_SCHEMA)              # window + top-k: not modelled
    assert isinstance(top.plan, Opaque) and "TakeOrderedAndProject" in top.plan.reason
    path = lower_physical(queries[8], LOG_SCHEMA)             # spark.read.parquet(path)
    (scan,) = [s for s in walk(path.plan) if isinstance(s, Scan)]
    assert scan.table.startswith("parquet.`file:") and scan.table.endswith("ops_files`")
    assert [c for c, _ in scan.columns] == ["b", "d"]
    udf = lower_physical(queries[9], LOG_SCHEMA)              # a Python UDF below the GROUP BY
    assert not udf.fully_lowered
    assert any("ArrowEvalPython" in r for r in udf.opaque_reasons)
    assert isinstance(udf.plan, Aggregate) and isinstance(udf.plan.child, Opaque)


# -- conservative expressions: unsure means Opaque, never a wrong node ------------------
PLAN = """== Physical Plan ==
AdaptiveSparkPlan (4)
+- Filter (2)
   +- Scan parquet spark_catalog.db.t (1)


(1) Scan parquet spark_catalog.db.t
Output [2]: [a#1, d#2]
Batched: true
Location: InMemoryFileIndex [file:/w/t]
ReadSchema: struct<a:int,d:string>

(2) Filter
Input [2]: [a#1, d#2]
Condition : {cond}

(4) AdaptiveSparkPlan
Output [2]: [a#1, d#2]
Arguments: isFinalPlan=false
"""


@pytest.mark.parametrize("cond,ok", [
    ("(isnotnull(a#1) AND (a#1 > 5))", True),
    ("(d#2 = read)", False),                      # a string literal printed without quotes
    ("(a#1 >= 2000-01-01)", False),               # a date printed as arithmetic
    ("(a#1 = b#9)", False),                       # an attribute the input does not have
    ("(a#1 > scalar-subquery#5 [])", False),
    ("StartsWith(d#2, x)", False),
])
def test_filter_conditions_are_parsed_conservatively(cond, ok):
    low = lower_physical(PLAN.replace("{cond}", cond))
    assert low.fully_lowered is ok, low.opaque_reasons
    if ok:
        assert isinstance(low.plan, Select) and low.plan.predicate.sql() == \
            "(NOT s1.a IS NULL AND (s1.a > 5))"
    else:
        assert isinstance(low.plan, Opaque) and low.plan.reason.startswith("physical Filter")


def test_unparsable_description_is_opaque():
    assert parse_description("no plan here") is None
    low = lower_physical("no plan here")
    assert isinstance(low.plan, Opaque) and not low.fully_lowered


# -- the mining job on the event log ----------------------------------------------------
def test_mining_finds_the_dataframe_diamonds(spark, tmp_path):
    res = run_mining(LOG.parent, tmp_path / "o", spark=spark, mlflow_run=False,
                     progress=False, min_cost_share=0.0)
    c = {(r["family"], r["join_kind"]): r for r in res.candidates.to_dict("records")}
    assert set(c) == {("DU", ""), ("DJ", "inner")}
    for r in c.values():              # one DataFrame program, run with three literals
        assert (r["templates"], r["executions"], r["route"]) == (1, 3, "single_template")
        assert r["input_tables"] == OPS and r["cost_ms"] > 0
    s = res.summary
    assert s["skipped_by_reason"].get("non_query:dataframe_command") == 6
    assert "no_sql_text" not in s["skipped_by_reason"]
    assert s["templates"] == 6 and s["templates_partly_opaque"] == 2


def test_plan_rows_carry_the_marker(spark):
    from superop.mining.eventlog import read_eventlog
    rows = read_eventlog(spark, str(LOG)).collect()
    texts = [r["statement_text"] for r in rows if r["statement_text"]]
    assert len(texts) == 10 and all(t.startswith(PLAN_MARKER) for t in texts)
