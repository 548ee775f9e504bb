"""Fixtures of the family tests: the proof-only rule catalog (every family's template proofs,
run once) and the runtime tests' tiny tables (NULLs, duplicates, empty groups) as views."""
from __future__ import annotations

import pytest

from ..runtime.runtime_fixtures import (ACCOUNTS_ROWS, ACCOUNTS_SCHEMA, OPS_ROWS, OPS_SCHEMA, SCHEMA,
                                        values_view)


@pytest.fixture(scope="session")
def proof_catalog():
    """One rule per core skeleton of every registered family, admitting exactly what its
    verified template proofs cover (Z3 runs here)."""
    from superop.rules_out.builtin import builtin_rules
    from superop.rules_out.catalog import make_catalog
    return make_catalog(builtin_rules(per="skeleton"), version="families-fixtures")


@pytest.fixture(scope="session")
def tables(spark):
    values_view(spark, "ops", OPS_SCHEMA, OPS_ROWS)
    values_view(spark, "accounts", ACCOUNTS_SCHEMA, ACCOUNTS_ROWS)
    return SCHEMA
