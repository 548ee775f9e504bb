"""Pivot Join (PJ): one grouped aggregate used several times, each use fixing some grouping
keys Y to constants, the uses joined on the remaining keys K (year over year, quarter over
quarter — TPC-DS 31 and 75):

    WITH t AS (SELECT k, y, SUM(x) AS s FROM f GROUP BY k, y)
    SELECT ... FROM t t1 JOIN t t2 ON t1.k = t2.k WHERE t1.y = 2001 AND t2.y = 2002

    ⋈ Join tree (one kind: inner, left, right, full, semi or anti)
    ├── e2 [σπρ]* ──┐
    ├── ...         ├── γ GroupBy (shared: K ∪ Y) ── e1 [σπρ]* ── Spool
    └── e_{n+1}  ───┘

Edge order: e1 Spool → γ (the one lower edge), then per use e_{i+1} γ → ⋈ (the use's own
σ/π/ρ and the shared node's chain above the γ).

Why it is a diamond join: σ_{Y=c}(γ_{K∪Y}(src)) ≡ π_{K, c AS Y, aggs}(γ_K(σ_{Y=c}(src))) —
a filter on grouping keys commutes with the aggregate, and a group of K ∪ Y with Y fixed to
one value is the group of K among the rows with that value. Pushed below the γ, each use's
key filter becomes its lower-edge predicate, and the uses are the branches of an n-way
diamond join on K: the template is the kit's accumulators per use (guarded by that
predicate, e.g. ``SUM(CASE WHEN y = 2001 THEN x END)``), a presence flag per use (a group
that does not exist for a constant produces no row) and the kit's join-tree emission
(``kit.program.join_tree_emits``: the join kind decides which flags a row needs and which
use's columns are NULL). A fixed key's value is ``min(y)`` over the use's rows (all equal).
It runs as ONE GROUP BY K over the source filtered to the constants (the prefilter
``Y IN (c1, ..)`` reaches the scan).

Matching sees the uses as one sub-tree of joins with each use's filter on it: the matching
path runs ``kit.regroup`` first (pushdown, UNION ALL branch selection, regrouping of inner
trees), so a query that joins the uses with other tables (q31: six uses of two CTEs in one
tree) or filters them in the WHERE is matched too. Outer trees are matched as written:
uses must form a sub-tree of joins of one kind, filters of a null-supplying use in the ON
clause or on the use itself.

Admitted: every use fixes the same keys Y ≠ ∅, each by ``key = constant`` where the
constant's type makes equality the grouping's equality (integer or decimal constants on
integer/decimal keys, string constants on string keys, booleans); every join's condition
implies equality of every key of K between its sides (Algorithms 2-3) — or of the keys E
that every join equates when a DECLARED KEY (:mod:`superop.ir.keys`, traced through the
source's joins by :func:`superop.ir.keys.dependencies`) makes the rest of K determined by E
(TPC-DS q4/q11/q74: grouped by the customer's id and name columns, joined on the id; the
customer's business key determines the rest). Then the groups of K are the groups of E,
the program partitions by K, its joins need only E equal and NOT NULL, and the match,
its program (``requires``) and its covers record carry the premise: only a rule whose
certificates assumed it admits the match (the template proofs assume joins on every key,
so such a rule rests on bounded certificates), and only where the runtime's own
declarations give it (else the same ``join_on_subset_of_keys`` refusal); other filters of a
use that read only grouping keys are pushed below the γ with the constants, filters on
aggregate values stay above it (HAVING-like, on the use's presence).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Any, Optional, Sequence, Union

from sqlglot import exp

from ..dsl import AGG_FUNCS, STREAMING, Program
from ..ir.analysis import Edge, capture_parameters, walk_edge
from ..ir.dependencies import Determines, closure, dependencies
from ..ir.dialect import DIALECT
from ..ir.functions import is_nondeterministic_expr
from ..ir.generate import translate_columns
from ..ir.lowering.exprs import conjuncts
from ..ir.nodes import Join, UnionAll
from ..ir.parameters import parameter_type
from .kit.covers import Covers
from .kit.diamond import PlanContext, Shape, bare_column, field_type, find_field
from .kit.family import JOIN, Family, ProofInstance, Slot, Streamability
from .kit.program import (
    Accs,
    AggBranch,
    TreeInput,
    join_tree_emits,
    not_null_keys_prefilter,
    root_key_premise,
    same_keys,
    tree_implied,
    tree_premise_failure,
)
from .kit.records import (
    KEYED_JOIN_KINDS,
    Branch,
    CatalogNames,
    KeyPremise,
    Match,
    NearMiss,
    Reason,
    ReasonCode,
    TemplateError,
)
from .kit.regroup import aggregate_below, and_all
from .pivot_examples import PivotExamples
from .pivot_proofs import PROOF_INSTANCES


class PivotReason(ReasonCode):
    """Why uses of one shared aggregate are not a pivot join."""
    NOT_A_CONSTANT = (
        "use_filter_not_constant",
        "a use's filter on a grouping key is not an equality to a constant",
        "Filter each use on a grouping key with key = constant (WHERE d = 'x'), not a range, an IN list or an "
        "expression.")
    FIXED_KEYS_DIFFER = (
        "fixed_keys_differ",
        "the uses fix different grouping keys to constants",
        "Fix the same grouping key(s) to constants in every use.")
    NO_FIXED_KEY = (
        "no_fixed_key",
        "no grouping key is fixed to a constant by the uses (a self-join of a shared aggregate)",
        "Select one constant of a grouping key in each use (WHERE key = 'x'); a self-join without such filters is "
        "not a pivot.")
    CONSTANT_TYPE = (
        "constant_type",
        "a grouping key is compared with a constant whose equality is not the grouping's (a cast, a floating-point "
        "or an untyped key)",
        "Compare the key with a constant of the key's own type: no CAST, no floating-point key.")
    MIXED_JOIN_KINDS = (
        "mixed_join_kinds",
        "the uses are joined by joins of different kinds",
        "Join all uses with one join kind (all LEFT or all INNER).")
    UNION_NOT_SELECTED = (
        "union_branch_not_selected",
        "a use reads several branches of a shared UNION ALL (no constant column selects one)",
        "Add a constant column to each UNION ALL branch and filter each use on it, so that each use reads one "
        "branch.")
    USES_NOT_ADJACENT = (
        "uses_not_adjacent",
        "the uses are not one sub-tree of the joins (outer joins are not reordered)",
        "Join the uses next to each other, before any other table, so that they form one sub-tree of the joins.")


# ---------------------------------------------------------------------------
# one use: its filter split at the aggregate
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Use:
    """A use's upper-edge filter split at the γ: ``pushed`` (over source columns: the
    conjuncts reading only grouping keys, now below the γ), ``kept`` (over the γ's fields:
    the rest, above it) and ``fixed`` (key source column -> the constant it equals)."""
    pushed: Optional[exp.Expr]
    kept: Optional[exp.Expr]
    fixed: dict[str, exp.Expr]
    key_only_cols: frozenset[str]       # grouping keys the pushed conjuncts read


Refusal = tuple[ReasonCode, str]


def analyze_use(b: Branch, source_types: dict[str, Optional[str]]) -> Union[Use, Refusal]:
    agg, low_edge = b.agg, b.lower
    assert agg is not None and low_edge is not None
    low = capture_parameters(low_edge)
    in_fields = low_edge.top.fields
    keys: list[str] = []
    for k in agg.keys:
        c = bare_column(low.substitute(k, in_fields))
        if c is None:
            return Reason.COMPUTED_GROUPING_KEY, k.sql(dialect=DIALECT)
        keys.append(c.name)
    items = [low.substitute(e, in_fields) for e, _ in agg.items]

    def kind(i: int) -> str:
        """key (a grouping key), keys (computed from grouping keys and constants only: a
        filter on it commutes with the γ too) or value (reads an aggregate)."""
        e = items[i]
        c = bare_column(e)
        if c is not None and c.name in keys:
            return "key"
        if not list(e.find_all(exp.AggFunc)) and all(x.name in keys for x in e.find_all(exp.Column)):
            return "keys"
        return "value"
    up = capture_parameters(b.upper)
    pushed: list[exp.Expr] = []
    kept: list[exp.Expr] = []
    fixed: dict[str, exp.Expr] = {}
    read: set[str] = set()
    for cj in conjuncts(up.predicate):
        idx = [find_field(agg.fields, col) for col in cj.find_all(exp.Column)]
        if any(i is None for i in idx) or any(kind(i) == "value" for i in idx if i is not None):
            kept.append(cj)
            continue
        src = translate_columns(cj, agg.fields, items)
        pushed.append(src)
        read |= {col.name for col in src.find_all(exp.Column)}
        fix = _fixes(src, keys)
        if fix is not None:
            col, const = fix
            why = constant_refused(source_types.get(col), const)
            if why:
                return PivotReason.CONSTANT_TYPE, f"{col} = {const.sql(dialect=DIALECT)}: {why}"
            fixed.setdefault(col, const)
    return Use(and_all(pushed), and_all(kept), fixed, frozenset(read))


def _fixes(c: exp.Expr, keys: Sequence[str]) -> Optional[tuple[str, exp.Expr]]:
    """``key = constant`` (either order) -> (key, constant)."""
    while isinstance(c, exp.Paren):
        c = c.this
    if not isinstance(c, exp.EQ):
        return None
    for a, v in ((c.this, c.expression), (c.expression, c.this)):
        col = bare_column(a)
        if col is not None and col.name in keys and is_constant(v):
            return col.name, v
    return None


def is_constant(e: exp.Expr) -> bool:
    return (not list(e.find_all(exp.Column)) and not list(e.find_all(exp.AggFunc))
            and not any(isinstance(x, exp.Query) for x in e.walk()) and not is_nondeterministic_expr(e))


def constant_value(e: exp.Expr) -> Optional[tuple[str, Any]]:
    """A constant's kind and value: integer arithmetic of integer literals is folded;
    ("int"|"decimal"|"string"|"bool", value) or None when it is anything else. A typed
    parameter's value, and arithmetic over one, is None: any value of its kind."""
    while isinstance(e, exp.Paren):
        e = e.this
    if isinstance(e, exp.Boolean):
        return "bool", bool(e.this)
    if isinstance(e, exp.Literal):
        if e.is_string:
            return "string", e.this
        try:
            return "int", int(e.this)
        except ValueError:
            try:
                return "decimal", Decimal(e.this)
            except InvalidOperation:
                return None
    if isinstance(e, exp.Placeholder):
        # a typed parameter (superop.families.parametric): its kind, any value of it
        p = parameter_type(str(e.this))
        return None if p is None else ("int" if p[0] == "int" else "decimal", None)
    if isinstance(e, exp.Neg):
        v = constant_value(e.this)
        if v is None or v[0] not in ("int", "decimal"):
            return None
        return v[0], None if v[1] is None else -v[1]
    if isinstance(e, (exp.Add, exp.Sub, exp.Mul)):
        a, b = constant_value(e.this), constant_value(e.expression)
        if a is None or b is None or not a[0] == b[0] == "int":
            return None
        if a[1] is None or b[1] is None:
            return "int", None
        x, y = int(a[1]), int(b[1])
        return "int", x + y if isinstance(e, exp.Add) else x - y if isinstance(e, exp.Sub) else x * y
    return None


