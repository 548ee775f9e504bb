"""Benchmark of the mining job (not a test): generated logs of 10k .. 10M queries.

    python benchmarks/mining_bench.py --sizes 1m 2m 5m 10m [--keep DIR] [--json out.json]
    superop bench mine -- --sizes 1m 10m --keep DIR          # the same, through the CLI

Each size runs in a FRESH Python process with its own local[2] SparkSession (so the peak
memory of driver JVM + Python workers is attributable to one size): generate the log (plain
JSON Lines so Spark can split it), run ``run_mining`` without MLflow, then report wall time,
queries/s, the job's seconds per phase, and peak RSS of the whole process tree (driver JVM,
Python driver, Python workers), sampled every 0.2 s from /proc. Generation time is reported
separately and not counted in queries/s. With ``--keep DIR`` a log generated before (same
size and seed, its truth file next to it) is reused, so a second run pays no generation.

The growth line compares the cost per query of every size with the smallest one's (1.00 =
linear). Goals: 10M queries in <= 15 minutes on 2 cores, time growing linearly.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional


def _tree_rss(pid: int) -> int:
    """RSS in bytes of ``pid`` and all its descendants (Linux /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            ppid = int(parts[1])
            rss[int(d)] = int(parts[21]) * os.sysconf("SC_PAGE_SIZE")
            children.setdefault(ppid, []).append(int(d))
        except (OSError, IndexError, ValueError):
            continue
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack.extend(children.get(p, []))
    return total


SEED = 13


def _log(n: int, workdir: Path) -> tuple[Path, dict, Optional[float]]:
    """The log of ``n`` queries (and its truth): reused from ``workdir`` when a complete one
    is there, else generated. Returns the generation seconds (None when reused)."""
    from superop.workloads.loggen import write_log
    log, truth_path = workdir / f"log_{n}_seed{SEED}.jsonl", workdir / f"log_{n}_seed{SEED}.truth.json"
    if log.is_file() and truth_path.is_file():          # the truth is written last
        return log, json.loads(truth_path.read_text()), None
    t0 = time.perf_counter()
    truth = write_log(log, n_queries=n, seed=SEED, truth_path=truth_path)
    return log, truth, time.perf_counter() - t0


def run_one(n: int, workdir: Path) -> dict:
    """Child-process body: generate (or reuse) the log, mine, print a JSON line."""
    from superop.mining.job import run_mining
    from superop.sparkutil import get_spark
    log, truth, gen = _log(n, workdir)
    spark = get_spark(app_name="mining-bench", conf={"spark.sql.shuffle.partitions": "8"})
    t1 = time.perf_counter()
    res = run_mining(log, workdir / f"out_{n}", spark=spark, mlflow_run=False, progress=False)
    wall = time.perf_counter() - t1
    s = res.summary
    found = {(r["family"], r["join_kind"], r["shape"]) for r in res.candidates.to_dict("records")}
    planted = {(v["family"], v["join_kind"], v["shape"]) for v in truth["variants"]}
    spark.stop()
    return {"queries": s["queries_read"], "log_mb": round(log.stat().st_size / 2**20, 1),
            "generate_s": None if gen is None else round(gen, 1), "mine_s": round(wall, 1),
            "queries_per_s": round(s["queries_read"] / wall), "templates": s["templates"],
            "candidates": s["candidates"], "planted_found": len(planted & found),
            "planted": len(planted), "seconds_by_phase": s["seconds_by_phase"]}


def measure(n: int, workdir: Path) -> dict:
    load0 = os.getloadavg()
    cmd = [sys.executable, __file__, "--child", str(n), "--workdir", str(workdir)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    peak = 0
    stop = threading.Event()

    def sample():
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, _tree_rss(proc.pid))
            time.sleep(0.2)
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out, _ = proc.communicate()
    stop.set()
    th.join()
    if proc.returncode != 0:
        raise SystemExit(f"size {n} failed (exit {proc.returncode})")
    row = json.loads(out.strip().splitlines()[-1])
    row["peak_rss_mb"] = round(peak / 2**20)
    row["load_avg"] = [round(load0[0], 1), round(os.getloadavg()[0], 1)]
    return row


def _size(s: str) -> int:
    """10000, 100k, 1m, 2.5M -> queries."""
    t = s.strip().lower().replace("_", "")
    mult = {"k": 1_000, "m": 1_000_000}.get(t[-1:], 1)
    try:
        v = int(float(t[:-1] if mult > 1 else t) * mult)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad size {s!r} (e.g. 1m, 100k, 250000)") from None
    if v <= 0:
        raise argparse.ArgumentTypeError("sizes must be positive")
    return v


def growth(rows: list[dict]) -> list[float]:
    """Seconds per query of each size over the smallest size's (1.00 = linear)."""
    base = rows[0]["mine_s"] / rows[0]["queries"]
    return [round((r["mine_s"] / r["queries"]) / base, 2) for r in rows]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=_size, nargs="+", default=[10_000, 100_000, 1_000_000])
    p.add_argument("--keep", help="keep logs and outputs in this directory")
    p.add_argument("--json", help="also write the results to this JSON file")
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        print(json.dumps(run_one(a.child, Path(a.workdir))))
        return 0
    tmp = None
    if a.keep:
        work = Path(a.keep)
        work.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="mining_bench_")
        work = Path(tmp.name)
    rows = []
    print(f"{'queries':>9} {'log MB':>7} {'gen s':>6} {'mine s':>7} {'q/s':>7} {'peak RSS MB':>11} "
          f"{'templates':>9} {'found/planted':>13} {'load':>11}  phases (s)", flush=True)
    for n in sorted(a.sizes):
        r = measure(n, work)
        rows.append(r)
        ph = " ".join(f"{k}={v:.0f}" for k, v in r["seconds_by_phase"].items())
        gen = "reused" if r["generate_s"] is None else f"{r['generate_s']:.0f}"
        print(f"{r['queries']:>9} {r['log_mb']:>7} {gen:>6} {r['mine_s']:>7} {r['queries_per_s']:>7} "
              f"{r['peak_rss_mb']:>11} {r['templates']:>9} "
              f"{r['planted_found']:>6}/{r['planted']:<6} {str(r['load_avg']):>11}  {ph}", flush=True)
    g = growth(rows)
    print("cost per query relative to the smallest size (1.00 = linear): "
          + ", ".join(f"{r['queries']:,}: {x:.2f}" for r, x in zip(rows, g)), flush=True)
    for r, x in zip(rows, g):
        r["growth"] = x
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2))
    if tmp:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
