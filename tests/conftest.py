"""Shared fixtures: ONE local SparkSession for the whole run, small TPC-H data, and the child
process that writes real Spark event logs, started in the background at the session's start."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .shared_fixtures import computed_once, run_dir, started_once, stop_started

# Every JVM the suite starts (the workers' Spark sessions, the event-log writers' child
# applications, the standalone cluster's daemons and executors; ``java`` reads this variable)
# runs minutes of tiny queries: JIT compilation with C1 alone, without C2 recompiling hot
# code, and the serial garbage collector, without G1's concurrent threads, cost less CPU
# than they save on two cores. What Spark computes is the same.
os.environ.setdefault("JDK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")

# The files that take longest (a worker's seconds, measured on 2 cores), first, in this order;
# the others follow by number of tests. With ``-n 2 --dist loadfile`` a file runs whole on one
# worker and xdist hands out files in collection order (once ``pytest_configure`` below turns
# off its reordering by test count, which sent files of one long test last, to run while the
# other worker idled). The first two compute the run's shared values side by side (the
# template proofs, the DataFrame twins' rows), before test_tpcds.py needs the proofs.
HEAVY_FILES = (
    "tests/families/test_fixtures.py",
    "tests/families/test_dataframe_twins.py",
    "tests/workloads/test_tpcds.py",
    "tests/runtime/test_connect.py",
    "tests/rules_out/test_nightly.py",
    "tests/families/test_pivot.py",
    "tests/families/test_dataframe_twins_connect.py",
    "tests/families/test_ex_pairs.py",
    "tests/families/test_nb.py",
    "tests/ir/test_roundtrip.py",
    "tests/runtime/test_traps.py",
    "tests/ir/test_constructs.py",
)


def pytest_configure(config):
    if getattr(config.option, "loadscopereorder", None) is not None:
        config.option.loadscopereorder = False       # the order is pytest_collection_modifyitems'


def pytest_collection_modifyitems(config, items):
    """Heavy files first (:data:`HEAVY_FILES`), then by number of tests; a file's tests keep
    their order. Every worker collects the same order, as xdist requires."""
    def file_of(item) -> str:
        return item.nodeid.split("::", 1)[0]
    counts: dict[str, int] = {}
    for it in items:
        counts[file_of(it)] = counts.get(file_of(it), 0) + 1
    rank = {f: i for i, f in enumerate(HEAVY_FILES)}
    items.sort(key=lambda it: (rank.get(file_of(it), len(rank)), -counts[file_of(it)], file_of(it)))


@pytest.fixture(scope="session", autouse=True)
def _key_store(tmp_path_factory):
    """Catalog signing keys (superop.rules_out.signing) live in a throwaway key store: its
    key is generated on first use and is the only one trusted."""
    os.environ["SUPEROP_KEY_DIR"] = str(tmp_path_factory.mktemp("keys"))
    for k in ("SUPEROP_SIGNING_KEY", "SUPEROP_TRUSTED_KEYS"):
        os.environ.pop(k, None)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from superop.sparkutil import get_spark
    warehouse = tmp_path_factory.mktemp("warehouse")
    s = get_spark(app_name="superop-tests", master="local[2]", conf={
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "4",
        "spark.sql.warehouse.dir": str(warehouse),
        # the tests' queries read a few hundred rows: compiling each plan to Java (Janino,
        # then the JIT) costs more CPU than running its operators interpreted; rows, plans
        # and exchanges are the same (the operators are not wrapped in WholeStageCodegen)
        "spark.sql.codegen.wholeStage": "false",
    })
    yield s
    s.stop()


@pytest.fixture(scope="session")
def connect_url(spark):
    """``sc://host:port`` of a Spark Connect server for the Connect suites: Spark's own
    ``SparkConnectService`` (``pyspark/jars/spark-connect_*.jar``) started once, on the
    session's JVM (no second JVM), on a free loopback port, stopped at the end.
    ``SUPEROP_TEST_CONNECT_URL=sc://host:port`` uses an external server instead."""
    pytest.importorskip("grpc", reason="Spark Connect needs the connect extra (grpcio, grpcio-status, "
                                       "googleapis-common-protos)")
    url = os.environ.get("SUPEROP_TEST_CONNECT_URL")
    if url:
        yield url
        return
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sc = spark._jsc.sc()
    sc.conf().set("spark.connect.grpc.binding.address", "127.0.0.1")
    sc.conf().set("spark.connect.grpc.binding.port", str(port))
    service = spark._jvm.org.apache.spark.sql.connect.service.SparkConnectService
    service.start(sc)
    yield f"sc://127.0.0.1:{port}"
    none = spark._jvm.scala.Option.empty()
    service.stop(none, none)


