"""ONE table of truth for every stage: each entry of ``tests/fixtures/families/<family>.sql``
walked through mining, synthesis, verification and the runtime. A stage that disagrees
with the table (and so with the others) fails here.

* mining: the findings ``superop.mining.detect`` reports (candidates, near-miss reasons);
* synthesis: the synthesizer's status on the instance mining reports (what the nightly job
  synthesizes);
* verification: Algorithms 1-3 with Z3 agree with mining (an instance streams; a near-miss
  on a streamability reason does not), and the program the runtime will run is equivalent
  to the sub-plan (bounded, K=2);
* runtime: the rule the rewriter applies (a catalog of the families' template proofs) and
  the rewritten SQL, which returns the same bag of rows on Spark as the original;
* the drop-in: every entry through ``enable`` and the unchanged call sites ``spark.sql(q)``
  returns the rows it returned before ``enable``, with one decision record per call.

Each entry's original rows are computed once per run (``entry_bags`` of ``conftest.py``, rows
as JSON) and are the reference of both the rewritten SQL and the drop-in (and of the
DataFrame twins).
"""
from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from superop import families
from superop.ir import lower
from superop.mining.detect import detect
from superop.rewrite.rewriter import Rewriter, rewrite_structural
from superop.rules_out.signing import sign_catalog, signing_key
from superop.runtime import disable, enable
from superop.runtime.merge_flags import FORM
from superop.runtime.report import format_report, read

from ..runtime.runtime_fixtures import SCHEMA
from .fixtures import all_entries
from .twins_kit import json_bag

ENTRIES = all_entries()
# rand() differs from run to run: its rows are not compared (it is never rewritten either)
RANDOM = {e.id for e in ENTRIES if "rand(" in e.sql.lower()}


def _bags(spark) -> dict:
    """Each entry's rows (as ``entry_bags`` holds them), four call sites at a time (as a
    multi-threaded application would call ``spark.sql``: the drop-in and its session are
    shared by the threads)."""
    from pyspark.sql import functions as F
    with ThreadPoolExecutor(4) as pool:
        return dict(zip((e.id for e in ENTRIES), pool.map(lambda e: json_bag(spark.sql(e.sql), F), ENTRIES)))


@pytest.fixture(scope="module")
def original_bags(entry_bags) -> dict:
    """Every entry's rows on the tables of ``tables`` (NULLs, duplicates, empty groups),
    before any rewrite (``entry_bags``): the reference of this module's runtime and drop-in
    tests."""
    return entry_bags
# near-miss reasons the verifier's streamability check decides too (the others are about the
# matching context or the template: safety, duplicate names, template refusals)
STREAM_REASONS = {"different_grouping_keys", "computed_grouping_key", "global_aggregate",
                  "join_not_on_grouping_keys", "join_on_subset_of_keys", "filter_below_min_max",
                  "aggregate_not_min_max", "min_max_argument"}


def test_every_family_has_a_fixture_file_and_the_issue_cases_are_in_it():
    files = {e.file for e in ENTRIES}
    assert files == {f.name.lower() for f in families.REGISTRY}
    names = {e.name for e in ENTRIES}
    assert {"dj_anti", "dj_3way", "du_core", "mj_inner_min_rows_left"} <= names
    assert any(e.runtime == "unchanged" and not e.mining for e in ENTRIES)   # keep-unchanged negatives


def _plan(sql):
    low = lower(sql, SCHEMA)
    return low.plan


def _expected_mining(e):
    return sorted((m[0], m[1], "" if m[2] == "-" else m[2]) for m in e.mining)


@pytest.mark.parametrize("e", ENTRIES, ids=[e.id for e in ENTRIES])
def test_mining(e):
    got = sorted((str(f.status), f.family, f.join_kind if str(f.status) == "candidate" else f.reason)
                 for f in detect(_plan(e.sql)))
    assert got == _expected_mining(e)


@pytest.mark.parametrize("e", [e for e in ENTRIES if e.synthesis != "skip"],
                         ids=[e.id for e in ENTRIES if e.synthesis != "skip"])
def test_synthesis(e):
    from superop.synth.synthesizer import synthesize
    m = families.first_match(_plan(e.sql), finished=True)
    assert m is not None
    res = synthesize(m.root, schema=SCHEMA, K=3, timeout_s=60, verify_timeout_s=20)
    assert res.status == e.synthesis, res.reason


