"""Planning paid once: on-disk caches of the sharing planner, shared across processes.

A dashboard refreshes the same batch again and again; its sharing plan depends only on
the queries' text, the tables (schema, files, statistics), the Spark settings that shape
its plans, the planner's parameters and superop's code. Three stores under one directory
(each record a file named by a sha256 key, written atomically: concurrent planners never
see a partial record, and the same key always holds the same content):

* ``plans/``  — the whole :class:`~superop.share.sharing_plan.SharingPlan` (pickled), keyed by
  all of the above: a repeated batch re-plans in the time to hash its inputs. When the
  budget comes from Spark's free storage memory it is not in the key; a cached plan is
  used only if what it caches fits the budget of this run.
* ``proofs/`` — proof obligations keyed by :func:`superop.share.proofs.pair_fingerprint`
  (the extraction problem's canonical text: both plans' normalized SQL and the base
  tables' column types) and the code version. Only decided results (verified, refuted,
  unsupported) are stored: an unknown may be decided with more time later.
* ``costs/``  — what Spark's planning of a sub-plan told the estimator, keyed by the
  sub-plan's SQL, the fingerprints of the tables it reads and the planning settings.

The store is bounded (``max_bytes``, default :data:`DEFAULT_MAX_BYTES` = 256 MiB; ``None`` =
unbounded): after a planning run stores its plan, :meth:`PlanningCache.prune` removes the
oldest records (by modification time; a plan read from the store is touched, so a plan in
use is the last to go) until the store fits. A removed record is a miss, never an error.

The code version (:func:`code_version`) is a hash of every source file of the
``superop`` package, so a changed prover, encoder or estimator never reads a record an
older one wrote. A stored plan is unpickled only when the current user owns it and
nobody else may write it.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
import re
from pathlib import Path
from typing import Any, Iterable, Optional

from ..explain import explain_text
from ..runtime.tablestats import is_connect
from ..storage import atomic_write_bytes, atomic_write_json

CACHE_FORMAT = 1
DEFAULT_DIR = ".superop/share-cache"
# a dashboard's plan is ~0.1-1 MB pickled and its proofs and costs a few hundred small
# files: room for some hundred batches
DEFAULT_MAX_BYTES = 256 * 2 ** 20
STORES = ("plans", "proofs", "costs")
# Spark settings that change the plans (and so the estimates) of the same SQL.
PLANNING_CONF = ("spark.sql.cbo.enabled", "spark.sql.cbo.joinReorder.enabled",
                 "spark.sql.autoBroadcastJoinThreshold", "spark.sql.shuffle.partitions",
                 "spark.sql.adaptive.enabled", "spark.sql.ansi.enabled", "spark.sql.session.timeZone")
_EXPR_ID = re.compile(r"#\d+L?")


def sha(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(str(p).encode())
        h.update(b"\x00")
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """sha256 of every ``.py`` file of the superop package (path and content)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256(f"format {CACHE_FORMAT}".encode())
    for f in sorted(root.rglob("*.py")):
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def planning_conf(spark) -> str:
    """The Spark version and the settings in ``PLANNING_CONF`` as one string."""
    vals = []
    for k in PLANNING_CONF:
        try:
            vals.append(f"{k}={spark.conf.get(k)}")
        except Exception:      # unset without a default
            vals.append(f"{k}=")
    return ";".join([f"spark={spark.version}", *vals])


def table_fingerprint(spark, table: str) -> str:
    """What Spark knows of ``table``: its typed schema, its plan (classic: the analyzed plan
    with view text; Spark Connect, where no JVM object is reachable: the ``EXPLAIN COST``
    text of ``SELECT * FROM table`` — the optimized plan of the view or relation), the
    optimized plan's statistics (size; row count after ANALYZE) and the size and mtime of
    each of its input files (``df.inputFiles()``; a file the client cannot stat, e.g. on a
    remote Connect server, counts by its name, its changes seen through Spark's size
    statistic). Expression ids are removed. A table Spark cannot resolve gets a
    fingerprint of its name only (the planner leaves its queries out anyway)."""
    try:
        df = spark.table(table)
        if is_connect(spark):
            plan = explain_text(spark, f"SELECT * FROM {table}")   # statistics included
            size = rows = ""
        else:
            qe = df._jdf.queryExecution()
            st = qe.optimizedPlan().stats()
            plan, size = qe.analyzed().toString(), str(st.sizeInBytes())
            rows = str(st.rowCount().get()) if st.rowCount().isDefined() else "?"
        files = []
        for f in sorted(df.inputFiles()):
            p = f[len("file:"):] if f.startswith("file:") else f
            try:
                s = os.stat(p)
                files.append(f"{f}:{s.st_size}:{s.st_mtime_ns}")
            except OSError:
                files.append(f)
        return sha(df.schema.simpleString(), _EXPR_ID.sub("", plan), size, rows, *files)
    except Exception as e:   # unresolvable: the name and the error, never a failure
        return sha("unresolved", table.lower(), type(e).__name__)


