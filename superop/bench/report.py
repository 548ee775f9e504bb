"""Benchmark reports: the JSON document, a Markdown table, PNG plots (matplotlib Agg) and
MLflow logging (params, metrics, artifacts). MLflow honours ``MLFLOW_TRACKING_URI``;
without it MLflow's own local default store is used."""
from __future__ import annotations

import datetime as _dt
import os
import platform
import shlex
import sys
from pathlib import Path
from typing import Optional

from ..errors import SuperopError
from ..storage import atomic_write_json, atomic_write_text


# ---------------------------------------------------------------------------
# environment
# ---------------------------------------------------------------------------
def machine_info() -> dict:
    info = {"host": platform.node(), "os": f"{platform.system()} {platform.release()}",
            "python": platform.python_version(), "cpus": os.cpu_count()}
    try:
        with open("/proc/meminfo") as f:
            kb = int(next(line for line in f if line.startswith("MemTotal")).split()[1])
        info["memory_gb"] = round(kb / 1024 / 1024, 1)
    except (OSError, StopIteration, ValueError):
        pass
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu_model"] = next(line.split(":", 1)[1].strip() for line in f
                                     if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        info["load_avg_start"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    return info


def code_version() -> str:
    """The git commit the bench ran from ("+dirty" when bench or runtime files differ)."""
    import subprocess
    root = Path(__file__).resolve().parents[3]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "superop/bench",
                                "superop/runtime"], cwd=root, capture_output=True, text=True,
                               timeout=10).stdout.strip()
        return (head or "unknown") + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def spark_info(spark) -> dict:
    conf = spark.sparkContext.getConf()
    keys = ["spark.master", "spark.driver.memory", "spark.sql.shuffle.partitions",
            "spark.sql.adaptive.enabled", "spark.sql.autoBroadcastJoinThreshold"]
    out = {"version": spark.version}
    for k in keys:
        v = conf.get(k, None)
        if v is None:
            try:
                v = spark.conf.get(k)
            except Exception:
                v = None
        out[k] = v
    return out


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def command_line(argv: Optional[list] = None) -> str:
    argv = list(sys.argv[1:] if argv is None else argv)
    return "superop " + " ".join(shlex.quote(a) for a in argv)


# ---------------------------------------------------------------------------
# formatting
# ---------------------------------------------------------------------------
def _f(x, nd=2, suffix="") -> str:
    return "–" if x is None else f"{x:.{nd}f}{suffix}"


def _mb(b) -> str:
    return "–" if b is None else f"{b / 1e6:.1f}"


def _spread(t: Optional[dict]) -> str:
    if not t or t.get("median_s") is None:
        return "–"
    return f"{t['median_s']:.2f} ±{(t.get('spread') or 0) * 100:.0f}%"


