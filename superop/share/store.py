"""Where a chosen CE's rows live while its batch runs, and how they are released.

    stored = store(spark, ce_sql, view, CHECKPOINT)   # filled now, registered as a temp view
    ...                                                # consumers read ``view``
    stored.release(spark)                              # view dropped, blocks freed

Two stores, named by the cost model that priced the plan (``CostModel.storage``):

* ``checkpoint`` (the default): ``DataFrame.localCheckpoint`` — the CE is computed once and
  its rows kept as Spark's binary rows in the block manager, in memory and spilling to disk
  (the default storage level of a local checkpoint), its plan cut to them. Filling is one
  job that copies rows; reading hands the rows to the consumer's plan as they are.
* ``cache``: ``persist(MEMORY_AND_DISK)`` — Spark's in-memory columnar cache: compressed
  column batches, built value by value, read column by column (a consumer reads only its
  columns; batches are pruned by their min/max).

Measured on TPC-DS SF 1 (session 8, 2 cores, ``/tmp/lead8/exp/fill.py``): a year of
``date_dim ⋈ store_sales`` (13 columns, 0.58 M rows; 26 MB as column batches) filled in
0.75 s as a checkpoint against 2.35 s as column batches, and its four consumers (q43, q98,
q7, q65) ran in 3.3 s against 4.3 s; 5.55 s alone. Hence the default.

A local checkpoint is not recomputed from lineage: if an executor holding its blocks is
lost, a consumer fails, and ``run.execute`` runs that query as written instead (never lost).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CHECKPOINT, CACHE = "checkpoint", "cache"
STORAGES = (CHECKPOINT, CACHE)


@dataclass
class StoredCE:
    view: str
    storage: str
    df: Any                      # the stored DataFrame (None once released)

    def stored_bytes(self, spark) -> int:
        """Memory + disk bytes its rows take in the block manager (-1 when it cannot be
        told: released, Spark Connect, or a store whose RDD is not found)."""
        return stored_bytes(spark, self.df, self.storage) if self.df is not None else -1

    def release(self, spark) -> None:
        """Drop the view and free the stored rows (also when either step fails)."""
        df, self.df = self.df, None
        try:
            spark.catalog.dropTempView(self.view)
        finally:
            if df is not None:
                free(df, self.storage)


def store(spark, sql: str, view: str, storage: str = CHECKPOINT, fill: bool = True) -> StoredCE:
    """``sql``'s rows stored as ``storage`` and registered as the temp view ``view``;
    ``fill``: compute them now (else on the first read)."""
    df = keep(spark.sql(sql), storage, fill)
    try:
        df.createOrReplaceTempView(view)
    except BaseException:
        free(df, storage)
        raise
    return StoredCE(view, storage, df)


def keep(df, storage: str = CHECKPOINT, fill: bool = True):
    """``df`` stored as ``storage`` (the stored DataFrame; release it with :func:`free`)."""
    from pyspark import StorageLevel
    if storage not in STORAGES:
        raise ValueError(f"unknown CE storage {storage!r} (known: {', '.join(STORAGES)})")
    if storage == CHECKPOINT:
        # storageLevel None = a local checkpoint's own level: deserialized rows in memory,
        # spilling to disk (PySpark's StorageLevel.MEMORY_AND_DISK would serialize them)
        return df.localCheckpoint(eager=fill)
    df = df.persist(StorageLevel.MEMORY_AND_DISK)
    if fill:
        df.count()
    return df


def stored_bytes(spark, df, storage: str) -> int:
    """Memory + disk bytes of what :func:`keep` stored, from the context's RDD storage
    info (a checkpoint: the RDD under its LogicalRDD; the columnar cache: the RDD of its
    column batches); -1 without a JVM (Spark Connect) or when the RDD is not listed."""
    try:
        if storage == CACHE:
            rel = spark._jsparkSession.sharedState().cacheManager().lookupCachedData(df._jdf).get()
            rdd_id = rel.cachedRepresentation().cacheBuilder().cachedColumnBuffers().id()
        else:
            rdd_id = df._jdf.queryExecution().logical().rdd().id()
        infos = spark.sparkContext._jsc.sc().getRDDStorageInfo()
        return next((int(i.memSize()) + int(i.diskSize()) for i in infos if int(i.id()) == int(rdd_id)), -1)
    except Exception:
        return -1


def free(df, storage: str) -> None:
    """Release what :func:`keep` stored."""
    if storage == CACHE:
        df.unpersist(blocking=True)
        return
    jdf = getattr(df, "_jdf", None)
    if jdf is not None:
        # classic: the checkpoint is the persisted RDD under the plan's LogicalRDD
        jdf.queryExecution().logical().rdd().unpersist(True)
        return
    # Spark Connect: the server keeps the checkpoint while a client DataFrame refers to
    # it; the caller dropping its last reference sends the release (CachedRemoteRelation.__del__)
