"""One JVM round trip per cache hit: a tiny Java helper compiled into the driver at runtime.

A hit must see a changed setting or a replaced table at once (cache.py), and py4j pays one
socket round trip per method call: reading 11 settings and a catalog entry per table from
Python costs ``1 + 2 × tables`` round trips, and on a loaded machine each one is a chance to
be preempted (the p99 of a hit). :class:`JvmProbe` asks for everything a hit checks in ONE
call: the value of each key as ``spark.conf.get(key, None)`` reads it
(``SQLConf.getConfString(key, null)``: the value set in this session, else None), the current
catalog and namespace, and the text of each table's catalog entry as Spark resolves the
name (``SessionCatalog.getTempViewOrPermanentTableMetadata``; an error marker if it does not
resolve) — the same text :meth:`tablestats.SessionProbe.version` digests.

The helper is Java source compiled with Janino — the compiler Spark itself uses for
whole-stage code generation, so it is on every classic driver's classpath — once per JVM
(module-level, keyed by the gateway). Where that fails (another Spark build, a security
manager), :func:`compile_probe` returns None and the caller falls back to per-key calls.
Spark Connect sessions have no JVM here and never use it.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Optional

log = logging.getLogger("superop.runtime")

SEP_FIELD = "\u0001"
SEP_TABLE = "\u0002"
_ERROR = "\u0003error:"

_SOURCE = r"""
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.internal.SessionState;

public class SuperopProbe {
  public String read(SparkSession s, String[] keys, TableIdentifier[] ids) {
    StringBuilder b = new StringBuilder(256);
    SessionState st = s.sessionState();
    SQLConf c = st.conf();
    for (int i = 0; i < keys.length; i++) {
      String v = c.getConfString(keys[i], null);
      b.append(v == null ? "\u0000" : v).append('\u0001');
    }
    b.append(st.catalogManager().currentCatalog().name()).append('.');
    String[] ns = st.catalogManager().currentNamespace();
    for (int i = 0; i < ns.length; i++) { b.append(ns[i]).append('.'); }
    for (int i = 0; i < ids.length; i++) {
      b.append('\u0002');
      try {
        b.append(st.catalog().getTempViewOrPermanentTableMetadata(ids[i]).toString());
      } catch (Exception e) {
        b.append("\u0003error:").append(e.getClass().getName());
      }
    }
    return b.toString();
  }
}
"""

_compiled: dict[int, object] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class ProbeRead:
    """What one call returned: the keys' values (None = not set), the current
    catalog/namespace, and per table its catalog entry's text (None = does not resolve)."""
    conf: tuple
    namespace: str
    tables: tuple


def compile_probe(spark) -> Optional[object]:
    """The helper's JVM instance for this session's JVM, or None if it cannot be compiled."""
    gw = getattr(spark.sparkContext, "_gateway", None)
    if gw is None:
        return None
    with _lock:
        if id(gw) in _compiled:
            return _compiled[id(gw)]
        inst = None
        try:
            jvm = spark._jvm
            comp = jvm.org.codehaus.janino.SimpleCompiler()
            comp.setParentClassLoader(spark._jsparkSession.getClass().getClassLoader())
            comp.cook(_SOURCE)
            cls = comp.getClassLoader().loadClass("SuperopProbe")
            inst = cls.getConstructors()[0].newInstance(gw.new_array(jvm.java.lang.Object, 0))
        except Exception as e:  # an optimization: per-key calls still work
            log.info("superop: no one-call JVM probe (%s)", str(e).splitlines()[0] if str(e) else type(e).__name__)
        _compiled[id(gw)] = inst
        return inst


class JvmProbe:
    """Reads settings and catalog entries in one py4j call (see the module docstring).
    The JVM arrays of keys and table identifiers are built once per key set / table set."""

    def __init__(self, spark, inst):
        self.spark = spark
        self._inst = inst
        self._arrays: dict[tuple, object] = {}
        self._lock = threading.Lock()

    def _array(self, kind: str, items: tuple):
        key = (kind, items)
        with self._lock:
            arr = self._arrays.get(key)
        if arr is not None:
            return arr
        gw, jvm = self.spark.sparkContext._gateway, self.spark._jvm
        if kind == "keys":
            arr = gw.new_array(jvm.java.lang.String, len(items))
            for i, k in enumerate(items):
                arr[i] = k
        else:
            TI = jvm.org.apache.spark.sql.catalyst.TableIdentifier
            arr = gw.new_array(TI, len(items))
            for i, name in enumerate(items):
                parts = tuple(p.strip("`") for p in name.split("."))
                arr[i] = TI.apply(parts[0]) if len(parts) == 1 else \
                    TI.apply(parts[-1], jvm.scala.Option.apply(parts[-2]))
        with self._lock:
            if len(self._arrays) > 4096:        # bounded: one entry per distinct table set
                self._arrays.clear()
            self._arrays[key] = arr
        return arr

    def read(self, keys: tuple, tables: tuple) -> ProbeRead:
        raw = self._inst.read(self.spark._jsparkSession, self._array("keys", keys),
                              self._array("tables", tables))
        head, *entries = raw.split(SEP_TABLE)
        fields = head.split(SEP_FIELD)
        if len(fields) != len(keys) + 1 or len(entries) != len(tables):
            # a separator inside a value or an entry: not one read per item, so no answer
            raise ValueError("superop probe: ambiguous reply")
        conf = tuple((k, None if v == "\u0000" else v) for k, v in zip(keys, fields))
        return ProbeRead(conf=conf, namespace=fields[len(keys)],
                         tables=tuple(None if e.startswith(_ERROR) else e for e in entries))
