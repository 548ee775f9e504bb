"""Synthesis time per candidate sub-query over the Table 2 shapes of the super-operator
paper (goal: median <= 10 s including Z3 verification).

    .venv/bin/python benchmarks/synth_bench.py [--bound 4] [--timeout-s 300] [--no-verify]
        [--only t2-01 ...] [--out FILE]

Corpus: ``superop.workloads.paper.TABLE2_CORPUS`` (Table 2 rows + the figures' queries)
when present, else ``superop.synth.corpus.CORPUS``. Prints one line per query and the
median / max seconds; ``--out`` writes the rows as JSON.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from superop.cliutil import deprecated, timeout_s  # noqa: E402


def corpus():
    try:
        from superop.workloads.paper import PAPER_SCHEMA, TABLE2_CORPUS
        return "superop.workloads.paper.TABLE2_CORPUS", PAPER_SCHEMA, [(q.id, q.family, q.sql) for q in TABLE2_CORPUS]
    except ImportError:
        from superop.synth.corpus import CORPUS, PAPER_SCHEMA
        return "superop.synth.corpus.CORPUS", PAPER_SCHEMA, [(n, "", sql) for n, sql, _, _ in CORPUS]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bound", type=int, default=4, dest="K", metavar="K",
                    help="Z3 bound: input tables of at most K rows (default 4)")
    deprecated(ap, "--K", dest="K", use="--bound", type=int)
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--timeout-s", type=timeout_s, default=300.0, dest="timeout", metavar="S",
                    help="search time limit per query in seconds (default 300)")
    deprecated(ap, "--timeout", dest="timeout", use="--timeout-s", type=timeout_s)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    from superop.ir import lower
    from superop.synth.synthesizer import synthesize
    name, schema, queries = corpus()
    print(f"corpus: {name} ({len(queries)} queries), K={args.K}, verify={not args.no_verify}")
    rows = []
    for qid, fam, sql in queries:
        if args.only and qid not in args.only:
            continue
        plan = lower(sql, schema).plan
        t0 = time.perf_counter()
        r = synthesize(plan, schema, K=args.K, timeout_s=args.timeout, verify=not args.no_verify)
        wall = time.perf_counter() - t0
        z3_s = float(r.verifier.get("seconds", 0.0)) if r.verifier else 0.0
        row = {"id": qid, "family": r.family or fam, "status": r.status, "streaming": r.streaming,
               "seconds": round(wall, 3), "candidates_tried": r.candidates_tried,
               "search_space": r.search_space, "z3_counterexamples": r.z3_counterexamples,
               "last_z3_seconds": round(z3_s, 3), "tests": r.tests}
        rows.append(row)
        print(f"{qid:8s} {row['family']:3s} {r.status:12s} {'stream' if r.streaming else 'buffer'}  "
              f"{wall:7.2f}s  tried {r.candidates_tried:4d}/{r.search_space:<4d} z3-cex {r.z3_counterexamples}",
              flush=True)
    secs = [r["seconds"] for r in rows if r["status"] not in ("unsupported",)]
    if secs:
        summary = {"n": len(secs), "median_s": round(statistics.median(secs), 3), "max_s": round(max(secs), 3),
                   "verified": sum(r["status"] == "verified" for r in rows),
                   "unsupported": sum(r["status"] == "unsupported" for r in rows)}
        print(f"synthesis time per candidate (excl. unsupported): median {summary['median_s']:.2f}s, "
              f"max {summary['max_s']:.2f}s over {summary['n']}; verified {summary['verified']}/{len(rows)}")
    else:
        summary = {}
    if args.out:
        from superop.storage import atomic_write_json
        atomic_write_json(args.out, {"corpus": name, "K": args.K, "verify": not args.no_verify,
                                     "summary": summary, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