def micro_markdown(doc: dict) -> str:
    lines = [f"### superop bench micro — {doc.get('started_at', '')}", ""]
    lines += _header(doc)
    for n, s in (doc.get("summary") or {}).items():
        g = s["goals"]
        lines += [f"**{int(n):,} rows**: median original/rewritten "
                  f"**{_f(s['median_original_over_rewritten'])}×** (goal ≥ 2.0: "
                  f"{'met' if g['speedup_ge_2'] else 'missed'}), median rewritten/limit "
                  f"**{_f(s['median_rewritten_over_limit'])}** (goal ≤ 1.15: "
                  f"{'met' if g['limit_ratio_le_1_15'] else 'missed'}), shuffle exchanges "
                  f"{s['shuffle_exchanges_original']} → {s['shuffle_exchanges_rewritten']} (goal halved: "
                  f"{'met' if g['exchanges_halved'] else 'missed'}); rewritten "
                  f"{s['rewritten']}/{s['queries']} queries; summed task time original/rewritten "
                  f"{_f(s.get('median_task_time_original_over_rewritten'))}, rewritten/limit "
                  f"{_f(s.get('median_task_time_rewritten_over_limit'))} (medians)"
                  + (f"; RESULTS DIFFER: {', '.join(s['results_differ'])}" if s["results_differ"] else "")
                  + ".", ""]
        fam = s.get("families") or {}
        if fam:
            lines += ["| family | queries | rewritten | median orig/rew | median rew/limit |",
                      "|---|---:|---:|---:|---:|"]
            for f, v in fam.items():
                lines.append(f"| {f} | {v['queries']} | {v['rewritten']} | "
                             f"{_f(v['median_original_over_rewritten'])} | "
                             f"{_f(v['median_rewritten_over_limit'])} |")
            lines.append("")
    lines += ["| rows | query | rules | equal | original s | rewritten s | limit s | orig/rew | rew/limit "
              "| exchanges o→r (limit) | shuffle write MB o→r | shuffle read MB o→r |",
              "|---:|---|---|---|---:|---:|---:|---:|---:|---|---|---|"]
    for r in doc.get("results", []):
        t = r.get("timing") or {}
        p = r["plans"]
        ra = r.get("ratios") or {}
        rules = ", ".join(r["rewrite"]["applied"]) or ("error" if r["rewrite"].get("error") else "none")
        eq = equal_cell(r["equal"])
        o, w, lim = t.get("original"), t.get("rewritten"), t.get("limit")
        lines.append(
            f"| {r['rows']:,} | {r['name']} | {rules} | {eq} | {_spread(o)} | {_spread(w)} | {_spread(lim)} | "
            f"{_f(ra.get('original_over_rewritten'))} | {_f(ra.get('rewritten_over_limit'))} | "
            f"{p['original']['shuffle_exchanges']}→{p['rewritten']['shuffle_exchanges']} "
            f"({p['limit']['shuffle_exchanges']}) | "
            f"{_mb(o and o['shuffle_write_bytes'])}→{_mb(w and w['shuffle_write_bytes'])} | "
            f"{_mb(o and o['shuffle_read_bytes'])}→{_mb(w and w['shuffle_read_bytes'])} |")
    lines += ["", "Unchanged queries (equal: n/a) run the original: their rewritten time is the original's "
              "run and their ratio 1.00.",
              "Times: median of the timed runs ± (max−min)/median. Exchanges: shuffle exchanges in "
              "Spark's physical plan (broadcasts in the JSON). Shuffle MB: Spark's stage metrics, median run.",
              ""]
    if doc.get("skipped"):
        lines += ["Skipped (time budget): " + ", ".join(f"{s['name']} @ {s['rows']:,}" for s in doc["skipped"]), ""]
    lines += _profile(doc)
    return "\n".join(lines)


def _stages(t: Optional[dict]) -> str:
    if not t:
        return "–"
    return " · ".join(f"{n}t {ms / 1000:.1f}s in{i:g} r{r:g} w{w:g}"
                      for n, ms, i, r, w in t.get("stage_detail_last") or [])


def _profile(doc: dict) -> list[str]:
    """Where the time goes for queries that miss a goal: Spark's completed stages of the last
    timed run of each side (tasks, summed task time, input / shuffle read / write MB)."""
    miss = [r for r in doc.get("results", []) if r.get("timing") and (
        (r["ratios"].get("original_over_rewritten") or 0) < 2.0
        or (r["ratios"].get("rewritten_over_limit") or 0) > 1.15)]
    if not miss:
        return []
    out = ["Profile of the queries that miss a goal (last timed run; per stage: tasks, summed task "
           "time, input / shuffle-read / shuffle-write MB):", ""]
    for r in miss:
        t = r["timing"]
        out.append(f"- {r['name']} @ {r['rows']:,}: original [{_stages(t['original'])}]; rewritten "
                   f"[{_stages(t['rewritten'])}]; limit [{_stages(t['limit'])}]")
    out.append("")
    return out


