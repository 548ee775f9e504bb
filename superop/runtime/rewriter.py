"""Rule matching on the plan IR and SQL generation (no Spark here; see session.py for the
benefit gate).

Matching (§4.2-4.4), bottom-up over the plan:
* ADVANCENEXT — :func:`superop.ir.analysis.decompose` finds the core operators of Fig. 6
  (∪ / ⋈ over γ's over ONE shared source) through σ/π/ρ chains; a rule then admits the
  match only if every operator on each abstract edge is one the rule's edge allows (a pure
  FROM alias is not an operator) and the join kind / branch count fits.
* CHECKATTRIBUTES — single input single output (every consumer of a node strictly inside
  the match is inside it; the source is the one leaf) and the rule's streamability check
  (Algorithms 1-3: same source keys on every path; join equalities imply pairwise key
  equality — union-find, no Z3; Min & Join: exactly one min/max over one source column).
* CAPTUREPARAMETERS — Algorithm 5 per edge, inside the Fig. 10 template builder
  (:func:`superop.synth.templates.build_program`).

The matched sub-plan is replaced by an :class:`Opaque` node carrying the compiled
super-operator SQL (compile.py) and the query is regenerated with ``superop.ir.to_sql``.
Two independent diamonds are both rewritten; a diamond inside another's shared source is
rewritten first and the outer one reads the rewritten source.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field as dc_field
from typing import Callable, Optional, Sequence

from sqlglot import exp

from ..ir import nodes as N
from ..ir.analysis import (Decomposition, capture_parameters, decompose, interior_ids,
                            single_input_single_output)
from ..ir.dialect import DIALECT
from ..ir.generate import to_sql
from ..ir.lower import lower
from ..ir.safety import match_blocker
from ..synth.dsl import Program, RowEmit
from ..synth.templates import TemplateError, _and, _to_ns, _true, build_program
from .compile import NoNativeForm, compile_program

log = logging.getLogger("superop.runtime")


@dataclass(frozen=True, eq=False)
class Opaque(N.Opaque):
    """The IR's Opaque node that also keeps the replaced sub-plan's *qualified* output
    fields, so parents that say ``x.a`` / ``y.a`` still resolve (the base Opaque exposes
    unqualified names only). Named ``Opaque`` so the IR generator treats it as one."""
    qfields: tuple = ()

    @property
    def fields(self):
        return self.qfields or super().fields


@dataclass
class Match:
    rule_id: str
    family: str
    d: Decomposition
    interior: frozenset          # ids of the nodes the super-operator replaces (not the source)
    program: Optional[Program] = None            # set by prepare() (CaptureParameters + template)
    prefilter: Optional[exp.Expression] = None

    def prepare(self) -> "Match":
        """CaptureParameters (Algorithm 5) and the Fig. 10 template; raises TemplateError."""
        if self.program is None:
            prog = build_program(self.d)
            if self.family == "MJ":
                prog = _fix_mj_row_emits(self.d, prog)
            self.prefilter = _prefilter(self.d, prog)
            self.program = prog
        return self

    @property
    def root(self) -> N.Node:
        return self.d.root

    @property
    def source(self) -> N.Node:
        return self.d.source

    def describe(self) -> str:
        return f"{self.rule_id} at {self.family} {self.d.join_kind or 'union all'} over {self.source.op}"


class _Rule:
    """A catalog rule, pre-digested for fast matching."""

    def __init__(self, r: dict):
        self.raw = r
        self.id = r["id"]
        self.family = r["family"]
        self.kinds = frozenset(r.get("join_kinds") or ())
        self.branches = int(r.get("branches", 2))
        self.edges = [frozenset(e["optional"]) for e in r["abstract_edges"]]
        self.aggs = frozenset(r["aggregates"]) if r.get("aggregates") is not None else None
        sup = r.get("support") or {}
        self.rank = (-float(sup.get("cost_share", 0) or 0), -int(sup.get("executions", 0) or 0), self.id)

    def edges_of(self, d: Decomposition):
        """The decomposition's edges in the rule's edge order (see catalog.make_rule)."""
        b = d.branches
        if d.family == "DU":
            return [x.lower for x in b] + [x.upper for x in b]
        if d.family == "DJ":
            return [b[0].lower, b[1].lower, b[0].upper, b[1].upper]
        a, r = b[d.agg_side], b[1 - d.agg_side]
        return [a.lower, a.upper, r.upper]

    def admits(self, d: Decomposition) -> Optional[str]:
        """None if the rule's abstract tree admits ``d``, else why not."""
        if d.family != self.family:
            return "family"
        if d.family == "DU" and len(d.branches) != self.branches:
            return f"{len(d.branches)} branches"
        if d.family != "DU" and d.join_kind not in self.kinds:
            return f"join kind {d.join_kind}"
        for allowed, e in zip(self.edges, self.edges_of(d)):
            for op in e.ops:
                if isinstance(op, N.Rename) and op.is_identity():
                    continue  # a FROM alias is not an operator
                if op.op not in allowed:
                    return f"{op.op} on an edge that admits only {sorted(allowed)}"
        return None


