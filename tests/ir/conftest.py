"""Fixtures of the IR tests: the paper's tables, and a record of how many queries
lowered fully (printed in pytest's terminal summary)."""
from __future__ import annotations

import pytest

_COVERAGE: dict[str, dict[str, bool]] = {}


@pytest.fixture(scope="session")
def paper(spark):
    """ops / mailbox / accounts as temp views (NULLs, duplicates, empty groups)."""
    from superop.workloads.paper import paper_tables
    return paper_tables(spark)


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
