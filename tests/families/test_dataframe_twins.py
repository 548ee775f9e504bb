"""The DataFrame twins of every family fixture entry (``tests/fixtures/families/dataframes.py``)
through the runtime, on a classic session and on a Spark Connect session.

* Each twin returns its SQL entry's rows (same semantics, checked on Spark).
* Matching: a twin's plan, lowered from the DataFrame (Catalyst's plan / the Connect
  client's protobuf plan), is matched by the one matching path and admitted by the same
  rules as its SQL entry: the rules applied are the entry's ``runtime`` key.
* ``SuperOpSession.optimize``: positives come back rewritten, with fewer shuffle exchanges
  in Spark's physical plan, the same schema and the same bag of rows as the original (over
  the tables with NULLs, duplicates and empty groups); keep-unchanged entries come back as
  the very same DataFrame.

The session's catalog must be one the runtime trusts: the families' template proofs and,
for the families without them, bounded certificates of the program the runtime builds for
the fixture entries (``pj_union_branch_selected`` reads two tables below its match and has
none, nor does a rule admit it: its twin is matched like its SQL, and the session leaves it
unchanged, as it leaves its SQL).
"""
from __future__ import annotations

import pytest

from ..fixtures.families.dataframes import TWINS
from .twins_kit import ENTRIES, check_match, check_optimize


def test_every_entry_has_a_twin():
    assert set(TWINS) == {e.name for e in ENTRIES}


def test_twins_return_their_sql_rows(classic, twin_bags, entry_bags):
    spark, api = classic
    sqls = {e.name: entry_bags[e.id] for e in ENTRIES}
    assert {n for n in twin_bags if twin_bags[n] != sqls[n]} == set()
    for e in ENTRIES:
        assert TWINS[e.name](api).columns == spark.sql(e.sql).columns, e.name


@pytest.mark.parametrize("e", ENTRIES, ids=[e.id for e in ENTRIES])
def test_twin_matches_like_its_sql(classic, proof_catalog, e):
    check_match(classic, proof_catalog, e)


def test_twins_through_optimize(classic, twin_catalog, twin_bags):
    check_optimize("classic", classic, twin_catalog, twin_bags)