_INTEGRAL = ("tinyint", "smallint", "int", "integer", "bigint", "long", "short", "byte")


def constant_refused(col_type: Optional[str], const: exp.Expr) -> str:
    """Why ``key = const`` may hold for two different grouping values (so the key cannot
    leave the partition): "" when equality is the grouping's own."""
    v = constant_value(const)
    if v is None:
        return "not a literal constant"
    if col_type is None:
        return "the key's type is unknown (not a base-table column)"
    t = col_type.strip().lower()
    if t in _INTEGRAL or t.startswith("decimal"):
        return "" if v[0] in ("int", "decimal") else f"a {v[0]} constant on a {t} key is cast"
    if t == "string" or t.startswith("varchar"):
        return "" if v[0] == "string" else f"a {v[0]} constant on a {t} key is cast"
    if t == "boolean":
        return "" if v[0] == "bool" else f"a {v[0]} constant on a boolean key is cast"
    return f"equality on {t} keys is not supported"


# ---------------------------------------------------------------------------
# the family
# ---------------------------------------------------------------------------
class PivotJoin(PivotExamples, Family):
    name = "PJ"
    catalog = CatalogNames("pivot-join", "SuperOp_PJ",
                           "uses of one grouped aggregate fixing grouping keys to constants, joined on "
                           "the remaining keys")
    core_name = "Join"
    join_kinds = KEYED_JOIN_KINDS
    sides = (None,)
    min_branches = 2
    max_branches = None
    aggregates = AGG_FUNCS
    reasons = (PivotReason, Reason)
    proof_shape = JOIN
    not_constant_reason = PivotReason.NOT_A_CONSTANT     # the near-miss the log generator plants (pivot_examples.py)

    # -- pattern ------------------------------------------------------------------------
    def recognize(self, shape: Shape) -> Optional[Match | NearMiss]:
        if not shape.joins:
            return None
        ctx = shape.ctx
        paths = shape.paths
        uses = [p.stop if p.n_aggs == 0 and _is_shared_aggregate(p.stop, ctx) else None for p in paths]
        counts: dict[int, int] = {}
        for u in uses:
            if u is not None:
                counts[id(u)] = counts.get(id(u), 0) + 1
        if not counts or max(counts.values()) < 2:
            return None
        root = shape.root
        assert isinstance(root, Join)

        def near(reason: ReasonCode, detail: str = "") -> NearMiss:
            return NearMiss(self.name, root, reason, detail, shape.join_kind, len(paths), paths[0].stop)
        if len(counts) > 1 or any(u is None for u in uses):
            # uses and other inputs in one tree: each group of uses is a sub-tree of its own
            # (regrouped when the tree is inner) and is matched there
            if _group_is_subtree(shape, uses) or all(j.kind in ("inner", "cross") for j in shape.joins):
                return None
            return near(PivotReason.USES_NOT_ADJACENT)
        s = uses[0]
        assert s is not None
        if isinstance(s, UnionAll):
            return near(PivotReason.UNION_NOT_SELECTED)
        if len(shape.join_kinds) > 1:
            return near(PivotReason.MIXED_JOIN_KINDS, shape.join_kind)
        kind = shape.join_kinds[0]
        if kind not in self.join_kinds:
            return near(Reason.JOIN_KIND_UNSUPPORTED, kind)
        agg = aggregate_below(s, ctx)
        assert agg is not None
        chain = walk_edge(s, ctx.shared_ids - {id(s)})
        lower = walk_edge(agg.child, ctx.shared_ids)
        branches = tuple(Branch(Edge(p.branch.upper.ops + chain.ops, agg), agg, lower) for p in paths)
        source = lower.bottom
        types = {f.name: field_type(source, i) for i, f in enumerate(source.fields)}
        analyzed = [analyze_use(b, types) for b in branches]
        for a in analyzed:
            if not isinstance(a, Use):
                return near(*a)
        ok = [a for a in analyzed if isinstance(a, Use)]
        why = fixed_keys_problem(ok)
        if why is not None:
            return near(*why)
        fixed = set(ok[0].fixed)
        key_cols = [bare_column(capture_parameters(lower).substitute(k, lower.top.fields)) for k in agg.keys]
        names = list(source.names)
        keys = tuple(names.index(c.name) for c in key_cols if c is not None and c.name not in fixed)
        if not keys:
            return near(Reason.GLOBAL_AGGREGATE, "every grouping key is fixed to a constant")
        m = Match(self.name, root, source, branches, join_kind=kind, keys=keys)
        prem = determined_keys(m)
        return replace(m, premises=(prem,)) if prem is not None else m

    def premise_failure(self, m: Match) -> Optional[tuple[ReasonCode, str]]:
        """Algorithms 2-3 at every join of the tree: its condition implies equality of every
        remaining key (K) between its two sides — or of the keys that determine the rest
        (the match's declared-key premise, :func:`determined_keys`)."""
        determined = frozenset(c for p in m.determines for c in p.determined)
        failure = tree_premise_failure(m, determined)
        if failure and failure[0] == Reason.JOIN_ON_SUBSET_OF_KEYS:
            return failure[0], failure[1] + " (no declared key determines them)"
        return failure

    def key_premise(self, m: Match) -> Optional[KeyPremise]:
        """The root join's premise (the verifier decides it with Z3; matching decides every
        join's with union-find in :meth:`premise_failure`)."""
        return root_key_premise(m, frozenset(c for p in m.determines for c in p.determined))

    # -- abstract edges -------------------------------------------------------------------
    def layout(self, branches: int, side: object = None) -> tuple[Slot, ...]:
        if branches < 2:
            raise ValueError(f"{self.name} has two or more uses, not {branches}")
        return tuple(Slot(0, 1 + i, "GroupBy", drawn="γ GroupBy (shared)") for i in range(branches))

    # -- streamability, template, code generation -------------------------------------------
    def uses(self, m: Match) -> list[Use]:
        types = {f.name: field_type(m.source, i) for i, f in enumerate(m.source.fields)}
        out = []
        for b in m.branches:
            u = analyze_use(b, types)
            if not isinstance(u, Use):
                raise TemplateError(u[0].text + (f": {u[1]}" if u[1] else ""))
            out.append(u)
        why = fixed_keys_problem(out)
        if why is not None:
            raise TemplateError(why[0].text + (f": {why[1]}" if why[1] else ""))
        return out

    def streamability(self, m: Match) -> Streamability:
        fixed = sorted(self.uses(m)[0].fixed)
        keys = sorted(m.key_names)
        return Streamability(f"every use is the aggregate on {keys} ∪ {fixed} with {fixed} fixed to a "
                             f"constant: one partition per {keys}; every join equates {keys}",
                             {"keys": keys, "fixed": fixed, "join_kind": m.join_kind, "uses": len(m.branches)})

    def build_program(self, m: Match) -> Program:
        """SuperOp_PJ: per use the kit's aggregate path with its key filter pushed below the
        γ (accumulators and presence flag guarded by it; fixed keys read as min), the
        join tree's emits from the kit."""
        uses = self.uses(m)
        fixed = sorted(uses[0].fixed)
        accs = Accs()
        brs = [AggBranch(b, accs, guard=u.pushed, upper_pred=u.kept, fixed=fixed)
               for b, u in zip(m.branches, uses)]
        keys = same_keys(brs)
        inputs: dict[int, TreeInput] = {}
        for b, br in zip(m.branches, brs):
            if id(b.upper.top) in inputs:
                raise TemplateError("two uses are the same node")
            inputs[id(b.upper.top)] = TreeInput(tuple(br.top_fields), tuple(br.outputs), br.present)
        equated = _equated(m, keys)
        emits = join_tree_emits(m.root, inputs, keys, equated)
        return Program(keys=tuple(keys), output=m.root.names, accumulators=tuple(accs.accs),
                       flags=tuple(accs.flags), partition_emits=tuple(emits), memory=STREAMING,
                       requires=m.determines)

    def prefilter(self, m: Match, program: Program) -> Optional[exp.Expr]:
        """The rows some use reads: ``Y IN (c1, ..)`` when each use is one ``y = c`` on the
        same key, else the OR of the uses' row filters; keys NOT NULL for inner/semi."""
        preds = []
        for b, u in zip(m.branches, self.uses(m)):
            assert b.lower is not None
            preds.append(and_all([p for p in (capture_parameters(b.lower).predicate, u.pushed) if p is not None]))
        single = [_single_fix(p) for p in preds]
        if all(s is not None for s in single) and len({s[0] for s in single if s is not None}) == 1:
            col = next(s[0] for s in single if s is not None)
            vals: list[exp.Expr] = []
            for s in single:
                assert s is not None
                if not any(v == s[1] for v in vals):
                    vals.append(s[1].copy())
            inlist = exp.In(this=exp.column(col), expressions=vals)
            nn = not_null_keys_prefilter(m.join_kind, program, [inlist], _equated(m, program.keys))
            return nn
        return not_null_keys_prefilter(m.join_kind, program, preds, _equated(m, program.keys))

    # -- generalization and the catalog --------------------------------------------------------
    def skeleton(self, point: Covers) -> tuple[Any, ...]:
        """A rule per declared-key premise too: its proofs are bounded certificates under
        that premise (the template proofs assume joins on every key)."""
        sk = super().skeleton(point)
        return sk + (point.premises,) if point.premises else sk

    def rule_id(self, skeleton: tuple[Any, ...]) -> str:
        base = f"{self.catalog.long_name}-{skeleton[2]}-{skeleton[1]}way"
        if len(skeleton) > 4 and skeleton[4]:
            import hashlib
            tag = hashlib.sha256("; ".join(skeleton[4]).encode()).hexdigest()[:8]
            return f"{base}-keyed-{tag}"
        return base

    def describe(self, skeleton: tuple[Any, ...], n_patterns: int) -> str:
        keyed = (f" — under the declared-key premise {'; '.join(skeleton[4])} (bounded certificates)"
                 if len(skeleton) > 4 and skeleton[4] else "")
        return (f"{skeleton[1]} uses of one grouped aggregate, each fixing grouping keys to constants, "
                f"joined ({skeleton[2]}) on the remaining keys{keyed}; generalizes {n_patterns} verified "
                f"pattern{'s' if n_patterns != 1 else ''}")

    # -- proofs ---------------------------------------------------------------------------------
    def fixed_grouping_keys(self, m: Match) -> tuple[dict[str, exp.Expr], ...]:
        """Per use: the grouping keys it fixes to a constant (the partition keys are the rest)."""
        return tuple(dict(u.fixed) for u in self.uses(m))

    def proof_instance_name(self, join_kind: Optional[str] = None, agg_left: bool = True, branches: int = 2,
                            func: str = "min") -> str:
        return f"PJ/{join_kind}/{branches}"

    def proof_instances(self) -> tuple[ProofInstance, ...]:
        return PROOF_INSTANCES


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _is_shared_aggregate(n: Any, ctx: PlanContext) -> bool:
    if not ctx.is_shared(n):
        return False
    if aggregate_below(n, ctx) is not None:
        return True
    return isinstance(n, UnionAll) and all(aggregate_below(b, ctx) is not None for b in n.inputs)


