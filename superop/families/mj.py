"""Min & Join (MJ): one MIN or MAX aggregate of ONE shared input joined back to the rows of
that input on the grouping keys (the paper's Fig. 6(c), SuperOp_MJ of Fig. 10) — inner,
left, right, full, semi and anti joins, the aggregate on either side.

    ⋈ Join
    ├── e2 [σπρ]* ── γ GroupBy (min|max) ── e1 [σπρ]* ── Spool
    └── e3 [σπρ]* ── Spool

Edge order: e1 Spool → γ, e2 γ → ⋈, e3 Spool → ⋈ (whatever side the aggregate is on).
Streaming (Fig. 11): the partition sorted on the MIN/MAX column makes the running value
final at the first row; a σ below the MIN/MAX on non-key columns breaks that (Fig. 13).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional, Sequence

from sqlglot import exp

from ..ir.conjuncts import filter_conjuncts
from ..ir.dialect import DIALECT
from ..ir.nodes import Select
from ..ir.render import JOIN_SYMBOL
from ..synth.dsl import BUFFERING, STREAMING, Program, RowEmit, SortKey, ref
from .kit.covers import EDGE_OPS, Covers
from .kit.diamond import (Shape, find_field, source_dependencies,
                          trace)
from .kit import symbolic
from .kit.family import JOIN_BACK, Family, ProofInstance, Slot, Streamability, shape_segment, source_predicate
from .kit.joinback import (JoinBackReason, emits_aggregate_alone, join_back_key_premise, join_back_program,
                           recognize_join_back)
from .kit.program import Accs, agg_calls, conj, is_true, not_null_keys_prefilter
from .kit.planting import JOIN_SQL, ExampleKit, ExampleSpec
from .kit.records import (KEYED_JOIN_KINDS, CatalogNames, KeyPremise, Match, NearMiss, Reason,
                          ReasonCode, Side, TemplateError)

MIN_MAX = ("min", "max")
# the template's second form (Covers.variant of its proof instances): the rows whose MIN/MAX
# column equals the partition's MIN/MAX, i.e. RANK() OVER (PARTITION BY keys ORDER BY v) = 1
# over the rows with v NOT NULL — Spark plans a WindowGroupLimit below the exchange for it
GROUP_LIMIT = "group-limit"
# the template's third form: the window form's program with its row emits reading the
# partition's FINAL state (buffering, no sort) — Spark evaluates f(v) OVER (PARTITION BY
# keys), sorting on the keys only, where the window form's running f(v) sorts on (keys, v)
PARTITION_WIDE = "partition-wide"


class MJReason(ReasonCode):
    """Why a one-aggregate self-join is not a Min & Join."""
    AGGREGATE_NOT_MIN_MAX = ("aggregate_not_min_max",
                             "the joined-back aggregate is not exactly one MIN or a MAX")
    MIN_MAX_ARGUMENT = ("min_max_argument",
                        "the MIN/MAX argument does not depend on exactly one source column")
    FILTER_BELOW_MIN_MAX = ("filter_below_min_max",
                            "a filter on non-key columns below the MIN/MAX (Fig. 13: not streamable)")


class GroupLimitReason(ReasonCode):
    """Why a Min & Join instance has no group-limit form (it keeps the window form)."""
    EMITS_MORE_THAN_MATCHED_ROWS = (
        "emits_more_than_matched_rows",
        "the join emits rows or groups without a match (outer-preserved side, anti join, or the "
        "aggregate side emitted alone): no row of a group may be dropped before the join")
    NO_ARGUMENT_EQUALITY = (
        "no_argument_equality",
        "the join does not require the row's MIN/MAX column to equal the aggregate (every row of a "
        "group is joined, not only its minimum rows)")
    NOT_ONE_BARE_MIN_MAX = (
        "not_one_bare_min_max",
        "the program folds more than one unguarded MIN/MAX over a bare column (a σ below the "
        "aggregate, a computed argument or a flag)")


class PartitionWideReason(ReasonCode):
    """Why a Min & Join instance has no partition-wide form (it keeps the window form)."""
    NO_RUNNING_STATE = (
        "no_running_state",
        "the window form's row emits read no running MIN/MAX (it is not streaming with a sort): it "
        "already reads the partition's final state, so the partition-wide form would be the same program")


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
        """SuperOp_MJ (:func:`~superop.families.kit.joinback.join_back_program`): ``streaming``
        only when every value a row emit reads is final after the first row of a sorted
        partition (one unguarded min/max over a source column, sorted on it); otherwise
        ``buffering`` (Fig. 13)."""
        return join_back_program(m, _memory)

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
        assert m.agg_side is not None
        a, r = m.branches[m.agg_side.pos], m.branches[m.agg_side.other.pos]
        return not_null_keys_prefilter(m.join_kind, program, [source_predicate(a.lower), source_predicate(r.upper)])

    # -- generalization and the catalog --------------------------------------------------------
    def rule_id(self, skeleton: tuple[Any, ...]) -> str:
        side = "-aggregate-first" if skeleton[3] == Side.LEFT.value else ""
        return f"{self.catalog.long_name}-{skeleton[2]}{side}"

    def describe(self, skeleton: tuple[Any, ...], n_patterns: int) -> str:
        return (f"a min/max aggregate joined back ({skeleton[2]}) to its own input on the grouping key "
                f"(aggregate on the {skeleton[3]}); generalizes {n_patterns} verified "
                f"pattern{'s' if n_patterns != 1 else ''}")

    # -- proofs ---------------------------------------------------------------------------------
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
        out = []
        for kind in self.join_kinds:
            for side in (Side.LEFT, Side.RIGHT):
                for func in MIN_MAX:
                    out += _mj_instances(kind, side, func)
                    if admits_partition_wide(kind, side):
                        out += _mj_instances(kind, side, func, PARTITION_WIDE)
                    if _admits_group_limit(kind, side):
                        out.append(_group_limit_instance(kind, side, func))
        return tuple(out)

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


def _mj_instances(kind: str, side: Side, func: str, form: str = "") -> list[ProofInstance]:
    """The instances of one join kind / side / fold in ``form`` ("": the window form;
    another form's names insert ``/<form>`` before ``/residual``)."""
    covers = Covers.make("MJ", join_kinds=[kind], branches=2, agg_side=side.value, aggregates=[func],
                         edges=[("Project", "Rename"), EDGE_OPS, EDGE_OPS], variant=form)
    rows = "SELECT k, f(k, a, b) AS x FROM t WHERE p(k, a, b)"
    fns = {"p": "bool", "q": "bool", "f": "int", "g": "int", "theta": "bool"}
    arg = ("the aggregate's argument is a source column and the edge into the aggregate has no σ (the "
           "streaming template sorts the partition on that column)")
    name = f"MJ/{kind}/agg-{side.value}/{func}" + (f"/{form}" if form else "")
    if form == PARTITION_WIDE:
        arg += ("; the partition-wide form: the same program reading the partition's final MIN/MAX "
                "(buffering, no sort; partition_wide_program)")
    if not emits_aggregate_alone(kind, side):
        parts = [(name, "q(k, m)", " AND theta(o.x, m.y)", "theta reads the aggregate's projection and the row")]
    else:
        parts = [(name, "q(k, m)", "", "no join residual beyond the key equality (with one, see "
                  f"{name}/residual: the two instances are the two parts of one covers record)"),
                 (name + "/residual", "q(k)", " AND theta(o.x, m.k)",
                  "a join residual theta over the key and the row, and a filter q above the aggregate on "
                  "the key only (the template refuses a residual behind a filter on aggregates here: the "
                  "query evaluates the residual only for keys whose group survives)")]
    out = []
    for pname, having, residual, note in parts:
        agg = f"SELECT k, g(k, m) AS y FROM (SELECT k, {func}(a) AS m FROM t GROUP BY k) u WHERE {having}"
        join = JOIN_SQL[kind]
        if side is Side.LEFT:
            cols = "m.k, m.y" if kind in ("semi", "anti") else "m.k, m.y, o.k AS ok, o.x"
            sql = f"SELECT {cols} FROM ({agg}) m {join} ({rows}) o ON m.k = o.k{residual}"
        else:
            cols = "o.k, o.x" if kind in ("semi", "anti") else "o.k, o.x, m.k AS mk, m.y"
            sql = f"SELECT {cols} FROM ({rows}) o {join} ({agg}) m ON o.k = m.k{residual}"
        out.append(ProofInstance(pname, sql, symbolic.SCHEMA, covers, fns,
                                 symbolic.COMMON_ASSUMPTIONS + (arg, note)))
    return out


def _memory(row_emits: Sequence[RowEmit], accs: Accs) -> tuple[str, tuple[SortKey, ...]]:
    """Streaming iff row emits read no flag and only one unguarded min/max over a source
    column (final after the first row once sorted on that column)."""
    used_acc: set[str] = set()
    used_flag = False
    for r in row_emits:
        for x in [r.guard, *r.outputs]:
            if x is None:
                continue
            for c in x.find_all(exp.Column):
                if c.table == "acc":
                    used_acc.add(c.name)
                elif c.table == "flag":
                    used_flag = True
    if not row_emits or not used_acc and not used_flag:
        return STREAMING, ()
    if used_flag or len(used_acc) != 1:
        return BUFFERING, ()
    a = next(a for a in accs.accs if a.name in used_acc)
    if a.func in MIN_MAX and a.guard is None and isinstance(a.arg, exp.Column):
        return STREAMING, (SortKey(a.arg.name, ascending=(a.func == "min"), nulls_first=False),)
    return BUFFERING, ()


MJ = MinJoin()


# ---------------------------------------------------------------------------
# the partition-wide form
# ---------------------------------------------------------------------------
def admits_partition_wide(kind: str, side: Side) -> bool:
    """The join kinds / sides whose template has row emits (the only emits that read a
    running MIN/MAX): all but a semi/anti join with the aggregate on the left, which emits
    the aggregate side alone (partition emits only, already final)."""
    return not (kind in ("semi", "anti") and side is Side.LEFT)


def partition_wide_program(p: Program) -> Program:
    """The partition-wide form of a Min & Join program ``p`` (the window form the template
    builds): TemplateError (:class:`PartitionWideReason`) unless ``p`` is streaming with a
    sort, i.e. its row emits read a running MIN/MAX that is final from the partition's
    first row on in that order (the ``running.step`` lemma of its proof).

    Then the form is ``p`` with memory BUFFERING and no sort: every row emit reads the
    partition's final state, so the program needs no order inside a partition (the
    compiler renders it ``f(v) OVER (PARTITION BY keys)``) at the price of buffering the
    partition — Spark's Window operator buffers it either way. Its own proof instances
    (``covers.variant`` = ``partition-wide``) prove this program, not the window form's."""
    if p.memory != STREAMING or not p.sort or not p.row_emits:
        raise TemplateError("the row emits read no running MIN/MAX (not streaming with a sort)",
                            PartitionWideReason.NO_RUNNING_STATE)
    return replace(p, memory=BUFFERING, sort=())


# ---------------------------------------------------------------------------
# the group-limit form
# ---------------------------------------------------------------------------
def _admits_group_limit(kind: str, side: Side) -> bool:
    """The join kinds / sides whose template emits only matched rows (one row emit, no
    partition emit): inner on either side, and a semi join with the rows on the left."""
    return kind == "inner" or (kind == "semi" and side is Side.RIGHT)


def argument_equality(c: exp.Expr, acc: str, col: str) -> bool:
    """Is ``c`` ``[COALESCE(] row.col = acc.acc [, FALSE)]`` (either order; ``=``, not ``<=>``)?"""
    while isinstance(c, exp.Paren):
        c = c.this
    if isinstance(c, exp.Coalesce) and len(c.expressions) == 1 and isinstance(c.expressions[0], exp.Boolean) \
            and not c.expressions[0].this:
        c = c.this
        while isinstance(c, exp.Paren):
            c = c.this
    if not isinstance(c, exp.EQ):
        return False
    sides = {(x.table, x.name) for x in (c.this, c.expression) if isinstance(x, exp.Column)}
    return sides == {("row", col), ("acc", acc)}


def group_limit_program(p: Program) -> Program:
    """The group-limit form of a Min & Join program ``p`` (the window form the template
    builds): TemplateError (a :class:`GroupLimitReason`) unless ``p`` has one row emit and
    nothing else to emit, one unguarded MIN/MAX ``m`` over a bare column ``v`` sorted on
    ``v`` (streaming), and its guard requires ``row.v = acc.m``.

    Then a row is emitted only where ``v`` equals the partition's MIN/MAX — the rows of
    RANK() = 1 in ``v``'s order among the rows with ``v`` NOT NULL — and there
    ``acc.m`` = ``row.v``. The form's program puts that equality FIRST in the guard (every
    other part is evaluated only on those rows) and reads ``row.v`` wherever the window
    form reads ``acc.m``: its only state is the equality (the compiler turns it into
    ``RANK() … = 1``, ``superop.runtime.compile``). Ties all have rank 1 (every minimum
    row joins); a NULL ``v`` never equals the aggregate; an empty group has no row."""
    if p.partition_emits or len(p.row_emits) != 1 or p.flags or p.neighbours or not p.keys:
        raise TemplateError("the program emits more than the matched rows",
                            GroupLimitReason.EMITS_MORE_THAN_MATCHED_ROWS)
    if len(p.accumulators) != 1:
        raise TemplateError("not one MIN/MAX", GroupLimitReason.NOT_ONE_BARE_MIN_MAX)
    a = p.accumulators[0]
    if a.func not in MIN_MAX or a.guard is not None or not isinstance(a.arg, exp.Column) \
            or a.arg.table != "row" or p.memory != STREAMING \
            or p.sort != (SortKey(a.arg.name, ascending=a.func == "min", nulls_first=False),):
        raise TemplateError("not one unguarded MIN/MAX over a bare column, sorted on it",
                            GroupLimitReason.NOT_ONE_BARE_MIN_MAX)
    col = a.arg.name
    (em,) = p.row_emits
    parts = filter_conjuncts(em.guard, two_valued=True)
    eqs = [c for c in parts if argument_equality(c, a.name, col)]
    if not eqs:
        raise TemplateError("no conjunct row.v = MIN/MAX(v) in the join", GroupLimitReason.NO_ARGUMENT_EQUALITY)

    def on_row(x: exp.Expr) -> exp.Expr:
        x = x.copy()
        for c in list(x.find_all(exp.Column)):
            if c.table == "acc" and c.name == a.name:
                c.replace(ref("row", col))
        return x if not (isinstance(x, exp.Column) and x.table == "acc") else ref("row", col)
    rest = [on_row(c) for c in parts if c is not eqs[0]]
    guard = conj(is_true(exp.EQ(this=ref("row", col), expression=ref("acc", a.name))), *rest)
    return Program(keys=p.keys, output=p.output, accumulators=p.accumulators, row_emits=(
        RowEmit(guard, tuple(on_row(o) for o in em.outputs)),), sort=p.sort, memory=STREAMING,
        output_types=p.output_types)


def _group_limit_instance(kind: str, side: Side, func: str) -> ProofInstance:
    """MJ/<kind>/agg-<side>/<func>/group-limit: the rows whose ``a`` equals ``func(a)`` of
    their key (``o.a = m.mn`` in the join), with σ/π on both edges above and a residual."""
    covers = Covers.make("MJ", join_kinds=[kind], branches=2, agg_side=side.value, aggregates=[func],
                         edges=[("Project", "Rename"), EDGE_OPS, EDGE_OPS], variant=GROUP_LIMIT)
    rows = "SELECT k, a, f(k, a, b) AS x FROM t WHERE p(k, a, b)"
    agg = f"SELECT k, m AS mn, g(k, m) AS y FROM (SELECT k, {func}(a) AS m FROM t GROUP BY k) u WHERE q(k, m)"
    join = JOIN_SQL[kind]
    if side is Side.LEFT:
        sql = (f"SELECT m.k, m.y, o.k AS ok, o.x FROM ({agg}) m {join} ({rows}) o "
               f"ON m.k = o.k AND o.a = m.mn AND theta(o.x, m.y)")
    else:
        cols = "o.k, o.x" if kind == "semi" else "o.k, o.x, m.k AS mk, m.y"
        sql = f"SELECT {cols} FROM ({rows}) o {join} ({agg}) m ON o.k = m.k AND o.a = m.mn AND theta(o.x, m.y)"
    fns = {"p": "bool", "q": "bool", "f": "int", "g": "int", "theta": "bool"}
    return ProofInstance(f"MJ/{kind}/agg-{side.value}/{func}/{GROUP_LIMIT}", sql, symbolic.SCHEMA, covers, fns,
                         symbolic.COMMON_ASSUMPTIONS + (
                             "the aggregate's argument is a source column and the edge into the aggregate has "
                             "no σ; the join keeps only the rows whose argument column equals the aggregate "
                             "(the group-limit form: group_limit_program of the window form's program)",))
