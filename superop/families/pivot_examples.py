"""What the log generator plants of the pivot join (PJ, :mod:`.pivot`): one grouped aggregate
used twice, each use fixing a grouping key to its own constant, the uses joined on the other
key (year over year: TPC-DS q31 / q75; the constants are literals, so every run of a
template compares another pair), and a near-miss whose second use compares the key with a
range instead of a constant. Mixed into the family's declaration (:class:`PivotExamples`)."""
from __future__ import annotations

from typing import Any

from ..ir.render import JOIN_SYMBOL
from .kit.planting import ExampleKit, ExampleSpec, Relation
from .kit.records import ReasonCode


class PivotExamples:
    """The ``Family`` methods that plant PJ examples. The family sets
    ``not_constant_reason`` (its reason for a use's filter that is no ``key = constant``)."""
    name: str
    not_constant_reason: ReasonCode

    def examples(self) -> tuple[ExampleSpec, ...]:
        return tuple(ExampleSpec(seq, self.name, br, kind, **kw) for seq, br, kind, kw in _EXAMPLES)

    def near_miss_examples(self) -> tuple[tuple[int, ReasonCode, str], ...]:
        return ((8, self.not_constant_reason, "one use of a shared aggregate fixes its key, the other takes a range"),)

    def example_shape(self, spec: ExampleSpec) -> str:
        """The uses' paths above the shared γ (its lower path is inside the shared input)."""
        return "(" + ", ".join(use for _, use in spec.branches) + ")" + JOIN_SYMBOL[spec.join_kind]

    def plant(self, spec: ExampleSpec, kit: ExampleKit) -> str:
        """``WITH t AS (SELECT a, y, AGG(x) AS m FROM f [WHERE p] GROUP BY a, y) SELECT ..
        FROM t u1 JOIN t u2 ON u1.a = u2.a WHERE u1.y = c1 AND u2.y = c2`` (or a comma join,
        or each use a derived table filtered on its constant); ``spec.branches``: per use the
        shared γ's lower path (the same in every use) and the use's own path (its σ)."""
        lower = {b for b, _ in spec.branches}
        if spec.join_kind != "inner" or len(lower) != 1 or any(u != "σ" for _, u in spec.branches):
            raise ValueError(f"PJ plants inner uses each filtered on its constant, not {spec}")
        y, rel, m = _shared_aggregate(kit, spec.table, spec.keys[0], lower.pop())
        consts = [kit.lit("op" if rel.cols[y] == "string" else "small") for _ in spec.branches]
        return _join_uses(kit, rel, y, m, [f"= {c}" for c in consts])

    def plant_near_miss(self, reason: ReasonCode, kit: ExampleKit) -> str:
        """The second use takes a range of the key (or every value but one): not one constant."""
        if reason is not self.not_constant_reason:
            raise ValueError(reason)
        y, rel, m = _shared_aggregate(kit, "ops", "a", kit.rng.choice(["", "σ"]))
        if rel.cols[y] == "string":
            conds = [f"= {kit.lit('op')}", f"<> {kit.lit('op')}"]
        else:
            conds = [f"= {kit.lit('small')}", f"{kit.rng.choice(['<', '>='])} {kit.lit('small')}"]
        return _join_uses(kit, rel, y, m, conds)


def _shared_aggregate(kit: ExampleKit, table: str, key: str, lower: str) -> tuple[str, Relation, str]:
    """The grouped aggregate the uses share: grouped by ``key`` and the pivoted key ``y``, one
    streaming fold (no DISTINCT). Its SQL, the pivoted key and the measure's name."""
    rng = kit.rng
    y = rng.choice(["b", "c", "d"])
    base = kit.table(table, [key, y])
    agg = next(a for a in kit.agg_choices(base, 4) if "DISTINCT" not in a.upper())
    m = rng.choice(["total", "amt", "v", "cnt"])
    return y, kit.branch(base, lower, "", agg, m), m


def _join_uses(kit: ExampleKit, rel: Relation, y: str, m: str, conds: list[str]) -> str:
    """Two uses of ``rel`` (a CTE), use i filtered on ``y <conds[i]>``, joined on the other
    key: ``JOIN .. ON .. WHERE``, a comma join, or derived tables filtered each on its own."""
    rng = kit.rng
    name, (u1, u2) = rng.choice([("t", ("t1", "t2")), ("yearly", ("cur", "prev")), ("per_key", ("x", "y0"))])
    k = rel.keys[0]
    sel = f"SELECT {u1}.{k}, {u1}.{m}, {u2}.{m} AS {m}_2"
    form = rng.randrange(3)
    if form == 0:
        frm = (f"FROM {name} {u1} JOIN {name} {u2} ON {u1}.{k} = {u2}.{k} "
               f"WHERE {u1}.{y} {conds[0]} AND {u2}.{y} {conds[1]}")
    elif form == 1:
        frm = (f"FROM {name} {u1}, {name} {u2} "
               f"WHERE {u1}.{k} = {u2}.{k} AND {u1}.{y} {conds[0]} AND {u2}.{y} {conds[1]}")
    else:
        frm = (f"FROM (SELECT * FROM {name} WHERE {y} {conds[0]}) {u1} "
               f"JOIN (SELECT * FROM {name} WHERE {y} {conds[1]}) {u2} ON {u1}.{k} = {u2}.{k}")
    return f"WITH {name} AS ({rel.sql}) {sel} {frm}"


# (position in the bundled log, per use (the shared γ's lower path, the use's path), join
#  kind, options)
_EXAMPLES: tuple[tuple[int, tuple[tuple[str, str], ...], str, dict[str, Any]], ...] = (
    (52, (("σ", "σ"), ("σ", "σ")), "inner", dict(note="one filtered aggregate, this year's uses against last year's")),
)
