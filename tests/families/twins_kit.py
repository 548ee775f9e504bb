"""What the DataFrame twin tests check, for either session kind (classic:
``test_dataframe_twins.py``, Spark Connect: ``test_dataframe_twins_connect.py``, two files
so that the suite's workers run them side by side); their fixtures are in ``conftest.py``."""
from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from superop import families
from superop.rewrite.rewriter import Rewriter, prepare, select_non_conflicting
from superop.runtime import SuperOpSession
from superop.runtime.dataframe import decision_of, frame_of
from superop.runtime.plan import analyze_plan

from ..fixtures.families.dataframes import TWINS
from .fixtures import all_entries

ENTRIES = all_entries()
POSITIVE = [e for e in ENTRIES if e.runtime != "unchanged"]


def json_bag(df, F) -> Counter:
    """The bag of rows of ``df``, each row as JSON (Spark's ``to_json``, so that a classic and
    a Connect session give the same text), doubles rounded as ``sparkutil.bag`` does."""
    from pyspark.sql.types import DoubleType, FloatType

    d = df.toDF(*[f"c{i}" for i in range(len(df.columns))])
    cols = [F.round(F.col(f.name), 6) if isinstance(f.dataType, (DoubleType, FloatType)) else F.col(f.name)
            for f in d.schema.fields]
    return Counter(r[0] for r in d.select(F.to_json(F.struct(*cols))).collect())


def bags(frames: dict, F) -> dict[str, Counter]:
    """:func:`json_bag` of every DataFrame in ``frames``, one small Spark job per frame, four
    at a time: Spark runs concurrent jobs, and one union of every frame plans and runs twice
    as slowly."""
    with ThreadPoolExecutor(4) as pool:
        return dict(zip(frames, pool.map(lambda df: json_bag(df, F), frames.values())))


# Positive entries whose DataFrame twin the families do not match although they match the
# SQL entry (known gaps), and why.
MATCH_GAPS = {
    **{name: "the DataFrame lowering keeps scalar sub-queries (DataFrame.scalar()) as they are; only the SQL "
             "lowering reads two or more global ones as a product of their aggregates"
       for name in ("ga_scalar_subqueries", "ga_scalar_subqueries_empty_block")},
    "ex_outer_block_joins_another_table":
        "the DataFrame plan is (ops JOIN accounts) LEFT SEMI JOIN ops; families.regroup sinks a decorrelated "
        "EXISTS onto the input it reads, not a semi join written after the outer block's join",
}


# Positive entries whose DataFrame twin is not rewritten although the SQL entry is, per
# session kind, and why (known gaps: the test fails when one of them starts being rewritten,
# so the lists stay true).
NOT_REWRITTEN: dict[str, dict[str, str]] = {
    "classic": {
        "ga_cross_join_empty_filters": "the exchanges gate: the plan and its rewrite have 1 shuffle exchange each",
        **MATCH_GAPS,
    },
    "connect": {
        "ga_cross_join_empty_filters": "the exchanges gate: the plan and its rewrite have 1 shuffle exchange each",
        **MATCH_GAPS,
    },
}


def check_match(session, proof_catalog, e) -> None:
    """The twin's plan, lowered from the DataFrame, is matched like its SQL entry: the rules
    applied are the entry's ``runtime`` key."""
    spark, api = session
    plan = families.regroup(frame_of(spark, TWINS[e.name](api)).plan)
    rw = Rewriter(proof_catalog)
    applied = [m.rule_id for m in select_non_conflicting(prepare(rw.match(plan)))]
    if e.name in MATCH_GAPS:     # a known gap: the test fails when it closes
        assert applied == [], f"{e.name} matches now: drop it from MATCH_GAPS"
        return
    assert applied == ([] if e.runtime == "unchanged" else [e.runtime])


def check_optimize(kind: str, session, twin_catalog, twin_bags) -> None:
    """``SuperOpSession.optimize`` on every twin: positives rewritten with fewer exchanges,
    the same schema and bag of rows; keep-unchanged entries returned as the same DataFrame;
    every problem reported at once."""
    spark, api = session
    so = SuperOpSession(spark, twin_catalog, gate="exchanges")

    def one(e) -> tuple[str, object]:
        """(the problem, "") or ("", the rewritten DataFrame) or ("", None): unchanged as expected."""
        df = TWINS[e.name](api)
        out = so.optimize(df)
        if e.runtime == "unchanged":
            return ("rewritten, must stay unchanged: " + so.explain_df(df)[:300], None) if out is not df else ("", None)
        if e.name in NOT_REWRITTEN[kind]:
            return ("now rewritten: drop it from NOT_REWRITTEN", None) if out is not df else ("", None)
        if out is df:
            return "not rewritten: " + so.explain_df(df)[:300], None
        if [(f.name, f.dataType) for f in out.schema] != [(f.name, f.dataType) for f in df.schema]:
            return "schema differs", None
        # the gate counted the original's exchanges on Spark's plan of this DataFrame; the
        # returned DataFrame's own plan is counted again here
        before = decision_of(so, df).exchanges_before
        if before is None or analyze_plan(spark, "", df=out).exchanges >= before:
            return f"no fewer exchanges than {before}", None
        return "", out

    # four DataFrames at a time: the session is shared by the threads, as an application's is
    with ThreadPoolExecutor(4) as pool:
        results = dict(zip((e.name for e in ENTRIES), pool.map(one, ENTRIES)))
    problems = {n: why for n, (why, _) in results.items() if why}
    rewritten = {n: out for n, (why, out) in results.items() if not why and out is not None}
    assert problems == {}, "\n".join(f"{n}: {w}" for n, w in problems.items())
    assert len(rewritten) == len(POSITIVE) - len(NOT_REWRITTEN[kind])
    got = bags(rewritten, api.F)
    want = {n: twin_bags[n] for n in got}
    assert {n for n in want if got[n] != want[n]} == set()
