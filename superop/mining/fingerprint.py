"""Merkle fingerprints of IR sub-plans (cache-based MQO paper, §4.1, Def. 1-3).

ID(u) is *loose* (operator label only) for Select, Project and Rename — shared operators can
subsume different predicates / column lists — and *strict* (label + attributes) for everything
else. A Rename is treated like the projection it is (Spark plans it as a Project); an identity
Rename (a FROM alias) is no operator at all and is transparent.

Attributes are canonicalized so that the same computation written differently hashes equally:
column references become input positions (``$i``, side-tagged ``L$i``/``R$i`` in joins), literals
become ``?`` (templates already abstract them), grouping keys are a set, inputs of commutative
operators (inner/full/cross join, UNION ALL) are ordered canonically, and a right outer join is
the left outer join with its inputs swapped.
"""
from __future__ import annotations

import hashlib
from typing import Callable

from sqlglot import exp

from ..ir import (Aggregate, GroupingAggregate, Join, Limit, Node, Opaque, Project, Rename, Scan,
                  Select, Sort, UnionAll, Window, walk)
from ..ir.dialect import DIALECT
from ..ir.nodes import Field, resolve_field


def _h(s: str) -> str:
    return hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()


def strict_index(fields: tuple[Field, ...], col: exp.Column) -> int | None:
    """Index of ``col`` in ``fields``: an exact (qualifier, name) match wins; an unqualified
    (or unknown-qualifier) column falls back to a unique name. None if unresolvable."""
    name, q = col.name, (col.table or None)
    if q is not None:
        hits = [i for i, f in enumerate(fields) if f.name == name and f.qualifier == q]
        if len(hits) == 1:
            return hits[0]
        if hits or any(f.qualifier == q for f in fields):
            return None
    hits = [i for i, f in enumerate(fields) if f.name == name]
    return hits[0] if len(hits) == 1 else None


def canon_expr(e: exp.Expression, ref: Callable[[exp.Column], str]) -> str:
    """Expression text with columns replaced by ``ref(col)`` and literals by ``?``."""
    def fix(n):
        if isinstance(n, exp.Column):
            return exp.var(ref(n))
        if isinstance(n, exp.Literal):
            return exp.var("?")
        return n
    try:
        return e.copy().transform(fix).sql(dialect=DIALECT)
    except Exception:  # pragma: no cover - defensive: never fail a template on rendering
        return e.sql(dialect=DIALECT)


def _pos_ref(fields):
    def ref(c: exp.Column) -> str:
        i = strict_index(fields, c)
        return f"${i}" if i is not None else f"${c.name}"
    return ref


def join_sides(j: Join):
    """(left_ref, right_ref) resolvers tagging columns L$i / R$i. A qualifier carried by
    only one side decides the side (``o.a`` when both inputs have an ``a``)."""
    lf, rf = j.left.fields, j.right.fields

    def ref(c: exp.Column) -> str:
        side = column_side(c, lf, rf)
        if side == "L":
            return f"L${strict_index(lf, c)}"
        if side == "R":
            return f"R${strict_index(rf, c)}"
        return f"?{c.name}"
    return ref


def column_side(c: exp.Column, lf, rf) -> str | None:
    q = c.table or None
    if q is not None:
        in_l = any(f.qualifier == q for f in lf)
        in_r = any(f.qualifier == q for f in rf)
        if in_l != in_r:
            side, fields = ("L", lf) if in_l else ("R", rf)
            return side if strict_index(fields, c) is not None else None
    li, ri = strict_index(lf, c), strict_index(rf, c)
    if (li is None) == (ri is None):
        return None
    return "L" if li is not None else "R"


