"""What the log generator plants of the neighbour self-join (NB, :mod:`.nb`): a view ranked per
partition over a GROUP BY of its partition and order keys, joined to itself one rank back
(TPC-DS q47 / q57's ``v1_lag``), and a near-miss whose rank may tie (no GROUP BY below it).
Mixed into the family's declaration (:class:`NeighbourExamples`)."""
from __future__ import annotations

from typing import Any

from ..ir.render import JOIN_SYMBOL
from .kit.planting import ExampleKit, ExampleSpec
from .kit.records import ReasonCode


class NeighbourExamples:
    """The ``Family`` methods that plant NB examples. The family sets ``tie_reason`` (its
    reason for a rank whose ORDER BY may tie within its partition)."""
    name: str
    tie_reason: ReasonCode

    def examples(self) -> tuple[ExampleSpec, ...]:
        return tuple(ExampleSpec(seq, self.name, br, kind, **kw) for seq, br, kind, kw in _EXAMPLES)

    def near_miss_examples(self) -> tuple[tuple[int, ReasonCode, str], ...]:
        return ((7, self.tie_reason, "a view ranked over an ORDER BY that ties, joined to itself one rank back"),)

    def example_shape(self, spec: ExampleSpec) -> str:
        return "(" + ", ".join(use for _, use in spec.branches) + ")" + JOIN_SYMBOL[spec.join_kind]

    def plant(self, spec: ExampleSpec, kit: ExampleKit) -> str:
        """``WITH v AS (SELECT a, o, AGG(x) AS m, RANK() OVER (PARTITION BY a ORDER BY o) AS rn
        FROM t [WHERE p] GROUP BY a, o) SELECT .. FROM v JOIN v p ON v.a = p.a AND v.rn =
        p.rn + 1``: the centre and its use one rank back (plain uses)."""
        if (spec.join_kind, spec.table, spec.branches) != ("inner", "ops", (("", ""), ("", ""))):
            raise ValueError(f"NB plants ops ranked per a with one plain inner use one rank back, not {spec}")
        rng = kit.rng
        order = rng.choice(["b", "c", "d"])
        rel = kit.table("ops", ["a", order])
        agg = next(a for a in kit.agg_choices(rel, 4) if "DISTINCT" not in a.upper())
        m = rng.choice(["t", "v", "total", "cnt"])
        where = f" WHERE {kit.predicate(rel)}" if rng.random() < 0.5 else ""
        func, desc = rng.choice(["RANK", "DENSE_RANK"]), rng.choice(["", " DESC"])
        rank = f"{func}() OVER (PARTITION BY a ORDER BY {order}{desc})"
        view = f"SELECT a, {order}, {agg} AS {m}, {rank} AS rn FROM {rel.src}{where} GROUP BY a, {order}"
        return _self_join(kit, view, [order, m], m)

    def plant_near_miss(self, reason: ReasonCode, kit: ExampleKit) -> str:
        """The view ranks its rows without a GROUP BY of its partition and order keys: rows of
        one partition may tie, so rn = rn + 1 can match several rows or none."""
        if reason is not self.tie_reason:
            raise ValueError(reason)
        rng = kit.rng
        order = rng.choice(["b", "c", "d"])
        rel = kit.table("ops", ["a", order])
        where = f" WHERE {kit.predicate(rel)}" if rng.random() < 0.5 else ""
        rank = f"{rng.choice(['RANK', 'DENSE_RANK'])}() OVER (PARTITION BY a ORDER BY {order})"
        cols = [c for c in ("b", "d", "s") if c != order][:2]
        view = f"SELECT a, {order}, {', '.join(cols)}, {rank} AS rn FROM ops{where}"
        return _self_join(kit, view, [order, *cols], cols[-1])


def _self_join(kit: ExampleKit, view: str, cols: list[str], measure: str) -> str:
    """The ranked view joined to itself one rank back, on its partition ``a`` (an ON clause
    or a comma join's WHERE; the offset written from either side)."""
    rng = kit.rng
    v, p = rng.choice([("v", "p"), ("cur", "prev"), ("r", "w")])
    offset = rng.choice([f"{v}.rn = {p}.rn + 1", f"{p}.rn = {v}.rn - 1"])
    sel = ", ".join([f"{v}.a"] + [f"{v}.{c}" for c in cols] + [f"{p}.{measure} AS prev_{measure}"])
    if rng.random() < 0.5:
        frm = f"{v} JOIN {v} AS {p} ON {v}.a = {p}.a AND {offset}"
    else:
        frm = f"{v}, {v} AS {p} WHERE {v}.a = {p}.a AND {offset}"
    return f"WITH {v} AS ({view}) SELECT {sel} FROM {frm}"


# (position in the bundled log, per use (nothing below, the use's σ/π/ρ path) with the
#  centre first, join kind, options)
_EXAMPLES: tuple[tuple[int, tuple[tuple[str, str], ...], str, dict[str, Any]], ...] = (
    (51, (("", ""), ("", "")), "inner", dict(note="a ranked view joined to itself one rank back (LAG 1)")),
)
