"""Global-aggregate diamond (GA): n ≥ 2 global aggregates (no GROUP BY) of ONE shared input,
combined by a cross join (``CROSS JOIN``, comma joins, ``JOIN … ON TRUE`` or an inner join
without a condition) — TPC-DS q28 (6 branches), q88 (8), q90 (2); and, under a declared
key, inputs that differ by one keyed inner join read as a filter on one left join
(:mod:`.kit.keyedfilter`, TPC-DS q61: the match carries the premise).

    × CrossJoin (a tree of cross / unconditioned inner joins, flattened)
    ├── e_{n+1} [σπρ]* ── γ GroupBy#1 () ── e1 [σπρ]* ── Spool
    └── e_{2n}  [σπρ]* ── γ GroupBy#n () ── e_n [σπρ]* ── Spool

Edge order (as DU): the n lower edges (Spool → γ_i), then the n upper edges (γ_i → ×).

Semantics. A global aggregate yields exactly ONE row, also over an empty input (COUNT 0,
SUM/AVG/MIN/MAX NULL), so the product of n of them is one row — unless a σ above a γ
(HAVING, a WHERE over the aggregate values) drops that branch's row, which empties the
whole product. Spark merges such aggregates only when they are scalar sub-queries; as
cross-joined derived tables it scans and aggregates the input n times.

Template (keyless DSL program: ONE partition, the whole input, present even when empty):
every branch's accumulators fold the rows its lower edge's φ_i keeps (``agg(CASE WHEN φ_i
THEN x END)``, ``count(*)`` → ``count(CASE WHEN φ_i THEN 1 END)``); no emptiness flags (a
global aggregate has its row whatever φ_i keeps); one partition emit guarded by every
branch's upper σ, producing every branch's upper projection side by side. The runtime
compiles it to ONE aggregate without GROUP BY over the input filtered by OR φ_i.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from sqlglot import exp

from ..dsl import AGG_FUNCS, STREAMING, PartitionEmit, Program
from .kit import symbolic
from .kit.covers import EDGE_OPS, STREAMING_FOLDS, Covers
from .kit.diamond import Shape
from .kit.keyedfilter import PREMISE_TEXT, premise_of, refusal
from .kit.family import GLOBAL_PRODUCT, Family, ProofInstance, Slot, Streamability, branches_prefilter, shape_segment
from .kit.planting import ExampleKit, ExampleSpec, Relation
from .kit.program import AggBranch, Accs, conj, is_true
from .kit.records import CatalogNames, Match, NearMiss, Reason, ReasonCode


class GAReason(ReasonCode):
    """Why a join of global aggregates is not a global-aggregate diamond."""
    MIXED_JOIN_INPUTS = (
        "mixed_join_inputs",
        "some inputs of the product are not global aggregates of the shared input",
        "Make every input of the product a global aggregate (SELECT agg(...) FROM the shared input, no GROUP BY) of"
        " the same input.")
    JOIN_CONDITION = (
        "join_condition",
        "the global aggregates are joined on a condition (only a product of their rows is an instance)",
        "Combine the global aggregates with CROSS JOIN (each has one row) and move the join condition into a WHERE "
        "above.")
    FILTER_JOIN_NOT_ON_KEY = (
        "filter_join_not_on_key",
        "one global aggregate's input is another's joined, in addition, to a table on a column that is not a "
        "declared key of it (the join may repeat rows, so it is no filter on one shared input)",
        "Declare the joined column a key of its table (the schema's $keys, SuperOpSession(keys=...)) if it is "
        "unique and NOT NULL.")


class GlobalAggregateDiamond(Family):
    name = "GA"
    catalog = CatalogNames("global-aggregate-diamond", "SuperOp_GA",
                           "global aggregates of one input combined by a cross join")
    core_name = "CrossJoin"
    join_kinds = ()
    sides = (None,)
    min_branches = 2
    max_branches = None
    aggregates = AGG_FUNCS
    reasons = (Reason, GAReason)
    proof_shape = GLOBAL_PRODUCT
    PROVED_BRANCHES = tuple(range(2, 9))       # TPC-DS q90: 2, q28: 6, q88: 8
    KEYED_BRANCHES = (2, 3)                    # TPC-DS q61: 2 (a keyed filter join, kit.keyedfilter)

    # -- pattern ------------------------------------------------------------------------
    def recognize(self, shape: Shape) -> Optional[Match | NearMiss]:
        if not shape.joins:
            return None
        paths = shape.paths
        glob = [p for p in paths if p.agg is not None and not p.agg.keys]
        if len(glob) < 2:
            return None          # not a product of global aggregates (DJ / MJ look at it)

        def near(reason: ReasonCode, detail: str = "") -> NearMiss:
            return NearMiss(self.name, shape.root, reason, detail, shape.join_kind, len(paths), paths[0].stop)
        if len(glob) != len(paths):
            return near(GAReason.MIXED_JOIN_INPUTS,
                        f"{len(paths) - len(glob)} of {len(paths)} inputs are not global aggregates")
        if any(p.n_aggs > 1 for p in paths):
            return near(Reason.STACKED_AGGREGATES)
        if len({id(p.stop) for p in paths}) > 1:
            why = refusal([p.agg.child for p in glob if p.agg is not None])
            return near(GAReason.FILTER_JOIN_NOT_ON_KEY, why) if why else near(Reason.DIFFERENT_INPUTS)
        for j in shape.joins:
            if j.kind not in ("cross", "inner"):
                return near(Reason.JOIN_KIND_UNSUPPORTED, j.kind)
            if not j.is_product:
                return near(GAReason.JOIN_CONDITION)
        prem = premise_of(paths[0].stop)     # a keyed filter join read as a filter (kit.keyedfilter)
        return Match(self.name, shape.root, paths[0].stop, tuple(p.branch for p in paths),
                     premises=(prem,) if prem is not None else ())

    # -- abstract edges -------------------------------------------------------------------
    def layout(self, branches: int, side: object = None) -> tuple[Slot, ...]:
        n = branches
        return tuple(Slot(i, n + i, f"GroupBy#{i + 1}") for i in range(n))

    def core_symbol(self, join_kinds: Sequence[str]) -> str:
        return "×"

    # -- streamability, template, code generation -------------------------------------------
    def streamability(self, m: Match) -> Streamability:
        return Streamability("one partition (no grouping key): every path is a global aggregate of the "
                             "shared input, so one pass folds them all", {"keys": []})

    def build_program(self, m: Match) -> Program:
        """SuperOp_GA: keyless; per branch i its accumulators guarded by the lower edge's
        φ_i (no flag: the branch's row exists whatever φ_i keeps); ONE partition emit,
        guarded by every branch's upper σ, producing every branch's upper π."""
        accs = Accs()
        brs = [AggBranch(b, accs, global_ok=True) for b in m.branches]
        guard = conj(*(is_true(b.present) for b in brs))
        outputs = tuple(o for b in brs for o in b.outputs)
        return Program(keys=(), output=m.root.names, accumulators=tuple(accs.accs), flags=tuple(accs.flags),
                       partition_emits=(PartitionEmit(guard, outputs),), memory=STREAMING)

    def prefilter(self, m: Match, program: Program) -> Optional[exp.Expr]:
        """OR of the lower edges' φ_i when every branch filters: a row no φ_i keeps folds
        into no accumulator (the keyless partition still exists without it)."""
        return branches_prefilter(m.branches)

    # -- generalization and the catalog --------------------------------------------------------
    def rule_id(self, skeleton: tuple[Any, ...]) -> str:
        return f"{self.catalog.long_name}-{skeleton[1]}way"

    def describe(self, skeleton: tuple[Any, ...], n_patterns: int) -> str:
        return (f"{skeleton[1]} global aggregates of one input combined by a cross join; "
                f"generalizes {n_patterns} verified pattern{'s' if n_patterns != 1 else ''}")

    # -- proofs ---------------------------------------------------------------------------------
    def proof_instance_name(self, join_kind: Optional[str] = None, agg_left: bool = True, branches: int = 2,
                            func: str = "min") -> str:
        return f"GA/{branches}"

    def proof_instances(self) -> tuple[ProofInstance, ...]:
        """GA/n for n = 2..8: n global aggregates of ``t``, each folding every streaming fold
        of its own projections under its own predicate, with an upper σ (a HAVING that may
        drop its one row) and π, cross-joined. Covers every σ/π/ρ instantiation of the 2n
        edges and every streaming fold."""
        out = []
        for n, distinct in [(n, False) for n in self.PROVED_BRANCHES] + [(2, True), (3, True)]:
            fns: dict[str, str] = {}
            for i in range(1, n + 1):
                fns.update(symbolic.global_branch_functions(i))
            sql = ("SELECT " + ", ".join(f"u{i}.x{i}" for i in range(1, n + 1)) + " FROM "
                   + " CROSS JOIN ".join(f"({symbolic.global_branch(i, f'x{i}', distinct)}) u{i}"
                                         for i in range(1, n + 1)))
            aggs = STREAMING_FOLDS + ((symbolic.DISTINCT_FOLD,) if distinct else ())
            assumptions = (symbolic.COMMON_ASSUMPTIONS[1:] + symbolic.GLOBAL_ASSUMPTIONS + (symbolic.SUBSET_OF_FOLDS,)
                           + (symbolic.DISTINCT_ASSUMPTIONS if distinct else ()))
            for keyed in ((False, True) if n in self.KEYED_BRANCHES and not distinct else (False,)):
                out.append(ProofInstance(
                    f"GA/{n}" + ("/distinct" if distinct else "") + ("/keyed-filter" if keyed else ""), sql,
                    symbolic.SCHEMA,
                    Covers.make(self.name, branches=n, aggregates=aggs, edges=[EDGE_OPS] * (2 * n),
                                premises=(PREMISE_TEXT,) if keyed else ()),
                    fns, assumptions + (KEYED_ASSUMPTIONS if keyed else ())))
        return tuple(out)

    # -- examples for the log generator ------------------------------------------------------
    def examples(self) -> tuple[ExampleSpec, ...]:
        return tuple(ExampleSpec(seq, self.name, br, **kw) for seq, br, kw in _EXAMPLES)

    def near_miss_examples(self) -> tuple[tuple[int, ReasonCode, str], ...]:
        return ((6, GAReason.JOIN_CONDITION, "two global aggregates of one input joined on their values"),)

    def example_shape(self, spec: ExampleSpec) -> str:
        return "(" + ", ".join(shape_segment(b, "γ", a) for b, a in spec.branches) + ")×"

    def plant(self, spec: ExampleSpec, kit: ExampleKit) -> str:
        """``SELECT x.n, y.t FROM (SELECT COUNT(*) AS n FROM t WHERE p1) x CROSS JOIN (SELECT
        SUM(s) AS t FROM t WHERE p2) y`` (or a comma join): per branch its lower path (a
        trailing σ is the branch's WHERE, the rest derived tables) and its upper σ (a HAVING)."""
        rng = kit.rng
        names = rng.choice([("x", "y", "z", "w"), ("lo", "hi", "mid", "top"), ("g1", "g2", "g3", "g4")])
        measures = kit.measure_names(len(spec.branches))
        items, cols = [], []
        for i, ((below, above), m) in enumerate(zip(spec.branches, measures)):
            items.append(f"({_global_branch(kit, below, above, m, str(i))}) {names[i]}")
            cols.append(f"{names[i]}.{m}")
        sel = "*" if rng.random() < 0.3 else ", ".join(cols)
        return kit.prefix + f"SELECT {sel} FROM " + rng.choice([" CROSS JOIN ", ", "]).join(items)

    def plant_near_miss(self, reason: ReasonCode, kit: ExampleKit) -> str:
        """Two global aggregates joined on a comparison of their values (in the ON clause or
        in a WHERE over a cross join): not a product."""
        if reason is not GAReason.JOIN_CONDITION:
            raise ValueError(reason)
        rng = kit.rng
        m1, m2 = kit.measure_names(2)
        x = _global_branch(kit, "σ", "", m1, "")
        y = _global_branch(kit, rng.choice(["", "σ"]), "", m2, "1")
        cmp = f"x.{m1} {rng.choice(['<', '>', '<='])} y.{m2}"
        if rng.random() < 0.5:
            return f"SELECT x.{m1}, y.{m2} FROM ({x}) x JOIN ({y}) y ON {cmp}"
        return f"SELECT x.{m1}, y.{m2} FROM ({x}) x CROSS JOIN ({y}) y WHERE {cmp}"


KEYED_ASSUMPTIONS = (
    "premise: the canonical form (superop.families.kit.keyedfilter) read a keyed inner join as a filter on a "
    "left join on a declared key of the joined table; this proof stands for the global aggregates over that "
    "shared source (any source: the input table here), the step itself is the lemma "
    "superop.verify.keyed_filter proves (bounded, two tables, the key declared), recorded with it",
)


def _global_branch(kit: ExampleKit, below: str, above: str, measure: str, tag: str) -> str:
    """``SELECT AGG(..) AS measure FROM <below> [WHERE p] [HAVING AGG(..) > c]``: one global
    aggregate of the kit's input, its aggregate a streaming fold (no DISTINCT)."""
    if above not in ("", "σ"):
        raise ValueError(f"a planted global aggregate has no upper path {above!r}")
    ops = below[:-1] if below.endswith("σ") else below
    rel: Relation = kit.decorate(kit.base, ops, tag=tag)
    where = f" WHERE {kit.predicate(rel)}" if below.endswith("σ") else ""
    agg = next(a for a in kit.agg_choices(rel, 4) if "DISTINCT" not in a.upper())
    src = rel.src if rel.sql is None else f"({rel.sql}) s{tag or 0}"
    having = f" HAVING {agg} > {kit.lit('small')}" if above else ""
    return f"SELECT {agg} AS {measure} FROM {src}{where}{having}"


# (position in the bundled log, branches (below γ, above γ), options): TPC-DS q28 / q88 / q90's
# counts of one input's buckets, each global aggregate filtered by its own predicate
_EXAMPLES: tuple[tuple[int, tuple[tuple[str, str], ...], dict[str, Any]], ...] = (
    (50, (("σ", ""), ("σ", "")), dict(note="two filtered global aggregates, cross-joined")),
)


GA = GlobalAggregateDiamond()
