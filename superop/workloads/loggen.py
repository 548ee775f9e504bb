"""Realistic query-log generator for the mining job, with its ground truth.

The log looks like Databricks ``system.query.history`` rows (statement_id, statement_text,
start_time, end_time, total_duration_ms, executed_by, execution_status, read_bytes,
shuffle_bytes) over the paper's example tables ``ops``, ``mailbox`` and ``accounts``.

What is planted
---------------
* super-operator *variants*: Diamond UnionAll (2..4-way), Diamond Join (inner / left / right /
  full / semi, n-way), Min & Join (MIN/MAX, inner/left/right); every shape of Table 2 of the
  super-operator paper; σ/π/ρ decorations in varying orders on every abstract edge.
  A variant is identified by ``(family, join_kind, shape)`` where ``shape`` is the paper's
  post-order string as :func:`superop.ir.shape` writes it. Each variant is instantiated by
  several distinct *templates* (different aggregates, columns, aliases, predicate columns)
  and every template runs several times with fresh random literals.
* near-misses that look like diamonds but are not super-operators (different grouping keys,
  join on non-key columns or on a subset of the keys, two different tables, a filter below
  the MIN of a Min & Join, a non-MIN/MAX aggregate joined back).
* noise: dimension joins, plain scans, top-k, windows, TPC-H queries when
  :mod:`superop.workloads.tpch` is available; malformed lines, non-SQL statements, SQL that
  does not parse, unknown tables and failed/canceled executions.

The ground truth records, per variant, the expected shape string (built by the generator from
its own decoration lists, not by the IR), the number of distinct templates and the number of
successful executions, so the mining tests can assert exact support counts.

Literals inside one query are drawn without repetition, so two branches of a diamond never
become structurally identical by chance (that would merge them into one shared node).
"""
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

# --------------------------------------------------------------------------------------------
# Schema of the tables the log reads (the paper's example tables; docs/DEVELOPING.md)
# --------------------------------------------------------------------------------------------
LOG_SCHEMA: dict[str, dict[str, str]] = {
    "ops": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"},
    "mailbox": {"mailboxguid": "string", "ts": "bigint", "eventid": "string",
                "activityid": "string", "machinename": "string", "eventname": "string"},
    "accounts": {"a": "int", "region": "string", "tier": "int"},
}

NUMERIC = ("int", "bigint", "double", "float", "smallint", "tinyint")

DATA_DIR = Path(__file__).parent / "data"
BUNDLED_LOG = DATA_DIR / "query_log.jsonl.gz"
BUNDLED_TRUTH = DATA_DIR / "query_log.truth.json"

OP_KINDS = ["read", "write", "delete", "list", "copy", "stat", "append", "rename"]
EVENTS = ["Created", "Deleted", "Moved", "Read", "Flagged", "Archived", "Synced", "Purged"]
REGIONS = ["us", "eu", "apac", "latam", "mea", "cn"]


def mining_schema() -> dict[str, dict[str, str]]:
    """Schema of every table a generated log may reference (LOG_SCHEMA + TPC-H if present)."""
    out = {k: dict(v) for k, v in LOG_SCHEMA.items()}
    try:
        from . import tpch  # written by another engineer; optional
        out.update({k.lower(): {c.lower(): t for c, t in v.items()}
                    for k, v in getattr(tpch, "TPCH_SCHEMA", {}).items()})
    except Exception:  # pragma: no cover - tpch module absent or broken
        pass
    return out


# --------------------------------------------------------------------------------------------
# Templates with literal slots
# --------------------------------------------------------------------------------------------
class _T:
    """Builds one template: SQL text with literal slots ``\\x00i\\x00`` and their kinds."""

    def __init__(self):
        self.slots: list[str] = []

    def lit(self, kind: str) -> str:
        self.slots.append(kind)
        return f"\x00{len(self.slots) - 1}\x00"


@dataclass
class Template:
    key: str                     # the text with slots: identity of the template
    slots: list[str]
    group: str                   # variant id / near-miss id / noise kind
    kind: str                    # "variant" | "near_miss" | "noise"

    def render(self, rng: random.Random) -> str:
        used_n: set[int] = set()
        used_s: set[str] = set()
        vals = []
        for k in self.slots:
            vals.append(_literal(k, rng, used_n, used_s))
        out = self.key
        for i, v in enumerate(vals):
            out = out.replace(f"\x00{i}\x00", v, 1)
        return out


def _literal(kind: str, rng: random.Random, used_n: set, used_s: set) -> str:
    if kind in ("int", "small", "big"):
        hi = {"int": 1000, "small": 50, "big": 10_000_000}[kind]
        while True:
            v = rng.randint(1, hi)
            if v not in used_n:
                used_n.add(v)
                return str(v)
    if kind in ("op", "event", "region"):
        vocab = {"op": OP_KINDS, "event": EVENTS, "region": REGIONS}[kind]
        free = [w for w in vocab if w not in used_s] or vocab
        w = rng.choice(free)
        used_s.add(w)
        return f"'{w}'"
    if kind in ("oplist", "eventlist"):
        vocab = OP_KINDS if kind == "oplist" else EVENTS
        ws = rng.sample(vocab, rng.randint(1, 4))
        return ", ".join(f"'{w}'" for w in ws)
    raise ValueError(kind)


# --------------------------------------------------------------------------------------------
# Relations and σ/π/ρ decorations
# --------------------------------------------------------------------------------------------
@dataclass
class _Rel:
    src: str                         # FROM item text (a table name or a CTE name)
    sql: Optional[str]               # full SELECT when this is a derived relation
    cols: dict[str, str]             # name -> type, in order
    keys: list[str]                  # current names of the grouping keys
    table: str                       # base table

    def from_item(self, alias: str) -> str:
        return self.src if self.sql is None else f"({self.sql}) {alias}"


