"""WinMagic (WM): an aggregate of ONE shared input joined back to the rows of that input on
the grouping keys — what a correlated aggregate sub-query over the same input decorrelates
to (Zuzarte et al., "WinMagic", SIGMOD 2003) — runs as ONE window aggregate over the
partition instead of an aggregate, a join and a second read of the input:

    SELECT ... FROM t t1 WHERE t1.x > (SELECT 1.2 * AVG(x) FROM t t2 WHERE t2.k = t1.k)
    -- the IR: σ(x > _v) over t1 ⟕ (SELECT k, 1.2 * AVG(x) AS _v FROM t GROUP BY k) ON t1.k = k
    -- runs as: σ(x > 1.2 * AVG(x) OVER (PARTITION BY k)) over t (one exchange on k)

TPC-DS q1, q30, q81 (a row of a CTE against 1.2 × its store's / state's average), q32, q92
(a sale against 1.3 × its item's average), q6 (an item against 1.2 × its category's average).

Without keys: a GLOBAL aggregate (its one row, over any input) cross-joined to the rows of
its own input runs as ``AGG(x) OVER ()`` — TPC-DS q24a/q24b, whose HAVING compares with an
uncorrelated global aggregate of the same CTE (the lowering reads it from a product with the
groups, the canonical form pushes that product below the GROUP BY: :mod:`.kit.onerow`):

    ... GROUP BY k HAVING SUM(x) > (SELECT 0.05 * AVG(x) FROM t)
    -- canonical: γ_{k; SUM(x), MAX(_v)}(σ(t) × ρ(γ_∅(t))), then σ(SUM(x) > _v)
    -- runs as:   the GROUP BY over σ(t) with 0.05 * AVG(x) OVER () beside each row

    ⋈ Join (inner; left with the rows on the left; right with the rows on the right)
    ├── e2 [σπρ]* ── γ GroupBy (any fold) ── e1 [σπρ]* ── Spool
    └── e3 [σπρ]* ── Spool

Edge order (as Min & Join): e1 Spool → γ, e2 γ → ⋈, e3 Spool → ⋈. The template is the
join-back template (:mod:`.kit.joinback`) with its row emits reading the partition's FINAL
state (buffering: the window holds the partition; AVG is final only at its end), so any
fold the DSL has works, a σ below γ on any column is a guard of the accumulators, and the
correlated sub-query's semantics hold exactly: a NULL key never joins (the row gets NULL,
as the sub-query over no row), a group the sub-query's own filter empties gives NULL (the
flag "some row passes e1"), AVG ignores NULL values, duplicates count in the window as in
the group. Min & Join comes first in the registry: its streaming MIN/MAX instances are its
own; WinMagic takes the join-backs Min & Join's premises refuse (another fold, a σ below
the MIN on non-keys, a computed argument).

Where the aggregate side is preserved by the join (a left join with the aggregate on the
left, full, semi, anti), the template emits the aggregate side alone: not WinMagic
(``aggregate_side_emitted``; Min & Join reports its own near-miss first). A global aggregate
joined other than by a cross join (an ON condition) is the near-miss ``global_aggregate``.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from sqlglot import exp

from ..ir.dialect import DIALECT
from ..ir.render import JOIN_SYMBOL
from ..dsl import BUFFERING, Program, RowEmit, SortKey
from .kit import symbolic
from .kit.covers import EDGE_OPS, STREAMING_FOLDS, Covers
from .kit.diamond import Shape
from .kit.family import JOIN_BACK, Family, ProofInstance, Slot, Streamability, shape_segment
from .kit.joinback import (JoinBackReason, emits_aggregate_alone, join_back_key_premise, join_back_prefilter,
                           join_back_program, join_back_rule_id, recognize_join_back)
from .kit.planting import JOIN_SQL, ExampleKit, ExampleSpec
from .kit.program import Accs, accumulator_funcs, agg_calls
from .kit.records import CatalogNames, KeyPremise, Match, NearMiss, Reason, ReasonCode, Side

# the join kinds whose template emits only rows (each row once, with its group's values);
# a cross join is the keyless one: every row with a global aggregate's one row
ROW_JOINS = ("inner", "left", "right", "cross")


class WMReason(ReasonCode):
    """Why an aggregate joined back to its input is not a WinMagic instance."""
    AGGREGATE_SIDE_EMITTED = (
        "aggregate_side_emitted",
        "the join emits the aggregate side's rows on their own (it is preserved, or the left side of a semi/anti "
        "join): not one output row per input row",
        "Join the rows to their group's aggregate (rows on the preserved side of the join), or compute the "
        "aggregate with a window: AGG(x) OVER (PARTITION BY keys).")
    AGGREGATE_WITHOUT_ACCUMULATOR = (
        "aggregate_without_accumulator",
        "an aggregate call has no accumulator in the DSL",
        "Use SUM, COUNT, MIN, MAX or AVG in the correlated aggregate (other aggregates have no streaming form).")


def _buffering(row_emits: Sequence[RowEmit], accs: Accs) -> tuple[str, tuple[SortKey, ...]]:
    """Every row emit reads the partition's final state: buffering, no order needed."""
    return BUFFERING, ()


