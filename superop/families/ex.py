"""Self EXISTS (EX): a semi or anti join of ONE input with itself on key equalities and one
comparison of a value — ``EXISTS (SELECT * FROM t t2 WHERE t2.o = t1.o AND t2.w <> t1.w)``
(TPC-DS q16, q94: "orders shipped from more than one warehouse") — decided per row from
the key's partition state instead of joining every row with every row of its key:

    l.w <> r.w  ⟺  MIN(w) < l.w OR MAX(w) > l.w      (over the rows r of l's key)
    l.w <  r.w  ⟺  MAX(w) > l.w        l.w <= r.w  ⟺  MAX(w) >= l.w
    l.w >  r.w  ⟺  MIN(w) < l.w        l.w >= r.w  ⟺  MIN(w) <= l.w
    keys only   ⟺  some row of the key passes the inner filter

    ⋉ / ▷ Join (ON keys AND l.u θ r.v)
    ├── e1 [σπρ]* ── Spool        the outer rows (one output row per row kept)
    └── e2 [σπρ]* ── Spool        the EXISTS sub-query's rows

MIN/MAX ignore NULLs and a comparison with NULL is never TRUE, so a NULL ``l.u`` or a key
without a non-NULL ``v`` gives FALSE exactly as the join does; a NULL key never joins (the
template guards it). The decorrelated EXISTS is first sunk onto the input it reads
(:mod:`.kit.sink`: ``σ(T) ⋉ t2 = σ(T[t1 := t1 ⋉ t2])``). The PAIRS of an inner self-join on the
same ON clause read only for existence (TPC-DS q95: ``o IN (SELECT o FROM ws_wh)``, ``ws_wh``
every pair of an order's lines from different warehouses) are that semi join too
(:mod:`.kit.existence`: ``DISTINCT π_A(A ⋈ B) = DISTINCT (A ⋉ B)`` under a semi join's right
side).

Forms: the window form (default; ``MIN(w) OVER (PARTITION BY o)``) and ``grouped`` — the
same program laid out as a semi / anti join of the rows with ``GROUP BY o`` (one partial
aggregate crosses the exchange instead of every row; ``Program.layout``). The benefit gate
prices both against the original.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional, Sequence, Union

from sqlglot import exp

from ..ir.analysis import capture_parameters
from ..ir.dialect import DIALECT
from ..ir.lowering.exprs import conjuncts
from ..ir.nodes import Join
from ..ir.render import JOIN_SYMBOL
from ..dsl import BUFFERING, GROUPED, Program, RowEmit
from .kit import symbolic
from .kit.covers import EDGE_OPS, Covers
from .kit.diamond import Shape, bare_column, find_field_strict, positions_carrying, trace
from .kit.family import SELF_EXISTS, Family, ProofInstance, Slot, Streamability, edge_op_names, source_predicate
from .kit.planting import JOIN_SQL, ExampleKit, ExampleSpec
from .kit.program import Accs, conj, is_true, keys_not_null, negate, not_null_keys_prefilter, to_ns
from .kit.records import CatalogNames, KeyPremise, Match, NearMiss, Reason, ReasonCode, TemplateError

KINDS = ("semi", "anti")
# the comparison l.u θ r.v as (variant, the fold of v that decides it, its test against u)
_OPS: dict[type, str] = {exp.NEQ: "ne", exp.LT: "lt", exp.GT: "gt", exp.LTE: "le", exp.GTE: "ge"}
_FLIP = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "ne": "ne"}
KEYS_ONLY = "keys"
VARIANTS = ("ne", "lt", "gt", "le", "ge", KEYS_ONLY)


class EXReason(ReasonCode):
    """Why a semi / anti self-join is not decided by its key's partition state."""
    ON_NOT_DECOMPOSABLE = (
        "on_not_decomposable",
        "the ON clause is not key equalities and at most one comparison of an outer value with an inner value "
        "(other conjuncts, or two comparisons)",
        "Correlate the EXISTS on key equalities plus at most one comparison of the same column "
        "(e.g. t1.k = t2.k AND t1.v <> t2.v); move other conditions into the sub-query's own WHERE.")
    NO_KEY = (
        "no_key", "the ON clause equates no column of the input with itself (no partition key)",
        "Correlate the EXISTS on a column equal on both sides (t1.k = t2.k): without it every row is compared "
        "with every other row.")