class _Names:
    def __init__(self):
        self.n = 0

    def alias(self) -> str:
        self.n += 1
        return f"t{self.n}"


def _numeric_cols(rel: _Rel, exclude=()) -> list[str]:
    return [c for c, t in rel.cols.items() if t in NUMERIC and c not in exclude]


def _pred(t: _T, rel: _Rel, rng: random.Random, key_only: bool = False) -> str:
    """A predicate over rel's columns with literal slots (choose first, then register slots)."""
    if key_only:
        k = rel.keys[0]
        if rel.cols[k] in NUMERIC:
            form = rng.randrange(3)
            if form == 0:
                return f"{k} > {t.lit('small')}"
            if form == 1:
                return f"{k} <> {t.lit('small')}"
        return f"{k} IS NOT NULL"
    nums = _numeric_cols(rel, rel.keys)
    strs = [c for c, ty in rel.cols.items() if ty == "string" and c not in rel.keys]
    if strs and (rng.random() < 0.4 or not nums):
        c = rng.choice(strs)
        vocab = "event" if rel.table == "mailbox" else "op"
        form = rng.randrange(3)
        if form == 0:
            return f"{c} = {t.lit(vocab)}"
        if form == 1:
            return f"{c} IN ({t.lit(vocab + 'list')})"
        return f"{c} <> {t.lit(vocab)}"
    if not nums:
        return f"{rel.keys[0]} IS NOT NULL"
    c = rng.choice(nums)
    form = rng.randrange(3)
    if form == 0:
        return f"{c} < {t.lit('int')}"
    if form == 1:
        return f"{c} >= {t.lit('int')}"
    return f"{c} BETWEEN {t.lit('small')} AND {t.lit('int')}"


def _sigma(t: _T, rel: _Rel, rng, names: _Names, key_only=False) -> _Rel:
    a = names.alias()
    p = _pred(t, rel, rng, key_only)
    return _Rel(a, f"SELECT * FROM {rel.from_item(a)} WHERE {p}", dict(rel.cols), list(rel.keys),
                rel.table)


def _pi(t: _T, rel: _Rel, rng, names: _Names, above: bool, tag: str = "") -> _Rel:
    """A projection that computes a new column (never an identity or a pure rename)."""
    a = names.alias()
    nums = _numeric_cols(rel, rel.keys)
    cols = dict(rel.cols)
    items = [c for c in rel.cols]
    if above:
        # keep the width (keys + measures): transform the first measure in place
        m = nums[0] if nums else None
        if m is None:
            new = f"{rel.keys[0]}_n"
            exprs = [c for c in items] + [f"1 AS {new}"]
            cols[new] = "int"
        else:
            form = rng.randrange(3)
            e = (f"{m} * 2" if form == 0 else f"{m} + {t.lit('small')}" if form == 1
                 else f"COALESCE({m}, 0)")
            exprs = [f"{e} AS {m}" if c == m else c for c in items]
            cols[m] = "bigint" if rel.cols[m] in ("int", "bigint") else rel.cols[m]
    else:
        new = f"x{tag}{len(cols)}"
        if len(nums) >= 2:
            x, y = rng.sample(nums, 2)
            e = rng.choice([f"{x} + {y}", f"{x} * {y}", f"GREATEST({x}, {y})"])
        elif nums:
            e = rng.choice([f"{nums[0]} * 1024", f"ABS({nums[0]})"])
        else:
            e = f"LENGTH({rel.keys[0]})"
        drop = [c for c in nums[2:]] if rng.random() < 0.3 else []
        exprs = [c for c in items if c not in drop] + [f"{e} AS {new}"]
        for c in drop:
            cols.pop(c)
        cols[new] = "bigint"
    return _Rel(a, f"SELECT {', '.join(exprs)} FROM {rel.from_item(a)}", cols, list(rel.keys),
                rel.table)


_RENAMES = {"a": "acct", "b": "bm", "c": "cm", "d": "kind", "s": "size_kb", "n": "cnt",
            "mailboxguid": "mbx", "ts": "t_ms", "eventname": "evt", "machinename": "host",
            "acct": "account", "cnt": "total", "size_kb": "kb"}


def _rho(t: _T, rel: _Rel, rng, names: _Names, rename_key: bool, tag: str = "") -> _Rel:
    a = names.alias()
    victims = list(rel.keys) if rename_key else [c for c in rel.cols if c not in rel.keys]
    if not victims:
        victims = list(rel.keys)
    v = rng.choice(victims)
    new = _RENAMES.get(v, f"{v}_r") + tag
    while new in rel.cols:
        new += "_"
    cols, exprs = {}, []
    for c, ty in rel.cols.items():
        if c == v:
            exprs.append(f"{c} AS {new}")
            cols[new] = ty
        else:
            exprs.append(c)
            cols[c] = ty
    keys = [new if k == v else k for k in rel.keys]
    return _Rel(a, f"SELECT {', '.join(exprs)} FROM {rel.from_item(a)}", cols, keys, rel.table)


AGGS = ["COUNT(*)", "SUM({c})", "MAX({c})", "MIN({c})", "AVG({c})", "COUNT(DISTINCT {c})"]


