"""Generic log writing: templates (from the families' planted examples and near-misses,
and noise) are executed with skewed popularity, fresh literals, failures and junk lines,
as Databricks ``system.query.history`` rows; the ground truth records, per planted
variant and near-miss, the templates and successful executions mining must find."""
from __future__ import annotations

import gzip
import json
import math
import random
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Optional

from ...families import REGISTRY, Family, ReasonCode, get
from ...families.kit.planting import ExampleSpec
from ...storage import atomic_write_json, atomic_writer
from .noise import BAD_SQL, JUNK_LINES, NON_SQL, noise_templates
from .schema import mining_schema
from .sqlkit import Kit, Template

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
BUNDLED_LOG = DATA_DIR / "query_log.jsonl.gz"
BUNDLED_TRUTH = DATA_DIR / "query_log.truth.json"


def planted_examples() -> list[ExampleSpec]:
    """Every registered family's planted variants, in their bundled-log order."""
    specs = sorted((s for f in REGISTRY for s in f.examples()), key=lambda s: s.seq)
    seqs = [s.seq for s in specs]
    if len(set(seqs)) != len(seqs):
        raise ValueError(f"two planted examples share a position: {sorted(seqs)}")
    return specs


def planted_near_misses() -> list[tuple[int, Family, ReasonCode, str]]:
    """Every registered family's planted near-misses, in their bundled-log order."""
    return sorted(((seq, f, r, d) for f in REGISTRY for seq, r, d in f.near_miss_examples()),
                  key=lambda x: x[0])


@dataclass
class GeneratedLog:
    lines: list[str]
    truth: dict