@dataclass(frozen=True)
class OnClause:
    """The ON clause of an instance: key positions of the source, and the comparison
    ``l.u θ r.v`` as the outer / inner field positions at the join's inputs (None: keys
    only)."""
    keys: tuple[int, ...]
    op: str
    outer: Optional[int] = None
    inner: Optional[int] = None


def _as_neq(c: exp.Expr) -> exp.Expr:
    """``NOT (x = y)`` is ``x <> y`` (NULL when either is NULL): DataFrame code's ``x != y``
    reaches the plan as Catalyst's ``Not(EqualTo)``."""
    inner = c.this.unnest() if isinstance(c, exp.Not) else None
    return exp.NEQ(this=inner.this, expression=inner.expression) if isinstance(inner, exp.EQ) else c


def analyze_on(j: Join, source: Any) -> Union[OnClause, tuple[ReasonCode, str]]:
    lf, rf = j.left.fields, j.right.fields
    parts = [exp.EQ(this=a.copy(), expression=b.copy()) for a, b in j.equi] + conjuncts(j.residual)
    keys: list[int] = []
    cmp: Optional[tuple[str, int, int]] = None
    for c in map(_as_neq, parts):
        op = _OPS.get(type(c)) if not isinstance(c, exp.EQ) else "eq"
        a, b = bare_column(c.this) if op else None, bare_column(c.expression) if op else None
        if op is None or a is None or b is None:
            return EXReason.ON_NOT_DECOMPOSABLE, c.sql(dialect=DIALECT)
        la, rb = find_field_strict(lf, a), find_field_strict(rf, b)
        if la is None or rb is None:            # written inner θ outer: flip it
            la, rb = find_field_strict(lf, b), find_field_strict(rf, a)
            op = _FLIP.get(op, op)
        if la is None or rb is None:
            return EXReason.ON_NOT_DECOMPOSABLE, c.sql(dialect=DIALECT)
        ks, kr = trace(j.left, la, source), trace(j.right, rb, source)
        if op == "eq" and ks is not None and ks == kr:
            keys.append(ks)
            continue
        if op == "eq" or cmp is not None:
            return EXReason.ON_NOT_DECOMPOSABLE, c.sql(dialect=DIALECT)
        cmp = (op, la, rb)
    if not keys:
        return EXReason.NO_KEY, ""
    if cmp is None:
        return OnClause(tuple(dict.fromkeys(keys)), KEYS_ONLY)
    return OnClause(tuple(dict.fromkeys(keys)), cmp[0], cmp[1], cmp[2])