@pytest.mark.parametrize("e", ENTRIES, ids=[e.id for e in ENTRIES])
def test_verification_agrees(e):
    from superop.verify.check import check_equivalence
    from superop.verify.streamability import check_streamability
    plan = _plan(e.sql)
    for f in families.scan(plan):
        st = check_streamability(f.root)
        if isinstance(f, families.Match):
            assert st.ok, (f.family, st.reason)
            over = families.over_source(f.root, f.source)
            assert over is not None, f.family
            r = check_equivalence(over[0], f.program, K=2, timeout_ms=60000)
            assert r.status == "verified", (r.reason, f.program.pretty())
        elif f.code in STREAM_REASONS:
            assert not st.ok and st.family == f.family, st.reason


@pytest.mark.parametrize("e", ENTRIES, ids=[e.id for e in ENTRIES])
def test_runtime(e, proof_catalog, tables, spark, original_bags):
    r = rewrite_structural(Rewriter(proof_catalog), e.sql, SCHEMA)
    if e.runtime == "unchanged":
        assert not r.changed and r.sql == e.sql, r.explanation
        return
    assert r.applied == [e.runtime], r.explanation
    assert "covered by the unbounded proof" in r.explanation, r.explanation    # explain names the proof
    assert r.sql == e.rewritten
    # the mining candidates are exactly what the runtime matched
    cands = [f for f in detect(_plan(e.sql)) if str(f.status) == "candidate"]
    assert len(cands) == len(r.applied)
    from pyspark.sql import functions as F
    assert json_bag(spark.sql(r.sql), F) == original_bags[e.id]


def test_no_application_is_uncovered(proof_catalog):
    """Every rewrite the fixtures' catalog applies is covered by a proof of its instance
    (here: the families' unbounded template proofs); the count of uncovered applications
    is 0, and every instance a rule admitted was covered."""
    rw = Rewriter(proof_catalog)
    applied = uncovered = 0
    for e in ENTRIES:
        r = rewrite_structural(rw, e.sql, SCHEMA)
        applied += len(r.applied)
        uncovered += sum(1 for part in r.explanation.split("; ") if "covered by the" not in part) if r.changed else 0
    assert applied == sum(1 for e in ENTRIES if e.runtime != "unchanged") and uncovered == 0
    assert rw.uncovered_instances() == []


def test_every_fixture_query_through_enable(spark, proof_catalog, tables, original_bags, tmp_path):
    """Every fixture query through the drop-in: ``enable`` with the families' proof catalog,
    then the unchanged call sites ``spark.sql(q)``. Each call is one decision record; every
    query returns the rows it returned before ``enable``; what is rewritten is the rule the
    fixture names. The decision log's summary is printed (``pytest -s``) as ``superop
    runtime report`` prints it."""
    before = original_bags
    log = tmp_path / "decisions.jsonl"
    # signed as the families' tests use it with the Rewriter (its pivot rules carry bounded
    # certificates of proof instances, which a Z3 re-check for the runtime would not accept)
    so = enable(spark, sign_catalog(proof_catalog, signing_key(), "tests (fresh proofs)"), decision_log=str(log))
    try:
        got = _bags(spark)
    finally:
        disable(spark)
    assert {k: v for k, v in got.items() if k not in RANDOM} == {k: v for k, v in before.items() if k not in RANDOM}
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(recs) == len(ENTRIES)
    by_text: dict = {}
    for r in recs:
        by_text.setdefault(r["text_hash"], []).append(r)
    for e in ENTRIES:
        r = by_text[hashlib.sha256(e.sql.encode("utf-8")).hexdigest()[:16]].pop()
        if r["outcome"] == "rewritten":
            # the fixture's rule, or Spark's own merge settings when the gate prices them higher
            assert r["rules"] in ([e.runtime], [e.runtime, FORM], [FORM]), (e.id, r)
        else:
            assert r["outcome"] == "unchanged" and r["reason"], (e.id, r)
        assert e.id not in RANDOM or r["outcome"] == "unchanged", (e.id, r)
    assert so.counters["rewritten"] == sum(r["outcome"] == "rewritten" for r in recs) > 0
    print("\n" + format_report(read(str(log)), "families fixtures through enable (cost gate)"))
