"""Fit the value model's work factor K (``CostModel.work_factor``) to measured query times.

    python benchmarks/share_work_fit.py --features RUN/share_bench.json [--times RUN2/share_bench.json ...]
        [--plan-cache DIR] [--out benchmarks/results/share_work_fit.json]

With ``--plan-cache``, also each chosen CE's cost parts next to its measured fill and its
consumers' savings (``per_ce``).

``--features``: a ``share_bench.py --features`` run (the model's cost parts of every whole
query: scan bytes, shuffle bytes, other work in scan bytes — ``Estimator.parts``) whose
alone times are used too; ``--times``: more runs of the same batch on the same data (their
per-query alone times, e.g. earlier sessions'). The model prices a plan at
C = scan + shuffle + K x work scan bytes; a query alone takes t = a x C + c (a: seconds
per scan byte, c: a fixed cost per query — jobs, planning — that cancels out of any
saving). Least squares over every (query, run) point gives a, K and c; reported with R^2
and the per-query relative errors, next to the fits at K = 1 (the shipped default) and
K = 0 (scans and shuffles only). Then each rewritten query's saving as the model
predicted it (its consumers' own cost - reading the cache, at the fitted a) against the
measured one (alone - shared).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from superop.storage import atomic_write_json  # noqa: E402


def _fit(X: np.ndarray, t: np.ndarray, K=None) -> dict:
    """Least squares of t = a*(scan+shuffle) + a*K*work + c (K free or fixed)."""
    base, work = X[:, 0], X[:, 1]
    if K is None:
        A = np.column_stack([base, work, np.ones_like(t)])
        (a, b, c), *_ = np.linalg.lstsq(A, t, rcond=None)
        K = b / a if a else float("nan")
    else:
        A = np.column_stack([base + K * work, np.ones_like(t)])
        (a, c), *_ = np.linalg.lstsq(A, t, rcond=None)
    pred = a * (base + K * work) + c
    ss = float(((t - t.mean()) ** 2).sum())
    r2 = 1 - float(((t - pred) ** 2).sum()) / ss if ss else float("nan")
    rel = np.abs(pred - t) / t
    return {"K": float(K), "a_s_per_byte": float(a), "c_s": float(c), "r2": r2,
            "median_rel_err": float(np.median(rel)), "max_rel_err": float(rel.max()), "pred": pred.tolist()}


def consumer_fit(plan_cache: str, runs: list[dict]) -> list[dict]:
    """Per run, the two quantities the sharing decision weighs, in the model's scan bytes
    split into scans+shuffles and other work (from the planning cache's Spark estimates
    of every consumer's own sub-plan and of every CE plan): what the rewritten queries
    saved, S = a*(S_base + K*S_work) (S_base net of the model's cache reads), and what
    filling the CEs cost, F = a*(F_base + K*F_work) (F_base with W*size + F). One price a
    and one K solve both; at K = 1 the two prices per model byte are printed side by side
    (equal prices = the model weighs saving against filling as the machine does)."""
    import glob
    import pickle

    from superop.ir.generate import to_sql
    from superop.share.estimate import DEFAULT_COST, Estimator
    costs = {}
    for f in glob.glob(f"{plan_cache}/costs/*/*.json"):
        d = json.loads(Path(f).read_text())
        costs[d["sql"]] = d["cost"]
    out = []
    m = DEFAULT_COST
    for doc in runs:
        key = ((doc.get("plan") or {}).get("cache") or "").split(" ")[-1]
        files = glob.glob(f"{plan_cache}/plans/{key[:2]}/{key}*.pkl") if key else []
        if not key:   # an older run without the cache: the cache's only plan, if it cached the same CEs
            files = glob.glob(f"{plan_cache}/plans/*/*.pkl")
            files = files if len(files) == 1 else []
        if not files:
            continue
        plan = pickle.loads(Path(files[0]).read_bytes())
        if sorted(c.id for c in plan.cached) != sorted(doc["summary"].get("materialized_s", {})):
            continue
        est = Estimator(None, m)
        parts: dict[str, list[float]] = {}
        fills: dict[str, tuple[float, float]] = {}
        for ce in plan.cached:
            sc, sh, wk, size, _ = costs[to_sql(ce.plan)]
            fills[ce.id] = (sc + sh + m.write_factor * size + m.fill_fixed, wk)
            est._by_node[ce.plan] = (0.0, size, True)     # read_bytes needs only the CE's size
            for c in plan.used[ce.id]:
                csc, csh, cwk, _, _ = costs[to_sql(c.original)]
                p = parts.setdefault(plan.queries[c.query].name, [0.0, 0.0])
                p[0] += csc + csh - est.read_cost(ce, c)
                p[1] += cwk
        S = [0.0, 0.0, 0.0]
        for q in doc["per_query"]:
            if q["query"] in parts and q["ces"]:
                S[0] += parts[q["query"]][0]
                S[1] += parts[q["query"]][1]
                S[2] += q["alone_s"] - q["shared_s"]
        F = [0.0, 0.0, 0.0]
        mat = doc["summary"].get("materialized_s", {})
        # fills run two at a time (run.FILL_THREADS): each CE's own seconds overlap, the
        # batch pays the wall time (fill_cache_s) — share it out in proportion
        wall = doc["summary"].get("fill_cache_s")
        scale = wall / sum(mat.values()) if wall and sum(mat.values()) else 1.0
        for ce, sec in mat.items():
            if ce in fills:
                F[0] += fills[ce][0]
                F[1] += fills[ce][1]
                F[2] += sec * scale
        den = F[2] * S[1] - S[2] * F[1]
        K = (S[2] * F[0] - F[2] * S[0]) / den if den else float("nan")
        rec = {"started_at": doc.get("started_at"), "saved_s": S[2], "S_base": S[0], "S_work": S[1],
               "fill_s": F[2], "F_base": F[0], "F_work": F[1], "K": K,
               "ns_per_byte_saving_K1": S[2] / (S[0] + S[1]) * 1e9 if S[0] + S[1] else None,
               "ns_per_byte_fill_K1": F[2] / (F[0] + F[1]) * 1e9 if F[0] + F[1] else None}
        out.append(rec)
        print(f"\nrun {rec['started_at']}: saved {S[2]:.2f} s (model: {S[0] / 1e6:.0f} MB scans+shuffles-reads, "
              f"{S[1] / 1e6:.0f} MB work), filling {F[2]:.2f} s "
              f"(model: {F[0] / 1e6:.0f} MB + {F[1] / 1e6:.0f} MB work); "
              f"at K = 1: {rec['ns_per_byte_saving_K1']:.2f} ns per model byte saved, "
              f"{rec['ns_per_byte_fill_K1']:.2f} ns per model byte filled; the K that prices both alike: {K:.2f}")
    return out


def per_ce(plan_cache: str, doc: dict) -> list[dict]:
    """One run's chosen CEs side by side with what they did: each CE's cost parts (the
    planning cache's scan+shuffle, W x size, work) and its fill at wall time, and each
    rewritten query's own sub-plan parts and cache read against its measured saving
    (alone - shared). Where the model and the machine disagree, CE by CE."""
    import glob
    import pickle

    from superop.ir.generate import to_sql
    from superop.share.estimate import DEFAULT_COST, Estimator
    costs = {}
    for f in glob.glob(f"{plan_cache}/costs/*/*.json"):
        d = json.loads(Path(f).read_text())
        costs[d["sql"]] = d["cost"]
    key = ((doc.get("plan") or {}).get("cache") or "").split(" ")[-1]
    files = glob.glob(f"{plan_cache}/plans/{key[:2]}/{key}*.pkl") if key else []
    if not files:
        return []
    plan = pickle.loads(Path(files[0]).read_bytes())
    m, pq = DEFAULT_COST, {q["query"]: q for q in doc["per_query"]}
    est = Estimator(None, m)
    mat = doc["summary"].get("materialized_s", {})
    scale = (doc["summary"].get("fill_cache_s") or 0) / sum(mat.values()) if sum(mat.values()) else 1.0
    out = []
    for ce in plan.cached:
        sc, sh, wk, size, _ = costs[to_sql(ce.plan)]
        est._by_node[ce.plan] = (0.0, size, True)
        rec = {"ce": ce.id, "base_mb": (sc + sh) / 1e6, "write_mb": m.write_factor * size / 1e6,
               "work_mb": wk / 1e6, "fill_wall_s": mat.get(ce.id, 0.0) * scale, "consumers": []}
        for c in plan.used[ce.id]:
            n = plan.queries[c.query].name
            csc, csh, cwk, _, _ = costs[to_sql(c.original)]
            q = pq.get(n, {})
            rec["consumers"].append({"query": n, "base_mb": (csc + csh) / 1e6, "work_mb": cwk / 1e6,
                                     "read_mb": est.read_cost(ce, c) / 1e6,
                                     "saved_s": q.get("alone_s", 0) - q.get("shared_s", 0), "ces": q.get("ces")})
        out.append(rec)
        print(f"{ce.id}: fill model {rec['base_mb']:.0f} MB scans + {rec['write_mb']:.0f} MB writing + "
              f"{rec['work_mb']:.0f} MB work; measured {rec['fill_wall_s']:.2f} s (wall share)")
        for c in rec["consumers"]:
            print(f"   {c['query']:5s} own {c['base_mb']:.0f} MB + {c['work_mb']:.0f} MB work, reads "
                  f"{c['read_mb']:.0f} MB; saved {c['saved_s']:.2f} s (reads {', '.join(c['ces'] or [])})")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--features", required=True, help="share_bench.json of a --features run")
    ap.add_argument("--times", nargs="*", default=[], help="more share_bench.json runs (alone times)")
    ap.add_argument("--out", help="write the fit as JSON")
    ap.add_argument("--plan-cache", metavar="DIR",
                    help="the planning cache of the runs' plan (share_bench --plan-cache): fit K on the "
                         "rewritten queries' savings and the CEs' fills (consumer_fit)")
    args = ap.parse_args(argv)
    feat_doc = json.loads(Path(args.features).read_text())
    feats = {q: f for q, f in feat_doc["features"].items() if "error" not in f}
    runs = [feat_doc] + [json.loads(Path(p).read_text()) for p in args.times]
    rows, t = [], []
    for i, doc in enumerate(runs):
        for q in doc["per_query"]:
            if q["query"] in feats:
                f = feats[q["query"]]
                rows.append((i, q["query"], f["scan"] + f["shuffle"], f["work"]))
                t.append(q["alone_s"])
    X = np.array([[r[2], r[3]] for r in rows], dtype=float)
    T = np.array(t, dtype=float)
    fits = {"free": _fit(X, T), "K=1": _fit(X, T, 1.0), "K=0": _fit(X, T, 0.0)}
    print(f"{len(T)} points ({len(runs)} run(s), {len(feats)} queries)")
    print("| fit | K | a (ns / scan byte) | c (s / query) | R^2 | median rel. err | max rel. err |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, f in fits.items():
        print(f"| {name} | {f['K']:.2f} | {f['a_s_per_byte'] * 1e9:.2f} | {f['c_s']:.2f} | {f['r2']:.3f} | "
              f"{f['median_rel_err']:.2f} | {f['max_rel_err']:.2f} |")
    print("\n| run | query | scan+shuffle (MB) | work (MB) | alone s | predicted s (free K) |")
    print("|---|---|---:|---:|---:|---:|")
    for (i, q, base, work), ts, p in zip(rows, T, fits["free"]["pred"]):
        print(f"| {i} | {q} | {base / 1e6:.1f} | {work / 1e6:.1f} | {ts:.2f} | {p:.2f} |")
    # the savings of the rewritten queries, predicted (shipped model, priced at the fitted a) vs measured
    a = fits["free"]["a_s_per_byte"]
    savings = []
    for i, doc in enumerate(runs):
        plan = doc.get("plan") or {}
        names = {x["index"]: x["name"] for x in plan.get("queries", [])}
        used = {(r["name"], ce) for r in plan.get("rewrites", []) if r["changed"] for ce in r["ces"]}
        pred: dict[str, float] = {}
        for ce, vals in (plan.get("consumer_values") or {}).items():
            for v in vals:
                name = names.get(v["query"])
                if (name, ce) in used and v.get("gains", True):
                    pred[name] = pred.get(name, 0.0) + (v["own_cost"] - v["read_cost"])
        for q in doc["per_query"]:
            if q["query"] in pred:
                savings.append({"run": i, "query": q["query"], "measured_s": q["alone_s"] - q["shared_s"],
                                "predicted_s": a * pred[q["query"]]})
    if savings:
        m = sum(s["measured_s"] for s in savings)
        p = sum(s["predicted_s"] for s in savings)
        print(f"\nrewritten queries: measured saving {m:.1f} s, predicted {p:.1f} s at the fitted price "
              f"(ratio measured / predicted {m / p if p else float('nan'):.2f})")
    consumer = consumer_fit(args.plan_cache, runs) if args.plan_cache else []
    ces = [per_ce(args.plan_cache, doc) for doc in runs] if args.plan_cache else []
    if args.out:
        atomic_write_json(args.out, {"points": [dict(run=r[0], query=r[1], base=r[2], work=r[3], alone_s=ts)
                                                for r, ts in zip(rows, T)],
                                     "fits": fits, "savings": savings, "consumer_fit": consumer,
                                     "per_ce": ces,
                                     "sources": [args.features, *args.times]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