def _agg_calls(agg: N.Aggregate) -> list[exp.AggFunc]:
    return [c for e, _ in agg.items for c in e.find_all(exp.AggFunc)]


def _min_join_check(d: Decomposition) -> Optional[str]:
    """Algorithm 3, lines 12-17: exactly one aggregation, min or max, whose argument
    depends on exactly one source column once the edge's mappings are undone (``b`` or
    ``b + 0`` but not ``b + c``)."""
    b = d.branches[d.agg_side]
    calls = _agg_calls(b.agg)
    if len(calls) != 1 or not isinstance(calls[0], (exp.Min, exp.Max)):
        return "Min & Join needs exactly one min/max aggregation"
    try:
        idx = {N.resolve_field(b.agg.child.fields, c) for c in calls[0].this.find_all(exp.Column)}
        deps = _deps_down(idx, b.lower)
    except KeyError:
        deps = set()
    if len(deps) != 1:
        return "the min/max argument does not depend on exactly one source column"
    return None


def _deps_down(idx: set, edge) -> set:
    """The bottom's field indices the edge top's fields ``idx`` are computed from."""
    for op in edge.ops:
        child = op.children[0].fields
        if isinstance(op, N.Rename):
            idx = {N.resolve_field(child, op.mapping[i][0].column()) for i in idx}
        elif isinstance(op, N.Project):
            idx = {N.resolve_field(child, c) for i in idx for c in op.items[i][0].find_all(exp.Column)}
    return idx


# ---------------------------------------------------------------------------
# CheckAttributes without expression rewriting: Algorithms 1-4 on column positions
# ---------------------------------------------------------------------------
def _bare(e: exp.Expression) -> Optional[exp.Column]:
    while isinstance(e, exp.Paren):
        e = e.this
    return e if isinstance(e, exp.Column) else None


def _trace_down(i: int, edge) -> Optional[int]:
    """TraverseDown (Alg. 4) of the edge top's field ``i`` to the bottom's field index;
    None if a projection computes it."""
    for op in edge.ops:
        child = op.children[0].fields
        if isinstance(op, N.Rename):
            i = N.resolve_field(child, op.mapping[i][0].column())
        elif isinstance(op, N.Project):
            c = _bare(op.items[i][0])
            if c is None:
                return None
            i = N.resolve_field(child, c)
    return i


def _trace_up(idx: set, edge) -> set:
    """TraverseUp: the edge top's field indices that carry the bottom's fields ``idx``."""
    for op in reversed(edge.ops):
        child = op.children[0].fields
        if isinstance(op, N.Rename):
            idx = {j for j, (f, _) in enumerate(op.mapping) if N.resolve_field(child, f.column()) in idx}
        elif isinstance(op, N.Project):
            idx = {j for j, (x, _) in enumerate(op.items)
                   if (c := _bare(x)) is not None and N.resolve_field(child, c) in idx}
    return idx


def _agg_keys(b) -> Optional[dict[int, set]]:
    """{source field index: positions of the aggregate's output that carry that key}, or
    None if a key is computed / the aggregate is global."""
    agg, low = b.agg, b.lower
    inp = agg.child.fields
    if not agg.keys:
        return None
    out: dict[int, set] = {}
    for k in agg.keys:
        c = _bare(k)
        if c is None:
            return None
        ki = N.resolve_field(inp, c)
        src = _trace_down(ki, low)
        if src is None:
            return None
        pos = {j for j, (x, _) in enumerate(agg.items)
               if (xc := _bare(x)) is not None and N.resolve_field(inp, xc) == ki}
        out.setdefault(src, set()).update(pos)
    return out


