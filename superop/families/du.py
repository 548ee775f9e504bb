"""Diamond UnionAll (DU): n ≥ 2 aggregates of ONE shared input, grouped on the same input
columns, glued by UNION ALL (the paper's Fig. 6(a), SuperOp_DU of Fig. 10).

    ∪ UnionAll
    ├── e_{n+1} [σπρ]* ── γ GroupBy#1 ── e1 [σπρ]* ── Spool
    └── e_{2n}  [σπρ]* ── γ GroupBy#n ── e_n [σπρ]* ── Spool

Edge order: the n lower edges (Spool → γ_i), then the n upper edges (γ_i → ∪).
"""
from __future__ import annotations

import random
from typing import Any, Optional, Sequence

from sqlglot import exp

from ..ir.nodes import UnionAll
from ..dsl import AGG_FUNCS, STREAMING, PartitionEmit, Program
from .kit.covers import EDGE_OPS, STREAMING_FOLDS, Covers
from .kit.diamond import Shape, agg_paths_check
from .kit import symbolic
from .kit.family import (UNION, Family, ProofInstance, Slot, Streamability, branches_prefilter, shape_segment)
from .kit.program import AggBranch, Accs, same_keys
from .kit.planting import ExampleKit, ExampleSpec, Relation
from .kit.records import CatalogNames, Match, NearMiss, Reason, ReasonCode

class DiamondUnionAll(Family):
    name = "DU"
    catalog = CatalogNames("diamond-union-all", "SuperOp_DU",
                           "aggregates of one input on the same key glued by UNION ALL")
    core_name = "UnionAll"
    join_kinds = ()
    sides = (None,)
    min_branches = 2
    max_branches = None
    aggregates = AGG_FUNCS
    reasons = (Reason,)
    proof_shape = UNION

    # -- pattern ------------------------------------------------------------------------
    def recognize(self, shape: Shape) -> Optional[Match | NearMiss]:
        if not isinstance(shape.root, UnionAll):
            return None
        paths = shape.paths
        if sum(1 for p in paths if p.agg is not None) < 2:
            return None

        def near(reason: ReasonCode, detail: str = "") -> NearMiss:
            return NearMiss(self.name, shape.root, reason, detail, "", len(paths), paths[0].stop)
        if any(p.agg is None for p in paths):
            return near(Reason.MIXED_UNION_INPUTS)
        reason, keys = agg_paths_check(paths)
        if reason is not None:
            return near(reason)
        return Match(self.name, shape.root, paths[0].stop, tuple(p.branch for p in paths), keys=keys)

    # -- abstract edges -------------------------------------------------------------------
    def layout(self, branches: int, side: object = None) -> tuple[Slot, ...]:
        n = branches
        return tuple(Slot(i, n + i, f"GroupBy#{i + 1}") for i in range(n))

    # -- streamability, template, code generation -------------------------------------------
    def streamability(self, m: Match) -> Streamability:
        keys = sorted(m.key_names)
        return Streamability(f"every path is grouped on {keys}", {"keys": keys})

    def build_program(self, m: Match) -> Program:
        """SuperOp_DU: per branch i an accumulator set guarded by the lower edge's φ, an
        emptiness flag out_i when that φ can reject rows, and one partition emit guarded by
        out_i ∧ φ_upper_i producing π_upper_i(key, f_i)."""
        accs = Accs()
        brs = [AggBranch(b, accs) for b in m.branches]
        keys = same_keys(brs)
        emits = tuple(PartitionEmit(b.present, tuple(b.outputs)) for b in brs)
        return Program(keys=tuple(keys), output=m.root.names, accumulators=tuple(accs.accs),
                       flags=tuple(accs.flags), partition_emits=emits, memory=STREAMING)

    def prefilter(self, m: Match, program: Program) -> Optional[exp.Expr]:
        return branches_prefilter(m.branches)

    # -- generalization and the catalog --------------------------------------------------------
    def rule_id(self, skeleton: tuple[Any, ...]) -> str:
        return f"{self.catalog.long_name}-{skeleton[1]}way"

    def describe(self, skeleton: tuple[Any, ...], n_patterns: int) -> str:
        return (f"{skeleton[1]} aggregates of one input on the same key glued by UNION ALL; "
                f"generalizes {n_patterns} verified pattern{'s' if n_patterns != 1 else ''}")

    # -- proofs ---------------------------------------------------------------------------------
    def proof_instance_name(self, join_kind: Optional[str] = None, agg_left: bool = True, branches: int = 2,
                            func: str = "min") -> str:
        return f"DU/{branches}"

    def proof_instances(self) -> tuple[ProofInstance, ...]:
        """DU/2 and DU/3: n GROUP BYs on ``k`` glued by UNION ALL; every branch aggregates
        count(*), count, sum, min, max, avg of its own projections under its own predicate,
        then filters (``q_i``) and projects (``g_i``) over the key and every aggregate.
        Covers every σ/π/ρ instantiation of the 2n edges and every streaming fold."""
        out = []
        for n, distinct in ((2, False), (3, False), (2, True), (3, True)):
            fns: dict[str, str] = {}
            for i in range(1, n + 1):
                fns.update(symbolic.aggregate_branch_functions(i))
            aggs = STREAMING_FOLDS + ((symbolic.DISTINCT_FOLD,) if distinct else ())
            out.append(ProofInstance(
                f"DU/{n}" + ("/distinct" if distinct else ""),
                " UNION ALL ".join(symbolic.aggregate_branch(i, "x", distinct) for i in range(1, n + 1)),
                symbolic.SCHEMA,
                Covers.make(self.name, branches=n, aggregates=aggs, edges=[EDGE_OPS] * (2 * n)),
                fns, symbolic.COMMON_ASSUMPTIONS + (symbolic.SUBSET_OF_FOLDS,)
                + (symbolic.DISTINCT_ASSUMPTIONS if distinct else ())))
        return tuple(out)

    # -- examples for the log generator ------------------------------------------------------
    def examples(self) -> tuple[ExampleSpec, ...]:
        return tuple(ExampleSpec(seq, self.name, br, **kw) for seq, br, kw in _EXAMPLES)

    def near_miss_examples(self) -> tuple[tuple[int, ReasonCode, str], ...]:
        return ((0, Reason.DIFFERENT_GROUPING_KEYS, "two aggregates group by different columns"),
                (3, Reason.DIFFERENT_INPUTS, "the two aggregates read different tables"))

    def example_shape(self, spec: ExampleSpec) -> str:
        return "(" + ", ".join(shape_segment(b, "γ", a) for b, a in spec.branches) + ")∪"

    def plant(self, spec: ExampleSpec, kit: ExampleKit) -> str:
        base, rng = kit.base, kit.rng
        n = len(spec.branches)
        aggs = kit.agg_choices(base, n)
        if spec.agg == "MAX_BY":
            aggs = argmax_choices(base, aggs)
        ms = kit.measure_names(n)
        ms = [ms[0]] * n if rng.random() < 0.5 else ms
        rels = [kit.branch(base, b, a, aggs[i], ms[i], tag=str(i) if i else "")
                for i, (b, a) in enumerate(spec.branches)]
        return kit.prefix + " UNION ALL ".join(str(r.sql) for r in rels)

    def plant_near_miss(self, reason: ReasonCode, kit: ExampleKit) -> str:
        rng, ops = kit.rng, kit.base
        ms = kit.measure_names(2)
        if reason is Reason.DIFFERENT_GROUPING_KEYS:
            k2 = rng.choice(["b", "c"])
            r1 = kit.branch(ops, rng.choice(["", "σ"]), "", rng.choice(["COUNT(*)", "SUM(s)"]), ms[0])
            r2 = kit.branch(kit.table("ops", [k2]), "σ", "", rng.choice(["COUNT(*)", "MAX(s)"]), ms[1])
            return f"{r1.sql} UNION ALL {r2.sql}"
        if reason is Reason.DIFFERENT_INPUTS:
            acc = kit.table("accounts", ["a"])
            r1 = kit.branch(ops, rng.choice(["", "σ"]), "", rng.choice(["COUNT(*)", "SUM(s)"]), ms[0])
            r2 = kit.branch(acc, rng.choice(["", "σ"]), "", rng.choice(["COUNT(*)", "MAX(tier)"]), ms[1])
            return f"{r1.sql} UNION ALL {r2.sql}"
        raise ValueError(reason)


