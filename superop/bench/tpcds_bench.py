"""`superop bench tpcds`: the 103 TPC-DS statements (``superop.workloads.tpcds``), original vs
rewritten, over ``tpcgen-cli tpcds parquet`` data at scale factor ``sf``.

Same method as ``superop bench tpch`` (:mod:`.tpch_bench`): a statement the rewriter leaves
unchanged is timed once (original only); a rewritten one is checked for equal results
(bags) before original and rewritten are timed side by side, alternating. A statement that
fails on Spark is recorded with its error and the run goes on."""
from __future__ import annotations

import os
from typing import Callable, Optional, Sequence

from ..ir.schema import load_keys_file
from ..storage import atomic_write_json, atomic_write_text
from ..workloads.tpcds import parse_query_names, register_tpcds
from ..workloads.tpcds import queries as all_queries
from ..workloads.tpcds.data import tpcds_data
from .harness import bench_spark, check_equal, median, plan_info, ratio, unchanged_equality
from .micro import measure_triple
from .progress import Progress
from .report import code_version, command_line, equal_cell, log_mlflow, machine_info, now, spark_info, update_readme
from .rewriters import make_rewriter


def run_tpcds(spark, make_rewriter: Callable, *, sf: float = 1.0,
              queries: Optional[Sequence[str]] = None, repeat: int = 3, warmup: int = 1,
              data_dir: str | os.PathLike = ".superop/bench-data",
              progress: Optional[Progress] = None,
              tpcds_dir: Optional[str | os.PathLike] = None) -> dict:
    """``tpcds_dir``: existing tpcgen-cli output to use instead of generating at ``sf``.
    Registers the tables as temp views of ``spark`` (use a child session to keep others')."""
    qs = all_queries()
    names = list(queries) if queries else list(qs)
    if progress:
        progress.start(len(names) * repeat)
        progress.note(f"TPC-DS data at SF {sf:g}")
    register_tpcds(spark, tpcds_dir or tpcds_data(sf, data_dir))
    rw = make_rewriter()
    results = []
    for name in names:
        sql = qs[name]
        rec: dict = {"query": name, "sql": sql}
        if progress:
            progress.note(f"{name}: rewrite")
        r = rw(sql)
        rec["rewrite"] = r.to_json()
        try:
            rec["plans"] = {}
            for side, s in {"original": sql, "rewritten": r.sql}.items():
                pi = plan_info(spark, s)
                rec["plans"][side] = {"shuffle_exchanges": pi.shuffle_exchanges,
                                      "broadcast_exchanges": pi.broadcast_exchanges,
                                      "reused_exchanges": pi.reused_exchanges, "plan": pi.plan}
            sides = {"original": sql}
            if r.changed:
                eq = check_equal(spark, sql, r.sql)
                rec["equal"] = eq.to_json()
                if not eq.equal:
                    rec["timing"], rec["ratios"] = None, {}
                    if progress:
                        progress.advance(repeat)
                        progress.warn(f"{name}: RESULTS DIFFER ({eq.detail})")
                    results.append(rec)
                    continue
                sides["rewritten"] = r.sql
            else:
                rec["equal"] = unchanged_equality()   # nothing to compare: the original runs
            t = measure_triple(spark, name, sides, repeat, warmup, progress)
            rec["timing"] = t
            rec["ratios"] = {"original_over_rewritten":
                             ratio(t["original"]["median_s"], t["rewritten"]["median_s"])
                             if "rewritten" in t else None}
        except Exception as e:  # one failing statement must not end the whole run
            rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
            if progress:
                progress.warn(f"{name}: {rec['error']}")
        results.append(rec)
    if progress:
        progress.finish()
    changed = [r for r in results if r["rewrite"]["changed"]]
    planned = [r for r in results if r.get("plans")]
    summary = {
        "queries": len(results),
        "rewritten": len(changed),
        "rewritten_queries": [r["query"] for r in changed],
        "rules_fired": sorted({a for r in results for a in r["rewrite"]["applied"]}),
        "equal": sum(1 for r in changed if (r.get("equal") or {}).get("equal")),
        "errors": [r["query"] for r in results if r.get("error")],
        "median_original_over_rewritten_changed":
            median([(r.get("ratios") or {}).get("original_over_rewritten") for r in changed]),
        "shuffle_exchanges_original": sum(r["plans"]["original"]["shuffle_exchanges"]
                                          for r in planned),
        "shuffle_exchanges_rewritten": sum(r["plans"]["rewritten"]["shuffle_exchanges"]
                                           for r in planned),
    }
    return {"bench": "tpcds", "results": results, "summary": summary,
            "rewriter": {"name": rw.name, **rw.info}}


def register_cli(bs, common: Callable, run: Callable) -> None:
    """Adds ``superop bench tpcds`` to the bench sub-commands ``bs`` (``common`` adds the
    shared options, ``run`` is the command function)."""
    t = bs.add_parser("tpcds", help="TPC-DS (tpcgen-cli parquet), 103 statements original vs "
                                    "rewritten")
    t.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1; >= 0.01)")
    t.add_argument("--queries", help="comma list, e.g. q3,q14a,28 (default all 103)")
    t.add_argument("--keys", metavar="FILE",
                   help="declared keys the rewriting session vouches for (not checked against "
                        "the data): a schema JSON with a \"$keys\" entry (`superop workload "
                        "tpcds-schema` writes one) or a bare keys mapping; keyed rules apply "
                        "only with it")
    common(t, "out/bench/tpcds")
    t.set_defaults(bench_func=run)


