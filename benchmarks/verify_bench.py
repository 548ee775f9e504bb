"""Verifier benchmark: bounded-check time at K = 2, 4, 6 over the paper's Table 2 shapes
(programs from the families' Fig. 10 templates) and unbounded-proof time per template.

    .venv/bin/python benchmarks/verify_bench.py [--bound 2,4,6] [--timeout-s 60] [--json OUT]

Prints one line per (case, K) and a summary per K (median / p90 / max seconds, status
counts), then one line per template proof. Goal (issue 5): K = 4 median <= 2 s.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from superop.cliutil import deprecated, seconds_as_ms  # noqa: E402
from superop.families import build_program  # noqa: E402
from superop.families.instances import all_instances  # noqa: E402
from superop.ir import lower  # noqa: E402
from superop.verify.check import check_equivalence  # noqa: E402
from superop.verify.corpus import OPS_SCHEMA, TABLE2  # noqa: E402
from superop.verify.streamability import find_match  # noqa: E402
from superop.verify.template_proofs import prove_instance  # noqa: E402


def _pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def bounded(Ks, timeout_ms, only=None):
    cases = []
    for name, fam, _ps, sql in TABLE2:
        if only and name not in only:
            continue
        d = find_match(lower(sql, OPS_SCHEMA).plan)
        cases.append((name, fam, d.root, build_program(d)))
    rows, summary = [], {}
    for K in Ks:
        times, statuses = [], {}
        for name, fam, root, prog in cases:
            t0 = time.perf_counter()
            r = check_equivalence(root, prog, K=K, timeout_ms=timeout_ms)
            dt = time.perf_counter() - t0
            times.append(dt)
            statuses[r.status] = statuses.get(r.status, 0) + 1
            rows.append({"case": name, "family": fam, "K": K, "status": r.status, "seconds": round(dt, 3)})
            print(f"  {name} {fam} K={K}: {r.status:10s} {dt:7.2f}s", flush=True)
        summary[K] = {"n": len(times), "median_s": round(statistics.median(times), 3),
                      "p90_s": round(_pct(times, 0.9), 3), "max_s": round(max(times), 3),
                      "total_s": round(sum(times), 2), "statuses": statuses}
        print(f"K={K}: median {summary[K]['median_s']}s  p90 {summary[K]['p90_s']}s  "
              f"max {summary[K]['max_s']}s  {statuses}", flush=True)
    return rows, summary


def inductive(timeout_ms):
    out = []
    for inst in all_instances():
        r = prove_instance(inst, timeout_ms=timeout_ms)
        obs = r.details["obligations"]
        failed = [o["name"] for o in obs if o["status"] != "proved"]
        out.append({"template": inst.name, "status": r.status, "seconds": round(r.seconds, 3),
                    "obligations": len(obs), "not_proved": failed})
        print(f"  {inst.name:34s} {r.status:9s} {r.seconds:6.3f}s ({len(obs)} obligations"
              f"{'; not proved: ' + ', '.join(failed) if failed else ''})", flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bound", default="2,4,6", dest="K", metavar="K,...",
                    help="comma-separated Z3 bounds: tables of at most K rows (default 2,4,6)")
    deprecated(ap, "--K", dest="K", use="--bound")
    ap.add_argument("--timeout-s", type=seconds_as_ms, default=60000, dest="timeout_ms", metavar="S",
                    help="Z3 time limit per check in seconds (default 60)")
    deprecated(ap, "--timeout-ms", dest="timeout_ms", use="--timeout-s (seconds)", type=int)
    ap.add_argument("--cases", default="", help="comma-separated Table 2 case names (default all)")
    ap.add_argument("--json", help="write the results as JSON here")
    a = ap.parse_args(argv)
    Ks = [int(k) for k in a.K.split(",") if k]
    import z3
    print(f"z3 {z3.get_version_string()}; bounded checks over {len(TABLE2)} Table 2 shapes", flush=True)
    rows, summary = bounded(Ks, a.timeout_ms, set(a.cases.split(",")) if a.cases else None)
    print("unbounded template proofs:", flush=True)
    proofs = inductive(a.timeout_ms)
    pt = [p["seconds"] for p in proofs]
    print(f"templates: {len(proofs)} proved={sum(p['status'] == 'verified' for p in proofs)} "
          f"median {statistics.median(pt):.3f}s max {max(pt):.3f}s total {sum(pt):.2f}s")
    if a.json:
        Path(a.json).write_text(json.dumps({"bounded": rows, "summary": summary, "templates": proofs}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