class SelfExists(Family):
    name = "EX"
    catalog = CatalogNames("self-exists", "SuperOp_EX",
                           "a semi/anti join of an input with itself on keys and one comparison, decided by "
                           "the key's MIN/MAX")
    core_name = "Join"
    join_kinds = KINDS
    sides = (None,)
    min_branches = 2
    max_branches = 2
    aggregates = ("min", "max")
    reasons = (Reason, EXReason)
    forms = ("", GROUPED)
    proof_shape = SELF_EXISTS
    rule_memory = (BUFFERING,)              # a window over the whole partition, by design

    # -- pattern ------------------------------------------------------------------------
    def recognize(self, shape: Shape) -> Optional[Match | NearMiss]:
        root = shape.root
        if not isinstance(root, Join) or root.kind not in KINDS or shape.joins != (root,) \
                or len(shape.paths) != 2 or shape.agg_paths:
            return None
        lp, rp = shape.paths
        if lp.stop is not rp.stop:
            return None                         # not a self-join: a plain (anti) semi join
        on = analyze_on(root, lp.stop)
        if not isinstance(on, OnClause):
            return NearMiss(self.name, root, on[0], on[1], root.kind, 2, lp.stop)
        return Match(self.name, root, lp.stop, (lp.branch, rp.branch), join_kind=root.kind, keys=on.keys)

    def key_premise(self, m: Match) -> Optional[KeyPremise]:
        j = m.join
        assert j is not None
        return KeyPremise(j, tuple((positions_carrying(j.left, k, m.source), positions_carrying(j.right, k, m.source))
                                   for k in m.keys))

    def _on(self, m: Match) -> OnClause:
        j = m.join
        assert j is not None
        on = analyze_on(j, m.source)
        if not isinstance(on, OnClause):
            raise TemplateError(on[0].text, on[0])
        return on

    # -- abstract edges -------------------------------------------------------------------
    def layout(self, branches: int, side: object = None) -> tuple[Slot, ...]:
        return (Slot(None, 0), Slot(None, 1))

    def point(self, m: Match) -> Covers:
        """An instance: its join kind, the operators on each edge and (``variant``) the
        comparison — each gives another program."""
        on = self._on(m)
        return Covers.make(self.name, join_kinds=[m.join_kind or ""], branches=2,
                           aggregates=_folds(on.op), edges=[edge_op_names(b.upper) for b in m.branches],
                           variant=on.op)

    def skeleton(self, point: Covers) -> tuple[Any, ...]:
        return (self.name, 2, point.join_kinds[0] if point.join_kinds else None, None)

    # -- streamability, template, code generation -------------------------------------------
    def streamability(self, m: Match) -> Streamability:
        on = self._on(m)
        keys = sorted(m.key_names)
        return Streamability(f"one exchange on {keys}: each row is decided by its key's {'/'.join(_folds(on.op))} "
                             "of the inner rows (constant state; the window holds the partition)",
                             {"keys": keys, "comparison": on.op, "join_kind": m.join_kind})

    def build_program(self, m: Match) -> Program:
        """Per key: the inner rows' MIN / MAX of ``v`` (under the inner edge's σ); each
        outer row that passes its edge's σ is emitted when (semi) / unless (anti) its key is
        not NULL and the comparison holds against them."""
        on = self._on(m)
        lb, rb = m.branches
        lp, rp = capture_parameters(lb.upper), capture_parameters(rb.upper)
        phi_l, phi_r = to_ns(lp.predicate, "row"), to_ns(rp.predicate, "row")
        names = m.source.names
        keys = [names[k] for k in on.keys]
        accs = Accs()
        exists = conj(keys_not_null(keys), _test(on, lp, rp, phi_r, accs))
        assert exists is not None
        guard = conj(is_true(phi_l), exists if m.join_kind == "semi" else negate(exists))
        outputs = tuple(to_ns(e, "row") for _, e in lp.projection)
        return Program(keys=tuple(keys), output=m.root.names, accumulators=tuple(accs.accs),
                       flags=tuple(accs.flags), row_emits=(RowEmit(guard, outputs),), memory=BUFFERING)

    def program_form(self, m: Match, program: Program, form: str) -> Program:
        """``grouped``: the same program laid out as a join of the rows with the GROUP BY
        of their keys (``Program.layout``)."""
        if form == GROUPED:
            return replace(program, layout=GROUPED)
        return super().program_form(m, program, form)

    def form_variant(self, variant: str, form: str) -> str:
        return f"{variant}/{form}" if form else variant

    def variant_form(self, variant: str) -> str:
        return variant.split("/", 1)[1] if "/" in variant else ""

    def prefilter(self, m: Match, program: Program) -> Optional[exp.Expr]:
        # an anti join keeps the outer rows without a match: only the outer σ bounds them
        preds = [source_predicate(b.upper) for b in m.branches]
        return not_null_keys_prefilter(m.join_kind, program, preds)

    # -- generalization and the catalog --------------------------------------------------------
    def rule_id(self, skeleton: tuple[Any, ...]) -> str:
        return f"{self.catalog.long_name}-{skeleton[2]}"

    def describe(self, skeleton: tuple[Any, ...], n_patterns: int) -> str:
        return (f"a {skeleton[2]} join of an input with itself on keys and one comparison, decided by the "
                f"key's MIN/MAX; generalizes {n_patterns} verified pattern{'s' if n_patterns != 1 else ''}")

    # -- examples for the log generator ------------------------------------------------------
    def examples(self) -> tuple[ExampleSpec, ...]:
        return tuple(ExampleSpec(seq, self.name, br, kind, **kw) for seq, br, kind, kw in _EXAMPLES)

    def example_shape(self, spec: ExampleSpec) -> str:
        (_, outer), (_, inner) = spec.branches
        return f"({outer}, {inner}){JOIN_SYMBOL[spec.join_kind]}"

    def plant(self, spec: ExampleSpec, kit: ExampleKit) -> str:
        return _plant(spec, kit)

    # -- proofs ---------------------------------------------------------------------------------
    def proof_instances(self) -> tuple[ProofInstance, ...]:
        """EX/<kind>/<op>[/grouped]: the rows of ``t`` filtered by ``p`` and projected by
        ``f`` (semi / anti) joined with the rows filtered by ``q`` on ``k`` and
        ``u(k, a, b) θ v(k, a, b)`` (keys only: no comparison), for every θ."""
        return tuple(_instance(kind, op, form) for kind in KINDS for op in VARIANTS for form in self.forms)

    def proofs_for(self, skeleton: tuple[Any, ...], aggregates: Sequence[str] = ()) -> tuple[ProofInstance, ...]:
        """Every instance of the skeleton — each comparison and form is its own record (the
        keys-only instances fold no MIN/MAX): the rule then admits each, covered by its own
        proof."""
        return super().proofs_for(skeleton)