class Fingerprinter:
    """Fingerprints every node of one plan (memoized by identity)."""

    def __init__(self):
        self.memo: dict[int, str] = {}

    def __call__(self, node: Node) -> str:
        for n in walk(node):
            if id(n) not in self.memo:
                self.memo[id(n)] = self._fp(n)
        return self.memo[id(node)]

    def _fp(self, n: Node) -> str:
        kid = [self.memo[id(c)] for c in n.children]
        if isinstance(n, Scan):
            # the resolved identity, not the name as written: SALES.OPS and sales.ops are one
            # table in a case-insensitive session, sales.ops and default.ops never are
            return _h("scan|" + "\x1f".join(n.identity))
        if isinstance(n, Opaque):
            return _h(f"opaque|{n.sql}")
        if isinstance(n, Rename) and n.is_identity():
            return kid[0]                       # a FROM alias is not an operator
        if isinstance(n, Select):
            return _h(f"σ|{kid[0]}")
        if isinstance(n, Project):
            return _h(f"π|{kid[0]}")
        if isinstance(n, Rename):
            return _h(f"ρ|{kid[0]}")
        inf = n.input_fields()
        ref = _pos_ref(inf)
        if isinstance(n, Aggregate):
            keys = sorted(canon_expr(k, ref) for k in n.keys)
            items = [canon_expr(e, ref) for e, _ in n.items]
            return _h(f"γ|{keys}|{items}|{kid[0]}")
        if isinstance(n, GroupingAggregate):
            # the clause as written (set order and nesting are meaning: grouping_id())
            group = canon_expr(n.group, ref)
            items = [canon_expr(e, ref) for e, _ in n.items]
            return _h(f"Γ|{group}|{items}|{kid[0]}")
        if isinstance(n, Window):
            return _h(f"ω|{[canon_expr(e, ref) for e, _ in n.items]}|{kid[0]}")
        if isinstance(n, Sort):
            return _h(f"τ|{[canon_expr(o, ref) for o in n.order]}|{kid[0]}")
        if isinstance(n, Limit):
            return _h(f"λ|{kid[0]}")
        if isinstance(n, UnionAll):
            return _h(f"∪|{sorted(kid)}")
        if isinstance(n, Join):
            return self._join(n, kid)
        return _h(f"{n.op}|{kid}")

    def _aggregate(self, n: Aggregate | GroupingAggregate, inf: tuple[Field, ...], refs: tuple[str, ...],
                   child: str) -> tuple[str, tuple[str, ...]]:
        """γ is its keys and its aggregate calls; what an output computes over them is a
        projection (Spark's physical plan folds a cast the analyzer put above the
        aggregate into its results: the same γ either way)."""
        keys = (sorted(self._canon(k, inf, refs) for k in n.keys) if isinstance(n, Aggregate)
                else [self._canon(n.group, inf, refs)])
        calls = sorted({self._canon(c, inf, refs) for e, _ in n.items for c in _outer_aggs(e)})
        fp = _h(f"{n.op}|{keys}|{calls}|{child}")

        def out(e: exp.Expression) -> str:
            def agg(x):
                return exp.var(f"{fp}!{self._canon(x, inf, refs)}") if isinstance(x, exp.AggFunc) else x
            return self._item(e.copy().transform(agg), inf, refs)
        return fp, tuple(out(e) for e, _ in n.items)

    def _join(self, j: Join, kid: list[str]) -> str:
        ref = join_sides(j)
        pairs = [(canon_expr(a, ref), canon_expr(b, ref)) for a, b in j.equi]
        res = canon_expr(j.residual, ref) if j.residual is not None else ""
        kind, lfp, rfp = j.kind, kid[0], kid[1]
        swap = kind == "right" or (kind in ("inner", "full", "cross") and rfp < lfp)
        if kind == "right":
            kind = "left"
        if swap:
            lfp, rfp = rfp, lfp
            flip = {"L": "R", "R": "L"}
            pairs = [(_flip(b, flip), _flip(a, flip)) for a, b in pairs]
            res = _flip(res, flip)
        if kind in ("inner", "full", "cross"):
            pairs = [tuple(sorted(p)) for p in pairs]
        return _h(f"⋈|{kind}|{sorted(pairs)}|{res}|{lfp}|{rfp}")