def tpcds_markdown(doc: dict) -> str:
    def f(x, nd=2):
        return "–" if x is None else f"{x:.{nd}f}"
    s = doc.get("summary") or {}
    m, sp = doc.get("machine") or {}, doc.get("spark") or {}
    lines = [f"### superop bench tpcds — {doc.get('started_at', '')}", "",
             f"- command: `{doc.get('command', '')}` (code {doc.get('code', '?')})",
             f"- machine: {m.get('cpus')} cores, load average at start "
             f"{m.get('load_avg_start')} / end {m.get('load_avg_end')}; Spark "
             f"{sp.get('version')} `{sp.get('spark.master')}`",
             f"- rewriter: {(doc.get('rewriter') or {}).get('name')} — catalog "
             f"{(doc.get('rewriter') or {}).get('catalog', '–')}"
             + (f", declared keys {doc['rewriter']['keys']}" if (doc.get('rewriter') or {}).get('keys')
                else ""), "",
             f"SF {doc.get('params', {}).get('sf')}: {s.get('rewritten', 0)}/{s.get('queries', 0)} "
             f"statements rewritten, equal results for {s.get('equal', 0)}/{s.get('rewritten', 0)}; "
             f"median original/rewritten over rewritten statements: "
             f"{f(s.get('median_original_over_rewritten_changed'))}; shuffle exchanges "
             f"{s.get('shuffle_exchanges_original')} → {s.get('shuffle_exchanges_rewritten')}; "
             f"errors: {', '.join(s.get('errors') or []) or 'none'}.", "",
             "| query | rules | equal | original s | rewritten s | orig/rew | exchanges o→r |",
             "|---|---|---|---:|---:|---:|---|"]
    for r in doc.get("results", []):
        rules = ", ".join(r["rewrite"]["applied"]) or "none"
        if r.get("error"):
            lines.append(f"| {r['query']} | {rules} | error: {r['error'][:120]} | | | | |")
            continue
        t, p = r.get("timing") or {}, r.get("plans") or {}
        eqs = equal_cell(r.get("equal") or unchanged_equality())
        o, w = t.get("original"), t.get("rewritten")
        lines.append(f"| {r['query']} | {rules} | {eqs} | {f(o and o['median_s'])} | "
                     f"{f(w and w['median_s'])} | "
                     f"{f((r.get('ratios') or {}).get('original_over_rewritten'))} | "
                     f"{p['original']['shuffle_exchanges']}→{p['rewritten']['shuffle_exchanges']} |")
    lines += ["", "Unchanged statements are timed once (their SQL is the original, byte for "
              "byte); rewritten ones are checked for equal bags first.", ""]
    return "\n".join(lines)


def run_tpcds_cmd(args) -> int:
    """The command function of ``superop bench tpcds`` (shared options of ``bench tpch``)."""
    import os as _os
    from pathlib import Path

    names = parse_query_names(args.queries)
    keys = getattr(args, "keys", None)
    if keys:
        load_keys_file(keys)           # a bad file fails here, before Spark starts
    started, machine = now(), machine_info()
    base = bench_spark(args)
    spark = base.newSession()          # TPC-DS table names must not replace others' views
    progress = Progress(enabled=not args.quiet)
    doc = run_tpcds(spark, lambda: make_rewriter(spark, args.rewriter, args.catalog, args.data_dir, args.log,
                                                         keys=keys),
                    sf=args.sf,
                    queries=names, repeat=args.repeat, warmup=args.warmup,
                    data_dir=args.data_dir, progress=progress)
    doc.update(started_at=started, command=command_line(), code=code_version(), machine=machine,
               spark=spark_info(spark), finished_at=now(),
               params={"sf": args.sf, "repeat": args.repeat, "warmup": args.warmup,
                       "queries": names, "conf": args.conf, "keys": keys})
    try:
        doc["machine"]["load_avg_end"] = [round(x, 2) for x in _os.getloadavg()]
    except OSError:
        pass
    out = Path(args.out)
    md = tpcds_markdown(doc)
    doc["outputs"] = {"json": str(out / "tpcds.json"), "markdown": str(out / "tpcds.md"),
                      "plots": []}
    atomic_write_json(out / "tpcds.json", doc)
    atomic_write_text(out / "tpcds.md", md)
    if not args.no_mlflow:
        try:
            log_mlflow(doc, "tpcds")
        except Exception as e:  # the measurements are on disk; say why MLflow failed
            progress.warn(f"MLflow logging failed: {type(e).__name__}: {str(e)[:200]}")
    if args.readme:
        update_readme(args.readme, args.readme_block or "tpcds", md)
    print(md)
    print(f"wrote {out / 'tpcds.json'}, {out / 'tpcds.md'}")
    return 0
