"""The Min & Join declaration: its pattern on the IR, premises, abstract edges,
streamability, template forms, catalog names and the examples the log generator plants.
The template program, its alternative forms and the proof instances live beside it
(``template.py``, ``forms.py``, ``proofs.py``).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from sqlglot import exp

from ...dsl import Program
from ...ir.dialect import DIALECT
from ...ir.nodes import Select
from ...ir.render import JOIN_SYMBOL
from ..kit.diamond import Shape, find_field, source_dependencies, trace
from ..kit.family import JOIN_BACK, Family, ProofInstance, Slot, Streamability, shape_segment
from ..kit.joinback import (JoinBackReason, join_back_key_premise, join_back_prefilter, join_back_rule_id,
                            recognize_join_back)
from ..kit.planting import JOIN_SQL, ExampleKit, ExampleSpec
from ..kit.program import agg_calls
from ..kit.records import KEYED_JOIN_KINDS, CatalogNames, KeyPremise, Match, NearMiss, Reason, ReasonCode, Side
from .forms import group_limit_program, partition_wide_program
from .proofs import proof_instances
from .reasons import GROUP_LIMIT, MIN_MAX, PARTITION_WIDE, GroupLimitReason, MJReason, PartitionWideReason
from .template import build_program


class MinJoin(Family):
    name = "MJ"
    catalog = CatalogNames("min-join", "SuperOp_MJ",
                           "a min/max aggregate joined back to its own input on the grouping key")
    core_name = "Join"
    join_kinds = KEYED_JOIN_KINDS
    sides = (Side.LEFT, Side.RIGHT)
    min_branches = 2
    max_branches = 2
    aggregates = MIN_MAX
    reasons = (Reason, MJReason, JoinBackReason, GroupLimitReason, PartitionWideReason)
    proof_shape = JOIN_BACK
    forms = ("", GROUP_LIMIT, PARTITION_WIDE)

    # -- pattern ------------------------------------------------------------------------
    def recognize(self, shape: Shape) -> Optional[Match | NearMiss]:
        return recognize_join_back(self.name, shape, self.join_kinds)

    def premise_failure(self, m: Match) -> Optional[tuple[ReasonCode, str]]:
        """Algorithm 3, lines 12-17: exactly one aggregation, a MIN or a MAX, over one
        source column; a σ below it only on grouping keys (it keeps or drops whole
        partitions; any other filter makes the running value differ from the final, Fig. 13)."""
        assert m.agg_side is not None
        b = m.branches[m.agg_side.pos]
        agg, low = b.agg, b.lower
        assert agg is not None and low is not None
        calls = agg_calls(agg)
        if len(calls) != 1 or not isinstance(calls[0], (exp.Min, exp.Max)):
            return MJReason.AGGREGATE_NOT_MIN_MAX, ", ".join(c.sql(dialect=DIALECT) for c in calls)
        deps = source_dependencies(calls[0].this, agg.child.fields, low)
        if deps is None or len(deps) != 1:
            return MJReason.MIN_MAX_ARGUMENT, calls[0].sql(dialect=DIALECT)
        for s in low.ops:
            if not isinstance(s, Select):
                continue
            for c in s.predicate.find_all(exp.Column):
                i = find_field(s.children[0].fields, c)
                if i is None or trace(s.children[0], i, m.source) not in m.keys:
                    return MJReason.FILTER_BELOW_MIN_MAX, s.predicate.sql(dialect=DIALECT)
        return None

    def key_premise(self, m: Match) -> Optional[KeyPremise]:
        return join_back_key_premise(m)

    # -- abstract edges -------------------------------------------------------------------
    def layout(self, branches: int, side: object = None) -> tuple[Slot, ...]:
        if branches != 2:
            raise ValueError(f"{self.name} has two branches, not {branches}")
        agg, row = Slot(0, 1, "GroupBy", "γ GroupBy (min|max)"), Slot(None, 2)
        return (agg, row) if side is not Side.RIGHT else (row, agg)

    def maximal_aggregate_sets(self, aggregates: Sequence[str]) -> list[frozenset[str]]:
        return [frozenset([a]) for a in aggregates]     # exactly one MIN or MAX per instance

    def summary_agg(self, m: Match) -> str:
        assert m.agg_side is not None
        agg = m.branches[m.agg_side.pos].agg
        assert agg is not None
        return "MIN" if isinstance(agg_calls(agg)[0], exp.Min) else "MAX"

    # -- streamability, template, code generation -------------------------------------------
    def streamability(self, m: Match) -> Streamability:
        assert m.agg_side is not None
        b = m.branches[m.agg_side.pos]
        assert b.agg is not None and b.lower is not None
        call = agg_calls(b.agg)[0]
        col = m.source.names[next(iter(source_dependencies(call.this, b.agg.child.fields, b.lower) or {0}))]
        asc = isinstance(call, exp.Min)
        return Streamability(f"{'MIN' if asc else 'MAX'}({col}) is final after the first row of a partition "
                             f"sorted on {col} {'ASC' if asc else 'DESC'}",
                             {"keys": sorted(m.key_names), "sort": col, "ascending": asc,
                              "join_kind": m.join_kind})

    def build_program(self, m: Match) -> Program:
        """SuperOp_MJ (:func:`superop.families.mj.template.build_program`): row emits guarded
        by φ_row ∧ present ∧ keys NOT NULL ∧ ψ; outer, semi and anti sides as for DJ;
        ``streaming`` only when every value a row emit reads is final after the first row
        of a sorted partition, otherwise ``buffering`` (Fig. 13)."""
        return build_program(m)

    def program_form(self, m: Match, program: Program, form: str) -> Program:
        """``group-limit``: :func:`group_limit_program` of the window form's program (the
        instance must keep only its rows whose MIN/MAX column equals the aggregate);
        ``partition-wide``: :func:`partition_wide_program` (the window form folds a running
        MIN/MAX)."""
        if form == GROUP_LIMIT:
            return group_limit_program(program)
        if form == PARTITION_WIDE:
            return partition_wide_program(program)
        return super().program_form(m, program, form)

    def prefilter(self, m: Match, program: Program) -> Optional[exp.Expr]:
        return join_back_prefilter(m, program)

    # -- generalization and the catalog --------------------------------------------------------
    def rule_id(self, skeleton: tuple[Any, ...]) -> str:
        return join_back_rule_id(self.catalog.long_name, skeleton)

    def describe(self, skeleton: tuple[Any, ...], n_patterns: int) -> str:
        return (f"a min/max aggregate joined back ({skeleton[2]}) to its own input on the grouping key "
                f"(aggregate on the {skeleton[3]}); generalizes {n_patterns} verified "
                f"pattern{'s' if n_patterns != 1 else ''}")

    # -- proofs ---------------------------------------------------------------------------------
    def proof_instance_name(self, join_kind: Optional[str] = None, agg_left: bool = True, branches: int = 2,
                            func: str = "min") -> str:
        return f"MJ/{join_kind}/agg-{'left' if agg_left else 'right'}/{func}"

    def proof_instances(self) -> tuple[ProofInstance, ...]:
        """MJ/<kind>/agg-<side>/<min|max>: ``min(a)`` (``max(a)``) per ``k`` filtered by
        ``q`` and projected by ``g``, joined back to the rows of ``t`` filtered by ``p`` and
        projected by ``f``. Where the aggregate side is joined with its rows
        (:func:`emits_aggregate_alone` false) the residual ``theta`` reads the aggregate's
        projection. Where it is emitted alone the template builds two programs, so the
        covers record has two parts: without a residual (any ``q``), and
        ``.../residual`` with ``theta`` over the key and the row and a ``q`` over the key
        (the template refuses a residual behind a filter on aggregates there). No σ on
        the edge into the aggregate and a bare-column argument: the streaming template
        (Fig. 10 with the sort of Algorithm 3). The same instances with ``variant``
        ``partition-wide`` prove that form's program (the final MIN/MAX, no sort) where the
        template has row emits (:func:`admits_partition_wide`); ``.../group-limit`` that form."""
        return proof_instances(self.join_kinds)

    def proofs_for(self, skeleton: tuple[Any, ...], aggregates: Sequence[str] = ()) -> tuple[ProofInstance, ...]:
        """Every instance of the skeleton, MIN and MAX whichever the members fold: each
        proof is cheap and the rule then admits both, each covered by its own proof."""
        return super().proofs_for(skeleton)

    # -- examples for the log generator ------------------------------------------------------
    def examples(self) -> tuple[ExampleSpec, ...]:
        return tuple(ExampleSpec(seq, self.name, br, kind, **kw) for seq, br, kind, kw in _EXAMPLES)

    def near_miss_examples(self) -> tuple[tuple[int, ReasonCode, str], ...]:
        return ((4, MJReason.FILTER_BELOW_MIN_MAX, "σ on a non-key column below the MIN (Fig. 13), full join"),
                (5, MJReason.AGGREGATE_NOT_MIN_MAX, "a SUM joined back to its input, full join"))

    def example_shape(self, spec: ExampleSpec) -> str:
        (agg_b, agg_a), (_, plain) = spec.branches
        parts = [shape_segment(agg_b, "γ", agg_a), plain]
        if not spec.agg_first:
            parts.reverse()
        return f"({parts[0]}, {parts[1]}){JOIN_SYMBOL[spec.join_kind]}"

    def plant(self, spec: ExampleSpec, kit: ExampleKit) -> str:
        base, rng = kit.base, kit.rng
        (agg_below, agg_above), (_, plain_path) = spec.branches
        col = rng.choice(kit.numeric_cols(base))
        m = rng.choice(["mn", "first_v", "lo", "best", "mx"])
        agg_rel = kit.branch(base, agg_below, agg_above, f"{spec.agg}({col})", m, key_filter=True)
        row = kit.decorate(base, plain_path, tag="1")
        ra, ga = rng.choice([("o", "g"), ("r", "mn_t"), ("e", "w")])
        row_item = f"{row.src} {ra}" if row.sql is None else f"({row.sql}) {ra}"
        agg_item = f"({agg_rel.sql}) {ga}"
        on = [f"{ra}.{rk} = {ga}.{gk}" for rk, gk in zip(row.keys, agg_rel.keys)]
        mcol = [c for c in agg_rel.cols if c not in agg_rel.keys][0]
        if spec.extra_eq:
            src_col = col if col in row.cols else kit.numeric_cols(row)[0]
            on.append(f"{ra}.{src_col} = {ga}.{mcol}")
        jk = JOIN_SQL[spec.join_kind]
        sel = [f"{ra}.{c}" for c in row.cols] + [f"{ga}.{mcol}"]
        if spec.agg_first:
            frm = f"{agg_item} {jk} {row_item} ON {' AND '.join(on)}"
        else:
            frm = f"{row_item} {jk} {agg_item} ON {' AND '.join(on)}"
        return kit.prefix + f"SELECT {', '.join(sel)} FROM {frm}"

    def plant_near_miss(self, reason: ReasonCode, kit: ExampleKit) -> str:
        rng = kit.rng
        kit.measure_names(2)           # the generator draws measure names for every near-miss
        if reason not in (MJReason.FILTER_BELOW_MIN_MAX, MJReason.AGGREGATE_NOT_MIN_MAX):
            raise ValueError(reason)
        col = rng.choice(["b", "c", "s"])
        if reason is MJReason.FILTER_BELOW_MIN_MAX:
            agg = f"{rng.choice(['MIN', 'MAX'])}({col})"
            other = rng.choice([c for c in ("b", "c", "s") if c != col] + ["d"])
            filt = f" WHERE {other} > {kit.lit('int')}" if other != "d" else f" WHERE d = {kit.lit('op')}"
        else:
            agg = f"{rng.choice(['SUM', 'AVG', 'COUNT'])}({col})"
            filt = ""
        m = rng.choice(["mn", "agg_v", "tot"])
        # a FULL join: on an inner one (or the rows preserved) WinMagic runs it as a window
        return (f"SELECT o.a, o.b, o.s, g.{m} FROM ops o FULL OUTER JOIN (SELECT a, {agg} AS {m} FROM ops"
                f"{filt} GROUP BY a) g ON o.a = g.a")


# (position in the bundled log, (aggregate path (below γ, above γ), row path ("", path)),
#  join kind, options); a σ below the MIN filters on grouping keys only (streamable)
_EXAMPLES: tuple[tuple[int, tuple[tuple[str, str], ...], str, dict[str, Any]], ...] = (
    (10, (("ρπ", ""), ("", "σρ")), "inner", dict(table2=10, agg="MIN")),
    (15, (("σ", "σ"), ("", "σπ")), "inner", dict(table2=16, agg="MIN", note="key-only filter below MIN")),
    (18, (("π", "σ"), ("", "σ")), "inner", dict(table2=19, agg="MIN")),
    (35, (("", ""), ("", "")), "inner", dict(agg="MIN", note="Fig. 11 core")),
    (36, (("", ""), ("", "σ")), "inner", dict(agg="MAX", note="Fig. 12, MAX")),
    (37, (("", ""), ("", "")), "left", dict(agg="MIN", agg_first=False, note="row-side left join")),
    (38, (("π", ""), ("", "")), "right", dict(agg="MAX")),
    (39, (("", ""), ("", "σ")), "inner", dict(agg="MIN", extra_eq=True, note="arg-min rows")),
    (40, (("", ""), ("", "σ")), "inner", dict(table="mailbox", keys=("mailboxguid",), agg="MAX",
                                               agg_first=False)),
    (43, (("σ", "π"), ("", "σ")), "inner", dict(agg="MAX", dashboard=True,
                                               note="dashboard: one template, many runs")),
)


MJ = MinJoin()