def _group_is_subtree(shape: Shape, uses: Sequence[Any]) -> bool:
    """Is every group of two or more uses exactly the leaves of one join of the tree?"""
    leaves = [p.branch.upper.top for p in shape.paths]
    groups: dict[int, set[int]] = {}
    for lf, u in zip(leaves, uses):
        if u is not None:
            groups.setdefault(id(u), set()).add(id(lf))

    def under(n: Any) -> set[int]:
        if isinstance(n, Join) and any(n is j for j in shape.joins):
            return under(n.left) | under(n.right)
        return {id(n)}
    subtrees = [under(j) for j in shape.joins]
    return all(g in subtrees for g in groups.values() if len(g) > 1)


def determined_keys(m: Match) -> Optional[Determines]:
    """The declared-key premise under which the uses' joins need not equate every key:
    the keys some join does not equate are determined (:func:`superop.ir.keys.closure`
    of the source's dependencies, :func:`superop.ir.keys.dependencies`) by keys EVERY
    join equates. Then the groups of K are the groups of the equated keys, and the
    pivot on K is the pivot on them. None when nothing is missing or no declaration
    determines what is."""
    implied = [imp for _, imp in tree_implied(m)]
    if not implied or all(all(i) for i in implied):
        return None
    everywhere = [k for n, k in enumerate(m.keys) if all(i[n] for i in implied)]
    missing = [k for k in m.keys if k not in everywhere]
    if not everywhere:
        return None
    reach, used = closure(frozenset(everywhere), dependencies(m.source))
    if not set(missing) <= reach:
        return None
    names = m.source.names
    by = [k for k in everywhere if any(k in d.by for d in used)] or everywhere
    return Determines(tuple(names[k] for k in by), tuple(names[k] for k in missing),
                      tuple(dict.fromkeys(d.origin for d in used)))