def _plant(spec: ExampleSpec, kit: ExampleKit) -> str:
    """``SELECT .. FROM t o WHERE [NOT] EXISTS (SELECT * FROM t i WHERE i.k = o.k [AND i.c
    <op> literal] AND i.v <op> o.v)``: the inner filter (``spec.branches``' second path) reads
    the inner rows only."""
    base, rng = kit.base, kit.rng
    key = base.keys[0]
    nums = kit.numeric_cols(base)
    v = rng.choice(nums)
    op = rng.choice(list(_SQL_OP.values()))
    cols = ", ".join(f"o.{c}" for c in list(base.cols)[:3])
    inner = f"i.{key} = o.{key}"
    if "σ" in spec.branches[1][1]:
        c = rng.choice([x for x in nums if x != v] or nums)
        inner += f" AND i.{c} > {kit.lit('small')}"
    neg = "NOT " if spec.join_kind == "anti" else ""
    return (kit.prefix + f"SELECT {cols} FROM {base.src} o WHERE {neg}EXISTS (SELECT * FROM {base.src} i "
            f"WHERE {inner} AND i.{v} {op} o.{v})")


# (position in the bundled log, ((outer path), (inner path)), join kind, options)
_EXAMPLES: tuple[tuple[int, tuple[tuple[str, str], ...], str, dict[str, Any]], ...] = (
    (47, (("", ""), ("", "")), "semi", dict(note="EXISTS a row of my key with another value")),
    (48, (("", ""), ("", "σ")), "semi", dict(note="EXISTS with the sub-query's own filter")),
    (49, (("", ""), ("", "")), "anti", dict(note="NOT EXISTS")),
)


def _folds(op: str) -> list[str]:
    return {"ne": ["min", "max"], "lt": ["max"], "le": ["max"], "gt": ["min"], "ge": ["min"]}.get(op, [])


def _test(on: OnClause, lp: Any, rp: Any, phi_r: Optional[exp.Expr], accs: Accs) -> exp.Expr:
    """Some inner row of the key makes the comparison TRUE (two-valued)."""
    if on.op == KEYS_ONLY:
        f = accs.flag(phi_r)
        return f if f is not None else exp.true()
    assert on.outer is not None and on.inner is not None
    u = to_ns(lp.projection[on.outer][1], "row")
    v = to_ns(rp.projection[on.inner][1], "row")
    mn = accs.acc("min", v, phi_r) if on.op in ("ne", "gt", "ge") else None
    mx = accs.acc("max", v, phi_r) if on.op in ("ne", "lt", "le") else None
    lower = is_true((exp.LT if on.op != "ge" else exp.LTE)(this=mn, expression=u.copy())) if mn is not None else None
    upper = is_true((exp.GT if on.op != "le" else exp.GTE)(this=mx, expression=u.copy())) if mx is not None else None
    tests: list[exp.Expr] = [t for t in (lower, upper) if t is not None]
    return tests[0] if len(tests) == 1 else exp.Paren(this=exp.or_(*tests, copy=False))


_SQL_OP = {"ne": "<>", "lt": "<", "gt": ">", "le": "<=", "ge": ">="}


def _instance(kind: str, op: str, form: str) -> ProofInstance:
    covers = Covers.make("EX", join_kinds=[kind], branches=2, aggregates=_folds(op), edges=[EDGE_OPS, EDGE_OPS],
                         variant=f"{op}/{form}" if form else op)
    cmp = f" AND o.x {_SQL_OP[op]} i.y" if op != KEYS_ONLY else ""
    sql = (f"SELECT o.k, o.x FROM (SELECT k, f(k, a, b) AS x FROM t WHERE p(k, a, b)) o "
           f"{JOIN_SQL[kind]} (SELECT k, g(k, a, b) AS y FROM t WHERE q(k, a, b)) i ON o.k = i.k{cmp}")
    name = f"EX/{kind}/{op}" + (f"/{form}" if form else "")
    return ProofInstance(name, sql, symbolic.SCHEMA, covers, {"p": "bool", "q": "bool", "f": "int", "g": "int"},
                         symbolic.COMMON_ASSUMPTIONS + (
                             "the compared values are projections f, g of the row (any σ/π/ρ chain on an edge "
                             "is one σ and one π, Algorithm 5)",))


EX = SelfExists()

