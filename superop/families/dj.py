"""Diamond Join (DJ): two or more aggregates of ONE shared input, grouped on the same input
columns, joined on those keys (the paper's Fig. 6(b), SuperOp_DJ of Fig. 10) — inner,
left, right, full, semi and anti joins of two; inner trees of n ≥ 3.

    ⋈ Join
    ├── e3 [σπρ]* ── γ GroupBy#1 ── e1 [σπρ]* ── Spool
    └── e4 [σπρ]* ── γ GroupBy#2 ── e2 [σπρ]* ── Spool

Edge order: e1 Spool → γ1, e2 Spool → γ2, e3 γ1 → ⋈, e4 γ2 → ⋈ (n branches: the n lower
edges, then the n upper edges, in the tree's input order).

n-way trees. A tree of three or more joined aggregates is an instance when every join is
INNER (each join's condition implies key equality between its sides, decided at every join
by union-find and at the root by Z3): inner equi-joins on the keys are associative, so
every such tree of n branches computes the same relation and a certificate about one of
them speaks for the others' shape. An outer tree's result depends on its shape and on
which side each condition names, which a covers record does not say: such a tree stays a
near-miss (``too_many_branches``) whose inner two-input diamond is an instance of its own.
"""
from __future__ import annotations

from typing import Any, Optional

from sqlglot import exp

from ..ir.nodes import Join
from ..ir.render import JOIN_SYMBOL
from ..dsl import AGG_FUNCS, STREAMING, Program
from .kit.covers import EDGE_OPS, STREAMING_FOLDS, Covers
from .kit.diamond import Shape, agg_paths_check, positions_carrying
from .kit import symbolic
from .kit.family import Family, ProofInstance, Slot, Streamability, shape_segment, source_predicate
from .kit.program import (AggBranch, Accs, TreeInput, join_tree_emits,
                          not_null_keys_prefilter, root_key_premise, same_keys, tree_premise_failure)
from .kit.planting import JOIN_SQL, ExampleKit, ExampleSpec, ExpectedFinding
from .kit.records import (KEYED_JOIN_KINDS, CatalogNames, KeyPremise, Match, NearMiss, Reason,
                          ReasonCode, TemplateError)