class WinMagic(Family):
    name = "WM"
    catalog = CatalogNames("winmagic", "SuperOp_WM",
                           "an aggregate joined back to its own input on the grouping keys (a correlated "
                           "aggregate sub-query), as one window over the partition")
    core_name = "Join"
    join_kinds = ROW_JOINS
    sides = (Side.LEFT, Side.RIGHT)
    min_branches = 2
    max_branches = 2
    aggregates = STREAMING_FOLDS
    reasons = (Reason, WMReason, JoinBackReason)
    proof_shape = JOIN_BACK
    rule_memory = (BUFFERING,)              # a window over the whole partition, by design

    # -- pattern ------------------------------------------------------------------------
    def recognize(self, shape: Shape) -> Optional[Match | NearMiss]:
        return recognize_join_back(self.name, shape, self.join_kinds)

    def premise_failure(self, m: Match) -> Optional[tuple[ReasonCode, str]]:
        """One output row per input row (the aggregate side is never emitted alone) and an
        accumulator for every aggregate call."""
        assert m.agg_side is not None and m.join_kind is not None
        if emits_aggregate_alone(m.join_kind, m.agg_side):
            return WMReason.AGGREGATE_SIDE_EMITTED, f"{m.join_kind} join, aggregate on the {m.agg_side.value}"
        agg = m.branches[m.agg_side.pos].agg
        assert agg is not None
        if accumulator_funcs(agg) is None:
            return WMReason.AGGREGATE_WITHOUT_ACCUMULATOR, ", ".join(c.sql(dialect=DIALECT) for c in agg_calls(agg))
        return None

    def key_premise(self, m: Match) -> Optional[KeyPremise]:
        return join_back_key_premise(m)

    # -- abstract edges -------------------------------------------------------------------
    def layout(self, branches: int, side: object = None) -> tuple[Slot, ...]:
        if branches != 2:
            raise ValueError(f"{self.name} has two branches, not {branches}")
        agg, row = Slot(0, 1, "GroupBy", "γ GroupBy (window)"), Slot(None, 2)
        return (agg, row) if side is not Side.RIGHT else (row, agg)

    def summary_agg(self, m: Match) -> str:
        assert m.agg_side is not None
        agg = m.branches[m.agg_side.pos].agg
        assert agg is not None
        return ",".join(sorted({type(c).__name__.upper() for c in agg_calls(agg)}))

    # -- streamability, template, code generation -------------------------------------------
    def streamability(self, m: Match) -> Streamability:
        keys = sorted(m.key_names)
        why = (f"one exchange on {keys}: each row reads its partition's final aggregates (a window over the "
               "whole partition, buffering)" if keys else
               "one partition (no key): each row reads the global aggregate's final values (a window over the "
               "whole input, buffering)")
        return Streamability(why, {"keys": keys, "join_kind": m.join_kind, "memory": BUFFERING})

    def build_program(self, m: Match) -> Program:
        """The join-back template, its row emits reading the partition's final state."""
        return join_back_program(m, _buffering)

    def prefilter(self, m: Match, program: Program) -> Optional[exp.Expr]:
        return join_back_prefilter(m, program)

    # -- generalization and the catalog --------------------------------------------------------
    def rule_id(self, skeleton: tuple[Any, ...]) -> str:
        return join_back_rule_id(self.catalog.long_name, skeleton)

    def describe(self, skeleton: tuple[Any, ...], n_patterns: int) -> str:
        return (f"an aggregate joined back ({skeleton[2]}) to its own input on the grouping key (aggregate "
                f"on the {skeleton[3]}), as a window over the partition; generalizes {n_patterns} verified "
                f"pattern{'s' if n_patterns != 1 else ''}")

    # -- proofs ---------------------------------------------------------------------------------
    def proof_instances(self) -> tuple[ProofInstance, ...]:
        """WM/<kind>/agg-<side>: every constant-state fold of ``t`` per ``k`` below a σ
        ``p1`` (any columns), filtered by ``q1`` and projected by ``g1`` above, joined back
        to the rows of ``t`` filtered by ``p`` and projected by ``f``, the residual
        ``theta`` reading both — for each join kind whose template emits rows only;
        WM/cross/agg-<side>: the same folds without a key (a global aggregate, its HAVING
        ``q1`` may drop its one row) cross-joined to the rows."""
        return tuple(_instance(kind, side) for kind in self.join_kinds for side in (Side.LEFT, Side.RIGHT)
                     if not emits_aggregate_alone(kind, side))

    # -- examples for the log generator ------------------------------------------------------
    def examples(self) -> tuple[ExampleSpec, ...]:
        return tuple(ExampleSpec(seq, self.name, br, kind, **kw) for seq, br, kind, kw in _EXAMPLES)

    def example_shape(self, spec: ExampleSpec) -> str:
        (agg_b, agg_a), (_, plain) = spec.branches
        parts = [shape_segment(agg_b, "γ", agg_a), plain]
        if not spec.agg_first:
            parts.reverse()
        return f"({parts[0]}, {parts[1]}){JOIN_SYMBOL[spec.join_kind]}"

    def plant(self, spec: ExampleSpec, kit: ExampleKit) -> str:
        """A join form (``FROM rows JOIN (SELECT k, AVG(x) ... GROUP BY k) g ON ...``) or,
        with ``spec.subquery``, the correlated scalar sub-query it decorrelates from
        (``WHERE o.x > (SELECT 1.2 * AVG(x) FROM t i WHERE i.k = o.k)``)."""
        if spec.subquery:
            return _plant_subquery(spec, kit)
        base, rng = kit.base, kit.rng
        (agg_below, agg_above), (_, plain_path) = spec.branches
        col = rng.choice(kit.numeric_cols(base))
        m = rng.choice(["avg_v", "tot", "share", "mean"])
        agg_rel = kit.branch(base, agg_below, agg_above, f"{spec.agg}({col})", m)
        row = kit.decorate(base, plain_path, tag="1")
        ra, ga = rng.choice([("o", "g"), ("r", "avg_t"), ("e", "w")])
        row_item = f"{row.src} {ra}" if row.sql is None else f"({row.sql}) {ra}"
        agg_item = f"({agg_rel.sql}) {ga}"
        on = " AND ".join(f"{ra}.{rk} = {ga}.{gk}" for rk, gk in zip(row.keys, agg_rel.keys))
        mcol = [c for c in agg_rel.cols if c not in agg_rel.keys][0]
        sel = [f"{ra}.{c}" for c in row.cols] + [f"{ga}.{mcol}"]
        jk = JOIN_SQL[spec.join_kind]
        frm = f"{agg_item} {jk} {row_item}" if spec.agg_first else f"{row_item} {jk} {agg_item}"
        return kit.prefix + f"SELECT {', '.join(sel)} FROM {frm} ON {on}"