def generate_log(n_queries: int = 3000, seed: int = 7, templates_per_variant=(2, 5),
                 planted_fraction: float = 0.5, near_miss_fraction: float = 0.06,
                 junk_fraction: float = 0.03, failed_fraction: float = 0.03,
                 start: Optional[datetime] = None, sink: Optional[Callable[[str], None]] = None,
                 dashboard_runs: Optional[int] = None) -> GeneratedLog:
    """A query log of about ``n_queries`` lines (JSON objects, one per line) and its truth.
    With ``sink`` every line is handed to it (streaming, for large logs) instead of kept.
    Each planted dashboard (``ExampleSpec.dashboard``: one template) runs ``dashboard_runs``
    times (default: n_queries / 75, 40 in the bundled log's 3000) on top of the
    ``n_queries``, at random places, always successfully."""
    if dashboard_runs is None:
        dashboard_runs = max(2, n_queries // 75)
    rng = random.Random(seed)
    start = start or datetime(2026, 11, 1, tzinfo=timezone.utc)
    book = _Truth()
    ts = _draw_templates(rng, seed, book, templates_per_variant)
    picks, counts = _schedule(rng, ts, n_queries, planted_fraction, near_miss_fraction, junk_fraction,
                              failed_fraction)
    lines: list[str] = []
    total = _execute(_Executions(rng, seed, sink or lines.append, start, book, ts.dashboards, ts.dash_rng,
                                 dashboard_runs), picks, counts.junk)
    for gid, g in book.groups().items():
        g["templates"] = len(book.seen.get(gid, ()))
        g["example_sql"] = next((t.render(random.Random(0)) for t in ts.all
                                 if t.group == gid or gid in t.also), "")
        g.pop("_keys", None)
        g.pop("_also", None)
    truth = {
        "generator": {"n_queries": n_queries, "seed": seed, "version": 2,
                      "dashboard_runs": dashboard_runs},
        "lines": total + len(ts.dashboards) * dashboard_runs,
        "junk_lines": counts.junk,
        "failed_statements": counts.failed,
        "variants": sorted(book.variants.values(), key=lambda v: v["variant_id"]),
        "near_misses": list(book.near.values()),
        "noise_templates": len(ts.noise),
        "schema": mining_schema(),
    }
    return GeneratedLog(lines, truth)


@dataclass
class _Truth:
    """The ground truth being collected: one entry per planted variant and per near-miss
    (the JSON records of the truth file; ``_keys``/``_also`` are dropped at the end), and
    per entry the templates that ran successfully."""
    variants: dict[tuple, dict] = field(default_factory=dict)
    near: dict[str, dict] = field(default_factory=dict)
    seen: dict[str, set] = field(default_factory=dict)

    def near_entry(self, fam: Family, reason: ReasonCode, desc: str) -> dict:
        return self.near.setdefault(reason.value, {
            "near_miss_id": f"NM-{reason.value}", "attempted_family": fam.name,
            "reason": reason.value, "description": desc, "templates": 0, "executions": 0,
            "_keys": []})

    def variant_entry(self, spec: ExampleSpec) -> dict:
        fam = get(spec.family)
        expected = fam.expected(spec)
        also = tuple(self.near_entry(fam, e.reason, e.reason.text)["near_miss_id"]
                     for e in expected if e.reason is not None)
        cand = next(e for e in expected if e.status == "candidate")
        vkey = (fam.name, cand.join_kind, cand.shape)
        v = self.variants.get(vkey)
        if v is None:
            v = self.variants[vkey] = {
                "variant_id": f"{fam.name}-{len(self.variants) + 1:02d}", "family": fam.name,
                "join_kind": cand.join_kind, "shape": cand.shape, "n_inputs": cand.n_inputs,
                "table2": [], "notes": [], "agg": spec.agg, "table": spec.table,
                "dashboard": spec.dashboard, "templates": 0, "executions": 0, "failed": 0,
                "_keys": [], "_also": also}
        if spec.table2:
            v["table2"].append(spec.table2)
        if spec.note:
            v["notes"].append(spec.note)
        return v

    def groups(self) -> dict[str, dict]:
        out = {v["variant_id"]: v for v in self.variants.values()}
        out.update({nm["near_miss_id"]: nm for nm in self.near.values()})
        return out

    def account(self, t: Template, status: str, groups: dict[str, dict]) -> None:
        for gid in (t.group, *t.also):
            if gid not in groups:
                continue
            g = groups[gid]
            if status == "FINISHED":
                g["executions"] += 1
                self.seen.setdefault(gid, set()).add(t.key)
            else:
                g["failed"] = g.get("failed", 0) + 1


@dataclass
class _Templates:
    """The log's templates by kind (``all``: every planted one, dashboards last) and the
    generator the dashboards were drawn from (it places their runs too)."""
    planted: list[Template]
    near: list[Template]
    noise: list[Template]
    dashboards: list[Template]
    all: list[Template]
    dash_rng: random.Random


def _draw_templates(rng: random.Random, seed: int, book: _Truth, templates_per_variant) -> _Templates:
    """Every family's planted variants (a few distinct templates each) and near-misses,
    the noise templates, and the dashboards (one template each, from their own generator)."""
    templates: list[Template] = []
    dashboards = [s for s in planted_examples() if s.dashboard]
    for spec in planted_examples():
        if spec.dashboard:      # drawn from their own generator below: the rest of the log
            continue            # stays exactly what it was before dashboards were planted
        fam = get(spec.family)
        v = book.variant_entry(spec)
        also = v["_also"]
        lo, hi = templates_per_variant
        want = rng.randint(lo, hi)
        seen = set(v["_keys"])
        tries = 0
        while want > 0 and tries < 40:
            tries += 1
            kit = Kit.for_spec(spec, rng)
            sql = fam.plant(spec, kit)
            if sql in seen:
                continue
            seen.add(sql)
            v["_keys"].append(sql)
            templates.append(Template(sql, kit.slots, v["variant_id"], "variant", also))
            want -= 1
    for _, fam, reason, desc in planted_near_misses():
        nm = book.near_entry(fam, reason, desc)
        seen = set()
        for _ in range(40):
            if len(seen) >= 3:
                break
            kit = Kit(rng)
            sql = fam.plant_near_miss(reason, kit)
            if sql in seen:
                continue
            seen.add(sql)
            templates.append(Template(sql, kit.slots, nm["near_miss_id"], "near_miss"))
    noise = []
    seen = set()
    for sql, slots in noise_templates(rng, 60):
        if sql in seen:
            continue
        seen.add(sql)
        noise.append(Template(sql, slots, "noise", "noise"))

    planted_t = [t for t in templates if t.kind == "variant"]
    near_t = [t for t in templates if t.kind == "near_miss"]
    dash_rng = random.Random(seed + 2)
    dash_t = []
    for spec in dashboards:
        v = book.variant_entry(spec)
        # a dashboard is plain aggregates: redraw a COUNT(DISTINCT), which is buffering and
        # not admitted yet (issue 12 §2), so each dashboard can become its family's rule
        for _ in range(40):
            kit = Kit.for_spec(spec, dash_rng)
            sql = get(spec.family).plant(spec, kit)
            if "DISTINCT" not in sql.upper():
                break
        dash_t.append(Template(sql, kit.slots, v["variant_id"], "variant", v["_also"]))
    templates += dash_t
    return _Templates(planted_t, near_t, noise, dash_t, templates, dash_rng)


@dataclass
class _Counts:
    junk: int
    failed: int


def _schedule(rng: random.Random, ts: _Templates, n_queries: int, planted_fraction: float,
              near_miss_fraction: float, junk_fraction: float, failed_fraction: float
              ) -> tuple[list[tuple[Template, str]], _Counts]:
    """Which template runs at each line, with its status (every template at least once,
    skewed popularity, failed/canceled executions), shuffled."""
    n_junk = max(1, int(n_queries * junk_fraction))
    n_failed = max(1, int(n_queries * failed_fraction))
    n_planted = max(len(ts.planted), int(n_queries * planted_fraction))
    n_near = max(len(ts.near), int(n_queries * near_miss_fraction))
    n_noise = max(len(ts.noise), n_queries - n_planted - n_near - n_junk - n_failed)

    def weights(group):  # skewed popularity: some templates run much more often
        return [1.0 + 4.0 * rng.random() ** 3 for _ in group]

    picks: list[tuple[Template, str]] = []
    for group, n in ((ts.planted, n_planted), (ts.near, n_near), (ts.noise, n_noise)):
        picks += [(t, "FINISHED") for t in group]                   # every template at least once
        picks += [(t, "FINISHED") for t in rng.choices(group, weights(group), k=n - len(group))]
    picks += [(t, rng.choice(["FAILED", "CANCELED"]))
              for t in rng.choices(ts.planted + ts.noise, k=n_failed)]
    rng.shuffle(picks)
    return picks, _Counts(n_junk, n_failed)


@dataclass
class _Executions:
    """What writing the lines needs: ``rng`` places the junk lines, the executions and the
    dashboards' runs draw from their own generators (seeded from ``seed``; ``dash_rng``
    places the dashboards' runs), the line sink, the clock's start, the truth being
    counted and the dashboards."""
    rng: random.Random
    seed: int
    emit: Callable[[str], None]
    start: datetime
    book: _Truth
    dashboards: list[Template]
    dash_rng: random.Random
    dashboard_runs: int


def _execute(x: _Executions, picks: list[tuple[Template, str]], n_junk: int) -> int:
    """Every line in order: the picked executions with fresh literals, junk lines at random
    places, the dashboards' runs between them; each execution counted in the truth. The
    number of lines besides the dashboards' runs."""
    emit, book = x.emit, x.book
    exec_rng = random.Random(x.seed + 1)
    users = [f"{u}@example.com" for u in ("ana", "bo", "chen", "dev", "eli", "fay", "etl-bot")]
    clock = x.start
    groups = book.groups()
    junk_at = set(x.rng.sample(range(len(picks) + n_junk), n_junk))
    pi = 0
    total = len(picks) + n_junk
    # dashboard runs land between the other lines, drawn from their own generators
    dash_at: dict[int, list[Template]] = {}
    for t in x.dashboards:
        for p in x.dash_rng.choices(range(total + 1), k=x.dashboard_runs):
            dash_at.setdefault(p, []).append(t)
    dash_exec = random.Random(x.seed + 3)

    def run_dashboards(pos: int) -> None:
        nonlocal clock
        for t in dash_at.get(pos, ()):
            clock += timedelta(milliseconds=dash_exec.randint(50, 4000))
            emit(json.dumps(_row(dash_exec, t.render(dash_exec), clock, "FINISHED", users, 6.0)))
            book.account(t, "FINISHED", groups)

    for pos in range(total):
        run_dashboards(pos)
        clock += timedelta(milliseconds=exec_rng.randint(50, 4000))
        if pos in junk_at:
            r = exec_rng.random()
            if r < 0.45:
                emit(exec_rng.choice(JUNK_LINES))
            else:
                txt = exec_rng.choice(NON_SQL if r < 0.75 else BAD_SQL)
                emit(json.dumps(_row(exec_rng, txt, clock, "FINISHED", users, 0.2)))
            continue
        t, status = picks[pi]
        pi += 1
        sql = t.render(exec_rng)
        heavy = 1.0 if t.kind == "noise" else 6.0
        emit(json.dumps(_row(exec_rng, sql, clock, status, users, heavy)))
        book.account(t, status, groups)
    run_dashboards(total)
    return total


def _row(rng: random.Random, sql: str, clock: datetime, status: str, users, heavy: float) -> dict:
    # Log-normal durations and bytes; planted diamonds read more (they are the costly jobs).
    dur = int(math.exp(rng.gauss(math.log(2500 * heavy), 0.8)))
    read = int(math.exp(rng.gauss(math.log(2e8 * heavy), 1.0)))
    return {
        "statement_id": str(uuid.UUID(int=rng.getrandbits(128))),
        "statement_text": sql,
        "start_time": clock.isoformat(),
        "end_time": (clock + timedelta(milliseconds=dur)).isoformat(),
        "total_duration_ms": dur,
        "executed_by": rng.choice(users),
        "execution_status": status,
        "read_bytes": read,
        "shuffle_bytes": int(read * rng.uniform(0.05, 0.6)),
    }


def write_log(path: str | Path, n_queries: int = 3000, seed: int = 7,
              truth_path: str | Path | None = None, **kw) -> dict:
    """Write a generated log (``.gz`` suffix -> gzip), streamed through a temp file that is
    renamed into place (mode 0644 under the usual umask), and, optionally, its ground truth."""
    path = Path(path)
    with atomic_writer(path) as raw:
        # the gzip header names the final file (not the temp file) and has no time: the same
        # seed gives the same bytes
        f = gzip.GzipFile(filename=path.name, mode="wb", fileobj=raw, mtime=0) \
            if str(path).endswith(".gz") else raw
        g = generate_log(n_queries, seed, sink=lambda line: f.write(
            line.encode("utf-8", "surrogateescape") + b"\n"), **kw)
        if f is not raw:
            f.close()          # writes the gzip trailer; leaves raw open
    if truth_path:
        atomic_write_json(truth_path, g.truth)
    return g.truth


def load_truth(path: str | Path = BUNDLED_TRUTH) -> dict:
    return json.loads(Path(path).read_text())
