"""What Spark's catalog says about the tables a query reads: ANALYZE TABLE statistics for
the cost model, and a version per table for the decision cache.

Two implementations behind one interface, chosen by the session kind:

* classic sessions read the session catalog through the JVM (:class:`SessionProbe`: 4 py4j
  calls per table on kept JVM references — a temp view's stored-relation identity, a
  table's whole catalog entry incl. statistics — and one call for the settings);
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
from dataclasses import dataclass
from typing import Optional

from .jvmprobe import JvmProbe, compile_probe

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
        self._cols: dict[tuple, dict[str, float]] = {}     # (table, column) -> its statistics
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
        """The column's number of distinct values (``distinct_count``), if analysed."""
        return self._column(table, column).get("distinct_count")

    def avg_len(self, table: str, column: str) -> Optional[float]:
        """The column's average value length in bytes (``avg_col_len``), if analysed."""
        return self._column(table, column).get("avg_col_len")

    def _column(self, table: str, column: str) -> dict[str, float]:
        key = (table, column.lower())
        with self._lock:
            if key in self._cols:
                return self._cols[key]
        out: dict[str, float] = {}
        try:
            for r in _rows(self.spark, f"DESCRIBE TABLE EXTENDED {table} `{column}`"):
                if r[0] in ("distinct_count", "avg_col_len") and r[1] not in (None, "NULL", ""):
                    out[r[0]] = float(r[1])
        except Exception as e:
            log.debug("superop: no column statistics for %s.%s: %s", table, column, str(e).splitlines()[0])
        with self._lock:
            self._cols[key] = out
        return out


# ---------------------------------------------------------------------------
# versions for the decision cache
# ---------------------------------------------------------------------------
def _digest(s: str) -> str:
    return hashlib.sha1(s.encode()).hexdigest()[:16]


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


def _conf_each(spark, keys) -> tuple:
    out = []
    for k in keys:
        try:
            out.append((k, spark.conf.get(k, None)))
        except Exception:
            out.append((k, None))
    return tuple(out)


@dataclass(frozen=True)
class Snapshot:
    """What a cache key needs from Spark at one moment: the settings' values and a version
    per table (in the order asked)."""
    conf: tuple
    versions: tuple


class SessionProbe:
    """What a cache hit asks the JVM, in as few round trips as the answer allows.

    One probe per session; it keeps references to the session's JVM objects (its SQL
    settings map, session catalog, ``java.lang.System``, table identifiers), so a hit does
    not pay py4j's reflection look-ups again (they were most of the ≈7 ms of a view's
    version):

    * :meth:`conf` — **one** call: the text of the session's settings map
      (``SQLConf.settings``, every value set in this session); if it is the text seen
      last time, the fingerprint read then is still the fingerprint (any ``SET``,
      ``RESET`` or ``spark.conf.set`` changes the text, so a changed setting is seen on
      the very next call). Otherwise the keys are read one by one and remembered.
      Connect: one ``getAll`` RPC.
    * :meth:`snapshot` — both at once, in **one** call (:mod:`.jvmprobe`, a helper compiled
      into the driver): what a cache hit asks. Falls back to :meth:`conf` + :meth:`version`
      (Connect, or no helper).
    * :meth:`version` — **two** calls: the text of the relation's ``CatalogTable`` as Spark
      resolves the name (temp view, global temp view, else table of the current
      database): schema with types and nullability, view text, database, location,
      properties (declared constraints), statistics, creation time to the second. What
      changes the meaning of the query — another schema, another view text, another
      table, ``USE`` of another database — is a new version at once; a view replaced by
      the same schema in the same second (new data, same meaning) may keep its version
      until the next second: a cost input, stale for at most a second. Connect: SQL
      (``DESCRIBE``/``EXPLAIN``).
    """

    def __init__(self, spark):
        self.spark = spark
        self.connect = is_connect(spark)
        self._refs: Optional[tuple] = None
        self._memo: Optional[tuple] = None          # (settings text, keys, fingerprint)
        self._idents: dict[tuple, object] = {}
        self._one: Optional[JvmProbe] = None
        self._one_tried = False

    def _one_call(self) -> Optional[JvmProbe]:
        if not self._one_tried:
            self._one_tried = True
            inst = None if self.connect else compile_probe(self.spark)
            self._one = JvmProbe(self.spark, inst) if inst is not None else None
        return self._one

    @property
    def one_call(self) -> bool:
        """Does :meth:`snapshot` read everything in one JVM call (the helper compiled)?"""
        return self._one_call() is not None

    def snapshot(self, keys, tables) -> Snapshot:
        """The values of ``keys`` and the version of each table in ``tables``, read in one
        JVM call where the helper is available. A table that does not resolve raises (as
        :meth:`version` does)."""
        keys, tables = tuple(keys), tuple(tables)
        one = self._one_call()
        if one is not None:
            try:
                r = one.read(keys, tables)
            except Exception as e:  # an odd reply: the per-call path answers instead
                log.debug("superop: one-call probe failed: %s", str(e).splitlines()[0] if str(e) else e)
            else:
                if any(t is None for t in r.tables):
                    raise LookupError(f"table not found: {tables[[t is None for t in r.tables].index(True)]}")
                # the namespace decides how an unqualified name resolves (USE db)
                return Snapshot(r.conf + (("$namespace", r.namespace),),
                                tuple("table:" + _digest(t) for t in r.tables))
        return Snapshot(self.conf(keys), tuple(self.version(t) for t in tables))

    def _jvm_refs(self) -> tuple:
        if self._refs is None:
            st = self.spark._jsparkSession.sessionState()
            cat = st.catalog()
            self._refs = (st.conf().settings(), cat)
        return self._refs

    def conf(self, keys) -> tuple:
        """The values of the Spark settings ``keys``, as ``((key, value), ...)``."""
        keys = tuple(keys)
        if self.connect:
            try:
                allc = self.spark.conf.getAll
                allc = allc() if callable(allc) else allc
                return tuple((k, allc.get(k)) for k in keys)
            except Exception:
                return _conf_each(self.spark, keys)
        try:
            settings = self._jvm_refs()[0]
            raw = settings.toString()
        except Exception:  # no settings map on this Spark: every key, every time
            return _conf_each(self.spark, keys)
        m = self._memo
        if m is not None and m[0] == raw and m[1] == keys:
            return m[2]
        fp = _conf_each(self.spark, keys)
        # remembered only if nothing changed while the keys were read (else: not a pair)
        if settings.toString() == raw:
            self._memo = (raw, keys, fp)
        return fp

    def version(self, name: str) -> str:
        """A string that changes when the table/view is replaced by another definition or
        its statistics change (ANALYZE TABLE, DDL). Raises if the table does not exist."""
        if self.connect:
            return _connect_version(self.spark, name)
        cat = self._jvm_refs()[1]
        parts = tuple(p.strip("`") for p in name.split("."))
        ident = self._idents.get(parts)
        if ident is None:                  # immutable: built once (py4j reflection is slow)
            TI = self.spark._jvm.org.apache.spark.sql.catalyst.TableIdentifier
            ident = TI.apply(parts[0]) if len(parts) == 1 else \
                TI.apply(parts[-1], self.spark._jvm.scala.Option.apply(parts[-2]))
            self._idents[parts] = ident
        # a temp view (local or global_temp) first, as Spark resolves the name, else the
        # table of the current database; its text: schema (types, nullability), view text,
        # database, location, properties, statistics, creation time (to the second)
        return "table:" + _digest(str(cat.getTempViewOrPermanentTableMetadata(ident).toString()))