def _gamma(t: _T, rel: _Rel, rng, names: _Names, agg: str, measure: str,
           where_pred: Optional[str] = None, having: Optional[str] = None) -> _Rel:
    a = names.alias()
    keys = ", ".join(rel.keys)
    w = f" WHERE {where_pred}" if where_pred else ""
    h = f" HAVING {having}" if having else ""
    sql = f"SELECT {keys}, {agg} AS {measure} FROM {rel.from_item(a)}{w} GROUP BY {keys}{h}"
    cols = {k: rel.cols[k] for k in rel.keys}
    cols[measure] = "bigint" if agg.startswith("COUNT") else "double" if agg.startswith("AVG") \
        else "bigint"
    return _Rel(a, sql, cols, list(rel.keys), rel.table)


def _agg_choices(rel: _Rel, rng, n: int) -> list[str]:
    """n different aggregate expressions over rel (so diamond branches never coincide)."""
    nums = _numeric_cols(rel, rel.keys)
    pool = ["COUNT(*)"] + [f.format(c=c) for f in AGGS[1:] for c in nums]
    if len(pool) < n:
        pool += [f"COUNT({c})" for c in rel.cols if c not in rel.keys]
    return rng.sample(pool, n)


def _branch(t: _T, base: _Rel, below: str, above: str, agg: str, measure: str, rng,
            names: _Names, mj_key_filter: bool = False, tag: str = "") -> _Rel:
    """base -> below decorations -> γ -> above decorations. ``below``/``above`` are strings of
    σ/π/ρ symbols in bottom-up order (the paper's post-order)."""
    rel = base
    ops = list(below)
    # Optionally fold a trailing σ into the aggregate's WHERE (same shape, different text).
    fold_where = bool(ops) and ops[-1] == "σ" and rng.random() < 0.5
    if fold_where:
        ops = ops[:-1]
    for o in ops:
        if o == "σ":
            rel = _sigma(t, rel, rng, names, key_only=mj_key_filter)
        elif o == "π":
            rel = _pi(t, rel, rng, names, above=False, tag=tag)
        elif o == "ρ":
            rel = _rho(t, rel, rng, names, rename_key=rng.random() < 0.5, tag=tag)
    agg_sql = agg.replace("{m}", "")
    where = _pred(t, rel, rng, key_only=mj_key_filter) if fold_where else None
    aops = list(above)
    having = None
    if aops and aops[0] == "σ" and rng.random() < 0.5:
        having = f"{measure} > {t.lit('small')}"
        aops = aops[1:]
    # pick the aggregate over the columns available at this point
    rel = _gamma(t, rel, rng, names, _fit_agg(agg_sql, rel), measure, where, having)
    for o in aops:
        measure = [c for c in rel.cols if c not in rel.keys][0]   # current name (after ρ)
        if o == "σ":
            a = names.alias()
            form = rng.randrange(3)
            p = (f"{measure} > {t.lit('small')}" if form == 0 else f"{measure} IS NOT NULL"
                 if form == 1 else f"{measure} <> {t.lit('small')}")
            rel = _Rel(a, f"SELECT * FROM {rel.from_item(a)} WHERE {p}", dict(rel.cols),
                       list(rel.keys), rel.table)
        elif o == "π":
            rel = _pi(t, rel, rng, names, above=True)
        elif o == "ρ":
            rel = _rho(t, rel, rng, names, rename_key=rng.random() < 0.5)
    return rel


def _fit_agg(agg: str, rel: _Rel) -> str:
    """Re-target an aggregate at a column that exists after the decorations below γ."""
    import re
    m = re.search(r"\(\s*(?:DISTINCT\s+)?(\w+)\s*\)", agg)
    if not m or m.group(1) == "*" or m.group(1) in rel.cols:
        return agg
    nums = _numeric_cols(rel, rel.keys)
    repl = nums[0] if nums else next(c for c in rel.cols if c not in rel.keys)
    return agg[:m.start(1)] + repl + agg[m.end(1):]


# --------------------------------------------------------------------------------------------
# Variant specifications
# --------------------------------------------------------------------------------------------
@dataclass
class VariantSpec:
    family: str                          # DU | DJ | MJ
    branches: list[tuple[str, str]]      # (below, above) per aggregate branch (DU/DJ); for MJ
    #                                      the aggregate branch then the plain branch ("", path)
    join_kind: str = ""                  # inner | left | right | full | semi ('' for DU)
    table: str = "ops"
    keys: tuple = ("a",)
    table2: Optional[int] = None         # row of Table 2 this reproduces
    mj_agg: str = "MIN"
    mj_agg_first: bool = True            # MJ: aggregate branch is the left join input
    mj_extra_eq: bool = False            # MJ: also join on the min value (arg-min rows)
    cte_filter: bool = False             # the shared input is a filtered CTE
    note: str = ""

    def expected_shape(self) -> str:
        def seg(below, core, above):
            parts = [p for p in (below, core, above) if p]
            return "|".join(parts)
        sym = {"inner": "⋈", "left": "⟕", "right": "⟖", "full": "⟗", "semi": "⋉"}
        if self.family == "DU":
            return "(" + ", ".join(seg(b, "γ", a) for b, a in self.branches) + ")∪"
        if self.family == "DJ":
            s = seg(*self._ba(0))
            for i in range(1, len(self.branches)):
                s = f"({s}, {seg(*self._ba(i))}){sym[self.join_kind]}"
            return s
        agg_b, agg_a = self.branches[0]
        plain = self.branches[1][1]
        parts = [seg(agg_b, "γ", agg_a), plain]
        if not self.mj_agg_first:
            parts.reverse()
        return f"({parts[0]}, {parts[1]}){sym[self.join_kind]}"

    def _ba(self, i):
        b, a = self.branches[i]
        return b, "γ", a

    @property
    def variant_key(self) -> tuple:
        return (self.family, self.join_kind if self.family != "DU" else "", self.expected_shape())


