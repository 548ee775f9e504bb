"""`superop bench tpcds`: the 103 TPC-DS statements (``superop.workloads.tpcds``), original vs
rewritten, over ``tpcgen-cli tpcds parquet`` data at scale factor ``sf``.

Same method as ``superop bench tpch`` (:mod:`.tpch_bench`): a statement the rewriter leaves
unchanged is timed once (original only); a rewritten one is checked for equal results
(bags) before original and rewritten are timed side by side, alternating. A statement that
fails on Spark is recorded with its error and the run goes on."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Optional, Sequence

from ..errors import SuperopError
from ..ir.schema import load_keys_file
from ..runtime.confs import CERTIFY_MODES
from ..runtime.merge_flags import MERGE_FLAGS, session_with
from ..storage import atomic_write_json, atomic_write_text
from ..workloads.tpcds import parse_query_names, register_tpcds
from ..workloads.tpcds import queries as all_queries
from ..workloads.tpcds.data import tpcds_data
from .harness import bench_spark, check_equal, median, plan_info, unchanged_equality
from .micro import measure_triple
from .peer import PEER, peer_ratios, peer_session, peer_summary, plans_differ
from .power import power_markdown, run_power
from .progress import Progress
from .report import code_version, command_line, equal_cell, log_mlflow, machine_info, now, spark_info, update_readme
from .rewriters import make_rewriter, runtime_session


def run_tpcds(spark, make_rewriter: Callable, *, sf: float = 1.0,
              queries: Optional[Sequence[str]] = None, repeat: int = 3, warmup: int = 1,
              data_dir: str | os.PathLike = ".superop/bench-data",
              progress: Optional[Progress] = None,
              tpcds_dir: Optional[str | os.PathLike] = None, peer: bool = True) -> dict:
    """``tpcds_dir``: existing tpcgen-cli output to use instead of generating at ``sf``.
    Registers the tables as temp views of ``spark`` (use a child session to keep others').
    ``peer``: also time Spark with its merge settings (:mod:`.peer`) where it matters."""
    qs = all_queries()
    names = list(queries) if queries else list(qs)
    if progress:
        progress.start(len(names) * repeat)
        progress.note(f"TPC-DS data at SF {sf:g}")
    register_tpcds(spark, tpcds_dir or tpcds_data(sf, data_dir))
    rw = make_rewriter()
    peer_s = peer_session(spark) if peer else None
    results = []
    for name in names:
        if progress:
            progress.note(f"{name}: rewrite")
        rec = _statement(spark, peer_s, name, qs[name], rw(qs[name]), repeat, warmup, progress)
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
    if peer:
        summary.update(peer_summary(results))
        summary["peer_equal"] = sum(1 for r in results if (r.get("peer_equal") or {}).get("equal"))
        summary["peer_timed"] = sum(1 for r in results if PEER in (r.get("timing") or {}))
    return {"bench": "tpcds", "results": results, "summary": summary, "peer": peer,
            "peer_conf": dict(MERGE_FLAGS) if peer else {},
            "rewriter": {"name": rw.name, **rw.info}}


def _statement(spark, peer_s, name: str, sql: str, r, repeat: int, warmup: int,
               progress: Optional[Progress]) -> dict:
    """One statement: plans of every side, equal bags first (superop's form and the peer's
    against the original), then the sides timed side by side, alternating."""
    rec: dict = {"query": name, "sql": sql, "rewrite": r.to_json()}
    rw_s = session_with(spark, getattr(r, "conf", None) or {})
    try:
        sides, sessions = {"original": sql}, {"original": spark}
        if r.changed:
            sides["rewritten"], sessions["rewritten"] = r.sql, rw_s
        if peer_s is not None and (r.changed or plans_differ(spark, peer_s, sql)):
            sides[PEER], sessions[PEER] = sql, peer_s
        rec["plans"] = {}
        for side, s in {"original": sql, "rewritten": r.sql, **({PEER: sql} if PEER in sides else {})}.items():
            pi = plan_info(sessions.get(side, spark), s)
            rec["plans"][side] = {"shuffle_exchanges": pi.shuffle_exchanges,
                                  "broadcast_exchanges": pi.broadcast_exchanges,
                                  "reused_exchanges": pi.reused_exchanges, "plan": pi.plan}
        rec["equal"] = unchanged_equality()   # nothing to compare: the original runs
        checks = [("equal", "rewritten"), ("peer_equal", PEER)]
        for key, side in checks:
            if side not in sides:
                continue
            eq = check_equal(spark, sql, sides[side], spark_b=sessions[side])
            rec[key] = eq.to_json()
            if not eq.equal:
                rec["timing"], rec["ratios"] = None, {}
                if progress:
                    progress.advance(repeat)
                    progress.warn(f"{name}: RESULTS DIFFER on the {side} side ({eq.detail})")
                return rec
        t = measure_triple(spark, name, sides, repeat, warmup, progress, sessions=sessions)
        rec["timing"] = t
        rec["ratios"] = peer_ratios(t)
    except Exception as e:  # one failing statement must not end the whole run
        rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
        if progress:
            progress.warn(f"{name}: {rec['error']}")
    return rec


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
    t.add_argument("--certify", choices=CERTIFY_MODES, default="auto",
                   help="first sight of an instance the catalog does not cover (default auto: the "
                        "statement waits for its proof; background: it runs unchanged meanwhile)")
    t.add_argument("--no-peer", action="store_true",
                   help="do not time the peer side (Spark with its merge settings on)")
    t.add_argument("--power", action="store_true",
                   help="the whole power run instead: every statement in order under stock Spark, "
                        "Spark with its merge settings, and superop (decisions included), --repeat "
                        "rounds alternating")
    t.add_argument("--warm", action="store_true",
                   help="with --power: a fourth configuration, superop with every statement decided "
                        "before the round (untimed) — the steady state of a recurring workload")
    common(t, "out/bench/tpcds")
    t.set_defaults(bench_func=run)


def tpcds_markdown(doc: dict) -> str:
    def f(x, nd=2):
        return "–" if x is None else f"{x:.{nd}f}"
    s = doc.get("summary") or {}
    m, sp = doc.get("machine") or {}, doc.get("spark") or {}
    peer = bool(doc.get("peer"))
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
             f"errors: {', '.join(s.get('errors') or []) or 'none'}."]
    if peer:
        lines += ["", f"Peer (Spark + merge settings: {', '.join(doc.get('peer_conf') or {})}): timed for "
                  f"{s.get('peer_timed', 0)} statements, equal results for {s.get('peer_equal', 0)}; "
                  f"median peer/superop over rewritten statements: "
                  f"{f(s.get('median_peer_over_rewritten_changed'))}; superop slower than the peer "
                  f"(< 0.95×): {', '.join(s.get('behind_peer') or []) or 'none'}; left unchanged "
                  f"where the settings change the plan: {', '.join(s.get('peer_only') or []) or 'none'}"
                  f" (peer > 1.05× faster than Spark there: "
                  f"{', '.join(s.get('peer_only_faster') or []) or 'none'})."]
    lines.append("")
    lines += _table(doc, f, peer)
    lines += ["", "Unchanged statements are timed once (their SQL is the original, byte for "
              "byte); rewritten ones are checked for equal bags first."
              + (" The peer side runs the original SQL in a clone of the session with the merge "
                 "settings on, checked for equal bags too." if peer else ""), ""]
    return "\n".join(lines)


def _table(doc: dict, f: Callable, peer: bool) -> list[str]:
    if peer:
        out = ["| query | superop's form | equal | Spark s | Spark + flags s | superop s | Spark/superop "
               "| flags/superop | exchanges Spark→flags→superop |", "|---|---|---|---:|---:|---:|---:|---:|---|"]
    else:
        out = ["| query | rules | equal | original s | rewritten s | orig/rew | exchanges o→r |",
               "|---|---|---|---:|---:|---:|---|"]
    for r in doc.get("results", []):
        rules = ", ".join(r["rewrite"]["applied"]) or "none"
        if r.get("error"):
            out.append(f"| {r['query']} | {rules} | error: {r['error'][:120]} |" + " |" * (6 if peer else 4))
            continue
        t, p, ra = r.get("timing") or {}, r.get("plans") or {}, r.get("ratios") or {}
        eqs = equal_cell(r.get("equal") or unchanged_equality())
        if peer and r.get("peer_equal"):
            eqs += " / peer " + equal_cell(r["peer_equal"])
        o, w, pe = t.get("original"), t.get("rewritten"), t.get(PEER)
        ex = "→".join(str(p[k]["shuffle_exchanges"]) if k in p else "–"
                      for k in (("original", PEER, "rewritten") if peer else ("original", "rewritten")))
        if peer:
            out.append(f"| {r['query']} | {rules} | {eqs} | {f(o and o['median_s'])} | {f(pe and pe['median_s'])} | "
                       f"{f(w and w['median_s'])} | {f(ra.get('original_over_rewritten'))} | "
                       f"{f(ra.get('peer_over_rewritten'))} | {ex} |")
        else:
            out.append(f"| {r['query']} | {rules} | {eqs} | {f(o and o['median_s'])} | "
                       f"{f(w and w['median_s'])} | {f(ra.get('original_over_rewritten'))} | {ex} |")
    return out


def run_tpcds_cmd(args) -> int:
    """The command function of ``superop bench tpcds`` (shared options of ``bench tpch``)."""
    names = parse_query_names(args.queries)
    keys = getattr(args, "keys", None)
    certify = getattr(args, "certify", "auto")
    if keys:
        load_keys_file(keys)           # a bad file fails here, before Spark starts
    if getattr(args, "power", False) and args.rewriter != "runtime":
        raise SuperopError("--power times superop's runtime: --rewriter identity has nothing to time")
    if getattr(args, "warm", False) and not getattr(args, "power", False):
        raise SuperopError("--warm is a configuration of the power run: add --power")
    started, machine = now(), machine_info()
    base = bench_spark(args)
    spark = base.newSession()          # TPC-DS table names must not replace others' views
    progress = Progress(enabled=not args.quiet)
    if getattr(args, "power", False):
        register_tpcds(spark, tpcds_data(args.sf, args.data_dir))
        info: dict = {}

        def make_session():
            so, i = runtime_session(spark, args.catalog, args.data_dir, args.log, keys=keys, certify=certify)
            info.update(i)
            return so
        qs = all_queries()
        doc = run_power(spark, make_session, qs, names or list(qs), repeat=args.repeat,
                        warmup=args.warmup, warm=getattr(args, "warm", False), progress=progress)
        doc["rewriter"] = {"name": "superop.runtime.SuperOpSession", **info}
        kind, md_of = "tpcds_power", power_markdown
    else:
        doc = run_tpcds(spark, lambda: make_rewriter(spark, args.rewriter, args.catalog, args.data_dir,
                                                     args.log, keys=keys, certify=certify),
                        sf=args.sf, queries=names, repeat=args.repeat, warmup=args.warmup,
                        data_dir=args.data_dir, progress=progress, peer=not getattr(args, "no_peer", False))
        kind, md_of = "tpcds", tpcds_markdown
    doc.update(started_at=started, command=command_line(), code=code_version(), machine=machine,
               spark=spark_info(spark), finished_at=now(),
               params={"sf": args.sf, "repeat": args.repeat, "warmup": args.warmup,
                       "warm": getattr(args, "warm", False),
                       "queries": names, "conf": args.conf, "keys": keys})
    return _write(doc, args, kind, md_of, progress)


def _write(doc: dict, args, kind: str, md_of: Callable, progress: Progress) -> int:
    """The JSON and Markdown outputs, the MLflow run and the benchmark page's block."""
    try:
        doc["machine"]["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    out = Path(args.out)
    md = md_of(doc)
    doc["outputs"] = {"json": str(out / f"{kind}.json"), "markdown": str(out / f"{kind}.md"), "plots": []}
    atomic_write_json(out / f"{kind}.json", doc)
    atomic_write_text(out / f"{kind}.md", md)
    if not args.no_mlflow:
        try:
            log_mlflow(doc, kind)
        except Exception as e:  # the measurements are on disk; say why MLflow failed
            progress.warn(f"MLflow logging failed: {type(e).__name__}: {str(e)[:200]}")
    if args.readme:
        update_readme(args.readme, args.readme_block or kind, md)
    print(md)
    print(f"wrote {out / f'{kind}.json'}, {out / f'{kind}.md'}")
    return 0
