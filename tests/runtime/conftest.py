"""Fixtures of the runtime tests (data and the test catalog live in runtime_fixtures.py)."""
from __future__ import annotations

import pytest

from runtime_fixtures import ACCOUNTS_ROWS, ACCOUNTS_SCHEMA, OPS_ROWS, OPS_SCHEMA, SCHEMA, catalog_rules
from superop.rules_out.catalog import make_catalog


@pytest.fixture(scope="session")
def ops(spark):
    spark.createDataFrame(OPS_ROWS, OPS_SCHEMA).createOrReplaceTempView("ops")
    spark.createDataFrame(ACCOUNTS_ROWS, ACCOUNTS_SCHEMA).createOrReplaceTempView("accounts")
    return SCHEMA


@pytest.fixture(scope="session")
def catalog():
    return make_catalog(catalog_rules(), version="test")


@pytest.fixture(scope="session")
def so(spark, ops, catalog):
    from superop.runtime import SuperOpSession
    return SuperOpSession(spark, catalog)