class DiamondJoin(Family):
    name = "DJ"
    catalog = CatalogNames("diamond-join", "SuperOp_DJ",
                           "aggregates of one input on the same key joined on that key")
    core_name = "Join"
    join_kinds = KEYED_JOIN_KINDS
    sides = (None,)
    min_branches = 2
    max_branches = None               # n ≥ 3: inner trees only (see the module doc)
    N_WAY_KINDS = ("inner",)
    aggregates = AGG_FUNCS
    reasons = (Reason,)
    proof_shape = "groups-join"

    # -- pattern ------------------------------------------------------------------------
    def recognize(self, shape: Shape) -> Optional[Match | NearMiss]:
        if not shape.joins:
            return None
        paths = shape.paths
        n_agg = len(shape.agg_paths)
        if n_agg < 2 or n_agg != len(paths):
            return None

        def near(reason: ReasonCode, detail: str = "") -> NearMiss:
            return NearMiss(self.name, shape.root, reason, detail, shape.join_kind, len(paths), paths[0].stop)
        reason, keys = agg_paths_check(paths)
        if reason is not None:
            return near(reason)
        bad = [k for k in shape.join_kinds if k not in self.join_kinds]
        if bad:
            return near(Reason.JOIN_KIND_UNSUPPORTED, ", ".join(bad))
        if len(paths) > 2 and any(k not in self.N_WAY_KINDS for k in shape.join_kinds):
            return near(Reason.TOO_MANY_BRANCHES,
                        f"{len(paths)} joined aggregates with {'/'.join(shape.join_kinds)} joins; "
                        "the n-way template takes inner trees only (an outer tree's result depends on its shape)")
        root = shape.root
        assert isinstance(root, Join)
        return Match(self.name, root, paths[0].stop, tuple(p.branch for p in paths),
                     join_kind=root.kind, keys=keys)

    def premise_failure(self, m: Match) -> Optional[tuple[ReasonCode, str]]:
        """Algorithms 2-3 at every join of an n-way tree (the root's is the key premise)."""
        if len(m.branches) <= 2:
            return None
        return tree_premise_failure(m)

    def key_premise(self, m: Match) -> Optional[KeyPremise]:
        j = m.join
        assert j is not None
        if len(m.branches) <= 2:
            return KeyPremise(j, tuple((positions_carrying(j.left, k, m.source),
                                        positions_carrying(j.right, k, m.source)) for k in m.keys))
        return root_key_premise(m)

    # -- abstract edges -------------------------------------------------------------------
    def layout(self, branches: int, side: object = None) -> tuple[Slot, ...]:
        if branches < 2:
            raise ValueError(f"{self.name} has two or more branches, not {branches}")
        n = branches
        return tuple(Slot(i, n + i, f"GroupBy#{i + 1}") for i in range(n))

    # -- streamability, template, code generation -------------------------------------------
    def streamability(self, m: Match) -> Streamability:
        keys = sorted(m.key_names)
        return Streamability(f"every path is grouped on {keys}; the join condition implies "
                             "equality of every grouping key", {"keys": keys, "join_kind": m.join_kind})

    def build_program(self, m: Match) -> Program:
        """SuperOp_DJ: the folds of DU; emits guarded by matched = present_L ∧ present_R ∧
        keys NOT NULL ∧ ψ (NULL keys never join) and, per join kind, null-extended emits
        under present ∧ ¬matched (the kit's join-tree emission)."""
        j = m.join
        assert j is not None
        accs = Accs()
        brs = [AggBranch(b, accs) for b in m.branches]
        keys = same_keys(brs)
        inputs = {id(b.upper.top): TreeInput(tuple(br.top_fields), tuple(br.outputs), br.present)
                  for b, br in zip(m.branches, brs)}
        if len(inputs) != len(brs):
            raise TemplateError("two branches are the same node")
        emits = join_tree_emits(j, inputs, keys)
        return Program(keys=tuple(keys), output=m.root.names, accumulators=tuple(accs.accs),
                       flags=tuple(accs.flags), partition_emits=tuple(emits), memory=STREAMING)

    def prefilter(self, m: Match, program: Program) -> Optional[exp.Expr]:
        return not_null_keys_prefilter(m.join_kind, program, [source_predicate(b.lower) for b in m.branches])

    # -- generalization and the catalog --------------------------------------------------------
    def rule_id(self, skeleton: tuple[Any, ...]) -> str:
        n = skeleton[1]
        return f"{self.catalog.long_name}-{skeleton[2]}" + (f"-{n}way" if n != 2 else "")

    def default_rule_tag(self, kinds: list[str], branches: int) -> str:
        return "-".join(kinds + ([f"{branches}way"] if branches != 2 else []))

    def describe(self, skeleton: tuple[Any, ...], n_patterns: int) -> str:
        n = skeleton[1]
        what = "two aggregates" if n == 2 else f"{n} aggregates (a tree of inner joins)"
        return (f"{what} of one input on the same key joined ({skeleton[2]}) on that key; "
                f"generalizes {n_patterns} verified pattern{'s' if n_patterns != 1 else ''}")

    # -- proofs ---------------------------------------------------------------------------------
    def proof_instance_name(self, join_kind: Optional[str] = None, agg_left: bool = True, branches: int = 2,
                            func: str = "min") -> str:
        return f"DJ/{join_kind}"

    def proof_instances(self) -> tuple[ProofInstance, ...]:
        """DJ/<kind> for every join kind: two branches as DU's joined
        ``ON l.k = r.k AND theta(l.x, r.y)`` (the residual reads both aggregate
        projections). Covers every σ/π/ρ instantiation of the four edges and every
        streaming fold."""
        out = []
        for kind in self.join_kinds:
            cols = "l.k, l.x" if kind in ("semi", "anti") else "l.k, l.x, r.k AS rk, r.y"
            sql = (f"SELECT {cols} FROM ({symbolic.aggregate_branch(1, 'x')}) l {JOIN_SQL[kind]} "
                   f"({symbolic.aggregate_branch(2, 'y')}) r ON l.k = r.k AND theta(l.x, r.y)")
            fns = {**symbolic.aggregate_branch_functions(1), **symbolic.aggregate_branch_functions(2),
                   "theta": "bool"}
            out.append(ProofInstance(
                f"DJ/{kind}", sql, symbolic.SCHEMA,
                Covers.make(self.name, join_kinds=[kind], branches=2, aggregates=STREAMING_FOLDS,
                            edges=[EDGE_OPS] * 4),
                fns, symbolic.COMMON_ASSUMPTIONS + (
                    symbolic.SUBSET_OF_FOLDS, "the join's equalities are on the grouping key; every other "
                    "conjunct is the residual theta (an arbitrary function of both sides' outputs)")))
        # DJ/inner/3: a tree of three inner joins on the key (any tree of n inner equi-joins
        # on the key computes the same relation: the instance stands for every shape of 3)
        sql = (f"SELECT b1.k, b1.x, b2.y, b3.z FROM ({symbolic.aggregate_branch(1, 'x')}) b1 "
               f"JOIN ({symbolic.aggregate_branch(2, 'y')}) b2 ON b1.k = b2.k "
               f"JOIN ({symbolic.aggregate_branch(3, 'z')}) b3 ON b1.k = b3.k")
        fns = {**symbolic.aggregate_branch_functions(1), **symbolic.aggregate_branch_functions(2),
               **symbolic.aggregate_branch_functions(3)}
        out.append(ProofInstance(
            "DJ/inner/3", sql, symbolic.SCHEMA,
            Covers.make(self.name, join_kinds=["inner"], branches=3, aggregates=STREAMING_FOLDS,
                        edges=[EDGE_OPS] * 6),
            fns, symbolic.COMMON_ASSUMPTIONS + (
                symbolic.SUBSET_OF_FOLDS, "the joins equate the grouping key only (no residual); inner "
                "equi-joins on the key are associative, so one tree shape stands for all")))
        return tuple(out)

    # -- examples for the log generator ------------------------------------------------------
    def examples(self) -> tuple[ExampleSpec, ...]:
        return tuple(ExampleSpec(seq, self.name, br, kind, **kw) for seq, br, kind, kw in _EXAMPLES)

    def near_miss_examples(self) -> tuple[tuple[int, ReasonCode, str], ...]:
        return ((1, Reason.JOIN_NOT_ON_GROUPING_KEYS, "join of two aggregates on measure columns"),
                (2, Reason.JOIN_ON_SUBSET_OF_KEYS, "aggregates grouped by (a, d) joined on a only"))

    def example_shape(self, spec: ExampleSpec) -> str:
        s = shape_segment(spec.branches[0][0], "γ", spec.branches[0][1])
        for b, a in spec.branches[1:]:                     # a left-deep join tree
            s = f"({s}, {shape_segment(b, 'γ', a)}){JOIN_SYMBOL[spec.join_kind]}"
        return s

    def expected(self, spec: ExampleSpec) -> tuple[ExpectedFinding, ...]:
        n = len(spec.branches)
        if n == 2 or spec.join_kind in self.N_WAY_KINDS:
            return super().expected(spec)
        # an n-way tree is a near-miss; its innermost two-input diamond is an instance
        inner = ExampleSpec(spec.seq, spec.family, spec.branches[:2], spec.join_kind)
        return (ExpectedFinding.near_miss(Reason.TOO_MANY_BRANCHES),
                ExpectedFinding.candidate(spec.join_kind, self.example_shape(inner), 2))

    def plant(self, spec: ExampleSpec, kit: ExampleKit) -> str:
        base, rng = kit.base, kit.rng
        n = len(spec.branches)
        aggs = kit.agg_choices(base, n)
        ms = kit.measure_names(n)
        rels = [kit.branch(base, b, a, aggs[i], ms[i], tag=str(i) if i else "")
                for i, (b, a) in enumerate(spec.branches)]
        al = ["l", "r", "x3", "x4"] if rng.random() < 0.5 else ["p", "q", "u", "w"]
        jk = dict(JOIN_SQL, inner=rng.choice(["JOIN", "INNER JOIN"]))
        frm = f"({rels[0].sql}) {al[0]}"
        for i in range(1, n):
            on = " AND ".join(f"{al[0]}.{k0} = {al[i]}.{ki}" for k0, ki in zip(rels[0].keys, rels[i].keys))
            frm += f" {jk[spec.join_kind]} ({rels[i].sql}) {al[i]} ON {on}"
        sel = [f"{al[0]}.{k}" for k in rels[0].keys] + \
              [f"{al[0]}.{c}" for c in rels[0].cols if c not in rels[0].keys]
        if spec.join_kind not in ("semi", "anti"):
            for i in range(1, n):
                sel += [f"{al[i]}.{c}" for c in rels[i].cols if c not in rels[i].keys]
        if spec.join_kind in ("right", "full"):
            k, ki = rels[0].keys[0], rels[1].keys[0]
            sel[0] = f"COALESCE({al[0]}.{k}, {al[1]}.{ki}) AS {k}"
        return kit.prefix + f"SELECT {', '.join(sel)} FROM {frm}"

    def plant_near_miss(self, reason: ReasonCode, kit: ExampleKit) -> str:
        rng = kit.rng
        ms = kit.measure_names(2)
        if reason not in (Reason.JOIN_NOT_ON_GROUPING_KEYS, Reason.JOIN_ON_SUBSET_OF_KEYS):
            raise ValueError(reason)
        base = kit.base if reason is Reason.JOIN_NOT_ON_GROUPING_KEYS else kit.table("ops", ["a", "d"])
        aggs = kit.agg_choices(base, 2)
        r1 = kit.branch(base, rng.choice(["", "σ"]), "", aggs[0], ms[0])
        r2 = kit.branch(base, rng.choice(["", "σ", "π"]), "", aggs[1], ms[1])
        kind = rng.choice(["JOIN", "LEFT JOIN"])
        on = f"l.{ms[0]} = r.{ms[1]}" if reason is Reason.JOIN_NOT_ON_GROUPING_KEYS else \
            f"l.{r1.keys[0]} = r.{r2.keys[0]}"
        return f"SELECT l.{r1.keys[0]}, l.{ms[0]}, r.{ms[1]} FROM ({r1.sql}) l {kind} ({r2.sql}) r ON {on}"


