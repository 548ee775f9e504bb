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
  the rewritten SQL, which returns the same bag of rows on Spark as the original.
"""
from __future__ import annotations

import pytest

from superop import families
from superop.ir import lower
from superop.mining.detect import detect
from superop.rewrite.rewriter import Rewriter, rewrite_structural
from superop.sparkutil import bag

from ..runtime.runtime_fixtures import SCHEMA
from .fixtures import all_entries

ENTRIES = all_entries()
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
def test_runtime(e, proof_catalog, tables, spark):
    r = rewrite_structural(Rewriter(proof_catalog), e.sql, SCHEMA)
    if e.runtime == "unchanged":
        assert not r.changed and r.sql == e.sql, r.explanation
        return
    assert r.applied == [e.runtime], r.explanation
    assert r.sql == e.rewritten
    # the mining candidates are exactly what the runtime matched
    cands = [f for f in detect(_plan(e.sql)) if str(f.status) == "candidate"]
    assert len(cands) == len(r.applied)
    assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(e.sql).collect())