def _equated(m: Match, keys: Sequence[str]) -> Optional[list[str]]:
    """The program's keys the joins equate (None: all of them — no premise)."""
    if not m.determines:
        return None
    determined = {c for p in m.determines for c in p.determined}
    return [k for k in keys if k not in determined]


def fixed_keys_problem(uses: Sequence[Use]) -> Optional[Refusal]:
    """Every use must fix the same non-empty set of keys; a key some use fixes must not be
    filtered otherwise by a use that does not fix it."""
    every = set(uses[0].fixed)
    some: set[str] = set()
    for u in uses:
        every &= set(u.fixed)
        some |= set(u.fixed)
    for u in uses:
        loose = (u.key_only_cols & some) - set(u.fixed)
        if loose:
            return PivotReason.NOT_A_CONSTANT, ", ".join(sorted(loose))
    if every != some:
        return PivotReason.FIXED_KEYS_DIFFER, ", ".join(sorted(some - every))
    if not every:
        return PivotReason.NO_FIXED_KEY, ""
    return None


def _single_fix(p: Optional[exp.Expr]) -> Optional[tuple[str, exp.Expr]]:
    if p is None:
        return None
    while isinstance(p, exp.Paren):
        p = p.this
    if not isinstance(p, exp.EQ):
        return None
    for a, v in ((p.this, p.expression), (p.expression, p.this)):
        c = bare_column(a)
        if c is not None and is_constant(v):
            return c.name, v
    return None


PJ = PivotJoin()
