"""TPC-DS at the smallest useful scale factor (0.01, ~30 MB, generated once per session by
tpcgen-cli) registered in a CHILD session: its tables (customer, ...) must not replace the
TPC-H views of the same names in the shared session."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tpcds_dir(tmp_path_factory):
    from superop.workloads.tpcds.data import SMALLEST_SF, generate_tpcds
    return generate_tpcds(SMALLEST_SF, tmp_path_factory.mktemp("tpcds") / "sf")


@pytest.fixture(scope="session")
def tpcds_session(spark, tpcds_dir):
    from superop.workloads.tpcds import register_tpcds
    s = spark.newSession()
    register_tpcds(s, tpcds_dir)
    return s