def _plant_subquery(spec: ExampleSpec, kit: ExampleKit) -> str:
    base, rng = kit.base, kit.rng
    col = rng.choice(kit.numeric_cols(base))
    key = base.keys[0]
    # the comparison and the factor together: templates that differ only in a literal are
    # one template to mining (literals are parameters), so each draw differs in structure
    cmp, factor = rng.choice([(">", "1.2"), (">=", "1.3"), ("<", "0.8")])
    cols = ", ".join(f"o.{c}" for c in list(base.cols)[:3])
    src = base.src if base.sql is None else f"({base.sql})"
    return (kit.prefix + f"SELECT {cols} FROM {src} o WHERE o.{col} {cmp} (SELECT {factor} * {spec.agg}(i.{col}) "
            f"FROM {src} i WHERE i.{key} = o.{key})")


# (position in the bundled log, (aggregate path (below γ, above γ), row path ("", path)),
#  join kind, options)
_EXAMPLES: tuple[tuple[int, tuple[tuple[str, str], ...], str, dict[str, Any]], ...] = (
    (44, (("", ""), ("", "")), "left", dict(agg="AVG", agg_first=False, subquery=True,
                                            note="correlated AVG sub-query (WinMagic)")),
    (45, (("σ", ""), ("", "σ")), "inner", dict(agg="SUM", note="a SUM joined back, filtered rows")),
    (46, (("", "π"), ("", "")), "inner", dict(agg="AVG", agg_first=False, note="AVG joined back")),
)


