"""Fixtures of the mining tests: the bundled log mined once, real Spark event logs written by
a short-lived subprocess (started in the background by the root conftest), and the paper's
tables in an isolated child session."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ..shared_fixtures import wait_started

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def truth():
    from superop.workloads.loggen import load_truth
    return load_truth()


@pytest.fixture(scope="session")
def bundled(spark, tmp_path_factory, seed_mlflow_db):
    """The bundled log mined once with the default selection (by recurring cost; MLflow on,
    local SQLite store in the output dir)."""
    from superop.mining.job import run_mining
    from superop.workloads.loggen import BUNDLED_LOG
    out = tmp_path_factory.mktemp("mine_bundled")
    seed_mlflow_db(out / "mlflow.db")
    return run_mining(BUNDLED_LOG, out, spark=spark, mlflow_run=True, progress=False)


@pytest.fixture(scope="session")
def tables_session(spark):
    """A child session (own temp views, shared SparkContext) with ops / mailbox / accounts, so
    other packages' views of the same names in the shared session are left alone."""
    from superop.workloads.loggen import register_tables
    s = spark.newSession()
    register_tables(s, n_ops=300)
    return s


@pytest.fixture(scope="session")
def eventlog_dir(eventlog_writer, tmp_path_factory):
    """Real event logs: none (single file), zstd, lz4, snappy (rolling dirs), one app each,
    written by the child process the root conftest started with the session."""
    if eventlog_writer is None:      # requested dynamically: not started in the background
        out = tmp_path_factory.mktemp("eventlogs")
        r = subprocess.run([sys.executable, str(HERE / "eventlog_writer.py"), str(out)],
                           capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stderr[-2000:]
        return out
    return wait_started(eventlog_writer, timeout=900)