@pytest.fixture(scope="session")
def tpch_dir(tmp_path_factory) -> Path:
    """TPC-H parquet at a tiny scale factor, generated by tpchgen-cli (not committed) once
    per run, read by every worker (no test writes into it)."""
    def make() -> str:
        out = run_dir(tmp_path_factory) / "tpch"
        exe = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
        subprocess.run([exe, "parquet", "-s", "0.01", "--output-dir", str(out)], check=True,
                       capture_output=True)
        return str(out)
    return Path(computed_once(tmp_path_factory, "tpch_dir", make))


@pytest.fixture(scope="session")
def tpch(spark, tpch_dir):
    """Registers the eight TPC-H tables as temp views; returns their schema mapping."""
    from superop.workloads.tpch import register_tpch
    return register_tpch(spark, tpch_dir)


@pytest.fixture(scope="session")
def tpcds_dir(tmp_path_factory):
    """TPC-DS at the smallest useful scale factor (0.01, ~30 MB), generated once per run by
    tpcgen-cli (shared by the workload and bench tests of every worker; none writes into it)."""
    from superop.workloads.tpcds.data import SMALLEST_SF, generate_tpcds
    return Path(computed_once(tmp_path_factory, "tpcds_dir",
                              lambda: str(generate_tpcds(SMALLEST_SF, run_dir(tmp_path_factory) / "tpcds" / "sf"))))


@pytest.fixture(scope="session")
def tpcds_session(spark, tpcds_dir):
    """The TPC-DS tables in a CHILD session: its tables (customer, ...) must not replace the
    TPC-H views of the same names in the shared session."""
    from superop.workloads.tpcds import register_tpcds
    s = spark.newSession()
    register_tpcds(s, tpcds_dir)
    return s


@pytest.fixture(scope="session")
def seed_mlflow_db(tmp_path_factory):
    """``seed_mlflow_db(path) -> uri``: an empty MLflow SQLite store at ``path``, copied from
    one created once per run (by the first worker that needs one). A new store runs MLflow's
    schema migrations (10-15 s on a loaded 2-core machine); a copy starts at the current
    schema in milliseconds."""
    from mlflow.tracking import MlflowClient

    from superop.tracking import quiet_mlflow
    quiet_mlflow()

    def make() -> str:
        db = run_dir(tmp_path_factory) / "mlflow-template" / "mlflow.db"
        db.parent.mkdir()
        MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments()
        return str(db)
    template = computed_once(tmp_path_factory, "mlflow_template", make)

    def seed(db: Path) -> str:
        db = Path(db)
        db.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, db)
        return f"sqlite:///{db}"
    return seed


EVENTLOG_WRITER = Path(__file__).parent / "mining" / "eventlog_writer.py"


@pytest.fixture(scope="session", autouse=True)
def eventlog_writer(request, tmp_path_factory):
    """Real Spark event logs need a JVM of their own (``spark.eventLog.*`` cannot be set on
    the shared session): ``tests/mining/eventlog_writer.py`` runs one application per codec in
    a child process, the slowest setup of the suite. When a selected test needs the logs
    (``eventlog_dir``), the child starts with the session and runs while the other tests do,
    once per run (the first worker starts it, every worker can read what it writes); yields
    its directory for ``shared_fixtures.wait_started``, or None when no selected test needs it."""
    if not any("eventlog_dir" in getattr(item, "fixturenames", ()) for item in request.session.items):
        yield None
        return
    d, proc = started_once(tmp_path_factory, "eventlogs", [sys.executable, str(EVENTLOG_WRITER)])
    yield d
    stop_started(proc)


def _proofs() -> dict:
    """Every symbolic instance's proof (``prove_instance``, as JSON) and every family's template
    certificates (``template_certificates``), made in one process: the certificates' proofs
    are the instances' (``prove_instance`` remembers what it proved in the process)."""
    from superop.families.instances import all_instances
    from superop.rules_out.builtin import template_certificates as certificates
    from superop.verify.template_proofs import prove_instance
    instances = {i.name: prove_instance(i).to_json() for i in all_instances()}
    return {"instances": instances, "certificates": certificates()}


@pytest.fixture(scope="session")
def instance_proofs(tmp_path_factory) -> dict:
    """``prove_instance`` of every family's symbolic instances (default timeout), by name, as
    ``Result.to_json`` gives it: Z3 runs once per test run, whichever worker asks first."""
    return computed_once(tmp_path_factory, "proofs", _proofs)["instances"]


@pytest.fixture(scope="session")
def template_certificates(tmp_path_factory):
    """Every family's template proofs (superop.rules_out.builtin.template_certificates), by
    name: Z3 runs once per test run, whichever worker asks first (with the instances' proofs,
    ``instance_proofs``); the families' proof catalog and the benchmarks' built-in catalog
    are both made from them."""
    return computed_once(tmp_path_factory, "proofs", _proofs)["certificates"]
