"""Fixtures of the runtime tests (data and the test catalog live in runtime_fixtures.py)."""
from __future__ import annotations

import pytest

from superop.rewrite.rewriter import Rewriter
from superop.rules_out.catalog import make_catalog
from superop.rules_out.signing import sign_catalog, signing_key

from .runtime_fixtures import (
    ACCOUNTS_ROWS,
    ACCOUNTS_SCHEMA,
    OPS_ROWS,
    OPS_SCHEMA,
    SCHEMA,
    catalog_rules,
    values_view,
    verifier_certificates,
)


@pytest.fixture(scope="session")
def ops(spark):
    # VALUES views are JVM-local relations (no Python worker per query). Broadcast joins
    # are off so the plans look like production plans over large tables (a broadcast
    # join has no shuffle to save; the benefit gate is tested on its own).
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    values_view(spark, "ops", OPS_SCHEMA, OPS_ROWS)
    values_view(spark, "accounts", ACCOUNTS_SCHEMA, ACCOUNTS_ROWS)
    return SCHEMA


@pytest.fixture(scope="session")
def catalog():
    rules, status = verifier_certificates(catalog_rules())
    # every template instance the runtime generates must pass the real verifier
    assert all(v == "verified" for v in status.values()), status
    # signed, as the nightly job signs what the verifier just proved (the tests' key store)
    return sign_catalog(make_catalog(rules, version="test"), signing_key(), "tests (fresh proofs)")


@pytest.fixture(scope="session")
def so(spark, ops, catalog):
    # These tests are about the rewriting (rows, schemas, exchanges), so the session gates on
    # the exchange count, which tiny data cannot change; the cost gate has its own tests
    # (test_gate.py) on tables whose statistics Spark reports at production size.
    from superop.runtime import SuperOpSession
    return SuperOpSession(spark, catalog, gate="exchanges")


@pytest.fixture(scope="module")
def rw(catalog):
    """A structural rewriter over the test catalog (no Spark: the form suites' matcher)."""
    return Rewriter(catalog)
