"""What Spark's catalog says about the tables a query reads: ANALYZE TABLE statistics for
the cost model, and a version per table for the decision cache.

Two implementations behind one interface, chosen by the session kind:

* classic sessions read the session catalog through the JVM (a few py4j calls per table:
  a temp view's plan identity, a table's creation time, DDL time and stored statistics);
* Spark Connect sessions (no JVM access) ask SQL: ``DESCRIBE TABLE EXTENDED`` for catalog
  tables and the optimized plan of ``SELECT * FROM view`` (without expression ids) for
  temporary views — a view replaced by the same definition keeps its version, which is
  right for the cache (same plan, same decision).
"""
from __future__ import annotations

import hashlib
import logging
import re
import threading
from typing import Optional

log = logging.getLogger("superop.runtime")


def is_connect(spark) -> bool:
    """A Spark Connect session (no py4j gateway behind it)."""
    return getattr(spark, "_jsparkSession", None) is None


def _rows(spark, sql: str) -> list:
    return spark.sql(sql).collect()


# ---------------------------------------------------------------------------
# ANALYZE TABLE results for the cost model
# ---------------------------------------------------------------------------
class CatalogStats:
    """Row counts and column NDVs that ANALYZE TABLE stored (``DESCRIBE``; works on classic
    and Connect). Memoized for the lifetime of the object (one rewrite decision)."""

    def __init__(self, spark):
        self.spark = spark
        self._rows: dict[str, Optional[float]] = {}
        self._ndv: dict[tuple, Optional[float]] = {}
        self._lock = threading.Lock()

    def rows(self, table: str) -> Optional[float]:
        with self._lock:
            if table in self._rows:
                return self._rows[table]
        out = None
        try:
            for r in _rows(self.spark, f"DESCRIBE TABLE EXTENDED {table}"):
                if r[0] == "Statistics":
                    m = re.search(r"([\d]+) rows", r[1] or "")
                    out = float(m.group(1)) if m else None
        except Exception as e:  # statistics are an optimization, never a failure
            log.debug("superop: no statistics for %s: %s", table, str(e).splitlines()[0])
        with self._lock:
            self._rows[table] = out
        return out

    def ndv(self, table: str, column: str) -> Optional[float]:
        key = (table, column.lower())
        with self._lock:
            if key in self._ndv:
                return self._ndv[key]
        out = None
        try:
            for r in _rows(self.spark, f"DESCRIBE TABLE EXTENDED {table} `{column}`"):
                if r[0] == "distinct_count" and r[1] not in (None, "NULL", ""):
                    out = float(r[1])
        except Exception as e:
            log.debug("superop: no column statistics for %s.%s: %s", table, column, str(e).splitlines()[0])
        with self._lock:
            self._ndv[key] = out
        return out


# ---------------------------------------------------------------------------
# versions for the decision cache
# ---------------------------------------------------------------------------
def _digest(s: str) -> str:
    return hashlib.sha1(s.encode()).hexdigest()[:16]


def _classic_version(spark, name: str) -> str:
    jvm = spark._jvm
    cat = spark._jsparkSession.sessionState().catalog()
    parts = [p.strip("`") for p in name.split(".")]
    TI = jvm.org.apache.spark.sql.catalyst.TableIdentifier
    if len(parts) == 1:
        view = cat.getRawTempView(parts[0])      # the stored relation (getTempView wraps anew)
        if view.isDefined():
            return f"view:{jvm.System.identityHashCode(view.get())}"
        ident = TI.apply(parts[0])
    else:
        if parts[-2].lower() == str(cat.globalTempDatabase()).lower():
            view = cat.globalTempViewManager().get(parts[-1])
            if view.isDefined():
                return f"gview:{jvm.System.identityHashCode(view.get())}"
        ident = TI.apply(parts[-1], jvm.scala.Option.apply(parts[-2]))
    t = cat.getTableMetadata(ident)
    return "table:" + _digest("|".join([str(t.identifier().unquotedString()), str(t.createTime()),
                                        str(t.stats().toString()), str(t.properties().toString()),
                                        str(t.storage().locationUri().toString())]))


def _connect_version(spark, name: str) -> str:
    try:
        rows = _rows(spark, f"DESCRIBE TABLE EXTENDED {name}")
        info = {r[0]: r[1] for r in rows}
        if "Created Time" in info:      # a catalog table
            return "table:" + _digest("|".join(str(info.get(k)) for k in
                                               ("Catalog", "Database", "Table", "Created Time",
                                                "Statistics", "Location", "Table Properties")))
    except Exception:
        pass
    text = spark.sql(f"EXPLAIN COST SELECT * FROM {name}").collect()[0][0]
    # expression ids are new at every analysis of a SQL view: the plan without them
    logical = re.sub(r"#\d+L?", "", text.split("== Physical Plan ==")[0])
    return "view:" + _digest(logical)


def table_version(spark, name: str) -> str:
    """A string that changes when the table/view is replaced or its statistics change
    (ANALYZE TABLE, DDL). Raises if the table does not exist."""
    if is_connect(spark):
        return _connect_version(spark, name)
    return _classic_version(spark, name)


def conf_fingerprint(spark, keys) -> tuple:
    """The values of the Spark settings that change plans (broadcast threshold, CBO, ...).
    Classic: one ``conf.get`` per key (≈0.1 ms each through py4j; ``getAll`` copies every
    setting of the session, ≈25 ms — it dominated a cached decision). Connect: one
    ``getAll`` RPC instead of one per key (one ``conf.get`` per key where that fails)."""
    if is_connect(spark):
        try:
            allc = spark.conf.getAll
            allc = allc() if callable(allc) else allc
            return tuple((k, allc.get(k)) for k in keys)
        except Exception:
            pass
    return tuple((k, _conf_get(spark, k)) for k in keys)


def _conf_get(spark, key):
    try:
        return spark.conf.get(key, None)
    except Exception:
        return None