def _variant_specs() -> list[VariantSpec]:
    V = VariantSpec
    specs = [
        # ---- Table 2, the rows the paper lists (post-order, bottom-up decorations) --------
        V("DU", [("σπ", "σ"), ("σ", "πρ")], table2=1),
        V("DJ", [("ρπ", "σ"), ("ρ", "πσ")], "inner", table2=2),
        V("DU", [("π", "σ"), ("π", "σ")], table2=3),
        V("DU", [("ρσπ", ""), ("ρ", "")], table2=4),
        V("DJ", [("σπ", "σ"), ("", "π")], "inner", table2=5),
        V("DU", [("ρ", "σ"), ("σ", "")], table2=6),
        V("DJ", [("π", ""), ("", "πσ")], "inner", table2=7),
        V("DJ", [("σ", "ρ"), ("σ", "")], "inner", table2=8),
        V("DJ", [("σ", "ρ"), ("σ", "")], "inner", table2=12),     # same shape: one variant
        V("DU", [("ρ", "σ"), ("ρ", "")], table2=9),
        V("MJ", [("ρπ", ""), ("", "σρ")], "inner", table2=10),
        V("DU", [("ρ", "σ"), ("", "π")], table2=11),               # listed as DJ with ∪
        V("DJ", [("πσ", "π"), ("σ", "ρ")], "inner", table2=13),
        V("DU", [("ρσρ", ""), ("σ", "")], table2=14),
        V("DU", [("πσ", ""), ("σ", "π")], table2=15),
        # row 16: σ below the MIN is only streamable when it filters whole groups (key only)
        V("MJ", [("σ", "σ"), ("", "σπ")], "inner", table2=16, note="key-only filter below MIN"),
        V("DJ", [("", ""), ("σ", "πσπ")], "inner", table2=17),
        V("DU", [("ρπσ", "ρ"), ("σ", "")], table2=18),
        V("MJ", [("π", "σ"), ("", "σ")], "inner", table2=19),
        V("DU", [("σ", "ρπσπ"), ("σ", "π")], table2=20),
        # ---- cores and the paper's figures -----------------------------------------------
        V("DU", [("", ""), ("", "")], note="Fig. 7 core"),
        V("DU", [("σ", ""), ("σ", "")], note="Fig. 1 cloud-store ops"),
        V("DU", [("", ""), ("σ", "")], table="mailbox", keys=("mailboxguid",),
          note="Fig. 15 mailbox watermarks"),
        V("DU", [("σ", ""), ("σ", ""), ("", "")], note="3-way"),
        V("DU", [("σ", ""), ("σ", "π"), ("ρ", ""), ("", "σ")], note="4-way"),
        V("DU", [("", "σ"), ("σ", "ρ")], cte_filter=True, note="shared filtered CTE input"),
        V("DU", [("σ", ""), ("π", "")], keys=("a", "d"), note="two grouping keys"),
        V("DJ", [("", ""), ("", "")], "inner", note="Fig. 6(b) core"),
        V("DJ", [("σ", ""), ("", "")], "left"),
        V("DJ", [("", ""), ("σ", "")], "right"),
        V("DJ", [("σ", ""), ("σ", "")], "full"),
        V("DJ", [("", ""), ("σ", "")], "semi"),
        V("DJ", [("", ""), ("σ", ""), ("π", "")], "inner", note="3-way"),
        V("DJ", [("σ", ""), ("", "ρ")], "left", keys=("a", "d"), note="two keys"),
        V("DJ", [("", "σ"), ("π", "")], "inner", table="mailbox", keys=("mailboxguid",)),
        V("MJ", [("", ""), ("", "")], "inner", note="Fig. 11 core"),
        V("MJ", [("", ""), ("", "σ")], "inner", mj_agg="MAX", note="Fig. 12, MAX"),
        V("MJ", [("", ""), ("", "")], "left", mj_agg_first=False, note="row-side left join"),
        V("MJ", [("π", ""), ("", "")], "right", mj_agg="MAX"),
        V("MJ", [("", ""), ("", "σ")], "inner", mj_extra_eq=True, note="arg-min rows"),
        V("MJ", [("", ""), ("", "σ")], "inner", table="mailbox", keys=("mailboxguid",),
          mj_agg="MAX", mj_agg_first=False),
    ]
    return specs


NEAR_MISSES = {
    "different_grouping_keys": ("DU", "two aggregates group by different columns"),
    "join_not_on_grouping_keys": ("DJ", "join of two aggregates on measure columns"),
    "join_on_subset_of_keys": ("DJ", "aggregates grouped by (a, d) joined on a only"),
    "different_inputs": ("DU", "the two aggregates read different tables"),
    "filter_below_min_max": ("MJ", "σ on a non-key column below the MIN (Fig. 13)"),
    "aggregate_not_min_max": ("MJ", "a SUM joined back to its input"),
}


# --------------------------------------------------------------------------------------------
# SQL for one template of a spec
# --------------------------------------------------------------------------------------------
def _base(spec: VariantSpec, t: _T, rng) -> tuple[_Rel, str]:
    cols = LOG_SCHEMA[spec.table]
    rel = _Rel(spec.table, None, dict(cols), list(spec.keys), spec.table)
    if spec.cte_filter:
        p = _pred(t, rel, rng)
        return _Rel("base", None, dict(cols), list(spec.keys), spec.table), \
            f"WITH base AS (SELECT * FROM {spec.table} WHERE {p}) "
    return rel, ""


