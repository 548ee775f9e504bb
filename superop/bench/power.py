"""`superop bench tpcds --power`: the whole TPC-DS power run — every statement in order, one
after the other — under three configurations, side by side in one process:

* ``spark``: stock Spark (the bench session as configured);
* ``spark+flags``: Spark with its own merge settings on (:mod:`.peer`), in a clone of it;
* ``superop``: every statement through :meth:`SuperOpSession.sql` — the decision (lowering,
  matching, planning every candidate form, the gate) is inside the timed interval, with a
  fresh session and decision cache every round, so no round is served from an earlier
  round's decisions; only loading the catalog (once per process in production) is outside.

Each statement runs to completion into the ``noop`` sink. The configurations alternate:
round ``i`` starts with configuration ``i mod 3``. A statement that fails (e.g. TPC-DS q90's
``DIVIDE_BY_ZERO`` on tiny data) is recorded with its error in that configuration; the
totals compared are over the statements that ran in every configuration."""
from __future__ import annotations

import time
from typing import Callable, Optional, Sequence

from .harness import median
from .peer import peer_session
from .progress import Progress

CONFIGS = ("spark", "spark+flags", "superop")
# superop with every statement decided before the round (an untimed pass of ``rewrite`` in the
# same session): what a workload that recurs runs once its decisions are made — the
# production steady state, where the decision store serves them
WARM = "superop-warm"


def _run(session, sql: str) -> None:
    session.sql(sql).write.format("noop").mode("overwrite").save()


def _one_round(spark, peer, make_session: Callable, cfg: str, names: Sequence[str], qs: dict,
               progress: Optional[Progress]) -> tuple[dict, dict, dict]:
    """Seconds per statement, errors and (superop) decision milliseconds of one pass."""
    secs: dict[str, float] = {}
    errs: dict[str, str] = {}
    decisions: dict[str, dict] = {}
    so = make_session() if cfg in ("superop", WARM) else None
    if so is not None and cfg == WARM:
        _decide_all(so, names, qs, progress)
    for name in names:
        sql = qs[name]
        if progress:
            progress.note(f"power {cfg}: {name}")
        t0 = time.perf_counter()
        td: Optional[float] = None
        try:
            if so is not None:
                df = so.sql(sql)
                td = time.perf_counter() - t0
                df.write.format("noop").mode("overwrite").save()
            else:
                _run(spark if cfg == "spark" else peer, sql)
        except Exception as e:  # one failing statement must not end the run
            errs[name] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]
        secs[name] = time.perf_counter() - t0
        if so is not None:
            r = so.rewrite(sql)                   # the decision just made (a cache hit, untimed)
            decisions[name] = {"decision_s": None if td is None else round(td, 4),
                               "applied": list(r.applied), "conf": dict(getattr(r, "conf", {}) or {}),
                               "changed": r.changed}
    return secs, errs, decisions


def _decide_all(so, names: Sequence[str], qs: dict, progress: Optional[Progress]) -> None:
    """The warm configuration's untimed pass: every statement decided (and cached) first."""
    for name in names:
        if progress:
            progress.note(f"power {WARM}: deciding {name}")
        try:
            so.rewrite(qs[name])
        except Exception:   # the timed pass records it
            pass


def run_power(spark, make_session: Callable, qs: dict, names: Sequence[str], *, repeat: int = 3,
              warmup: int = 1, warm: bool = False, progress: Optional[Progress] = None) -> dict:
    """``make_session()``: a fresh :class:`SuperOpSession` over ``spark`` (whose TPC-DS views
    are registered). ``warmup`` > 0: one untimed stock-Spark pass first (JVM, file cache).
    ``warm``: a fourth configuration, superop with its decisions made before the round."""
    configs = CONFIGS + ((WARM,) if warm else ())
    peer = peer_session(spark)
    if progress:
        progress.start(repeat * len(configs))
    if warmup > 0:
        for name in names:
            if progress:
                progress.note(f"power warm-up: {name}")
            try:
                _run(spark, qs[name])
            except Exception:   # recorded by the timed rounds
                pass
    rounds = []
    for i in range(repeat):
        k = i % len(configs)
        order = list(configs[k:] + configs[:k])
        rnd: dict = {"order": order, "seconds": {}, "errors": {}, "decisions": {}}
        for cfg in order:
            secs, errs, dec = _one_round(spark, peer, make_session, cfg, names, qs, progress)
            rnd["seconds"][cfg], rnd["errors"][cfg] = secs, errs
            if dec:
                rnd["decisions" if cfg == "superop" else "decisions_warm"] = dec
            if progress:
                progress.advance()
        rounds.append(rnd)
    if progress:
        progress.finish()
    return {"bench": "tpcds-power", "configs": list(configs), "queries": list(names),
            "rounds": rounds, "summary": power_summary(rounds, names)}


