"""The DataFrame twins of every family fixture entry through the runtime on a Spark Connect
session: matched like their SQL entries (from the Connect client's protobuf plan) and
rewritten by ``SuperOpSession.optimize`` with the rows of the classic session's twins (the
checks: ``twins_kit.py``; the classic session's: ``test_dataframe_twins.py``)."""
from __future__ import annotations

import pytest

from .twins_kit import ENTRIES, check_match, check_optimize


@pytest.mark.parametrize("e", ENTRIES, ids=[e.id for e in ENTRIES])
def test_twin_matches_like_its_sql(connect, proof_catalog, e):
    check_match(connect, proof_catalog, e)


def test_twins_through_optimize(connect, twin_catalog, twin_bags):
    check_optimize("connect", connect, twin_catalog, twin_bags)
