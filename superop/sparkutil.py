"""SparkSession construction and small helpers shared by every Spark-using stage.

Spark configuration comes from the usual places — ``spark-submit`` / ``pyspark`` options,
``$SPARK_CONF_DIR/spark-defaults.conf``, ``PYSPARK_SUBMIT_ARGS``, ``--master`` and ``--conf``
of superop's commands — and is never overridden: superop only fills in what nobody set
(:data:`DEFAULTS`: ``local[2]``, 4g driver memory, no UI, UTC session time zone, Arrow), and
says which on the ``superop.spark`` logger. Likewise the JVM's logging: unless you configured
log4j2 yourself, the JVM starts with superop's ``conf/log4j2.properties`` (errors only), so
no start-up lines precede a command's output. The Python workers run ``--conf
spark.pyspark.python=...`` when given (PySpark outside ``spark-submit`` reads only
``PYSPARK_PYTHON``, so superop sets it), else ``PYSPARK_PYTHON``, else — on a local master —
this interpreter, so that they see the packages superop was installed with.

Executors: superop's own executor-side code (the mining job's ``mapInPandas``) needs
superop, sqlglot and pandas/pyarrow/numpy in the executors' Python. :func:`prepare_executors`
(called before the mining job's first Spark stage) ships superop and sqlglot (pure Python)
to a non-local cluster as one zip (``addPyFile``, or ``addArtifacts`` on Spark Connect;
skipped with ``spark.superop.ship=false``, e.g. when a packed environment already has them),
then imports the executor modules on the executors and fails with one line naming what is
missing and which Python lacks it (pandas, pyarrow and numpy are PySpark's own
``mapInPandas`` requirements: installed there, or shipped with ``spark.archives``). The
runtime (``SuperOpSession``) runs SQL only and needs nothing on executors.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shlex
import sys
import tempfile
import zipfile
from collections import Counter
from pathlib import Path
from typing import Optional

from .errors import SuperopError

log = logging.getLogger("superop.spark")

LOG4J2_CONF = Path(__file__).with_name("conf") / "log4j2.properties"

# what superop uses when nobody set it (a key the user set anywhere is left alone)
DEFAULTS = {
    "spark.master": "local[2]",
    "spark.driver.memory": "4g",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


def _conf_dir() -> Optional[Path]:
    d = os.environ.get("SPARK_CONF_DIR") or (
        os.path.join(os.environ["SPARK_HOME"], "conf") if os.environ.get("SPARK_HOME") else None)
    return Path(d) if d else None


def spark_defaults_file() -> dict[str, str]:
    """``spark-defaults.conf`` of ``$SPARK_CONF_DIR`` (or ``$SPARK_HOME/conf``)."""
    d = _conf_dir()
    f = d / "spark-defaults.conf" if d else None
    out: dict[str, str] = {}
    if f is None or not f.is_file():
        return out
    for line in f.read_text(errors="replace").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        out[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    return out


def submit_args_conf() -> dict[str, str]:
    """Settings in ``PYSPARK_SUBMIT_ARGS`` (``--master``, ``--driver-memory``, ``--conf``)."""
    out: dict[str, str] = {}
    args = shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))
    flags = {"--master": "spark.master", "--driver-memory": "spark.driver.memory",
             "--driver-java-options": "spark.driver.extraJavaOptions"}
    for i, a in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else ""
        if a in flags:
            out[flags[a]] = nxt
        elif a in ("--conf", "-c") and "=" in nxt:
            k, v = nxt.split("=", 1)
            out[k] = v
        elif a.startswith("--conf=") and "=" in a[7:]:
            k, v = a[7:].split("=", 1)
            out[k] = v
    return out


def user_conf() -> dict[str, str]:
    """Every Spark setting made outside superop's defaults: a JVM started by spark-submit
    (its system properties), spark-defaults.conf, PYSPARK_SUBMIT_ARGS, $MASTER."""
    out: dict[str, str] = {}
    out.update(spark_defaults_file())
    out.update(submit_args_conf())
    master = os.environ.get("SUPEROP_SPARK_MASTER") or os.environ.get("MASTER")
    if master:
        out["spark.master"] = master
    if os.environ.get("SUPEROP_DRIVER_MEMORY"):
        out["spark.driver.memory"] = os.environ["SUPEROP_DRIVER_MEMORY"]
    if os.environ.get("PYSPARK_GATEWAY_PORT"):        # under spark-submit: the JVM knows
        from pyspark import SparkConf, SparkContext
        SparkContext._ensure_initialized()
        out.update(dict(SparkConf().getAll()))
    return out


def _logging_configured(conf: dict[str, str]) -> bool:
    d = _conf_dir()
    if d is not None and any((d / n).is_file() for n in ("log4j2.properties", "log4j2.xml",
                                                         "log4j2.yaml", "log4j2.json")):
        return True
    return "log4j" in conf.get("spark.driver.extraJavaOptions", "")


def plan_conf(master: Optional[str] = None, conf: Optional[dict] = None) -> tuple[dict, dict]:
    """(settings to pass to the builder, superop defaults among them). ``master`` and
    ``conf`` are what the caller asked for (``--master`` / ``--conf``) and always apply."""
    asked = dict(conf or {})
    if master:
        asked["spark.master"] = master
    user = {**user_conf(), **asked}
    chosen = {k: v for k, v in DEFAULTS.items() if k not in user}
    master = user.get("spark.master", DEFAULTS["spark.master"])
    if master.startswith("local") and "spark.pyspark.python" not in user and not os.environ.get("PYSPARK_PYTHON"):
        chosen["spark.pyspark.python"] = sys.executable   # workers see this interpreter's packages
    if not _logging_configured(user):
        opt = f"-Dlog4j2.configurationFile={LOG4J2_CONF.as_uri()}"
        prev = user.get("spark.driver.extraJavaOptions", "")
        asked["spark.driver.extraJavaOptions"] = f"{prev} {opt}".strip()
        chosen["log4j2"] = str(LOG4J2_CONF)
    settings = {**{k: v for k, v in chosen.items() if k.startswith("spark.")}, **asked}
    return settings, chosen


def get_spark(app_name: str = "superop", master: Optional[str] = None, conf: Optional[dict] = None):
    """The active SparkSession, or a new one (see module doc for where settings come from)."""
    from pyspark.sql import SparkSession
    settings, chosen = plan_conf(master, conf)
    b = SparkSession.builder.appName(app_name)
    for k, v in settings.items():
        b = b.config(k, v)
    fresh = SparkSession.getActiveSession() is None
    py = settings.get("spark.pyspark.python")     # asked for, or this interpreter on a local master
    if fresh and py and ("spark.pyspark.python" in (conf or {}) or not os.environ.get("PYSPARK_PYTHON")):
        # PySpark outside spark-submit reads only PYSPARK_PYTHON for its workers' Python
        os.environ["PYSPARK_PYTHON"] = py
    spark = b.getOrCreate()
    if fresh and chosen:
        log.info("Spark settings you did not set, chosen by superop: %s (set them with "
                 "--master / --conf or spark-defaults.conf)",
                 ", ".join(f"{k}={v}" for k, v in chosen.items()))
    if "log4j2" in chosen:
        spark.sparkContext.setLogLevel("ERROR")
    return spark


def _norm(v):
    # Compare floats with tolerance-free rounding: aggregation order may differ.
    if isinstance(v, float):
        return round(v, 6)
    try:
        from decimal import Decimal
        if isinstance(v, Decimal):
            return round(float(v), 6)
    except Exception:  # pragma: no cover
        pass
    return v


def empty_tables(spark, schema: dict) -> None:
    """Empty temp views with the schema's column types (``{table: {column: type}}``; entries
    whose name starts with ``$``, such as declared keys, are not tables). Spark plans them
    like large tables (an RDD relation has no size estimate, so no broadcast joins)."""
    from pyspark.sql.types import StructType
    for table, cols in schema.items():
        if table.startswith("$"):
            continue
        ddl = ", ".join(f"`{c}` {t}" for c, t in cols.items())
        spark.createDataFrame(spark.sparkContext.emptyRDD(), StructType.fromDDL(ddl)).createOrReplaceTempView(table)


def bag(rows) -> Counter:
    """A multiset of rows (tuples) for order-insensitive comparison."""
    return Counter(tuple(_norm(v) for v in r) for r in rows)


def bag_of(spark, sql: str) -> Counter:
    return bag(spark.sql(sql).collect())


# ---------------------------------------------------------------------------
# executors: ship superop, check what its executor-side code imports
# ---------------------------------------------------------------------------
EXECUTOR_MODULES = ("pandas", "pyarrow", "numpy")      # PySpark's mapInPandas needs them there
EXECUTOR_CODE = "superop.mining.analyze"               # what the mining job's mapInPandas imports
SHIP_CONF = "spark.superop.ship"
_PACKAGE = Path(__file__).resolve().parent
_SHIPPED: dict[int, str] = {}


def is_local(spark) -> bool:
    try:
        master = spark.sparkContext.master
    except Exception:  # noqa: BLE001 - Spark Connect: no SparkContext
        master = spark.conf.get("spark.master", "") or ""
    return str(master).startswith("local")


def package_zip() -> Path:
    """superop's code and sqlglot's (both pure Python) as one zip for executors: ``.py``
    files and small package data, not the bundled query log; built once per content in the
    temp directory."""
    import sqlglot
    roots = [_PACKAGE, Path(sqlglot.__file__).resolve().parent]
    files = sorted((f, f.relative_to(r.parent).as_posix()) for r in roots for f in r.rglob("*")
                   if f.is_file() and "__pycache__" not in f.parts
                   and f.suffix in (".py", ".json", ".properties", ".sql"))
    h = hashlib.sha256()
    for f, name in files:
        h.update(name.encode() + b"\0" + f.read_bytes())
    out = Path(tempfile.gettempdir()) / f"superop-{h.hexdigest()[:16]}.zip"
    if not out.is_file():
        fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".zip.tmp")
        os.close(fd)
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for f, name in files:
                z.write(f, name)
        os.replace(tmp, out)
    return out


def ship_package(spark) -> str:
    """Make superop importable on the session's executors (once per session)."""
    if id(spark) in _SHIPPED:
        return _SHIPPED[id(spark)]
    z = str(package_zip())
    if hasattr(spark, "sparkContext") and getattr(spark, "_jsparkSession", None) is not None:
        spark.sparkContext.addPyFile(z)
    else:                                   # Spark Connect
        spark.addArtifacts(z, pyfile=True)
    _SHIPPED[id(spark)] = z
    return z


