"""Calibrate the benefit gate's cost model (superop/runtime/plan_cost.py, calibration.py) against measured times.

    python benchmarks/cost_calibration.py [--rows 1m] [--repeat 3] [--out DIR] [--from-json FILE]

For every micro-benchmark query (superop.bench.micro) the runtime's rewrite is
generated with the gate OFF (so refused rewrites are measured too), and the original, the
rewrite and the limit query are timed side by side (same harness as `superop bench micro`).
Min-Join queries also run with broadcast joins off (the plan shape of large aggregates).
Each plan's cost features come from `EXPLAIN COST` through superop.runtime.plan/plan_cost.

Then the per-unit constants are fitted by non-negative least squares on relative error
(every side's time, weighted by 1/time), with a weak prior: ``--prior-weight`` λ adds one
row per constant, ``sqrt(λ) · (x - prior) / prior``, pulling a constant the points do not
determine towards the hand-set starting guess (:data:`PRIOR`) instead of to 0 — plain NNLS
(λ = 0) prices whatever the few points cannot tell apart (sorts, joins, broadcasts) at
exactly zero, which makes those operators free at any size. The script reports, per query,
the predicted original/rewritten ratio next to the measured one, their correlation
(Pearson on log ratios, Spearman), and how often the gate's decision (apply iff predicted
>= MIN_SPEEDUP) agrees with the measurement — in-sample and leave-one-query-out, for the
fit, for plain NNLS, for the hand-set prior and for the constants the code ships.
`--from-json` refits from a previous run's points without running Spark.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from superop.runtime.calibration import CONSTANTS, FEATURES, CostConstants  # noqa: E402

# The hand-set starting guesses (seconds per unit), the prior of the fit. Kept here, not in
# calibration.py: the runtime ships fitted constants (calibration.CONSTANTS), the calibration needs both.
PRIOR = CostConstants(query_s=0.15, stage_s=0.05, scan_byte_s=2.0e-9, shuffle_byte_s=1.0e-8,
                      broadcast_byte_s=2.0e-8, sort_row_s=4.0e-7, agg_row_s=1.5e-7, join_row_s=2.0e-7,
                      window_row_s=1.2e-6, generate_row_s=1.0e-7)
PRIOR_WEIGHT = 0.01


def _rows(s: str) -> int:
    s = s.lower().replace("_", "")
    mult = 1_000_000 if s.endswith("m") else 1_000 if s.endswith("k") else 1
    return int(float(s.rstrip("mk")) * mult)


def measure(args) -> list[dict]:
    from superop.bench.harness import check_equal
    from superop.bench.micro import MICRO_QUERIES, measure_triple, ops_data, register_ops
    from superop.bench.rewriters import default_catalog
    from superop.runtime import SuperOpSession
    from superop.runtime.plan import analyze_plan
    from superop.sparkutil import get_spark

    spark = get_spark("superop-cost-calibration", conf={})
    path = ops_data(spark, args.rows, args.data_dir)
    register_ops(spark, path)
    catalog = json.loads(Path(args.catalog).read_text()) if args.catalog else default_catalog()
    so = SuperOpSession(spark, catalog, gate="off", cache=False)
    names = set(args.queries.split(",")) if args.queries else None
    passes = [("default", {}, MICRO_QUERIES),
              ("no-broadcast", {"spark.sql.autoBroadcastJoinThreshold": "-1"},
               [q for q in MICRO_QUERIES if q.family == "MJ"])]
    points = []
    for pname, conf, queries in passes:
        old = {k: spark.conf.get(k) for k in conf}
        for k, v in conf.items():
            spark.conf.set(k, v)
        try:
            for q in queries:
                if names and q.name not in names and q.family.lower() not in names:
                    continue
                r = so.rewrite(q.sql)
                if not r.changed:
                    print(f"{q.name} [{pname}]: not rewritten ({r.explanation[:120]})", flush=True)
                    continue
                # every candidate form the rewriter ranks (the MJ window and group-limit forms
                # are different plans: each is a point of its own)
                forms = {}
                for c in r.candidates:
                    if "error" in c or not c.get("same_schema", True):
                        continue
                    sql = r.sql if len(r.candidates) == 1 else so._generate(q.sql, c["label"])
                    if sql:
                        forms[c["label"]] = sql
                for label, rsql in forms.items():
                    eq = check_equal(spark, q.sql, rsql)
                    if not eq.equal:
                        print(f"{q.name} [{pname}] {label}: RESULTS DIFFER — skipped", flush=True)
                        continue
                    sides = {"original": q.sql, "rewritten": rsql, "limit": q.limit_sql}
                    feats = {k: analyze_plan(spark, s).estimate.features for k, s in sides.items()}
                    t = measure_triple(spark, f"{q.name}-{pname}", sides, args.repeat, args.warmup)
                    rec = {"query": q.name, "family": q.family, "pass": pname, "form": label, "rows": args.rows,
                           "conf": conf,
                           "sides": {k: {"seconds": t[k]["median_s"], "all_seconds": t[k]["seconds"],
                                         "features": feats[k], "sql": sides[k]} for k in sides}}
                    points.append(rec)
                    o, w = t["original"]["median_s"], t["rewritten"]["median_s"]
                    print(f"{q.name:16s} [{pname}] {label:28s} original {o:.2f}s rewritten {w:.2f}s "
                          f"ratio {o / w:.2f} (load {os.getloadavg()[0]:.1f})", flush=True)
        finally:
            for k, v in old.items():
                spark.conf.set(k, v)
    spark.stop()
    return points


def replan(args, points: list[dict]) -> None:
    """Recompute every side's features with the current cost code (planning only: the
    measured times are kept). The rewritten SQL is generated again the same way."""
    from superop.bench.micro import MICRO_QUERIES, ops_data, register_ops
    from superop.bench.rewriters import default_catalog
    from superop.runtime import SuperOpSession
    from superop.runtime.plan import analyze_plan
    from superop.sparkutil import get_spark
    spark = get_spark("superop-cost-calibration", conf={})
    register_ops(spark, ops_data(spark, points[0]["rows"], args.data_dir))
    catalog = json.loads(Path(args.catalog).read_text()) if args.catalog else default_catalog()
    so = SuperOpSession(spark, catalog, gate="off", cache=False)
    by = {q.name: q for q in MICRO_QUERIES}
    for p in points:
        conf = p.get("conf") or ({"spark.sql.autoBroadcastJoinThreshold": "-1"}
                                 if p["pass"] == "no-broadcast" else {})
        old = {k: spark.conf.get(k) for k in conf}
        for k, v in conf.items():
            spark.conf.set(k, v)
        try:
            q = by[p["query"]]
            sql = {"original": q.sql, "rewritten": p["sides"]["rewritten"].get("sql") or so.rewrite(q.sql).sql,
                   "limit": q.limit_sql}
            for k, side in p["sides"].items():
                side["sql"] = sql[k]
                side["features"] = analyze_plan(spark, sql[k]).estimate.features
        finally:
            for k, v in old.items():
                spark.conf.set(k, v)
    spark.stop()


# ---------------------------------------------------------------------------
# fitting
# ---------------------------------------------------------------------------
COLS = ["query"] + list(FEATURES)


def _row(features: dict) -> list[float]:
    return [1.0] + [float(features.get(f, 0.0)) for f in FEATURES]


def fit(points: list[dict], prior_weight: float = PRIOR_WEIGHT):
    """Non-negative constants minimizing Σ ((predicted - t) / t)² + λ Σ ((x - prior) / prior)²
    (λ = ``prior_weight``; 0 = plain NNLS)."""
    import numpy as np
    from scipy.optimize import lsq_linear
    names = ["query_s"] + [FEATURES[f] for f in FEATURES]
    A, b = [], []
    for p in points:
        for side in p["sides"].values():
            t = side["seconds"]
            A.append([x / t for x in _row(side["features"])])
            b.append(1.0)
    if prior_weight > 0:
        prior = [getattr(PRIOR, n) for n in names]
        for i, v in enumerate(prior):
            row = [0.0] * len(names)
            row[i] = math.sqrt(prior_weight) / v
            A.append(row)
            b.append(math.sqrt(prior_weight))
    A = np.array(A)
    scale = np.where(A.max(axis=0) > 0, A.max(axis=0), 1.0)
    x = lsq_linear(A / scale, np.array(b), bounds=(0, np.inf)).x / scale
    return replace(CONSTANTS, **{n: float(v) for n, v in zip(names, x)})


def predict(c, features: dict) -> float:
    return c.query_s + sum(features.get(f, 0.0) * getattr(c, k) for f, k in FEATURES.items())


def _pearson(xs, ys):
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sx = math.sqrt(sum((x - mx) ** 2 for x in xs))
    sy = math.sqrt(sum((y - my) ** 2 for y in ys))
    return None if sx == 0 or sy == 0 else sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / (sx * sy)


def _ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    for rank, i in enumerate(order):
        r[i] = float(rank)
    return r


def _label(p: dict) -> str:
    form = p.get("form") or ""
    return f"{p['query']}[{p['pass']}{', ' + form if '[' in form else ''}]"


def evaluate(points: list[dict], c, loo: bool = False, prior_weight: float = PRIOR_WEIGHT,
             threshold: float | None = None) -> dict:
    """Predicted vs measured original/rewritten per point, and the gate's decision (apply
    iff predicted >= ``threshold``, default ``c.min_speedup``) against the measurement."""
    th = c.min_speedup if threshold is None else threshold
    rows = []
    for p in points:
        cc = c
        if loo:      # refit without every point of this query (both passes, every form)
            rest = [q for q in points if q["query"] != p["query"]]
            cc = fit(rest, prior_weight)
        o, w = p["sides"]["original"], p["sides"]["rewritten"]
        pred = predict(cc, o["features"]) / predict(cc, w["features"])
        meas = o["seconds"] / w["seconds"]
        accept = pred >= th
        rows.append({"query": p["query"], "pass": p["pass"], "form": p.get("form", ""), "label": _label(p),
                     "predicted": pred, "measured": meas,
                     "accept": accept, "right": accept == (meas >= 1.0),
                     "harmful": accept and meas < 0.95, "missed": (not accept) and meas > 1.05})
    lp = [math.log(r["predicted"]) for r in rows]
    lm = [math.log(r["measured"]) for r in rows]
    return {"rows": rows, "threshold": th, "pearson_log": _pearson(lp, lm),
            "spearman": _pearson(_ranks(lp), _ranks(lm)),
            "right": sum(r["right"] for r in rows), "n": len(rows),
            "harmful_accepts": [r["label"] for r in rows if r["harmful"]],
            "missed_wins": [r["label"] for r in rows if r["missed"]]}


def margin(ev: dict, floor: float = 1.05, step: float = 0.05) -> dict:
    """The threshold the model's error calls for, from out-of-sample (leave-one-query-out)
    predictions: the log error's spread, the worst over-prediction, and the smallest
    threshold (a multiple of ``step``, at least ``floor``) under which no pair measured
    slower than 0.95× would have been applied."""
    rows = ev["rows"]
    err = [math.log(r["predicted"] / r["measured"]) for r in rows]
    n = len(err)
    mean = sum(err) / n if n else 0.0
    sd = math.sqrt(sum((e - mean) ** 2 for e in err) / (n - 1)) if n > 1 else 0.0
    slow = [r["predicted"] for r in rows if r["measured"] < 0.95]
    need = max([floor] + [x * 1.0001 for x in slow])
    th = math.ceil(round(need / step, 6)) * step
    missed = [r["label"] for r in rows if r["predicted"] < th and r["measured"] > 1.05]
    return {"log_error_mean": mean, "log_error_sd": sd,
            "worst_over_prediction": max((r["predicted"] / r["measured"] for r in rows), default=1.0),
            "threshold": round(th, 4), "missed_wins_at_threshold": missed}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=_rows, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--data-dir", default=".superop/bench-data")
    ap.add_argument("--out", default="out/bench/cost-calibration")
    ap.add_argument("--catalog", help="catalog JSON file (default: the hand-built bench-default catalog)")
    ap.add_argument("--queries", help="comma-separated micro query names or families (default: all)")
    ap.add_argument("--from-json", help="refit from a previous run's calibration.json")
    ap.add_argument("--prior-weight", type=float, default=PRIOR_WEIGHT,
                    help="weight of the hand-set prior per constant (0 = plain NNLS; default %(default)s)")
    ap.add_argument("--min-floor", type=float, default=1.05,
                    help="lowest threshold the margin may choose (default %(default)s)")
    ap.add_argument("--replan", action="store_true",
                    help="with --from-json: recompute the plan features with the current code (Spark "
                         "plans only; the measured times are kept)")
    args = ap.parse_args(argv)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load = os.getloadavg()
    if args.from_json:
        doc = json.loads(Path(args.from_json).read_text())
        points = doc["points"]
        if args.replan:
            replan(args, points)
    else:
        points = measure(args)
        doc = {"started_at": started, "rows": args.rows, "repeat": args.repeat,
               "load_avg_start": load, "command": "python " + " ".join(sys.argv)}
    lam = args.prior_weight
    c = fit(points, lam)
    ins = evaluate(points, c, prior_weight=lam)
    loo = evaluate(points, c, loo=True, prior_weight=lam)
    nnls = fit(points, 0.0)
    nnls_ins, nnls_loo = evaluate(points, nnls, prior_weight=0.0), evaluate(points, nnls, True, 0.0)
    prior = evaluate(points, PRIOR)
    shipped = evaluate(points, CONSTANTS)
    mg = margin(loo, floor=args.min_floor)
    c = replace(c, min_speedup=mg["threshold"])
    ins, loo = evaluate(points, c, prior_weight=lam), evaluate(points, c, loo=True, prior_weight=lam)
    doc.update(points=points, prior_weight=lam, fitted=c.to_json(), in_sample=ins, leave_one_query_out=loo,
               margin=mg,
               nnls={"fitted": nnls.to_json(), "in_sample": nnls_ins, "leave_one_query_out": nnls_loo},
               prior={"constants": PRIOR.to_json(), "evaluation": prior},
               shipped_constants={"constants": CONSTANTS.to_json(), "evaluation": shipped})
    if args.from_json:        # the measurement's own record stays as it was
        doc["refit"] = {"at": started, "command": "python " + " ".join(sys.argv)}
    else:
        doc["load_avg_end"] = os.getloadavg()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "calibration.json").write_text(json.dumps(doc, indent=2, default=str))
    print(f"\nfitted constants (seconds per unit; prior weight {lam:g}) — plain NNLS — hand-set prior:")
    for k in COLS:
        attr = "query_s" if k == "query" else FEATURES[k]
        print(f"  {attr:18s} {getattr(c, attr):10.4g} {getattr(nnls, attr):10.4g} {getattr(PRIOR, attr):10.4g}")
    print(f"  {'min_speedup':18s} {c.min_speedup:10.4g}   (margin: LOO log error mean {mg['log_error_mean']:+.3f}, "
          f"sd {mg['log_error_sd']:.3f}; worst over-prediction {mg['worst_over_prediction']:.2f}x; "
          f"wins missed at this threshold: {mg['missed_wins_at_threshold'] or 'none'})")
    print(f"\n{'query':18s} {'pass':13s} {'form':28s} {'measured':>9s} {'fit':>7s} {'loo':>7s} {'shipped':>8s}"
          f"  decision(fit, >= {c.min_speedup:g})")
    for a, b, s in zip(ins["rows"], loo["rows"], shipped["rows"]):
        print(f"{a['query']:18s} {a['pass']:13s} {a['form']:28s} {a['measured']:9.2f} {a['predicted']:7.2f} "
              f"{b['predicted']:7.2f} {s['predicted']:8.2f}  {'apply' if a['accept'] else 'refuse'}"
              f"{'' if a['right'] else '  WRONG'}")
    for name, e in (("in-sample (fitted)", ins), ("leave-one-query-out", loo),
                    ("plain NNLS in-sample", nnls_ins), ("plain NNLS LOO", nnls_loo),
                    ("hand-set prior", prior), ("shipped constants", shipped)):
        pr = "n/a" if e["pearson_log"] is None else f"{e['pearson_log']:.2f}"
        sp = "n/a" if e["spearman"] is None else f"{e['spearman']:.2f}"
        print(f"{name:22s}: decisions right {e['right']}/{e['n']}; Pearson(log ratios) {pr}; "
              f"Spearman {sp}; harmful accepts {e['harmful_accepts'] or 'none'}; "
              f"missed wins {e['missed_wins'] or 'none'}")
    la = [tuple(round(x, 1) for x in doc.get(k) or ()) for k in ("load_avg_start", "load_avg_end")]
    print(f"measured {doc.get('started_at')} ({doc.get('rows')} rows, repeat {doc.get('repeat')}) at load "
          f"average {la[0]} .. {la[1]}; wrote {out / 'calibration.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
