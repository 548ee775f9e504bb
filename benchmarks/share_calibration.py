"""Calibrate the sharing cost model (superop/share/estimate.py ``CostModel``) on this machine.

    python benchmarks/share_calibration.py --data-dir /tmp/sharegate-sf1 [--table store_sales]
        [--storage checkpoint|cache] [--repeat 3] [--driver-memory 4g] [--out DIR]

The value model prices everything in *decoded bytes* (rows x Spark's default width of the
columns): a parquet scan decodes ``b`` bytes at cost ``b``; filling a CE of ``s`` bytes
costs its plan (a scan) plus ``W·s``; a consumer reading ``r`` bytes of the stored CE
costs ``R·r``; it holds ``M·s`` bytes of storage memory. Each store of
``superop/share/store.py`` (``--storage``: a local checkpoint, the default, or the
in-memory columnar cache) has its own constants. This script measures the three on one real
table (TPC-DS ``store_sales`` by default) for several column sets, each side timed
``--repeat`` times (median), every query's result written to Spark's ``noop`` sink (all
rows and columns computed, nothing shipped — as the benchmark runs its queries):

* scan:   ``SELECT cols FROM parquet``                      (b = rows x width(cols))
* fill:   ``SELECT cols FROM parquet`` stored (``store.keep``: filled now), and the
  memory + disk bytes it holds (``M`` = their median ratio to the decoded bytes)
* read:   ``SELECT sub FROM <stored>`` for sub ⊆ cols        (r = rows x width(sub))
* the same scan and read with a filter each consumer could have (``ss_quantity < 20``:
  parquet pushes it down, the cache prunes by its batch statistics);
* the fixed cost of filling a CE whatever its size (a Spark job, cache blocks to
  register): the fill of a tiny table (``--tiny-table``, TPC-DS ``store``).

Fitted by least squares through the origin (seconds per decoded byte): ``s_scan``,
``s_fill``, ``s_read``; then ``R = s_read / s_scan``, the same ratio of the filtered
read and scan (``filtered_read_factor`` R_σ: a consumer that filters the CE, shipped as
``filter_read_ratio`` = R_σ / R) and
``W = (s_fill − s_scan) / s_scan``
(the fill's own scan is the CE's plan cost C_E(τ*), already counted apart). The fixed
fill cost ``F`` (seconds of the tiny table's fill) is priced in decoded
bytes, ``fill_fixed = F / s_scan``. The intercepts of the per-byte fits are reported, not
used.
The result (``share_calibration.json``) holds ``cost_model`` — load it with
``CostModel.from_json`` or ``--cost-model FILE`` of ``superop share`` and
``benchmarks/share_bench.py``; the fitted numbers are the shipped defaults
(``estimate.DEFAULT_COST``), with the command and load in their comment.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from superop.share.store import CHECKPOINT, STORAGES  # noqa: E402
from superop.storage import atomic_write_json  # noqa: E402

# Column sets of store_sales: 3, 9 and the 19 columns of the SF 1 run's whole-table CE.
COLUMN_SETS = {
    "store_sales": [
        ["ss_item_sk", "ss_quantity", "ss_sales_price"],
        ["ss_item_sk", "ss_quantity", "ss_sales_price", "ss_sold_date_sk", "ss_store_sk", "ss_customer_sk",
         "ss_ext_sales_price", "ss_net_profit", "ss_coupon_amt"],
        ["ss_ext_sales_price", "ss_item_sk", "ss_sold_date_sk", "ss_cdemo_sk", "ss_coupon_amt", "ss_list_price",
         "ss_promo_sk", "ss_quantity", "ss_sales_price", "ss_addr_sk", "ss_ext_wholesale_cost", "ss_hdemo_sk",
         "ss_net_profit", "ss_store_sk", "ss_customer_sk", "ss_ticket_number", "ss_ext_list_price", "ss_ext_tax",
         "ss_sold_time_sk"],
    ],
}
FILTER = {"store_sales": "ss_quantity < 20"}


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def _noop(df) -> float:
    t = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t


def _path(data_dir: Path, table: str) -> Path:
    for p in (data_dir / f"{table}.parquet", data_dir / table):
        if p.exists():
            return p
    sys.exit(f"share_calibration: no {table}.parquet or {table}/ in {data_dir}")


def measure_fixed(spark, src: Path, repeat: int, storage: str) -> dict:
    """Seconds to fill a tiny table's CE (the per-CE fixed cost: a job's start-up)."""
    from superop.share.store import free, keep
    base = spark.read.parquet(str(src))
    _noop(base)
    scan, fill = [], []
    for _ in range(repeat):
        scan.append(_noop(base))
        t = time.perf_counter()
        df = keep(base, storage)
        fill.append(time.perf_counter() - t)
        free(df, storage)
    out = {"table": src.name, "rows": base.count(), "scan_s": statistics.median(scan),
           "fill_s": statistics.median(fill), "scan_runs": [round(x, 3) for x in scan],
           "fill_runs": [round(x, 3) for x in fill]}
    print(f"  tiny {src.name}: scan {out['scan_s']:.2f}s fill {out['fill_s']:.2f}s "
          f"{out['scan_runs']} {out['fill_runs']}", flush=True)
    return out


def measure(spark, src: Path, table: str, repeat: int, storage: str) -> list[dict]:
    from superop.share.estimate import width
    from superop.share.run import cached_bytes
    from superop.share.store import free, keep
    base = spark.read.parquet(str(src))
    types = {f.name: f.dataType.simpleString() for f in base.schema.fields}
    rows = base.count()
    pred = FILTER[table]
    points: list[dict] = []

    def point(kind: str, cols: list[str], times: list[float], filtered: bool = False) -> None:
        b = rows * width([types[c] for c in cols])
        points.append({"kind": kind, "columns": len(cols), "filtered": filtered, "rows": rows, "bytes": b,
                       "seconds": statistics.median(times), "runs": [round(x, 3) for x in times]})
        print(f"  {kind:13s} {len(cols):2d} cols {'filtered ' if filtered else ''}{b / 1e6:8.1f} MB "
              f"{statistics.median(times):7.2f}s  {[round(x, 2) for x in times]}", flush=True)

    _noop(base.select(COLUMN_SETS[table][0]))        # warm the JVM and the file cache
    for cols in COLUMN_SETS[table]:
        sub = cols[:3]
        scan, fill, read, read_sub, fscan, fread, held = [], [], [], [], [], [], []
        for _ in range(repeat):
            scan.append(_noop(base.select(cols)))
            fscan.append(_noop(base.where(pred).select(sub)))
            t = time.perf_counter()
            df = keep(base.select(cols), storage)
            fill.append(time.perf_counter() - t)
            held.append(cached_bytes(spark))
            read.append(_noop(df.select(cols)))
            read_sub.append(_noop(df.select(sub)))
            fread.append(_noop(df.where(pred).select(sub)))
            free(df, storage)
        point("scan", cols, scan)
        point("fill", cols, fill)
        points[-1]["stored_bytes"] = statistics.median(held)
        point("read", cols, read)
        point("read", sub, read_sub)
        point("scan", sub, fscan, filtered=True)
        point("read", sub, fread, filtered=True)
    return points


def fit(points: list[dict], fixed: dict | None = None) -> dict:
    """Seconds per decoded byte per kind (least squares through the origin), an
    intercept fit for the record, and the model's R and W."""
    def slope(ps):
        sxx = sum(p["bytes"] ** 2 for p in ps)
        return sum(p["bytes"] * p["seconds"] for p in ps) / sxx if sxx else float("nan")

    def line(ps):
        n = len(ps)
        mx = sum(p["bytes"] for p in ps) / n
        my = sum(p["seconds"] for p in ps) / n
        sxx = sum((p["bytes"] - mx) ** 2 for p in ps)
        b = sum((p["bytes"] - mx) * (p["seconds"] - my) for p in ps) / sxx if sxx else float("nan")
        return {"per_byte_s": b, "intercept_s": my - b * mx}

    by = {k: [p for p in points if p["kind"] == k and not p["filtered"]] for k in ("scan", "fill", "read")}
    s = {k: slope(v) for k, v in by.items()}
    filt = {k: slope([p for p in points if p["kind"] == k and p["filtered"]]) for k in ("scan", "read")}
    # the tiny table's whole fill: its bytes are negligible, so its time is the job's
    # start-up, which C_E(τ*) (bytes) does not count (session 7 subtracted the tiny scan,
    # itself mostly start-up, and got 0 for a checkpoint)
    fixed_s = fixed["fill_s"] if fixed else 0.0
    return {
        "fixed_fill_s": fixed_s,
        "per_byte_s": s, "with_intercept": {k: line(v) for k, v in by.items() if len(v) > 1},
        "filtered_per_byte_s": filt,
        "filtered_read_factor": round(filt["read"] / filt["scan"], 3),
        "cost_model": {"read_factor": round(s["read"] / s["scan"], 3),
                       "filter_read_ratio": round((filt["read"] / filt["scan"]) / (s["read"] / s["scan"]), 3),
                       "write_factor": round((s["fill"] - s["scan"]) / s["scan"], 3),
                       "memory_factor": round(statistics.median(
                           p["stored_bytes"] / p["bytes"] for p in by["fill"] if p.get("stored_bytes", -1) > 0), 3)
                       if any(p.get("stored_bytes", -1) > 0 for p in by["fill"]) else 1.0,
                       "fill_fixed": float(f"{fixed_s / s['scan']:.3g}")},
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", required=True, help="TPC-DS parquet directory (e.g. /tmp/sharegate-sf1)")
    ap.add_argument("--table", default="store_sales", choices=sorted(COLUMN_SETS))
    ap.add_argument("--tiny-table", default="store", help="table whose fill measures the fixed cost")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--storage", default=CHECKPOINT, choices=STORAGES,
                    help="how CEs are stored (superop/share/store.py; default checkpoint)")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--master", help="Spark master (default local[2])")
    ap.add_argument("--out", default="out/bench/share-calibration")
    args = ap.parse_args(argv)
    from superop.bench.report import code_version, machine_info, now
    from superop.sparkutil import get_spark
    doc: dict[str, Any] = {"started_at": now(), "command": "python benchmarks/share_calibration.py " + " ".join(
        sys.argv[1:] if argv is None else argv), "machine": machine_info(), "code": code_version(),
        "load_start": _load()}
    spark = get_spark(app_name="superop-share-calibration", master=args.master,
                      conf={"spark.driver.memory": args.driver_memory})
    try:
        doc["fixed"] = measure_fixed(spark, _path(Path(args.data_dir), args.tiny_table), args.repeat,
                                     args.storage)
        doc["points"] = measure(spark, _path(Path(args.data_dir), args.table), args.table, args.repeat,
                                 args.storage)
    finally:
        spark.stop()
    doc["load_end"] = _load()
    doc.update(fit(doc["points"], doc["fixed"]))
    doc["cost_model"]["storage"] = args.storage
    out = Path(args.out)
    atomic_write_json(out / "share_calibration.json", doc)
    print(f"per decoded byte: {doc['per_byte_s']}; filtered: {doc['filtered_per_byte_s']}")
    print(f"cost model: {doc['cost_model']}; fixed fill {doc['fixed_fill_s']:.2f}s; "
          f"load {doc['load_start']} -> {doc['load_end']}; written {out / 'share_calibration.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