def _flip(s: str, m: dict) -> str:
    out = []
    i = 0
    while i < len(s):
        if s[i] in m and i + 1 < len(s) and s[i + 1] == "$":
            out.append(m[s[i]])
        else:
            out.append(s[i])
        i += 1
    return "".join(out)


class LineageFingerprinter:
    """Fingerprints of what a sub-plan computes, whatever way a planner arranged it.

    :class:`Fingerprinter` hashes every σ/π/ρ as an operator and a column as its position
    in its node's input, so the same program lowered from SQL text, from a DataFrame's
    analyzed plan and from the physical plan Spark logged for it (column pruning, collapsed
    projections, filters Spark inferred) gets three fingerprints. Here σ, π and ρ are not
    operators at all: a column is named by its **lineage** — the base column it reads
    (``<scan>.<name>``), the expression it computes over lineages, or the output of the
    nearest strict operator (``<fingerprint>#<position>``) — and strict operators (γ, ⋈, ∪,
    ω, τ, λ) hash their expressions over lineages and their inputs' fingerprints. Literals
    (and casts of literals) are ``?``, ``count(<literal>)`` is ``count(*)``; inputs of inner
    and full joins and of unions are in canonical order. What it forgets: the filters and
    projections between strict operators — it identifies the diamond a candidate is, not
    its edges (the candidate's shape and the rule's edges say those).
    """

    def __init__(self) -> None:
        self.memo: dict[int, tuple[str, tuple[str, ...]]] = {}

    def __call__(self, node: Node) -> str:
        for n in walk(node):
            if id(n) not in self.memo:
                self.memo[id(n)] = self._fp(n)
        return self.memo[id(node)][0]

    def _canon(self, e: exp.Expression, fields: tuple[Field, ...], refs: tuple[str, ...]) -> str:
        def ref(c: exp.Column) -> str:
            i = strict_index(fields, c)
            return refs[i] if i is not None else f"?{c.name}"

        def fix(n):
            if isinstance(n, exp.Count) and isinstance(n.this, (exp.Literal, exp.Boolean)):
                return exp.Count(this=exp.Star())
            if isinstance(n, exp.Cast) and isinstance(n.this, (exp.Literal, exp.Neg, exp.Null)):
                return exp.var("?")
            return n
        return canon_expr(_grouped(e.copy().transform(fix)), ref)

    def _item(self, e: exp.Expression, fields: tuple[Field, ...], refs: tuple[str, ...]) -> str:
        """A projected column's lineage: a bare column keeps its own, a computed one is
        the expression over lineages."""
        if isinstance(e, exp.Column):
            i = strict_index(fields, e)
            if i is not None:
                return refs[i]
        return self._canon(e, fields, refs)

    def _fp(self, n: Node) -> tuple[str, tuple[str, ...]]:
        kids = [self.memo[id(c)] for c in n.children]
        if isinstance(n, Scan):
            fp = _h("scan|" + "\x1f".join(n.identity))
            return fp, tuple(f"{fp}.{c}" for c, _ in n.columns)
        if isinstance(n, Opaque):
            fp = _h(f"opaque|{n.sql}")
            return fp, tuple(f"{fp}.{c}" for c in n.output)
        if isinstance(n, Select):
            return kids[0]
        inf = n.input_fields()
        refs = tuple(r for k in kids for r in k[1])
        if isinstance(n, Rename):
            return kids[0][0], tuple(refs[resolve_field(inf, f.column())] for f, _ in n.mapping)
        if isinstance(n, Project):
            return kids[0][0], tuple(self._item(e, inf, refs) for e, _ in n.items)
        if isinstance(n, (Aggregate, GroupingAggregate)):
            return self._aggregate(n, inf, refs, kids[0][0])
        if isinstance(n, Window):
            fp = _h(f"ω|{[self._canon(e, inf, refs) for e, _ in n.items]}|{kids[0][0]}")
            return fp, refs + tuple(f"{fp}#{i}" for i in range(len(n.items)))
        if isinstance(n, Sort):
            return _h(f"τ|{[self._canon(o, inf, refs) for o in n.order]}|{kids[0][0]}"), refs
        if isinstance(n, Limit):
            fp = _h(f"λ|{n.limit}|{n.offset}|{kids[0][0]}")
            return fp, tuple(f"{fp}:{r}" for r in refs)
        if isinstance(n, UnionAll):
            fp = _h(f"∪|{sorted(k[0] for k in kids)}")
            return fp, tuple(f"{fp}#{i}" for i in range(len(n.fields)))
        if isinstance(n, Join):
            return self._join(n, kids)
        fp = _h(f"{n.op}|{[k[0] for k in kids]}")
        return fp, tuple(f"{fp}#{i}" for i in range(len(n.fields)))

    def _aggregate(self, n: Aggregate | GroupingAggregate, inf: tuple[Field, ...], refs: tuple[str, ...],
                   child: str) -> tuple[str, tuple[str, ...]]:
        """γ is its keys and its aggregate calls; what an output computes over them is a
        projection (Spark's physical plan folds a cast the analyzer put above the
        aggregate into its results: the same γ either way)."""
        keys = (sorted(self._canon(k, inf, refs) for k in n.keys) if isinstance(n, Aggregate)
                else [self._canon(n.group, inf, refs)])
        calls = sorted({self._canon(c, inf, refs) for e, _ in n.items for c in _outer_aggs(e)})
        fp = _h(f"{n.op}|{keys}|{calls}|{child}")

        def out(e: exp.Expression) -> str:
            def agg(x):
                return exp.var(f"{fp}!{self._canon(x, inf, refs)}") if isinstance(x, exp.AggFunc) else x
            return self._item(e.copy().transform(agg), inf, refs)
        return fp, tuple(out(e) for e, _ in n.items)

    def _join(self, j: Join, kids: list[tuple[str, tuple[str, ...]]]) -> tuple[str, tuple[str, ...]]:
        (lfp, lrefs), (rfp, rrefs) = kids
        lf, rf = j.left.fields, j.right.fields

        def side(e: exp.Expression) -> str:
            return self._canon(e, lf + rf, lrefs + rrefs)
        pairs = sorted(tuple(sorted((side(a), side(b)))) for a, b in j.equi)
        res = side(j.residual) if j.residual is not None else ""
        kind, a, b = j.kind, lfp, rfp
        if kind == "right":
            kind, a, b = "left", rfp, lfp
        elif kind in ("inner", "full", "cross") and b < a:
            a, b = b, a
        fp = _h(f"⋈|{kind}|{pairs}|{res}|{a}|{b}")
        out = lrefs if j.kind in ("semi", "anti") else lrefs + rrefs
        return fp, tuple(f"{fp}:{r}" for r in out)


def _outer_aggs(e: exp.Expression) -> list[exp.Expression]:
    """The aggregate calls of ``e`` that are not inside another aggregate call."""
    out = []
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, exp.AggFunc):
            out.append(x)
        else:
            stack.extend(x.iter_expressions())
    return out


def _grouped(e: exp.Expression) -> exp.Expression:
    """``e`` with one pair of parentheses around every operator and none elsewhere, so
    that ``s * (b + 1)`` written inline and ``s * x`` over ``x = b + 1`` read the same."""
    while isinstance(e, exp.Paren):
        e = e.this
    for p in [n for n in e.walk() if isinstance(n, exp.Paren)]:
        p.replace(p.this)
    for n in [n for n in e.walk() if isinstance(n, (exp.Binary, exp.Not, exp.Neg)) and n is not e]:
        wrapper = exp.Paren()
        n.replace(wrapper)
        wrapper.set("this", n)
    return exp.Paren(this=e) if isinstance(e, (exp.Binary, exp.Not, exp.Neg)) else e


def lineage_fingerprint(node: Node) -> str:
    """The :class:`LineageFingerprinter` fingerprint of one sub-plan."""
    return LineageFingerprinter()(node)