# (position in the bundled log, branches (below γ, above γ), join kind, options)
_EXAMPLES: tuple[tuple[int, tuple[tuple[str, str], ...], str, dict[str, Any]], ...] = (
    (1, (("ρπ", "σ"), ("ρ", "πσ")), "inner", dict(table2=2)),
    (4, (("σπ", "σ"), ("", "π")), "inner", dict(table2=5)),
    (6, (("π", ""), ("", "πσ")), "inner", dict(table2=7)),
    (7, (("σ", "ρ"), ("σ", "")), "inner", dict(table2=8)),
    (8, (("σ", "ρ"), ("σ", "")), "inner", dict(table2=12)),     # same shape: one variant
    (12, (("πσ", "π"), ("σ", "ρ")), "inner", dict(table2=13)),
    (16, (("", ""), ("σ", "πσπ")), "inner", dict(table2=17)),
    (27, (("", ""), ("", "")), "inner", dict(note="Fig. 6(b) core")),
    (28, (("σ", ""), ("", "")), "left", {}),
    (29, (("", ""), ("σ", "")), "right", {}),
    (30, (("σ", ""), ("σ", "")), "full", {}),
    (31, (("", ""), ("σ", "")), "semi", {}),
    (32, (("", ""), ("σ", ""), ("π", "")), "inner", dict(note="3-way")),
    (33, (("σ", ""), ("", "ρ")), "left", dict(keys=("a", "d"), note="two keys")),
    (34, (("", "σ"), ("π", "")), "inner", dict(table="mailbox", keys=("mailboxguid",))),
    (42, (("σ", "π"), ("σ", "")), "left", dict(dashboard=True, note="dashboard: one template, many runs")),
)


DJ = DiamondJoin()
