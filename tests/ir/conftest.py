"""Fixtures of the IR tests: the paper's tables (in a child session), and a record of how many queries
lowered fully (printed in pytest's terminal summary)."""
from __future__ import annotations

import pytest

_COVERAGE: dict[str, dict[str, bool]] = {}


@pytest.fixture(scope="session")
def paper_spark(spark):
    """A child session of the run's Spark session (shared SparkContext, its own temporary
    views) whose ops / mailbox / accounts are the paper's tables (NULLs, duplicates, empty
    groups). The runtime and families tests read other rows under the same names in the
    shared session, in whatever order a worker runs the files: each keeps its own views."""
    from superop.workloads.paper import paper_tables
    s = spark.newSession()
    paper_tables(s)
    return s


@pytest.fixture(scope="session")
def paper(paper_spark):
    """The paper's schema (the --schema mapping) of paper_spark's views."""
    from superop.workloads.paper import PAPER_SCHEMA
    return {t: dict(c) for t, c in PAPER_SCHEMA.items()}


@pytest.fixture(scope="session")
def lowering_coverage():
    """suite -> {query id: fully lowered?}, filled by the round-trip tests."""
    return _COVERAGE


def coverage_line() -> str:
    parts = []
    for suite, d in sorted(_COVERAGE.items()):
        full = sum(d.values())
        parts.append(f"{suite}: {full}/{len(d)} fully lowered, {len(d) - full} with opaque parts")
    return "IR round trip: " + "; ".join(parts)


def pytest_terminal_summary(terminalreporter):
    if _COVERAGE:
        terminalreporter.write_line(coverage_line())