def tpch_markdown(doc: dict) -> str:
    lines = [f"### superop bench tpch — {doc.get('started_at', '')}", ""]
    lines += _header(doc)
    s = doc.get("summary") or {}
    lines += [f"SF {doc['params'].get('sf')}: {s.get('rewritten', 0)}/{s.get('queries', 0)} queries rewritten; "
              f"results equal for {s.get('equal', 0)}/{s.get('rewritten', 0)} rewritten; "
              "median original/rewritten over rewritten queries: "
              f"{_f(s.get('median_original_over_rewritten_changed'))}.", ""]
    lines += ["| query | rules | equal | original s | rewritten s | orig/rew | exchanges o→r "
              "| shuffle write MB o→r | rewriter says |", "|---|---|---|---:|---:|---:|---|---|---|"]
    for r in doc.get("results", []):
        t = r.get("timing") or {}
        p = r.get("plans") or {}
        rules = ", ".join(r["rewrite"]["applied"]) or ("error" if r["rewrite"].get("error") else "none")
        if r.get("error"):
            lines.append(f"| Q{r['query']} | {rules} | error: {r['error']} | | | | | | |")
            continue
        eq = equal_cell(r["equal"])
        o, w = t.get("original"), t.get("rewritten")
        lines.append(
            f"| Q{r['query']} | {rules} | {eq} | {_spread(o)} | {_spread(w)} | "
            f"{_f((r.get('ratios') or {}).get('original_over_rewritten'))} | "
            f"{p['original']['shuffle_exchanges']}→{p['rewritten']['shuffle_exchanges']} | "
            f"{_mb(o and o['shuffle_write_bytes'])}→{_mb(w and w['shuffle_write_bytes'])} | "
            f"{_cell(r['rewrite'].get('explanation'), 90)} |")
    lines += ["", "Unchanged queries are timed once (their rewritten SQL is the original, byte for byte).", ""]
    return "\n".join(lines)


def equal_cell(e: dict) -> str:
    if e.get("equal") is None:
        return "n/a (unchanged)"
    return "yes" if e["equal"] else f"**NO** ({e['detail']})"


def _cell(s: Optional[str], n: int) -> str:
    s = (s or "").replace("|", "/").replace("\n", " ")
    return s if len(s) <= n else s[: n - 1] + "…"


def _header(doc: dict) -> list[str]:
    m = doc.get("machine") or {}
    sp = doc.get("spark") or {}
    rw = doc.get("rewriter") or {}
    return [f"- command: `{doc.get('command', '')}` (code {doc.get('code', '?')})",
            f"- date: {doc.get('started_at', '')} → {doc.get('finished_at', '')}",
            f"- machine: {m.get('cpus')} cores ({m.get('cpu_model', '?')}), {m.get('memory_gb', '?')} GB RAM, "
            f"load average at start {m.get('load_avg_start')} / end {m.get('load_avg_end')}",
            f"- Spark {sp.get('version')} `{sp.get('spark.master')}`, driver memory {sp.get('spark.driver.memory')}, "
            f"shuffle partitions {sp.get('spark.sql.shuffle.partitions')}, AQE {sp.get('spark.sql.adaptive.enabled')}, "
            f"broadcast threshold {sp.get('spark.sql.autoBroadcastJoinThreshold') or 'default (10 MB)'}",
            f"- rewriter: {rw.get('name')} — catalog {rw.get('catalog', '–')}",
            f"- repeats: {doc.get('params', {}).get('repeat')} timed (+{doc.get('params', {}).get('warmup')} warm-up), "
            "alternating order", ""]


