"""Every per-family fixture query (tests/fixtures/families/*.sql) through the drop-in:
``enable`` with the families' proof catalog, then the unchanged call sites ``spark.sql(q)``.
Each call is one decision record; every query returns the rows it returned before
``enable``; what is rewritten is the rule the fixture names. The decision log's summary is
printed (``pytest -s``) as ``superop runtime report`` prints it."""
from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor

from superop.rules_out.signing import sign_catalog, signing_key
from superop.runtime import disable, enable
from superop.runtime.merge_flags import FORM
from superop.runtime.report import format_report, read
from superop.sparkutil import bag

from .fixtures import all_entries

ENTRIES = all_entries()
# rand() differs from run to run: its rows are not compared (it is never rewritten either)
RANDOM = {e.id for e in ENTRIES if "rand(" in e.sql.lower()}


def _bags(spark) -> dict:
    """Each entry's rows, four call sites at a time (as a multi-threaded application would
    call ``spark.sql``: the drop-in and its session are shared by the threads)."""
    with ThreadPoolExecutor(4) as pool:
        return dict(zip((e.id for e in ENTRIES), pool.map(lambda e: bag(spark.sql(e.sql).collect()), ENTRIES)))


def test_every_fixture_query_through_enable(spark, proof_catalog, tables, tmp_path):
    before = _bags(spark)
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
