"""``superop runtime report --decision-log PATH``: what the runtime decided, summed up.

Reads a decision log (JSON Lines, :mod:`superop.runtime.decisions`; a malformed line is
counted and skipped) and reports: decisions by outcome, refusals by reason, per rule the
queries it rewrote, their predicted speed-ups and shuffle exchanges saved, and the time
saved — **measured** where shadow mode ran the original beside the rewrite (original minus
rewritten wall time); **estimated** for rewritten queries whose run the session timed
(``SuperOpSession.collect``: ``run_ms``) from the cost model's predicted speed-up
(``run_ms × (predicted − 1)``); a rewritten query the caller ran itself was not timed and is
only counted.
"""
from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SuperopError


@dataclass
class RuleSummary:
    rewritten: int = 0
    speedups: list = field(default_factory=list)
    exchanges_saved: int = 0
    shadow_runs: int = 0
    shadow_saved_ms: float = 0.0
    estimated_saved_ms: float = 0.0
    timed: int = 0
    mismatches: int = 0

    def to_json(self) -> dict:
        return {"rewritten": self.rewritten,
                "predicted_speedup_median": round(statistics.median(self.speedups), 3) if self.speedups else None,
                "exchanges_saved": self.exchanges_saved, "shadow_runs": self.shadow_runs,
                "measured_saved_s": round(self.shadow_saved_ms / 1e3, 3),
                "estimated_saved_s": round(self.estimated_saved_ms / 1e3, 3), "timed_runs": self.timed,
                "shadow_mismatches": self.mismatches}


@dataclass
class Report:
    records: int = 0
    malformed: int = 0
    outcomes: Counter = field(default_factory=Counter)
    refusals: Counter = field(default_factory=Counter)
    rules: dict = field(default_factory=lambda: defaultdict(RuleSummary))
    templates: set = field(default_factory=set)
    rewritten_templates: set = field(default_factory=set)
    catalogs: Counter = field(default_factory=Counter)
    decision_ms: list = field(default_factory=list)

    def add(self, r: dict) -> None:
        self.records += 1
        out = r.get("outcome", "?")
        self.outcomes[out] += 1
        self.catalogs[f"{r.get('catalog_version')} ({str(r.get('catalog_checksum'))[:19]})"] += 1
        if out in ("rewritten", "unchanged", "failed_safe"):
            self.templates.add(r.get("query_hash"))
            if isinstance(r.get("decision_ms"), (int, float)):
                self.decision_ms.append(float(r["decision_ms"]))
        if out == "rewritten":
            self.rewritten_templates.add(r.get("query_hash"))
            for rid in r.get("rules") or []:
                s = self.rules[rid]
                s.rewritten += 1
                if r.get("predicted_speedup"):
                    s.speedups.append(float(r["predicted_speedup"]))
                if r.get("exchanges_before") is not None and r.get("exchanges_after") is not None:
                    s.exchanges_saved += int(r["exchanges_before"]) - int(r["exchanges_after"])
                if isinstance(r.get("run_ms"), (int, float)) and r.get("predicted_speedup"):
                    s.timed += 1
                    s.estimated_saved_ms += float(r["run_ms"]) * (float(r["predicted_speedup"]) - 1.0)
        elif out in ("unchanged", "failed_safe"):
            self.refusals[r.get("reason_class") or "unknown"] += 1
        elif out in ("shadow_equal", "shadow_mismatch"):
            sh = r.get("shadow") or {}
            for rid in r.get("rules") or []:
                s = self.rules[rid]
                s.shadow_runs += 1
                s.mismatches += out == "shadow_mismatch"
                if out == "shadow_equal" and "original_ms" in sh and "rewritten_ms" in sh:
                    s.shadow_saved_ms += float(sh["original_ms"]) - float(sh["rewritten_ms"])

    def to_json(self) -> dict:
        shadow = sum(s.shadow_runs for s in self.rules.values())
        ms = sorted(self.decision_ms)
        return {"records": self.records, "malformed_lines": self.malformed, "outcomes": dict(self.outcomes),
                "templates": len(self.templates), "templates_rewritten": len(self.rewritten_templates),
                "refusals": dict(self.refusals.most_common()), "catalogs": dict(self.catalogs),
                "decision_ms_p50": ms[len(ms) // 2] if ms else None,
                "decision_ms_p99": ms[min(len(ms) - 1, int(len(ms) * 0.99))] if ms else None,
                "measured_saved_s": round(sum(s.shadow_saved_ms for s in self.rules.values()) / 1e3, 3),
                "estimated_saved_s": round(sum(s.estimated_saved_ms for s in self.rules.values()) / 1e3, 3),
                "timed_runs": sum(s.timed for s in self.rules.values()),
                "shadow_runs": shadow,
                "rules": {k: v.to_json() for k, v in sorted(self.rules.items())}}


def read(path: str) -> Report:
    p = Path(path)
    if not p.is_file():
        raise SuperopError(f"decision log not found: {p}")
    rep = Report()
    with p.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except ValueError:
                rep.malformed += 1
                continue
            if not isinstance(r, dict):
                rep.malformed += 1
                continue
            rep.add(r)
    return rep


def format_report(rep: Report, path: str) -> str:
    j = rep.to_json()
    o = j["outcomes"]
    decided = sum(o.get(k, 0) for k in ("rewritten", "unchanged", "failed_safe"))
    lines = [f"{path}: {j['records']} records" + (f" ({j['malformed_lines']} malformed lines skipped)"
                                                   if j["malformed_lines"] else ""),
             f"decisions: {decided} ({o.get('rewritten', 0)} rewritten, {o.get('unchanged', 0)} unchanged, "
             f"{o.get('failed_safe', 0)} failed safe) over {j['templates']} query templates "
             f"({j['templates_rewritten']} rewritten); {o.get('disabled', 0)} while disabled"]
    if j["decision_ms_p50"] is not None:
        lines.append(f"decision time: p50 {j['decision_ms_p50']:.1f} ms, p99 {j['decision_ms_p99']:.1f} ms")
    if j["refusals"]:
        lines.append("not rewritten, by reason: " + ", ".join(f"{k} {v}" for k, v in j["refusals"].items()))
    shadow = j["shadow_runs"]
    untimed = o.get("rewritten", 0) - j["timed_runs"]
    lines.append(f"time saved: {j['measured_saved_s']:.3f} s measured by shadow runs ({shadow} comparisons); "
                 f"{j['estimated_saved_s']:.3f} s estimated from predicted speed-ups of {j['timed_runs']} timed "
                 f"runs; {untimed} rewritten queries run by the caller were not timed")
    if j["rules"]:
        w = max([32] + [len(r) for r in j["rules"]])
        lines.append(f"{'rule':{w}s} {'rewritten':>9s} {'pred. x':>8s} {'exch. saved':>11s} "
                     f"{'shadow':>6s} {'meas. s':>8s} {'est. s':>8s} {'mismatch':>8s}")
        for rid, s in j["rules"].items():
            sp = f"{s['predicted_speedup_median']:.2f}" if s["predicted_speedup_median"] else "-"
            lines.append(f"{rid:{w}s} {s['rewritten']:9d} {sp:>8s} {s['exchanges_saved']:11d} "
                         f"{s['shadow_runs']:6d} {s['measured_saved_s']:8.3f} {s['estimated_saved_s']:8.3f} "
                         f"{s['shadow_mismatches']:8d}")
    if o.get("shadow_mismatch"):
        lines.append(f"WARNING: {o['shadow_mismatch']} shadow comparisons found other rows than the original: "
                     "those rules were disabled in their sessions; report them")
    return "\n".join(lines)
