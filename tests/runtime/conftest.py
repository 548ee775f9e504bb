"""Fixtures of the runtime tests (data and the test catalog live in runtime_fixtures.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from superop.rewrite.rewriter import Rewriter
from superop.rules_out.catalog import make_catalog
from superop.rules_out.signing import sign_catalog, signing_key

from ..shared_fixtures import computed_once, started_once, stop_started, wait_started
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
def runtime_rules(tmp_path_factory) -> list:
    """The test catalog's rules (``runtime_fixtures.catalog_rules``: real proofs and bounded
    certificates), computed once per run across the suite's workers (Z3 runs in one of them);
    the catalogs of the runtime tests are made from them."""
    rules, status = computed_once(tmp_path_factory, "runtime_catalog_rules",
                                  lambda: verifier_certificates(catalog_rules()))
    # every template instance the runtime generates must pass the real verifier
    assert all(v == "verified" for v in status.values()), status
    return rules


@pytest.fixture(scope="session")
def catalog(runtime_rules):
    # signed, as the nightly job signs what the verifier just proved (the tests' key store)
    return sign_catalog(make_catalog(runtime_rules, version="test"), signing_key(), "tests (fresh proofs)")


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


DATAFRAME_JOB = Path(__file__).parent / "dataframe_job.py"


@pytest.fixture(scope="session", autouse=True)
def _dataframe_job(request, tmp_path_factory):
    """The event-logged DataFrame job of ``dataframe_job.py`` needs a JVM of its own (the
    shared session cannot log events): when a selected test needs it
    (``dataframe_job_dir``), the child starts with the session and runs while the other
    tests do, once per run (the first worker starts it, every worker can read what it
    writes). Yields its directory for ``shared_fixtures.wait_started``, or None."""
    if not any("dataframe_job_dir" in getattr(item, "fixturenames", ()) for item in request.session.items):
        yield None
        return
    d, proc = started_once(tmp_path_factory, "dataframe-job", [sys.executable, str(DATAFRAME_JOB)])
    yield d
    stop_started(proc)


@pytest.fixture(scope="session")
def dataframe_job_dir(_dataframe_job) -> Path:
    out = wait_started(_dataframe_job, timeout=1200)
    assert (out / "done").is_file()
    return out
