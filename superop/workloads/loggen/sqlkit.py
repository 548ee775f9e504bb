"""The generator's SQL kit: templates with literal slots, relations and the σ/π/ρ/γ
decorations of one input path, and :class:`Kit`, the
:class:`superop.families.kit.planting.ExampleKit` a family plants its examples with."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Optional

from ...families.kit.planting import ExampleSpec
from .schema import EVENTS, LOG_SCHEMA, NUMERIC, OP_KINDS, REGIONS

# --------------------------------------------------------------------------------------------
# Templates with literal slots
# --------------------------------------------------------------------------------------------
class Slots:
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
    also: tuple[str, ...] = ()   # further truth entries it counts toward (a variant's near-miss)

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


def _pred(t: Slots, rel: _Rel, rng: random.Random, key_only: bool = False) -> str:
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


def _sigma(t: Slots, rel: _Rel, rng, names: _Names, key_only=False) -> _Rel:
    a = names.alias()
    p = _pred(t, rel, rng, key_only)
    return _Rel(a, f"SELECT * FROM {rel.from_item(a)} WHERE {p}", dict(rel.cols), list(rel.keys),
                rel.table)


def _pi(t: Slots, rel: _Rel, rng, names: _Names, above: bool, tag: str = "") -> _Rel:
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


def _rho(t: Slots, rel: _Rel, rng, names: _Names, rename_key: bool, tag: str = "") -> _Rel:
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


def _gamma(t: Slots, rel: _Rel, rng, names: _Names, agg: str, measure: str,
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


def _branch(t: Slots, base: _Rel, below: str, above: str, agg: str, measure: str, rng,
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




def _measure_names(rng, n) -> list[str]:
    pool = ["n", "total", "cnt", "hi", "lo", "m", "v", "agg", "val", "metric"]
    return rng.sample(pool, n)



def _base(spec: ExampleSpec, t: Slots, rng) -> tuple[_Rel, str]:
    cols = LOG_SCHEMA[spec.table]
    rel = _Rel(spec.table, None, dict(cols), list(spec.keys), spec.table)
    if spec.cte_filter:
        p = _pred(t, rel, rng)
        return _Rel("base", None, dict(cols), list(spec.keys), spec.table), \
            f"WITH base AS (SELECT * FROM {spec.table} WHERE {p}) "
    return rel, ""


class Kit:
    """The SQL kit handed to a family for ONE template (its literal slots and aliases)."""

    def __init__(self, rng: random.Random, base: Optional[_Rel] = None, prefix: str = ""):
        self.rng = rng
        self.t = Slots()
        self.names = _Names()
        self.base = base if base is not None else self.table("ops", ["a"])
        self.prefix = prefix

    @classmethod
    def for_spec(cls, spec: ExampleSpec, rng: random.Random) -> "Kit":
        kit = cls(rng, base=_Rel("ops", None, {}, [], "ops"))
        kit.base, kit.prefix = _base(spec, kit.t, rng)
        return kit

    @property
    def slots(self) -> list[str]:
        return self.t.slots

    def lit(self, kind: str) -> str:
        return self.t.lit(kind)

    def predicate(self, rel: _Rel) -> str:
        """A predicate over rel's non-key columns with literal slots (for a WHERE of the family's own)."""
        return _pred(self.t, rel, self.rng)

    def table(self, name: str, keys: list[str]) -> _Rel:
        return _Rel(name, None, dict(LOG_SCHEMA[name]), list(keys), name)

    def agg_choices(self, rel: _Rel, n: int) -> list[str]:
        return _agg_choices(rel, self.rng, n)

    def measure_names(self, n: int) -> list[str]:
        return _measure_names(self.rng, n)

    def numeric_cols(self, rel: _Rel) -> list[str]:
        return _numeric_cols(rel, rel.keys)

    def branch(self, rel: _Rel, below: str, above: str, agg: str, measure: str,
               key_filter: bool = False, tag: str = "") -> _Rel:
        return _branch(self.t, rel, below, above, agg, measure, self.rng, self.names,
                       mj_key_filter=key_filter, tag=tag)

    def decorate(self, rel: _Rel, ops: str, tag: str = "") -> _Rel:
        """σ/π/ρ on a path without an aggregate, bottom-up."""
        for o in ops:
            if o == "σ":
                rel = _sigma(self.t, rel, self.rng, self.names)
            elif o == "π":
                rel = _pi(self.t, rel, self.rng, self.names, above=False, tag=tag)
            elif o == "ρ":
                rel = _rho(self.t, rel, self.rng, self.names, rename_key=self.rng.random() < 0.5, tag=tag)
        return rel