def power_summary(rounds: list[dict], names: Sequence[str]) -> dict:
    failed = sorted({q for r in rounds for errs in r["errors"].values() for q in errs})
    ok = [q for q in names if q not in failed]
    configs = [c for c in CONFIGS + (WARM,) if rounds and c in rounds[0]["seconds"]]
    totals = {cfg: [sum(r["seconds"][cfg][q] for q in ok) for r in rounds] for cfg in configs}
    med = {cfg: median(v) for cfg, v in totals.items()}

    def decided(key: str) -> Optional[float]:
        return median([sum((r.get(key, {}).get(q) or {}).get("decision_s") or 0.0 for q in ok)
                       for r in rounds]) if any(key in r for r in rounds) else None
    last = rounds[-1]["decisions"] if rounds else {}
    per = {q: {cfg: median([r["seconds"][cfg][q] for r in rounds]) for cfg in configs} for q in ok}

    def ratio(a: str, b: str) -> Optional[float]:
        return med[a] / med[b] if med.get(a) is not None and med.get(b) else None
    return {"statements": len(names), "statements_timed": len(ok), "failed": failed,
            "errors": {q: next(e for r in rounds for errs in r["errors"].values()
                               for k, e in errs.items() if k == q) for q in failed},
            "total_s": totals, "median_total_s": med,
            "spark_over_superop": ratio("spark", "superop"),
            "flags_over_superop": ratio("spark+flags", "superop"),
            "spark_over_flags": ratio("spark", "spark+flags"),
            "spark_over_superop_warm": ratio("spark", WARM),
            "median_decision_s": decided("decisions"),
            "median_decision_warm_s": decided("decisions_warm"),
            "changed": {q: d["applied"] for q, d in last.items() if d.get("changed")},
            "per_statement_median_s": per}


def power_markdown(doc: dict) -> str:
    def f(x, nd=2):
        return "–" if x is None else f"{x:.{nd}f}"
    s = doc.get("summary") or {}
    m, sp = doc.get("machine") or {}, doc.get("spark") or {}
    med = s.get("median_total_s") or {}
    lines = [f"### superop bench tpcds --power — {doc.get('started_at', '')}", "",
             f"- command: `{doc.get('command', '')}` (code {doc.get('code', '?')})",
             f"- machine: {m.get('cpus')} cores, load average at start {m.get('load_avg_start')} / end "
             f"{m.get('load_avg_end')}; Spark {sp.get('version')} `{sp.get('spark.master')}`",
             f"- rewriter: catalog {(doc.get('rewriter') or {}).get('catalog', '–')}; "
             f"{len(doc.get('rounds') or [])} rounds, configurations alternating", "",
             f"SF {doc.get('params', {}).get('sf')}: {s.get('statements_timed')}/{s.get('statements')} "
             f"statements ran in every configuration (failed: {', '.join(s.get('failed') or []) or 'none'}).",
             "", "| configuration | whole run s (median of rounds) | rounds s | Spark / this |",
             "|---|---:|---|---:|"]
    for cfg in doc.get("configs") or CONFIGS:
        tot = (s.get("total_s") or {}).get(cfg) or []
        r = (med.get("spark") / med[cfg]) if med.get(cfg) and med.get("spark") is not None else None
        lines.append(f"| {cfg} | {f(med.get(cfg))} | {', '.join(f(x, 1) for x in tot)} | {f(r)} |")
    lines += ["", f"Spark / superop **{f(s.get('spark_over_superop'))}×**, Spark + flags / superop "
              f"**{f(s.get('flags_over_superop'))}×**, Spark / Spark + flags {f(s.get('spark_over_flags'))}×; "
              f"superop's `sql()` calls (deciding with a cold cache every round, and Spark's analysis "
              f"of the statement; inside its time): {f(s.get('median_decision_s'), 1)} s per run (median)." + (
                  f" {WARM} (every statement decided before the round, untimed; the timed run reads "
                  f"the decisions): Spark / {WARM} **{f(s.get('spark_over_superop_warm'))}×**, its `sql()` "
                  f"calls (a cached decision and Spark's analysis) {f(s.get('median_decision_warm_s'), 1)} s per run."
                  if s.get("spark_over_superop_warm") is not None else ""), "",
              "Statements superop ran in another form: " + (", ".join(
                  f"{q} ({', '.join(a)})" for q, a in sorted((s.get("changed") or {}).items())) or "none") + ".", ""]
    return "\n".join(lines)