def _implies_key_equality(j: N.Join, left_tops: dict[int, set], right_tops: dict[int, set]) -> bool:
    """Algorithm 2 line 13 / Algorithm 3 line 10 by union-find: do the join's column
    equalities connect, for every source key, a left column and a right column carrying it?"""
    parent: dict = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    lf, rf = j.left.fields, j.right.fields
    for l, r in j.equi:
        cl, cr = _bare(l), _bare(r)
        if cl is None or cr is None:
            continue
        try:
            a, b = ("L", N.resolve_field(lf, cl)), ("R", N.resolve_field(rf, cr))
        except KeyError:
            continue
        parent[find(a)] = find(b)
    for src, ls in left_tops.items():
        rs = right_tops.get(src, set())
        if not any(find(("L", x)) == find(("R", y)) for x in ls for y in rs):
            return False
    return True


_AGG_NAME = {exp.Sum: "sum", exp.Min: "min", exp.Max: "max", exp.Avg: "avg"}


def _agg_names(agg: N.Aggregate) -> Optional[set]:
    out = set()
    for c in _agg_calls(agg):
        if isinstance(c, exp.Count):
            a = c.this
            out.add("count_star" if a is None or isinstance(a, exp.Star) else
                    "count_distinct" if isinstance(a, exp.Distinct) else "count")
        elif type(c) in _AGG_NAME and not isinstance(c.this, exp.Distinct):
            out.add(_AGG_NAME[type(c)])
        else:
            return None  # no accumulator for it
    return out


def _agg_names_all(d: Decomposition) -> Optional[set]:
    out = set()
    for b in d.branches:
        if b.agg is not None:
            n = _agg_names(b.agg)
            if n is None:
                return None
            out |= n
    return out


def streamable(d: Decomposition) -> Optional[str]:
    """The rule's streamability check (Algorithms 1-3) on column positions; None = ok."""
    aggs = [b for b in d.branches if b.agg is not None]
    keys = []
    for b in aggs:
        k = _agg_keys(b)
        if k is None:
            return "a grouping key is computed or the aggregate is global"
        keys.append(k)
    if len({frozenset(k) for k in keys}) != 1:
        return "paths are grouped on different source columns (Algorithm 1)"
    if d.family == "DU":
        return None
    j = d.join
    if d.family == "DJ":
        lt = {s: _trace_up(p, d.branches[0].upper) for s, p in keys[0].items()}
        rt = {s: _trace_up(p, d.branches[1].upper) for s, p in keys[1].items()}
    else:
        a, r = d.branches[d.agg_side], d.branches[1 - d.agg_side]
        at = {s: _trace_up(p, a.upper) for s, p in keys[0].items()}
        rtops = {s: _trace_up({s}, r.upper) for s in keys[0]}
        lt, rt = (at, rtops) if d.agg_side == 0 else (rtops, at)
        m = _min_join_check(d)
        if m is not None:
            return m
    if not _implies_key_equality(j, lt, rt):
        return "the join's equalities do not imply equality of every grouping key (Algorithm 2/3)"
    return None


def _fix_mj_row_emits(d: Decomposition, program: Program) -> Program:
    """Every row emit of Min & Join may only fire for rows that pass the row side's edge
    predicate. superop.synth.templates guards the null-extended (outer) and anti row emits
    with NOT(matched) only, which also emits rows the row-side σ removed; conjoin the
    row predicate here (idempotent for the other emits)."""
    rb = d.branches[1 - d.agg_side]
    phi = _to_ns(capture_parameters(rb.upper).predicate, "row")
    if phi is None or not program.row_emits:
        return program
    emits = tuple(RowEmit(_and(_true(phi), r.guard) if r.guard is not None else _true(phi), r.outputs)
                  for r in program.row_emits)
    from dataclasses import replace as dc_replace
    return dc_replace(program, row_emits=emits)