def check_executors(spark, partitions: Optional[int] = None) -> list[dict]:
    """Import superop's executor modules on the executors (one tiny job: a Python UDF, which
    needs nothing but PySpark there); :class:`SuperopError` naming what is missing where."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType
    wanted = EXECUTOR_MODULES + (EXECUTOR_CODE,)

    def probe_executor(_: object) -> str:
        # a closure: pickled by value, so the check runs where superop itself is missing
        import importlib
        import platform
        import socket
        missing = []
        for m in wanted:
            try:
                importlib.import_module(m)
            except Exception as e:  # noqa: BLE001 - any failure means "cannot use it"
                missing.append(f"{m} ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")
        return json.dumps({"host": socket.gethostname(), "python": sys.executable,
                           "version": platform.python_version(), "missing": missing})

    n = partitions or max(2, int(spark.conf.get("spark.default.parallelism", "2") or 2))
    probe = F.udf(probe_executor, StringType(), useArrow=False)
    rows = spark.range(0, n, 1, n).select(probe("id").alias("r")).distinct().collect()
    seen = [json.loads(r["r"]) for r in rows]
    bad = [s for s in seen if s["missing"]]
    if bad:
        s = bad[0]
        raise SuperopError(
            f"the executors' Python cannot run superop's executor-side code: {s['python']} "
            f"(Python {s['version']} on {s['host']}) lacks {'; '.join(s['missing'])} — install them there "
            f"(pip install pandas pyarrow numpy) or ship a packed environment with spark.archives and "
            f"spark.pyspark.python (README: Running on a cluster)")
    return seen


def prepare_executors(spark) -> None:
    """Before superop's own code runs on executors (the mining job): on a non-local
    cluster, ship superop (unless ``spark.superop.ship=false``) and check the executors."""
    if is_local(spark):
        return
    if str(spark.conf.get(SHIP_CONF, "true")).strip().lower() != "false":
        ship_package(spark)
    check_executors(spark)