def _measure_names(rng, n) -> list[str]:
    pool = ["n", "total", "cnt", "hi", "lo", "m", "v", "agg", "val", "metric"]
    return rng.sample(pool, n)


def _template_sql(spec: VariantSpec, rng: random.Random) -> tuple[str, list[str]]:
    t = _T()
    names = _Names()
    base, prefix = _base(spec, t, rng)
    if spec.family in ("DU", "DJ"):
        n = len(spec.branches)
        aggs = _agg_choices(base, rng, n)
        ms = _measure_names(rng, n)
        if spec.family == "DU":
            ms = [ms[0]] * n if rng.random() < 0.5 else ms
        rels = [_branch(t, base, b, a, aggs[i], ms[i], rng, names, tag=str(i) if i else "")
                for i, (b, a) in enumerate(spec.branches)]
        if spec.family == "DU":
            body = " UNION ALL ".join(r.sql for r in rels)
            return prefix + body, t.slots
        al = ["l", "r", "x3", "x4"] if rng.random() < 0.5 else ["p", "q", "u", "w"]
        jk = {"inner": rng.choice(["JOIN", "INNER JOIN"]), "left": "LEFT JOIN",
              "right": "RIGHT JOIN", "full": "FULL OUTER JOIN", "semi": "LEFT SEMI JOIN"}
        frm = f"({rels[0].sql}) {al[0]}"
        for i in range(1, n):
            on = " AND ".join(f"{al[0]}.{k0} = {al[i]}.{ki}"
                              for k0, ki in zip(rels[0].keys, rels[i].keys))
            frm += f" {jk[spec.join_kind]} ({rels[i].sql}) {al[i]} ON {on}"
        sel = [f"{al[0]}.{k}" for k in rels[0].keys] + \
              [f"{al[0]}.{c}" for c in rels[0].cols if c not in rels[0].keys]
        if spec.join_kind != "semi":
            for i in range(1, n):
                sel += [f"{al[i]}.{c}" for c in rels[i].cols if c not in rels[i].keys]
        if spec.join_kind in ("right", "full"):
            k, ki = rels[0].keys[0], rels[1].keys[0]
            sel[0] = f"COALESCE({al[0]}.{k}, {al[1]}.{ki}) AS {k}"
        return prefix + f"SELECT {', '.join(sel)} FROM {frm}", t.slots
    # ---- MJ ----
    agg_below, agg_above = spec.branches[0]
    plain_path = spec.branches[1][1]
    nums = _numeric_cols(base, base.keys)
    col = rng.choice(nums)
    m = rng.choice(["mn", "first_v", "lo", "best", "mx"])
    agg_rel = _branch(t, base, agg_below, agg_above, f"{spec.mj_agg}({col})", m, rng, names,
                      mj_key_filter=True)
    row = base
    for o in plain_path:
        if o == "σ":
            row = _sigma(t, row, rng, names)
        elif o == "π":
            row = _pi(t, row, rng, names, above=False, tag="1")
        elif o == "ρ":
            row = _rho(t, row, rng, names, rename_key=rng.random() < 0.5, tag="1")
    ra, ga = rng.choice([("o", "g"), ("r", "mn_t"), ("e", "w")])
    row_item = f"{row.src} {ra}" if row.sql is None else f"({row.sql}) {ra}"
    agg_item = f"({agg_rel.sql}) {ga}"
    on = [f"{ra}.{rk} = {ga}.{gk}" for rk, gk in zip(row.keys, agg_rel.keys)]
    mcol = [c for c in agg_rel.cols if c not in agg_rel.keys][0]
    if spec.mj_extra_eq:
        src_col = col if col in row.cols else _numeric_cols(row, row.keys)[0]
        on.append(f"{ra}.{src_col} = {ga}.{mcol}")
    jk = {"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN"}[spec.join_kind]
    sel = [f"{ra}.{c}" for c in row.cols] + [f"{ga}.{mcol}"]
    if spec.mj_agg_first:
        frm = f"{agg_item} {jk} {row_item} ON {' AND '.join(on)}"
    else:
        frm = f"{row_item} {jk} {agg_item} ON {' AND '.join(on)}"
    return prefix + f"SELECT {', '.join(sel)} FROM {frm}", t.slots