def _prefilter(d: Decomposition, program: Program) -> Optional[exp.Expression]:
    """A filter on the shared source that keeps every row the program can use, so the
    branch filters still reach the scan (PushedFilters): OR of the bottom edges' predicates
    when every path filters, AND keys NOT NULL when NULL keys can never produce output
    (inner/semi joins)."""
    if d.family == "MJ":
        a, r = d.branches[d.agg_side], d.branches[1 - d.agg_side]
        preds = [capture_parameters(a.lower).predicate, capture_parameters(r.upper).predicate]
    else:
        preds = [capture_parameters(b.lower).predicate for b in d.branches]
    out = None
    if all(p is not None for p in preds):
        out = exp.Paren(this=exp.or_(*[p.copy() for p in preds], copy=False)) if len(preds) > 1 else preds[0].copy()
    if d.family in ("DJ", "MJ") and d.join_kind in ("inner", "semi"):
        nn = [exp.Not(this=exp.Is(this=exp.column(k), expression=exp.Null())) for k in program.keys]
        out = exp.and_(*([out] if out is not None else []) + nn, copy=False) if nn else out
    return out


@dataclass
class Candidate:
    """One way to rewrite the query: a set of non-conflicting matches and its SQL."""
    matches: list[Match]
    sql: str
    label: str
    plan: Optional[dict] = None          # filled by the benefit gate (exchanges, cost, ...)


class Rewriter:
    """Pure rewriting (IR + templates + SQL generation); thread-safe (no mutable state
    after construction)."""

    def __init__(self, catalog: dict):
        self.catalog = catalog
        self.rules = sorted((_Rule(r) for r in catalog["rules"]), key=lambda r: r.rank)
        self.families = frozenset(r.family for r in self.rules)

    # -- matching ------------------------------------------------------------
    def match(self, plan: N.Node, trace: Optional[list] = None) -> list[Match]:
        """Every admissible match in the plan, bottom-up (children before parents)."""
        out: list[Match] = []
        if not self.rules:
            return out
        for node in N.walk(plan):
            if not isinstance(node, (N.UnionAll, N.Join)):
                continue
            d = decompose(node, plan)
            if d is None or d.family not in self.families:
                continue
            m = self._match_at(d, plan, trace)
            if m is not None:
                out.append(m)
        return out

    def _match_at(self, d: Decomposition, plan: N.Node, trace) -> Optional[Match]:
        blocker = match_blocker(d)          # nondeterminism, LIMIT/TABLESAMPLE in the source
        if blocker is not None:
            if trace is not None:
                trace.append(f"{d.family} at {d.root.op}({d.join_kind or len(d.branches)}): blocked — {blocker}")
            return None
        why = []
        for rule in self.rules:
            reason = rule.admits(d)
            if reason is not None:
                why.append(f"{rule.id}: {reason}")
                continue
            if not single_input_single_output(d, plan):
                why.append(f"{rule.id}: not single-input single-output")
                break
            names = list(d.source.names)   # normalized by lowering (exact when case-sensitive)
            if len(set(names)) != len(names):
                why.append(f"{rule.id}: the shared source has duplicate column names")
                break
            if rule.aggs is not None:
                names = _agg_names_all(d)
                if names is None or not names <= rule.aggs:
                    why.append(f"{rule.id}: aggregates outside {sorted(rule.aggs)}")
                    continue
            r = streamable(d)                     # Algorithms 1-3 (the same for every rule of a family)
            if r is not None:
                why.append(f"{rule.id}: {r}")
                break
            return Match(rule.id, d.family, d, interior_ids(d))
        if trace is not None and why:
            trace.append(f"{d.family} at {d.root.op}({d.join_kind or len(d.branches)}): no rule — " + "; ".join(why))
        return None

    # -- generation ------------------------------------------------------------
    def apply(self, plan: N.Node, matches: Sequence[Match], names: Optional[Sequence[str]] = None,
              types_of: Optional[Callable[[N.Node], Optional[list[str]]]] = None) -> str:
        """The query with each match replaced by its super-operator (matches must not
        conflict; bottom-up order)."""
        memo: dict[int, N.Node] = {}
        for m in matches:
            m.prepare()
            src = N.replace(m.source, memo) if memo else m.source
            src_names = list(m.source.names)
            src_sql = to_sql(src, names=src_names)
            if m.prefilter is not None:
                src_sql = f"SELECT * FROM ({src_sql}) AS __so_pf WHERE {m.prefilter.sql(dialect=DIALECT)}"
            types = types_of(m.root) if types_of is not None else None
            try:
                sql = compile_program(m.program, src_sql, output_types=types)
            except NoNativeForm as e:
                # run_generic can execute it, but not inside a SQL string: keep the original
                log.info("superop: %s has no native form (%s); sub-plan kept", m.rule_id, e)
                continue
            memo[id(m.root)] = Opaque(sql=sql, output=tuple(m.root.names), reason=f"superop:{m.rule_id}",
                                      qfields=tuple(m.root.fields))
        new_plan = N.replace(plan, memo)
        return to_sql(new_plan, names=names)


