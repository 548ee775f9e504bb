"""`superop bench tpch`: the 22 TPC-H queries (``superop.workloads.tpch.QUERIES``), original
vs rewritten, over tpchgen-cli Parquet at scale factor ``sf``.

Queries the rewriter leaves unchanged are timed once (original only): their rewritten SQL
is byte-for-byte the original, so a second timing would only measure noise."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

from ..errors import SuperopError
from ..workloads.tpch import QUERIES, register_tpch
from .harness import check_equal, median, plan_info, ratio, unchanged_equality
from .micro import measure_triple
from .progress import Progress


def parse_queries(spec: Optional[str]) -> list[int]:
    if not spec:
        return list(range(1, 23))
    out = []
    for part in spec.split(","):
        part = part.strip().lower().lstrip("q")
        try:
            q = int(part)
        except ValueError:
            raise SuperopError(f"bad TPC-H query {part!r} (1..22)") from None
        if not 1 <= q <= 22:
            raise SuperopError(f"TPC-H query {q} out of range (1..22)")
        out.append(q)
    return out


def tpch_data(sf: float, data_dir: str | os.PathLike) -> Path:
    """tpchgen-cli Parquet at ``sf`` (cached under ``data_dir``)."""
    out = Path(data_dir) / f"tpch_sf{sf:g}"
    marker = out / ".complete"
    if marker.exists():
        return out
    exe = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
    if not Path(exe).exists() and not shutil.which(exe):
        raise SuperopError("tpchgen-cli not found (pip install tpchgen-cli)")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    r = subprocess.run([exe, "parquet", "-s", f"{sf:g}", "--output-dir", str(out)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SuperopError(f"tpchgen-cli failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    marker.write_text("ok\n")
    return out


def run_tpch(spark, make_rewriter: Callable, *, sf: float = 1.0, queries: Sequence[int] = range(1, 23),
             repeat: int = 3, warmup: int = 1, data_dir: str | os.PathLike = ".superop/bench-data",
             progress: Optional[Progress] = None, tpch_dir: Optional[str | os.PathLike] = None) -> dict:
    """``tpch_dir``: existing tpchgen-cli output to use instead of generating at ``sf``."""
    queries = list(queries)
    if progress:
        progress.start(len(queries) * repeat)
        progress.note(f"TPC-H data at SF {sf:g}")
    register_tpch(spark, tpch_dir or tpch_data(sf, data_dir))
    rw = make_rewriter()
    results = []
    for q in queries:
        sql = QUERIES[q]
        rec: dict = {"query": q, "sql": sql}
        if progress:
            progress.note(f"Q{q}: rewrite")
        r = rw(sql)
        rec["rewrite"] = r.to_json()
        try:
            sides = {"original": sql, "rewritten": r.sql} if r.changed else {"original": sql}
            rec["plans"] = {}
            for k, s in {"original": sql, "rewritten": r.sql}.items():
                pi = plan_info(spark, s)
                rec["plans"][k] = {"shuffle_exchanges": pi.shuffle_exchanges,
                                   "broadcast_exchanges": pi.broadcast_exchanges,
                                   "reused_exchanges": pi.reused_exchanges, "plan": pi.plan}
            if not r.changed:
                rec["equal"] = unchanged_equality()   # nothing to compare: the original runs
                t = measure_triple(spark, f"Q{q}", sides, repeat, warmup, progress)
                rec["timing"], rec["ratios"] = t, {"original_over_rewritten": None}
                results.append(rec)
                continue
            if progress:
                progress.note(f"Q{q}: checking original == rewritten")
            eq = check_equal(spark, sql, r.sql)
            rec["equal"] = eq.to_json()
            if not eq.equal:
                rec["timing"], rec["ratios"] = None, {}
                if progress:
                    progress.advance(repeat)
                    progress.warn(f"Q{q}: RESULTS DIFFER ({eq.detail})")
                results.append(rec)
                continue
            t = measure_triple(spark, f"Q{q}", sides, repeat, warmup, progress)
            rec["timing"] = t
            rec["ratios"] = {"original_over_rewritten":
                             ratio(t["original"]["median_s"], t["rewritten"]["median_s"])
                             if "rewritten" in t else None}
        except Exception as e:  # one failing query must not end the whole run
            rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
            if progress:
                progress.warn(f"Q{q}: {rec['error']}")
        results.append(rec)
    if progress:
        progress.finish()
    changed = [r for r in results if r["rewrite"]["changed"]]
    summary = {
        "queries": len(results),
        "rewritten": len(changed),
        "rewritten_queries": [r["query"] for r in changed],
        "rules_fired": sorted({a for r in results for a in r["rewrite"]["applied"]}),
        "equal": sum(1 for r in results if (r.get("equal") or {}).get("equal") is True),
        "differ": [r["query"] for r in results if (r.get("equal") or {}).get("equal") is False],
        "errors": [r["query"] for r in results if r.get("error")],
        "median_original_over_rewritten_changed":
            median([(r.get("ratios") or {}).get("original_over_rewritten") for r in changed]),
        "shuffle_exchanges_original": sum(r["plans"]["original"]["shuffle_exchanges"]
                                          for r in results if r.get("plans")),
        "shuffle_exchanges_rewritten": sum(r["plans"]["rewritten"]["shuffle_exchanges"]
                                           for r in results if r.get("plans")),
    }
    return {"bench": "tpch", "results": results, "summary": summary,
            "rewriter": {"name": rw.name, **rw.info}}