def _near_miss_sql(reason: str, rng: random.Random) -> tuple[str, list[str]]:
    t = _T()
    names = _Names()
    ops = _Rel("ops", None, dict(LOG_SCHEMA["ops"]), ["a"], "ops")
    ms = _measure_names(rng, 2)
    if reason == "different_grouping_keys":
        k2 = rng.choice(["b", "c"])
        r1 = _branch(t, ops, rng.choice(["", "σ"]), "", rng.choice(["COUNT(*)", "SUM(s)"]),
                     ms[0], rng, names)
        o2 = _Rel("ops", None, dict(LOG_SCHEMA["ops"]), [k2], "ops")
        r2 = _branch(t, o2, "σ", "", rng.choice(["COUNT(*)", "MAX(s)"]), ms[1], rng, names)
        return f"{r1.sql} UNION ALL {r2.sql}", t.slots
    if reason == "different_inputs":
        acc = _Rel("accounts", None, dict(LOG_SCHEMA["accounts"]), ["a"], "accounts")
        r1 = _branch(t, ops, rng.choice(["", "σ"]), "", rng.choice(["COUNT(*)", "SUM(s)"]),
                     ms[0], rng, names)
        r2 = _branch(t, acc, rng.choice(["", "σ"]), "", rng.choice(["COUNT(*)", "MAX(tier)"]),
                     ms[1], rng, names)
        return f"{r1.sql} UNION ALL {r2.sql}", t.slots
    if reason in ("join_not_on_grouping_keys", "join_on_subset_of_keys"):
        base = ops if reason == "join_not_on_grouping_keys" else \
            _Rel("ops", None, dict(LOG_SCHEMA["ops"]), ["a", "d"], "ops")
        aggs = _agg_choices(base, rng, 2)
        r1 = _branch(t, base, rng.choice(["", "σ"]), "", aggs[0], ms[0], rng, names)
        r2 = _branch(t, base, rng.choice(["", "σ", "π"]), "", aggs[1], ms[1], rng, names)
        kind = rng.choice(["JOIN", "LEFT JOIN"])
        if reason == "join_not_on_grouping_keys":
            on = f"l.{ms[0]} = r.{ms[1]}"
        else:
            on = f"l.{r1.keys[0]} = r.{r2.keys[0]}"
        return (f"SELECT l.{r1.keys[0]}, l.{ms[0]}, r.{ms[1]} FROM ({r1.sql}) l {kind} "
                f"({r2.sql}) r ON {on}"), t.slots
    if reason in ("filter_below_min_max", "aggregate_not_min_max"):
        col = rng.choice(["b", "c", "s"])
        if reason == "filter_below_min_max":
            agg = f"{rng.choice(['MIN', 'MAX'])}({col})"
            other = rng.choice([c for c in ("b", "c", "s") if c != col] + ["d"])
            filt = f" WHERE {other} > {t.lit('int')}" if other != "d" else \
                f" WHERE d = {t.lit('op')}"
        else:
            agg = f"{rng.choice(['SUM', 'AVG', 'COUNT'])}({col})"
            filt = ""
        m = rng.choice(["mn", "agg_v", "tot"])
        return (f"SELECT o.a, o.b, o.s, g.{m} FROM ops o JOIN (SELECT a, {agg} AS {m} FROM ops"
                f"{filt} GROUP BY a) g ON o.a = g.a"), t.slots
    raise ValueError(reason)