class PlanningCache:
    """The three stores of the module doc under ``root``. Every read that fails (missing,
    truncated, written by another format) is a miss; every write is atomic."""

    def __init__(self, root: str | os.PathLike = DEFAULT_DIR, spark=None,
                 max_bytes: Optional[int] = DEFAULT_MAX_BYTES):
        self.root = Path(root)
        self.spark = spark
        self.max_bytes = max_bytes
        self._tables: dict[str, str] = {}
        self._conf: Optional[str] = None
        self.stats = {"plan_hit": 0, "proof_hit": 0, "proof_put": 0, "cost_hit": 0, "cost_put": 0,
                      "evicted": 0}

    # -- keys ----------------------------------------------------------------------
    def table(self, name: str) -> str:
        """The table's fingerprint, computed once per cache object (one planning run)."""
        key = name.lower()
        if key not in self._tables:
            self._tables[key] = table_fingerprint(self.spark, name) if self.spark is not None else sha(key)
        return self._tables[key]

    def conf(self) -> str:
        """:func:`planning_conf`, read once per cache object (one planning run): every
        estimate's key holds it, and each setting is a round trip to Spark."""
        if self._conf is None:
            self._conf = planning_conf(self.spark) if self.spark is not None else ""
        return self._conf

    def plan_key(self, queries: Iterable[tuple[str, str]], tables: Iterable[str], params: dict) -> str:
        return sha("plan", code_version(), self.conf(), json.dumps(params, sort_keys=True, default=str),
                   *(f"{n}\x01{s}" for n, s in queries), *(f"{t}\x01{self.table(t)}" for t in sorted(set(tables))))

    # -- records -------------------------------------------------------------------
    def _path(self, store: str, key: str) -> Path:
        return self.root / store / key[:2] / f"{key}.{'pkl' if store == 'plans' else 'json'}"

    def _read(self, store: str, key: str) -> Optional[bytes]:
        try:
            return self._path(store, key).read_bytes()
        except OSError:
            return None

    def get_plan(self, key: str):
        path = self._path("plans", key)
        try:       # a pickle runs code when loaded: only the user's own, not writable by others
            st = os.stat(path)
            if (hasattr(os, "getuid") and st.st_uid != os.getuid()) or st.st_mode & 0o022:
                return None
        except OSError:
            return None
        data = self._read("plans", key)
        if data is None:
            return None
        try:
            plan = pickle.loads(data)
        except Exception:
            return None
        self.stats["plan_hit"] += 1
        try:               # in use: the last to be evicted
            os.utime(path)
        except OSError:
            pass
        return plan

    def put_plan(self, key: str, plan) -> None:
        try:
            data = pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:      # a plan that does not pickle is simply not cached
            return
        atomic_write_bytes(self._path("plans", key), data)

    def prune(self) -> int:
        """Remove the oldest records until the store holds at most ``max_bytes``; returns
        how many were removed. Temp files of writes in progress (``.name.tmp``) are left
        alone; a record another process removed first is skipped."""
        if self.max_bytes is None:
            return 0
        records = []
        for store in STORES:
            for f in (self.root / store).glob("*/*"):
                if f.name.startswith("."):
                    continue
                try:
                    st = f.stat()
                except OSError:
                    continue
                records.append((st.st_mtime_ns, st.st_size, f))
        total = sum(size for _, size, _ in records)
        removed = 0
        for _, size, f in sorted(records, key=lambda r: (r[0], str(r[2]))):
            if total <= self.max_bytes:
                break
            try:
                f.unlink()
                removed += 1
            except OSError:
                pass
            total -= size
        self.stats["evicted"] += removed
        return removed

    def get_json(self, store: str, key: str) -> Optional[dict]:
        data = self._read(store, key)
        try:
            doc = json.loads(data) if data is not None else None
        except ValueError:
            return None
        if isinstance(doc, dict):
            self.stats[f"{store[:-1]}_hit"] += 1
            return doc
        return None

    def put_json(self, store: str, key: str, doc: dict) -> None:
        atomic_write_json(self._path(store, key), doc)
        self.stats[f"{store[:-1]}_put"] += 1

    # -- the two record kinds the prover and the estimator share -------------------
    def proof_key(self, pair_key: str) -> str:
        return sha("proof", code_version(), pair_key)

    def cost_key(self, sql: str, tables: Iterable[str]) -> str:
        return sha("cost", code_version(), self.conf(), sql, *(f"{t}\x01{self.table(t)}" for t in sorted(set(tables))))
