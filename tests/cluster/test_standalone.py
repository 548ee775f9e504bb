"""superop on a standalone cluster (master + two workers started with the PySpark
distribution's sbin/spark-daemon.sh) whose executors run a Python environment WITHOUT
superop (or sqlglot): superop ships its code there and imports the mining job's executor
module on the executors (the check the mining job runs first), the runtime rewrites a query
there with equal rows, and executors lacking pandas get one line naming it. The whole
nightly job on such a cluster, with numbers: benchmarks/cluster_run.py."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from superop.bench.cluster import Standalone, executor_env
from superop.rules_out.catalog import make_catalog, write_catalog
from superop.rules_out.coverage import covered_rule
from superop.rules_out.signing import sign_catalog, signing_key
from tests.runtime.runtime_fixtures import rule_certificates
from tests.runtime.test_differential import DU

DRIVER = Path(__file__).with_name("cluster_driver.py")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with Standalone(tmp_path_factory.mktemp("standalone"), workers=2) as c:
        yield c


def test_superop_on_a_cluster_whose_executors_lack_it(cluster, tmp_path):
    good = executor_env(tmp_path / "executor-env")
    bare = executor_env(tmp_path / "bare-env", packages=())
    for py, mod in ((good, "superop"), (good, "sqlglot"), (bare, "pandas")):
        r = subprocess.run([str(py), "-c", f"import {mod}"], capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode != 0, f"{py} must not have {mod}"
    assert subprocess.run([str(good), "-c", "import pandas, pyarrow"], cwd=tmp_path).returncode == 0
    catalog = tmp_path / "catalog.json"
    write_catalog(catalog, sign_catalog(make_catalog([covered_rule("DU", rule_certificates("du-2way"),
                                                                   rule_id="du-2way")], version="cluster"),
                                        signing_key(), "tests"))
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"master": cluster.url, "executor_python": str(good), "bare_python": str(bare),
                                "catalog": str(catalog), "query": DU["sigma"]}))
    p = subprocess.run([sys.executable, str(DRIVER), str(args)], capture_output=True, text=True, timeout=1500,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["executors"] == 2 and out["executor_python"] == [str(good)]
    assert out["rewrite"]["changed"] and out["rewrite"]["applied"] == ["du-2way"]
    assert out["rewrite"]["exchanges"][1] < out["rewrite"]["exchanges"][0]
    assert out["rows_equal"] and out["enabled_rows_equal"]
    assert out["enabled_counters"]["rewritten"] == 1
    err = out["bare_error"]
    assert err and "lacks pandas" in err and str(bare) in err and "\n" not in err
    print("\n" + json.dumps({k: out[k] for k in ("spark_start_s", "prepare_s", "session_s")}))