# ---------------------------------------------------------------------------
# plots
# ---------------------------------------------------------------------------
def micro_plots(doc: dict, out_dir: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out = []
    res = [r for r in doc.get("results", []) if r.get("timing")]
    if not res:
        return out
    sizes = sorted({r["rows"] for r in res})
    top = sizes[-1]
    rs = [r for r in res if r["rows"] == top]
    names = [r["name"] for r in rs]
    sp = [r["ratios"].get("original_over_rewritten") or 0 for r in rs]
    lim = [r["ratios"].get("original_over_limit") or 0 for r in rs]
    fig, ax = plt.subplots(figsize=(max(6, len(names) * 0.7), 4))
    x = range(len(names))
    ax.bar([i - 0.2 for i in x], sp, width=0.4, label="original / rewritten")
    ax.bar([i + 0.2 for i in x], lim, width=0.4, label="original / limit (bound)", alpha=0.6)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.axhline(2.0, color="red", lw=0.8, ls="--", label="goal 2×")
    ax.set_xticks(list(x), names, rotation=45, ha="right")
    ax.set_ylabel("speed-up (median wall time)")
    ax.set_title(f"superop micro: speed-up per query at {top:,} rows")
    ax.legend(fontsize=8)
    fig.tight_layout()
    p = out_dir / "micro_speedup.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    out.append(p)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for fam, color in (("DU", "tab:blue"), ("DJ", "tab:orange"), ("MJ", "tab:green")):
        for side, ls, mk in (("original", "-", "o"), ("rewritten", "--", "s"), ("limit", ":", "^")):
            pts = []
            for n in sizes:
                v = [r["timing"][side]["median_s"] for r in res if r["rows"] == n and r["family"] == fam]
                if v:
                    pts.append((n, sum(v) / len(v)))
            if pts:
                ax.plot([p_[0] for p_ in pts], [p_[1] for p_ in pts], ls, marker=mk, color=color,
                        label=f"{fam} {side}")
    ax.set_xscale("log")
    ax.set_xlabel("rows")
    ax.set_ylabel("mean of per-query median wall time (s)")
    ax.set_title("superop micro: time vs rows")
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    p = out_dir / "micro_time_vs_rows.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    out.append(p)
    return out


def tpch_plots(doc: dict, out_dir: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    res = [r for r in doc.get("results", []) if r.get("timing")]
    if not res:
        return []
    fig, ax = plt.subplots(figsize=(10, 4))
    names = [f"Q{r['query']}" for r in res]
    sp = [r["ratios"].get("original_over_rewritten") or 0 for r in res]
    colors = ["tab:green" if r["rewrite"]["changed"] else "tab:gray" for r in res]
    ax.bar(names, sp, color=colors)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_ylabel("original / rewritten (median)")
    ax.set_title(f"superop TPC-H SF {doc['params'].get('sf')}: speed-up (green = rewritten)")
    fig.tight_layout()
    p = out_dir / "tpch_speedup.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return [p]


# ---------------------------------------------------------------------------
# writing + MLflow
# ---------------------------------------------------------------------------
def write_outputs(doc: dict, out_dir: str | os.PathLike, kind: str) -> dict:
    """Write ``<kind>.json``, ``<kind>.md`` and the plots; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = micro_markdown(doc) if kind == "micro" else tpch_markdown(doc)
    plots = micro_plots(doc, out) if kind == "micro" else tpch_plots(doc, out)
    paths = {"json": out / f"{kind}.json", "markdown": out / f"{kind}.md",
             "plots": [str(p) for p in plots]}
    doc["outputs"] = {k: str(v) if not isinstance(v, list) else v for k, v in paths.items()}
    atomic_write_json(paths["json"], doc)
    atomic_write_text(paths["markdown"], md)
    return doc["outputs"]


def _metric_key(s: str) -> str:
    import re
    return re.sub(r"[^A-Za-z0-9_\-./ ]", "_", s)


def log_mlflow(doc: dict, kind: str, experiment: str = "superop-bench") -> Optional[str]:
    """One MLflow run per bench: params, summary + per-query metrics, JSON/MD/PNG artifacts.
    Returns the run id (None if MLflow is unavailable — the bench never fails on that)."""
    try:
        import mlflow
    except ImportError:  # pragma: no cover
        return None
    mlflow.set_experiment(experiment)
    with mlflow.start_run(run_name=f"bench-{kind}-{doc.get('started_at', '')}") as run:
        params = {k: v for k, v in (doc.get("params") or {}).items()}
        params.update({"rewriter": (doc.get("rewriter") or {}).get("name"),
                       "catalog": (doc.get("rewriter") or {}).get("catalog"),
                       "spark_version": (doc.get("spark") or {}).get("version"),
                       "cpus": (doc.get("machine") or {}).get("cpus")})
        mlflow.log_params({k: str(v)[:500] for k, v in params.items()})
        mlflow.set_tags({"superop.bench": kind, "command": doc.get("command", "")[:500]})
        metrics = {}
        if kind == "micro":
            for n, s in (doc.get("summary") or {}).items():
                for k in ("median_original_over_rewritten", "median_rewritten_over_limit",
                          "shuffle_exchanges_original", "shuffle_exchanges_rewritten", "rewritten"):
                    if s.get(k) is not None:
                        metrics[f"rows_{n}.{k}"] = float(s[k])
            for r in doc.get("results", []):
                pre = f"rows_{r['rows']}.{r['name']}"
                for k, v in (r.get("ratios") or {}).items():
                    if v is not None:
                        metrics[f"{pre}.{k}"] = float(v)
                for side, t in (r.get("timing") or {}).items():
                    metrics[f"{pre}.{side}_median_s"] = float(t["median_s"])
                    metrics[f"{pre}.{side}_shuffle_write_bytes"] = float(t["shuffle_write_bytes"])
        else:
            s = doc.get("summary") or {}
            for k, v in s.items():
                if isinstance(v, (int, float)) and v is not None:
                    metrics[k] = float(v)
            for r in doc.get("results", []):
                for k, v in (r.get("ratios") or {}).items():
                    if v is not None:
                        metrics[f"q{r['query']}.{k}"] = float(v)
                for side, t in (r.get("timing") or {}).items():
                    metrics[f"q{r['query']}.{side}_median_s"] = float(t["median_s"])
        mlflow.log_metrics({_metric_key(k): v for k, v in metrics.items()})
        outs = doc.get("outputs") or {}
        for key in ("json", "markdown"):
            if outs.get(key) and Path(outs[key]).exists():
                mlflow.log_artifact(outs[key])
        for p in outs.get("plots", []):
            mlflow.log_artifact(p, artifact_path="plots")
        return run.info.run_id


# ---------------------------------------------------------------------------
# README section
# ---------------------------------------------------------------------------
README_START, README_END = "<!-- bench:start -->", "<!-- bench:end -->"


_README_INTRO = """## Benchmarks (`superop bench`)

`superop bench micro [--rows 10m] [--repeat 5]` (DU/DJ/MJ over the paper's `ops` table:
original vs the runtime's rewrite vs the limit query), `superop bench tpch [--sf 1]`, and the
wrappers `superop bench mine` / `superop bench rewrite`. Each writes JSON, Markdown and PNG
plots under `out/bench/` and logs an MLflow run; `--readme docs/BENCHMARKS.md` puts its table below.
Every number below was produced by the command printed above its table."""


_BLOCK_ORDER = {"micro": 0, "tpch": 1, "mine": 2, "rewrite": 3}


def update_readme(readme: str | os.PathLike, block: str, text: str) -> None:
    """Replace block ``block`` (e.g. micro, tpch) inside the bench markers of ``readme``; the
    rest of the README is never touched."""
    p = Path(readme)
    doc = p.read_text()
    if README_START not in doc or README_END not in doc:
        raise SuperopError(f"{p} has no {README_START} ... {README_END} markers")
    head, rest = doc.split(README_START, 1)
    section, tail = rest.split(README_END, 1)
    import re
    blocks = {m.group(1): m.group(2).strip() for m in re.finditer(
        r"<!-- bench:([\w.-]+) -->\n(.*?)\n<!-- /bench:\1 -->", section, re.S)}
    blocks[block] = text.strip()       # replaces in place, or appends a new block
    body = _README_INTRO + "\n\n" + "\n\n".join(
        f"<!-- bench:{n} -->\n{t}\n<!-- /bench:{n} -->"
        for n, t in sorted(blocks.items(), key=lambda kv: (_BLOCK_ORDER.get(kv[0].split("-")[0], 9), kv[0])))
    atomic_write_text(p, head + README_START + "\n" + body + "\n" + README_END + tail)
