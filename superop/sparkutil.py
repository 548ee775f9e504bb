"""SparkSession construction and small helpers shared by every Spark-using stage.

Spark configuration comes from the usual places — ``spark-submit`` / ``pyspark`` options,
``$SPARK_CONF_DIR/spark-defaults.conf``, ``PYSPARK_SUBMIT_ARGS``, ``--master`` and ``--conf``
of superop's commands — and is never overridden: superop only fills in what nobody set
(:data:`DEFAULTS`: ``local[2]``, 4g driver memory, no UI, UTC session time zone, Arrow), and
says which on the ``superop.spark`` logger. Likewise the JVM's logging: unless you configured
log4j2 yourself, the JVM starts with superop's ``conf/log4j2.properties`` (errors only), so
no start-up lines precede a command's output.
"""
from __future__ import annotations

import logging
import os
import shlex
from collections import Counter
from pathlib import Path
from typing import Optional

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