def prepare(matches: Sequence[Match], trace: Optional[list] = None) -> list[Match]:
    """Instantiate every match's template; a match the template refuses is dropped."""
    out = []
    for m in matches:
        try:
            out.append(m.prepare())
        except TemplateError as e:
            if trace is not None:
                trace.append(f"{m.rule_id}: template refused: {e}")
    return out


def select_non_conflicting(matches: Sequence[Match]) -> list[Match]:
    """Greedy bottom-up: a match whose interior overlaps an already chosen one is dropped
    (a chosen match inside another's *source* composes)."""
    chosen: list[Match] = []
    used: set[int] = set()
    for m in matches:
        if m.interior & used:
            continue
        chosen.append(m)
        used |= m.interior
    return chosen


@dataclass
class RewriteResult:
    sql: str
    applied: list[str]
    changed: bool
    explanation: str
    original_sql: str = ""
    timings_ms: dict = dc_field(default_factory=dict)
    exchanges_before: Optional[int] = None
    exchanges_after: Optional[int] = None
    cost_before: Optional[float] = None
    cost_after: Optional[float] = None
    candidates: list = dc_field(default_factory=list)
    error: Optional[str] = None

    def to_json(self) -> dict:
        return {"sql": self.sql, "applied": list(self.applied), "changed": self.changed,
                "explanation": self.explanation, "exchanges_before": self.exchanges_before,
                "exchanges_after": self.exchanges_after, "cost_before": self.cost_before,
                "cost_after": self.cost_after, "timings_ms": self.timings_ms,
                "candidates": self.candidates, "error": self.error}


def unchanged(sql: str, why: str, timings=None, error=None, **kw) -> RewriteResult:
    return RewriteResult(sql=sql, applied=[], changed=False, explanation=why, original_sql=sql,
                         timings_ms=dict(timings or {}), error=error, **kw)


def candidates_for(rw: Rewriter, plan: N.Node, matches: list[Match], names=None, types_of=None,
                   limit: int = 4) -> list[Candidate]:
    """Competing rewrites: every non-conflicting match together (greedy bottom-up), and
    — when there is more than one match — each match alone (the benefit gate ranks them)."""
    out: list[Candidate] = []
    together = select_non_conflicting(matches)
    out.append(Candidate(together, rw.apply(plan, together, names, types_of),
                         "+".join(m.rule_id for m in together)))
    if len(matches) > 1:
        for m in matches[: max(0, limit - 1)]:
            out.append(Candidate([m], rw.apply(plan, [m], names, types_of), f"only {m.rule_id}"))
    return out


def rewrite_structural(rw: Rewriter, sql: str, schema: dict) -> RewriteResult:
    """Rewrite without Spark (no benefit gate, IR output names, inferred types): what
    ``superop rewrite --no-gate`` prints."""
    t0 = time.perf_counter()
    low = lower(sql, schema)
    t1 = time.perf_counter()
    trace: list[str] = []
    matches = rw.match(low.plan, trace)
    t2 = time.perf_counter()
    timings = {"parse_ms": (t1 - t0) * 1e3, "match_ms": (t2 - t1) * 1e3}
    if not matches:
        return unchanged(sql, "no rule matches" + (": " + " | ".join(trace) if trace else ""), timings)
    matches = prepare(matches, trace)
    chosen = select_non_conflicting(matches)
    if not chosen:
        return unchanged(sql, "no rule matches: " + " | ".join(trace), timings)
    new = rw.apply(low.plan, chosen)
    timings["generate_ms"] = (time.perf_counter() - t2) * 1e3
    return RewriteResult(sql=new, applied=[m.rule_id for m in chosen], changed=True,
                         explanation="structural rewrite (no benefit gate): " +
                         "; ".join(m.describe() for m in chosen),
                         original_sql=sql, timings_ms=timings)