def argmax_choices(rel: Relation, drawn: Sequence[str]) -> list[str]:
    """Fig. 15's ARGMAX aggregates, one per branch: ``MAX_BY(payload, o)`` over the first
    numeric non-key column ``o`` (mailbox: ``ts``), the payloads drawn from the string
    non-key columns and ``upper`` of one (the paper's ``Simplified(EventId)``). Drawn
    from a generator seeded by the template's own draws (``drawn``), so that the rest of
    the log keeps its random stream."""
    order = next(c for c, t in rel.cols.items() if t not in ("string",) and c not in rel.keys)
    strs = [c for c, t in rel.cols.items() if t == "string" and c not in rel.keys]
    payloads = strs + [f"upper({strs[0]})"]
    sub = random.Random("|".join(drawn))
    return [f"MAX_BY({p}, {order})" for p in sub.sample(payloads, len(drawn))]


# (position in the bundled log, branches (below γ, above γ), options): the rows of the
# paper's Table 2, the figures' cores, n-way unions, CTE and two-key inputs
_EXAMPLES: tuple[tuple[int, tuple[tuple[str, str], ...], dict[str, Any]], ...] = (
    (0, (("σπ", "σ"), ("σ", "πρ")), dict(table2=1)),
    (2, (("π", "σ"), ("π", "σ")), dict(table2=3)),
    (3, (("ρσπ", ""), ("ρ", "")), dict(table2=4)),
    (5, (("ρ", "σ"), ("σ", "")), dict(table2=6)),
    (9, (("ρ", "σ"), ("ρ", "")), dict(table2=9)),
    (11, (("ρ", "σ"), ("", "π")), dict(table2=11)),            # listed as DJ with ∪
    (13, (("ρσρ", ""), ("σ", "")), dict(table2=14)),
    (14, (("πσ", ""), ("σ", "π")), dict(table2=15)),
    (17, (("ρπσ", "ρ"), ("σ", "")), dict(table2=18)),
    (19, (("σ", "ρπσπ"), ("σ", "π")), dict(table2=20)),
    (20, (("", ""), ("", "")), dict(note="Fig. 7 core")),
    (21, (("σ", ""), ("σ", "")), dict(note="Fig. 1 cloud-store ops")),
    (22, (("", ""), ("σ", "")), dict(table="mailbox", keys=("mailboxguid",), agg="MAX_BY",
                                note="Fig. 15 mailbox watermarks (ARGMAX: max_by)")),
    (23, (("σ", ""), ("σ", ""), ("", "")), dict(note="3-way")),
    (24, (("σ", ""), ("σ", "π"), ("ρ", ""), ("", "σ")), dict(note="4-way")),
    (25, (("", "σ"), ("σ", "ρ")), dict(cte_filter=True, note="shared filtered CTE input")),
    (26, (("σ", ""), ("π", "")), dict(keys=("a", "d"), note="two grouping keys")),
    (41, (("σ", "π"), ("σ", "π")), dict(dashboard=True, note="dashboard: one template, many runs")),
)


DU = DiamondUnionAll()