def _noise_templates(rng: random.Random, n: int) -> list[tuple[str, list[str]]]:
    """Other shapes: dimension joins, scans, top-k, windows, single aggregates, TPC-H."""
    out = []
    makers: list[Callable[[], tuple[str, list[str]]]] = []

    def dim_join():
        t = _T()
        agg = rng.choice(["SUM(o.s)", "COUNT(*)", "MAX(o.b)", "AVG(o.c)"])
        return (f"SELECT acc.region, {agg} AS v FROM ops o JOIN accounts acc ON o.a = acc.a "
                f"WHERE acc.tier {rng.choice(['=', '>=', '<'])} {t.lit('small')} "
                f"GROUP BY acc.region"), t.slots

    def scan():
        t = _T()
        c = rng.choice(["b", "c", "s"])
        return (f"SELECT a, {c}, d FROM ops WHERE {c} > {t.lit('int')} AND d = {t.lit('op')}",
                t.slots)

    def topk():
        t = _T()
        c = rng.choice(["b", "c", "s"])
        return f"SELECT a, {c} FROM ops ORDER BY {c} DESC LIMIT {t.lit('small')}", t.slots

    def single_agg():
        t = _T()
        tab = rng.choice(["ops", "mailbox", "accounts"])
        k = {"ops": "a", "mailbox": "machinename", "accounts": "region"}[tab]
        m = {"ops": "SUM(s)", "mailbox": "MAX(ts)", "accounts": "COUNT(*)"}[tab]
        return f"SELECT {k}, {m} AS v FROM {tab} GROUP BY {k}", t.slots

    def window():
        t = _T()
        f = rng.choice(["ROW_NUMBER()", "RANK()", "SUM(s)"])
        return (f"SELECT a, s, {f} OVER (PARTITION BY a ORDER BY s) AS w FROM ops "
                f"WHERE b < {t.lit('int')}"), t.slots

    def mailbox_events():
        t = _T()
        return (f"SELECT mailboxguid, eventname, COUNT(*) AS n FROM mailbox WHERE ts > "
                f"{t.lit('big')} AND eventname IN ({t.lit('eventlist')}) GROUP BY mailboxguid, "
                f"eventname"), t.slots

    def two_dim():
        t = _T()
        return (f"SELECT acc.tier, m.cnt FROM accounts acc LEFT JOIN (SELECT a, COUNT(*) AS cnt "
                f"FROM ops GROUP BY a) m ON acc.a = m.a WHERE acc.region = {t.lit('region')}",
                t.slots)

    makers = [dim_join, scan, topk, single_agg, window, mailbox_events, two_dim]
    tpch = _tpch_queries()
    for i in range(n):
        if tpch and i % 5 == 4:
            q = tpch[(i // 5) % len(tpch)]
            out.append((q, []))
        else:
            out.append(makers[i % len(makers)]())
    return out


def _tpch_queries() -> list[str]:
    try:
        from . import tpch
        qs = getattr(tpch, "QUERIES", None)
    except Exception:
        return []
    if not qs:
        return []
    vals = list(qs.values()) if isinstance(qs, dict) else list(qs)
    return [q for q in vals if isinstance(q, str)]


JUNK_LINES = [
    '{"statement_id": "x1", "statement_text": "SELECT a FROM ops", "execution_status": ',
    'this is not json at all',
    '[1, 2, 3]',
    '{"statement_id": "x2", "execution_status": "FINISHED"}',
    '{"statement_id": "x3", "statement_text": 42, "execution_status": "FINISHED"}',
    '{"statement_id": "x4", "statement_text": "SELECT a FROM ops", "total_duration_ms": "slow"}',
    '\x00\x01binary\x02',
]
NON_SQL = ["SET spark.sql.shuffle.partitions = 200", "SHOW TABLES", "DESCRIBE ops",
           "USE analytics", "CACHE TABLE ops", "REFRESH TABLE mailbox",
           "CREATE TABLE tmp_ops AS SELECT * FROM ops", "INSERT INTO ops SELECT * FROM ops",
           "EXPLAIN SELECT a FROM ops", "DROP VIEW IF EXISTS v1", "ANALYZE TABLE ops COMPUTE STATISTICS"]
BAD_SQL = ["SELEC a FROM ops", "SELECT a FROM ops WHERE", "SELECT TOP 10 a FROM ops",
           "SELECT * FROM no_such_table", "SELECT a, FROM ops GROUP BY", "SELECT zz FROM ops",
           "SELECT a FROM ops o JOIN accounts x ON o.a = x.missing"]


# --------------------------------------------------------------------------------------------
# The generator
# --------------------------------------------------------------------------------------------
@dataclass
class GeneratedLog:
    lines: list[str]
    truth: dict


def generate_log(n_queries: int = 3000, seed: int = 7, templates_per_variant=(2, 5),
                 planted_fraction: float = 0.5, near_miss_fraction: float = 0.06,
                 junk_fraction: float = 0.03, failed_fraction: float = 0.03,
                 start: Optional[datetime] = None, sink: Optional[Callable[[str], None]] = None
                 ) -> GeneratedLog:
    """A query log of about ``n_queries`` lines (JSON objects, one per line) and its truth.
    With ``sink`` every line is handed to it (streaming, for large logs) instead of kept."""
    rng = random.Random(seed)
    start = start or datetime(2026, 11, 1, tzinfo=timezone.utc)

    # -- templates ------------------------------------------------------------------------
    variants: dict[tuple, dict] = {}
    templates: list[Template] = []
    for i, spec in enumerate(_variant_specs()):
        vkey = spec.variant_key
        v = variants.get(vkey)
        if v is None:
            v = variants[vkey] = {
                "variant_id": f"{spec.family}-{len(variants) + 1:02d}", "family": spec.family,
                "join_kind": spec.join_kind if spec.family != "DU" else "",
                "shape": spec.expected_shape(), "n_inputs": len(spec.branches)
                if spec.family != "MJ" else 2, "table2": [], "notes": [],
                "mj_agg": spec.mj_agg if spec.family == "MJ" else "", "table": spec.table,
                "templates": 0, "executions": 0, "failed": 0, "_keys": []}
        if spec.table2:
            v["table2"].append(spec.table2)
        if spec.note:
            v["notes"].append(spec.note)
        lo, hi = templates_per_variant
        want = rng.randint(lo, hi)
        seen = set(v["_keys"])
        tries = 0
        while want > 0 and tries < 40:
            tries += 1
            sql, slots = _template_sql(spec, rng)
            if sql in seen:
                continue
            seen.add(sql)
            v["_keys"].append(sql)
            templates.append(Template(sql, slots, v["variant_id"], "variant"))
            want -= 1
    near: dict[str, dict] = {}
    for reason, (fam, desc) in NEAR_MISSES.items():
        nm = near[reason] = {"near_miss_id": f"NM-{reason}", "attempted_family": fam,
                             "reason": reason, "description": desc, "templates": 0,
                             "executions": 0, "_keys": []}
        seen = set()
        for _ in range(40):
            if len(seen) >= 3:
                break
            sql, slots = _near_miss_sql(reason, rng)
            if sql in seen:
                continue
            seen.add(sql)
            templates.append(Template(sql, slots, nm["near_miss_id"], "near_miss"))
    noise = []
    seen = set()
    for sql, slots in _noise_templates(rng, 60):
        if sql in seen:
            continue
        seen.add(sql)
        noise.append(Template(sql, slots, "noise", "noise"))

    planted_t = [t for t in templates if t.kind == "variant"]
    near_t = [t for t in templates if t.kind == "near_miss"]

    # -- executions -------------------------------------------------------------------------
    n_junk = max(1, int(n_queries * junk_fraction))
    n_failed = max(1, int(n_queries * failed_fraction))
    n_planted = max(len(planted_t), int(n_queries * planted_fraction))
    n_near = max(len(near_t), int(n_queries * near_miss_fraction))
    n_noise = max(len(noise), n_queries - n_planted - n_near - n_junk - n_failed)

    def weights(ts):  # skewed popularity: some templates run much more often
        return [1.0 + 4.0 * rng.random() ** 3 for _ in ts]

    picks: list[tuple[Template, str]] = []
    for ts, n in ((planted_t, n_planted), (near_t, n_near), (noise, n_noise)):
        picks += [(t, "FINISHED") for t in ts]                   # every template at least once
        picks += [(t, "FINISHED") for t in rng.choices(ts, weights(ts), k=n - len(ts))]
    picks += [(t, rng.choice(["FAILED", "CANCELED"]))
              for t in rng.choices(planted_t + noise, k=n_failed)]
    rng.shuffle(picks)

    exec_rng = random.Random(seed + 1)
    users = [f"{u}@example.com" for u in ("ana", "bo", "chen", "dev", "eli", "fay", "etl-bot")]
    lines: list[str] = []
    emit = sink or lines.append
    clock = start
    groups = {v["variant_id"]: v for v in variants.values()}
    groups.update({nm["near_miss_id"]: nm for nm in near.values()})
    tkeys_seen: dict[str, set] = {}
    junk_at = set(rng.sample(range(len(picks) + n_junk), n_junk))
    pi = 0
    total = len(picks) + n_junk
    for pos in range(total):
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
        if t.group in groups:
            g = groups[t.group]
            if status == "FINISHED":
                g["executions"] += 1
                tkeys_seen.setdefault(t.group, set()).add(t.key)
            else:
                g["failed"] = g.get("failed", 0) + 1
    for gid, g in groups.items():
        g["templates"] = len(tkeys_seen.get(gid, ()))
        g["example_sql"] = next((t.render(random.Random(0)) for t in templates
                                 if t.group == gid), "")
        g.pop("_keys", None)
    truth = {
        "generator": {"n_queries": n_queries, "seed": seed, "version": 1},
        "lines": total,
        "junk_lines": n_junk,
        "failed_statements": n_failed,
        "variants": sorted(variants.values(), key=lambda v: v["variant_id"]),
        "near_misses": list(near.values()),
        "noise_templates": len(noise),
        "schema": mining_schema(),
    }
    return GeneratedLog(lines, truth)


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
    renamed into place, and, optionally, its ground truth."""
    import os
    import tempfile
    from ..cliutil import atomic_write_json
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        opener = (lambda p: gzip.GzipFile(p, "wb", mtime=0)) if str(path).endswith(".gz") \
            else (lambda p: open(p, "wb"))
        with opener(tmp) as f:
            g = generate_log(n_queries, seed, sink=lambda line: f.write(
                line.encode("utf-8", "surrogateescape") + b"\n"), **kw)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    if truth_path:
        atomic_write_json(truth_path, g.truth)
    return g.truth


def load_truth(path: str | Path = BUNDLED_TRUTH) -> dict:
    return json.loads(Path(path).read_text())


# --------------------------------------------------------------------------------------------
# Tables the queries read (NULLs, duplicates, skew, empty groups after filters)
# --------------------------------------------------------------------------------------------
def generate_tables(n_ops: int = 2000, seed: int = 11) -> dict:
    """pandas DataFrames for ops, mailbox and accounts."""
    import numpy as np
    import pandas as pd
    r = np.random.default_rng(seed)
    n_acc = max(5, n_ops // 20)
    a = r.zipf(1.6, n_ops) % n_acc
    ops = pd.DataFrame({
        "a": pd.array(a, dtype="Int32"),
        "b": pd.array(r.integers(0, 1000, n_ops), dtype="Int32"),
        "c": pd.array(r.integers(0, 1000, n_ops), dtype="Int32"),
        "d": r.choice(OP_KINDS, n_ops),
        "s": pd.array(r.integers(0, 1000, n_ops), dtype="Int32"),
    })
    for c in ("a", "b", "s"):           # NULLs in keys and measures
        ops.loc[r.random(n_ops) < 0.02, c] = pd.NA
    ops.loc[r.random(n_ops) < 0.02, "d"] = None
    ops = pd.concat([ops, ops.sample(n=max(1, n_ops // 50), random_state=seed)], ignore_index=True)
    n_mb = max(10, n_ops // 2)
    guids = [str(uuid.UUID(int=int(x))) for x in r.integers(1, 2 ** 62, max(3, n_mb // 10))]
    mailbox = pd.DataFrame({
        "mailboxguid": r.choice(guids, n_mb),
        "ts": pd.array(1_790_000_000_000 + r.integers(0, 10_000_000, n_mb), dtype="Int64"),
        "eventid": [f"e{i}" for i in range(n_mb)],
        "activityid": [f"act{x}" for x in r.integers(0, 50, n_mb)],
        "machinename": r.choice([f"host{i:02d}" for i in range(8)], n_mb),
        "eventname": r.choice(EVENTS, n_mb),
    })
    mailbox.loc[r.random(n_mb) < 0.02, "ts"] = pd.NA
    accounts = pd.DataFrame({
        "a": pd.array(np.arange(n_acc), dtype="Int32"),
        "region": r.choice(REGIONS, n_acc),
        "tier": pd.array(r.integers(1, 5, n_acc), dtype="Int32"),
    })
    return {"ops": ops, "mailbox": mailbox, "accounts": accounts}


def register_tables(spark, n_ops: int = 2000, seed: int = 11) -> dict[str, dict[str, str]]:
    """Create temp views ops / mailbox / accounts in ``spark``; returns LOG_SCHEMA."""
    for name, df in generate_tables(n_ops, seed).items():
        ddl = ", ".join(f"{c} {t}" for c, t in LOG_SCHEMA[name].items())
        spark.createDataFrame(df.astype(object).where(df.notna(), None), ddl) \
            .createOrReplaceTempView(name)
    return {k: dict(v) for k, v in LOG_SCHEMA.items()}


def main(argv=None) -> int:
    """python -m superop.workloads.loggen --out log.jsonl[.gz] [--queries N] [--seed S]
    [--truth truth.json]"""
    import argparse
    p = argparse.ArgumentParser(prog="python -m superop.workloads.loggen",
                                description="generate a query log with planted super-operators")
    p.add_argument("--out", required=True)
    p.add_argument("--queries", type=int, default=3000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--truth")
    a = p.parse_args(argv)
    t = write_log(a.out, a.queries, a.seed, truth_path=a.truth)
    print(f"{t['lines']} lines, {len(t['variants'])} planted variants -> {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