def _instance(kind: str, side: Side) -> ProofInstance:
    covers = Covers.make("WM", join_kinds=[kind], branches=2, agg_side=side.value, aggregates=STREAMING_FOLDS,
                         edges=[EDGE_OPS, EDGE_OPS, EDGE_OPS])
    rows = "SELECT k, f(k, a, b) AS x FROM t WHERE p(k, a, b)"
    if kind == "cross":
        return _keyless_instance(side, covers, rows)
    agg = symbolic.aggregate_branch(1, "y")
    join = JOIN_SQL[kind]
    if side is Side.LEFT:
        sql = f"SELECT m.k, m.y, o.k AS ok, o.x FROM ({agg}) m {join} ({rows}) o ON m.k = o.k AND theta(o.x, m.y)"
    else:
        sql = f"SELECT o.k, o.x, m.k AS mk, m.y FROM ({rows}) o {join} ({agg}) m ON o.k = m.k AND theta(o.x, m.y)"
    fns = {"p": "bool", "f": "int", "theta": "bool", **symbolic.aggregate_branch_functions(1)}
    return ProofInstance(f"WM/{kind}/agg-{side.value}", sql, symbolic.SCHEMA, covers, fns,
                         symbolic.COMMON_ASSUMPTIONS + (
                             symbolic.SUBSET_OF_FOLDS,
                             "the row emits read the partition's final aggregates (buffering), so a σ below "
                             "the aggregate on any column is a guard of its accumulators",
                             "theta reads the aggregate's projection and the row"))



def _keyless_instance(side: Side, covers: Covers, rows: str) -> ProofInstance:
    """WM/cross/agg-<side>: a global aggregate's one row beside every row (``AGG(x) OVER ()``)."""
    agg = symbolic.global_branch(1, "y")
    if side is Side.LEFT:
        sql = f"SELECT m.y, o.k, o.x FROM ({agg}) m CROSS JOIN ({rows}) o"
    else:
        sql = f"SELECT o.k, o.x, m.y FROM ({rows}) o CROSS JOIN ({agg}) m"
    fns = {"p": "bool", "f": "int", **symbolic.global_branch_functions(1)}
    return ProofInstance(f"WM/cross/agg-{side.value}", sql, symbolic.SCHEMA, covers, fns,
                         symbolic.COMMON_ASSUMPTIONS[1:] + symbolic.GLOBAL_ASSUMPTIONS + (
                             symbolic.SUBSET_OF_FOLDS,
                             "the row emits read the one partition's final aggregates (buffering), so a σ "
                             "below the aggregate on any column is a guard of its accumulators",
                             "a HAVING above the global aggregate (q1) may drop its one row: then no row "
                             "is emitted"))


WM = WinMagic()
