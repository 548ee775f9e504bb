"""The micro benchmark: DU, DJ (inner/left/full) and MJ, each in its core form and with
σ/π/ρ decorations, over the paper's ``ops(a INT, b INT, c INT, d STRING, s INT)`` table.

Per query: the original SQL, the rewriter's output (never hand-written), and the *limit*
query — one scan plus one exchange on the same key (for DU/DJ one GROUP BY a with all the
aggregates of the query; for MJ, whose output is one row per input row, a ``DISTRIBUTE BY
a`` of the rows: no super-operator can do less work than that).
"""
from __future__ import annotations

import datetime as _dt
import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from ..errors import SuperopError
from .harness import check_equal, median, plan_info, ratio, summarize, timed_run, unchanged_equality
from .progress import Progress


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------
def ops_data(spark, rows: int, data_dir: str | os.PathLike, seed: int = 7,
             partitions: Optional[int] = None) -> Path:
    """Parquet ``ops`` data with ``rows`` rows (cached by rows, seed and files under ``data_dir``).

    * a (account): Zipf-like, P(a = k) ∝ 1/k over rows/10 accounts (log-uniform), so the
      hottest account holds ~5% of the rows at 10 M; 0.5% NULL.
    * b, c: uniform metrics with 5% / 2% NULL; d: operation kind (read/write/delete/list,
      read-heavy) with 1% NULL; s: size in KB, log-uniform 1..10^6, 1% NULL.
    """
    # at least two files per core so that small sizes use every core too (one file is one
    # scan task: the original's two scans would then run in parallel, the rewrite's one not)
    parts = partitions or max(2 * spark.sparkContext.defaultParallelism, min(64, rows // 500_000))
    out = Path(data_dir) / f"ops_{rows}_s{seed}_p{parts}.parquet"
    if (out / "_SUCCESS").exists():
        return out
    if out.exists():
        shutil.rmtree(out)
    accounts = max(rows // 10, 100)
    ln_acc = math.log(accounts)
    df = spark.range(0, rows, 1, parts).selectExpr(
        f"CASE WHEN rand({seed}) < 0.005 THEN NULL "
        f"ELSE CAST(floor(exp(rand({seed + 1}) * {ln_acc!r})) AS INT) END AS a",
        f"CASE WHEN rand({seed + 2}) < 0.05 THEN NULL ELSE CAST(floor(rand({seed + 3}) * 1000) AS INT) END AS b",
        f"CASE WHEN rand({seed + 4}) < 0.02 THEN NULL ELSE CAST(floor(rand({seed + 5}) * 100) AS INT) END AS c",
        f"CASE WHEN rand({seed + 6}) < 0.01 THEN NULL "
        f"ELSE element_at(array('read', 'read', 'read', 'write', 'write', 'delete', 'list'), "
        f"CAST(floor(rand({seed + 7}) * 7) AS INT) + 1) END AS d",
        f"CASE WHEN rand({seed + 8}) < 0.01 THEN NULL "
        f"ELSE CAST(floor(exp(rand({seed + 9}) * {math.log(1e6)!r})) AS INT) END AS s")
    df.write.mode("overwrite").parquet(str(out))
    return out


def register_ops(spark, path) -> None:
    spark.read.parquet(str(path)).createOrReplaceTempView("ops")


# ---------------------------------------------------------------------------
# the query set
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class MicroQuery:
    name: str
    family: str       # DU | DJ | MJ
    variant: str      # core | σ | π | ρ | ... (decorations present)
    join: str         # union | inner | left | full
    sql: str
    limit_sql: str

    def to_json(self) -> dict:
        return {"name": self.name, "family": self.family, "variant": self.variant,
                "join": self.join, "sql": self.sql, "limit_sql": self.limit_sql}


def _q(s: str) -> str:
    return " ".join(s.split())


_MJ_LIMIT = "SELECT a, b, c, d, s FROM ops DISTRIBUTE BY a"

MICRO_QUERIES: tuple[MicroQuery, ...] = (
    # --- Diamond UnionAll (Fig. 7-9) ---------------------------------------------------
    MicroQuery("du_core", "DU", "core", "union", _q("""
        SELECT a, COUNT(*) AS n, SUM(s) AS x FROM ops GROUP BY a
        UNION ALL
        SELECT a, COUNT(b) AS n, MAX(s) AS x FROM ops GROUP BY a"""),
        "SELECT a, COUNT(*) AS n1, SUM(s) AS x1, COUNT(b) AS n2, MAX(s) AS x2 FROM ops GROUP BY a"),
    MicroQuery("du_sigma", "DU", "σ", "union", _q("""
        SELECT a, COUNT(*) AS n FROM ops WHERE s < 100 GROUP BY a
        UNION ALL
        SELECT a, n FROM (SELECT a, COUNT(*) AS n FROM ops GROUP BY a) t WHERE n > 10"""),
        "SELECT a, COUNT(*) AS n1, COUNT(*) AS n2 FROM ops GROUP BY a"),
    MicroQuery("du_pi", "DU", "σπ", "union", _q("""
        SELECT a, 'small' AS kind, COUNT(*) AS v FROM ops WHERE s < 100 GROUP BY a
        UNION ALL
        SELECT a, 'big' AS kind, SUM(s) AS v FROM ops WHERE s >= 100 GROUP BY a"""),
        "SELECT a, COUNT(*) AS v1, SUM(s) AS v2 FROM ops GROUP BY a"),
    MicroQuery("du_rho", "DU", "σρ", "union", _q("""
        SELECT acct, COUNT(*) AS n FROM (SELECT a AS acct, s AS size FROM ops) o
        WHERE size < 100 GROUP BY acct
        UNION ALL
        SELECT a, SUM(b) AS n FROM ops GROUP BY a"""),
        "SELECT a, COUNT(*) AS n1, SUM(b) AS n2 FROM ops GROUP BY a"),
    # --- Diamond Join, inner ---------------------------------------------------------------
    MicroQuery("dj_inner_core", "DJ", "core", "inner", _q("""
        SELECT l.a, l.n, r.x
        FROM (SELECT a, COUNT(*) AS n FROM ops GROUP BY a) l
        JOIN (SELECT a, SUM(s) AS x FROM ops GROUP BY a) r ON l.a = r.a"""),
        "SELECT a, COUNT(*) AS n, SUM(s) AS x FROM ops GROUP BY a"),
    MicroQuery("dj_inner_sigma", "DJ", "σ", "inner", _q("""
        SELECT l.a, l.n, r.x
        FROM (SELECT a, COUNT(*) AS n FROM ops WHERE d = 'read' GROUP BY a) l
        JOIN (SELECT a, x FROM (SELECT a, SUM(s) AS x FROM ops WHERE d = 'write' GROUP BY a) t
              WHERE x > 100) r ON l.a = r.a"""),
        "SELECT a, COUNT(*) AS n, SUM(s) AS x FROM ops GROUP BY a"),
    MicroQuery("dj_inner_pirho", "DJ", "πρ", "inner", _q("""
        SELECT l.acct, l.n * 2 AS n2, r.x
        FROM (SELECT a AS acct, COUNT(*) AS n FROM ops GROUP BY a) l
        JOIN (SELECT acct, MAX(size) AS x FROM (SELECT a AS acct, s AS size FROM ops) o
              GROUP BY acct) r ON l.acct = r.acct"""),
        "SELECT a, COUNT(*) AS n, MAX(s) AS x FROM ops GROUP BY a"),
    # --- Diamond Join, left / full outer ---------------------------------------------------
    MicroQuery("dj_left_core", "DJ", "core", "left", _q("""
        SELECT l.a, l.n, r.x
        FROM (SELECT a, COUNT(*) AS n FROM ops GROUP BY a) l
        LEFT JOIN (SELECT a, MAX(b) AS x FROM ops GROUP BY a) r ON l.a = r.a"""),
        "SELECT a, COUNT(*) AS n, MAX(b) AS x FROM ops GROUP BY a"),
    MicroQuery("dj_left_sigma", "DJ", "σ", "left", _q("""
        SELECT l.a, l.n, r.x
        FROM (SELECT a, COUNT(*) AS n FROM ops WHERE s < 1000 GROUP BY a) l
        LEFT JOIN (SELECT a, SUM(c) AS x FROM ops WHERE d = 'delete' GROUP BY a) r
        ON l.a = r.a"""),
        "SELECT a, COUNT(*) AS n, SUM(c) AS x FROM ops GROUP BY a"),
    MicroQuery("dj_full_core", "DJ", "core", "full", _q("""
        SELECT l.a AS la, r.a AS ra, l.n, r.x
        FROM (SELECT a, COUNT(*) AS n FROM ops GROUP BY a) l
        FULL OUTER JOIN (SELECT a, MIN(s) AS x FROM ops GROUP BY a) r ON l.a = r.a"""),
        "SELECT a, COUNT(*) AS n, MIN(s) AS x FROM ops GROUP BY a"),
    MicroQuery("dj_full_sigma", "DJ", "σ", "full", _q("""
        SELECT l.a AS la, r.a AS ra, l.n, r.x
        FROM (SELECT a, COUNT(*) AS n FROM ops WHERE d = 'read' GROUP BY a) l
        FULL OUTER JOIN (SELECT a, SUM(s) AS x FROM ops WHERE d = 'list' GROUP BY a) r
        ON l.a = r.a"""),
        "SELECT a, COUNT(*) AS n, SUM(s) AS x FROM ops GROUP BY a"),
    # --- Min & Join (Fig. 11-12) -----------------------------------------------------------
    MicroQuery("mj_core", "MJ", "core", "inner", _q("""
        SELECT o.a, o.b, o.c, o.d, o.s, m.mb
        FROM ops o JOIN (SELECT a, MIN(b) AS mb FROM ops GROUP BY a) m ON o.a = m.a"""),
        _MJ_LIMIT),
    MicroQuery("mj_sigma", "MJ", "σ", "inner", _q("""
        SELECT o.a, o.b, o.s, m.mb
        FROM (SELECT a, b, s FROM ops WHERE d = 'read') o
        JOIN (SELECT a, mb FROM (SELECT a, MIN(b) AS mb FROM ops GROUP BY a) t WHERE mb < 500) m
        ON o.a = m.a"""),
        _MJ_LIMIT),
    # arg-min rows: the rows whose s is their group's minimum (ties all kept) — the form
    # that admits the group-limit program (RANK() = 1, WindowGroupLimit below the exchange)
    MicroQuery("mj_argmin", "MJ", "argmin", "inner", _q("""
        SELECT o.a, o.b, o.c, o.d, o.s
        FROM ops o JOIN (SELECT a, MIN(s) AS ms FROM ops GROUP BY a) m ON o.a = m.a AND o.s = m.ms"""),
        _MJ_LIMIT),
    MicroQuery("mj_left_pirho", "MJ", "πρ", "left", _q("""
        SELECT o.acct, o.size, m.mx
        FROM (SELECT a AS acct, s AS size FROM ops) o
        LEFT JOIN (SELECT a, MAX(s) AS mx FROM ops GROUP BY a) m ON o.acct = m.a"""),
        _MJ_LIMIT),
)


def select_queries(names: Optional[Sequence[str]] = None) -> list[MicroQuery]:
    """Queries by name or family (``du``, ``dj``, ``mj``); all when ``names`` is empty."""
    if not names:
        return list(MICRO_QUERIES)
    out = []
    for n in names:
        n = n.strip().lower()
        hit = [q for q in MICRO_QUERIES if q.name == n or q.family.lower() == n]
        if not hit:
            raise SuperopError(f"unknown micro query or family {n!r}; known: "
                               + ", ".join(q.name for q in MICRO_QUERIES))
        out.extend(q for q in hit if q not in out)
    return out


# ---------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------
def measure_triple(spark, name: str, sides: dict[str, str], repeat: int, warmup: int,
                   progress: Optional[Progress] = None) -> dict:
    """Warm-up then ``repeat`` alternating rounds over ``sides`` (label -> SQL); the order
    rotates each round so that no side always runs first (cache / JIT / GC effects)."""
    labels = list(sides)
    runs = {k: [] for k in labels}
    for _ in range(warmup):
        for k in labels:
            if progress:
                progress.note(f"{name}: warm-up {k}")
            timed_run(spark, sides[k], f"{name}-warm-{k}")
    for r in range(repeat):
        order = labels[r % len(labels):] + labels[:r % len(labels)]
        for k in order:
            if progress:
                progress.note(f"{name}: round {r + 1}/{repeat} {k}")
            runs[k].append(timed_run(spark, sides[k], f"{name}-{k}"))
        if progress:
            progress.advance()
    return {k: summarize(v) for k, v in runs.items()}


def run_micro(spark, rewrite: Callable, *, rows: Sequence[int] = (10_000_000,), repeat: int = 5,
              warmup: int = 1, data_dir: str | os.PathLike = ".superop/bench-data",
              queries: Optional[Sequence[MicroQuery]] = None, seed: int = 7,
              progress: Optional[Progress] = None, budget_s: Optional[float] = None) -> dict:
    """Run the micro set at every size in ``rows``; returns the result document (see
    ``report.py``). ``rewrite(sql)`` returns a :class:`superop.bench.rewriters.Rewrite`.

    ``budget_s``: stop starting new queries once the next one would likely end after the
    budget (estimated from the queries done so far); the skipped ones are listed in the
    result. With a budget the queries run interleaved by family (DU, DJ, MJ, DU, ...) so
    that a cut-short run still covers every family."""
    import time as _time
    queries = list(queries or MICRO_QUERIES)
    if budget_s is not None:
        queries = _interleave(queries)
    t0 = _time.monotonic()
    results, skipped = [], []
    last_per_query: Optional[float] = None
    if progress:
        progress.start(len(rows) * len(queries) * repeat)
    for n in rows:
        if progress:
            progress.note(f"data: ops with {n:,} rows")
        path = ops_data(spark, n, data_dir, seed=seed)
        register_ops(spark, path)
        t_size = _time.monotonic()
        for q in queries:
            # per-query estimate: this size's mean so far, else the previous size's
            done_here = sum(1 for r in results if r["rows"] == n)
            per_query = (_time.monotonic() - t_size) / done_here if done_here else last_per_query
            if budget_s is not None and per_query is not None:
                if _time.monotonic() - t0 + per_query > budget_s:
                    skipped.append({"rows": n, "name": q.name, "reason": "time budget"})
                    if progress:
                        progress.advance(repeat)
                    continue
            results.append(_run_one(spark, q, n, rewrite, repeat, warmup, progress))
        done = sum(1 for r in results if r["rows"] == n)
        if done:
            last_per_query = (_time.monotonic() - t_size) / done
    if progress:
        progress.finish()
        if skipped:
            progress.warn(f"time budget: skipped {', '.join(s['name'] for s in skipped)}")
    return {"bench": "micro", "results": results, "skipped": skipped,
            "summary": summarize_micro(results),
            "finished_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}


def _interleave(queries: list[MicroQuery]) -> list[MicroQuery]:
    fams: dict[str, list[MicroQuery]] = {}
    for q in queries:
        fams.setdefault(q.family, []).append(q)
    out = []
    while any(fams.values()):
        for f in list(fams):
            if fams[f]:
                out.append(fams[f].pop(0))
    return out


def _run_one(spark, q: MicroQuery, n: int, rewrite: Callable, repeat: int, warmup: int,
             progress: Optional[Progress]) -> dict:
    rec = {"rows": n, **q.to_json()}
    if progress:
        progress.note(f"{q.name} @ {n:,}: rewrite")
    rw = rewrite(q.sql)
    rec["rewrite"] = rw.to_json()
    changed = bool(rw.changed) and rw.sql != q.sql
    sides = {"original": q.sql, "rewritten": rw.sql, "limit": q.limit_sql}
    rec["plans"] = {}
    for k, sql in sides.items():
        pi = plan_info(spark, sql)
        rec["plans"][k] = {"shuffle_exchanges": pi.shuffle_exchanges,
                           "broadcast_exchanges": pi.broadcast_exchanges,
                           "reused_exchanges": pi.reused_exchanges, "plan": pi.plan}
    if not changed:
        # nothing was rewritten: the product runs the original, so there is nothing to compare
        # (comparing a query with itself would be a self-comparison reported as "equal")
        rec["equal"] = unchanged_equality()
        t = measure_triple(spark, f"{q.name}@{n}", {"original": q.sql, "limit": q.limit_sql},
                           repeat, warmup, progress)
        t["rewritten"] = t["original"]          # the same run: the original is what runs
    else:
        if progress:
            progress.note(f"{q.name} @ {n:,}: checking original == rewritten")
        eq = check_equal(spark, q.sql, rw.sql)
        rec["equal"] = eq.to_json()
        if not eq.equal:
            # wrong results are a bug, not a speed-up: do not time them
            rec["timing"] = None
            rec["ratios"] = {}
            if progress:
                progress.advance(repeat)
                progress.warn(f"{q.name} @ {n:,}: RESULTS DIFFER ({eq.detail})")
            return rec
        t = measure_triple(spark, f"{q.name}@{n}", sides, repeat, warmup, progress)
    rec["timing"] = t
    ex_o = rec["plans"]["original"]["shuffle_exchanges"]
    ex_r = rec["plans"]["rewritten"]["shuffle_exchanges"]
    rec["ratios"] = {
        "original_over_rewritten": ratio(t["original"]["median_s"], t["rewritten"]["median_s"]),
        "rewritten_over_limit": ratio(t["rewritten"]["median_s"], t["limit"]["median_s"]),
        "original_over_limit": ratio(t["original"]["median_s"], t["limit"]["median_s"]),
        "exchanges_rewritten_over_original": ratio(ex_r, ex_o),
        # summed task time: less sensitive than wall time to other load on the machine
        "task_time_original_over_rewritten": ratio(t["original"]["executor_run_ms"],
                                                   t["rewritten"]["executor_run_ms"]),
        "task_time_rewritten_over_limit": ratio(t["rewritten"]["executor_run_ms"],
                                                t["limit"]["executor_run_ms"]),
        "shuffle_bytes_rewritten_over_original": ratio(
            t["rewritten"]["shuffle_write_bytes"], t["original"]["shuffle_write_bytes"]),
    }
    return rec


def summarize_micro(results: list[dict]) -> dict:
    """Per size: medians of the ratios over all queries and per family; goal checks."""
    out = {}
    for n in sorted({r["rows"] for r in results}):
        rs = [r for r in results if r["rows"] == n]
        timed = [r for r in rs if r.get("timing")]

        def med(key, sub=timed):
            return median([r["ratios"].get(key) for r in sub])
        ex_o = sum(r["plans"]["original"]["shuffle_exchanges"] for r in rs)
        ex_r = sum(r["plans"]["rewritten"]["shuffle_exchanges"] for r in rs)
        fam = {}
        for f in sorted({r["family"] for r in rs}):
            sub = [r for r in timed if r["family"] == f]
            fam[f] = {"queries": len([r for r in rs if r["family"] == f]),
                      "rewritten": sum(1 for r in rs if r["family"] == f and r["rewrite"]["changed"]),
                      "median_original_over_rewritten": med("original_over_rewritten", sub),
                      "median_rewritten_over_limit": med("rewritten_over_limit", sub)}
        s = {
            "queries": len(rs),
            "rewritten": sum(1 for r in rs if r["rewrite"]["changed"]),
            "results_differ": [r["name"] for r in rs if r["equal"]["equal"] is False],
            "median_original_over_rewritten": med("original_over_rewritten"),
            "median_rewritten_over_limit": med("rewritten_over_limit"),
            "median_task_time_original_over_rewritten": med("task_time_original_over_rewritten"),
            "median_task_time_rewritten_over_limit": med("task_time_rewritten_over_limit"),
            "shuffle_exchanges_original": ex_o,
            "shuffle_exchanges_rewritten": ex_r,
            "families": fam,
        }
        s["goals"] = {
            "speedup_ge_2": (s["median_original_over_rewritten"] or 0) >= 2.0,
            "limit_ratio_le_1_15": (s["median_rewritten_over_limit"] or 1e9) <= 1.15,
            "exchanges_halved": ex_o > 0 and ex_r * 2 <= ex_o,
        }
        out[str(n)] = s
    return out
