"""Plan-vs-plan equivalence: two IR plans that read the same base tables.

    from superop.verify.plans import check_plans_equivalent
    check_plans_equivalent(plan_a, plan_b, K=3, timeout_ms=20000) -> Result

* :func:`check_plans_equivalent` — **bounded**: Z3 looks for base tables of at most K rows
  each (every row present or not, every value nullable) on which the two output bags
  differ. unsat -> ``verified`` (bounded by K), sat -> ``refuted`` with every table's rows
  and both outputs, otherwise ``unknown``; unmodelled SQL is ``unsupported``. Several
  tables are supported (joins encode the K x K product); the encodings are the ones of
  ``superop.verify`` (:class:`PlanEncoder`), not a copy.
* :func:`prove_spj_equivalent` — **unbounded, per instance** ("rowwise"): for two
  select-project-(inner/cross)-join plans over the same multiset of inputs. Such a plan
  is a filter-map over the product of its inputs: the output bag is
  ``{map(u) | u in I1 x ... x In, keep(u)}``. If ``keep_a(u) <=> keep_b(u)`` and
  ``keep_a(u) => map_a(u) = map_b(u)`` hold for EVERY product tuple u (Z3 proves it with
  the input columns as free nullable variables), the two bags are equal for all inputs of
  every size. Sound because the multiplicity of an output row is the number of product
  tuples that are kept and mapped to it, on both sides alike.

Uninterpreted predicates. A deterministic predicate the encoder does not model (LIKE,
string functions, interval arithmetic, ...) inside a filter or join condition becomes an
uninterpreted function of the columns it reads, the same function for the same text on
both sides. Any interpretation is allowed, so a ``verified`` stays sound; a difference
found only under that abstraction is ``unknown``, never ``refuted``.
"""
from __future__ import annotations

import hashlib
import itertools
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Sequence

import z3
from sqlglot import exp

from ..ir.nodes import (
    Join,
    Node,
    Project,
    Rename,
    Scan,
    Select,
    is_nondeterministic,
    is_nondeterministic_expr,
    resolve_field,
    walk,
)
from . import encode as _encode
from .bags import bags_differ, concrete_rel
from .check import new_solver
from .neighbours import declared_key_constraints
from .exprs import Ctx, ev
from .plan_encoder import PlanEncoder
from .relations import Table
from .result import REFUTED, UNKNOWN, UNSUPPORTED, VERIFIED, Counterexample, Result, Unsupported
from .solving import RestartingSolver
from .values import V, fresh, is_true, kind_of_type, not_distinct

DEFAULT_K = 3
DEFAULT_TIMEOUT_MS = 20000
ATOM_PREFIX = "__atom_"

BOUNDED_CLAIM = "the two plans output the same bag on all base tables of at most {K} rows each"
ROWWISE_CLAIM = ("the two select-project-join plans keep the same tuples of the product of their "
                 "inputs and map them to the same rows, hence output the same bag on all inputs")
ASSUMPTIONS = [
    "integers are unbounded, doubles/decimals are exact reals (no overflow, no rounding)",
    "division by zero is NULL (Spark non-ANSI); ANSI errors are outside the model",
    "bag semantics: outputs compared by multiplicity of NULL-safe equal rows",
    "predicates the encoder does not model are deterministic functions of the columns they read "
    "(uninterpreted: any interpretation is allowed)",
]


# ---------------------------------------------------------------------------
# Uninterpreted predicates ("atoms")
# ---------------------------------------------------------------------------
@dataclass
class _Atom:
    key: str                          # canonical text, columns replaced by $0, $1, ...
    args: list                        # the column references, in placeholder order


@dataclass
class Atoms:
    """Registry of predicates replaced by uninterpreted functions during one check."""
    by_name: dict = field(default_factory=dict)
    used: bool = False

    @staticmethod
    def is_atom(c: exp.Column) -> bool:
        return c.name.startswith(ATOM_PREFIX)

    def atomize(self, e: exp.Expression, ctx0: Ctx) -> exp.Expression:
        """``e`` with every maximal predicate the encoder cannot evaluate replaced by an
        atom column (AND/OR/NOT are kept, so their 3-valued logic stays exact). ``ctx0``
        evaluates one representative row (kinds are the same for every row). AND/OR/NOT and
        parentheses are rebuilt over their atomized operands without evaluating them as a
        whole first: a connective is modelled exactly when its operands are, and trying the
        whole of a long OR of conjunctions at every level made this quadratic."""
        if isinstance(e, (exp.Paren, exp.Not)):
            x = self.atomize(e.this, ctx0)
            return e if x is e.this else type(e)(this=x)       # unchanged: the same object
        if isinstance(e, (exp.And, exp.Or)):
            a, b = self.atomize(e.this, ctx0), self.atomize(e.expression, ctx0)
            return e if a is e.this and b is e.expression else type(e)(this=a, expression=b)
        try:
            ev(e, ctx0)
            return e
        except Unsupported:
            pass
        if isinstance(e, exp.Predicate) and not isinstance(e, exp.SubqueryPredicate) \
                and e.find(exp.Query) is None:
            if is_nondeterministic_expr(e):
                raise Unsupported(f"nondeterministic predicate {e.sql(dialect='spark')}")
            return self._register(e)
        raise Unsupported(f"expression {e.sql(dialect='spark')} is not modelled")

    def _register(self, e: exp.Expression) -> exp.Column:
        order: dict[str, int] = {}
        args = []
        for c in e.find_all(exp.Column):
            k = c.sql(dialect="spark")
            if k not in order:
                order[k] = len(order)
                args.append(c.copy())

        def ph(n):
            if isinstance(n, exp.Column):
                return exp.var(f"${order[n.sql(dialect='spark')]}")
            return n
        key = e.copy().transform(ph).sql(dialect="spark")
        name = f"{ATOM_PREFIX}{len(self.by_name)}"
        self.by_name[name] = _Atom(key, args)
        return exp.column(name)

    def value(self, c: exp.Column, ctx: Ctx) -> V:
        """The atom's (TRUE-ness, NULL-ness) as uninterpreted functions of its columns."""
        a = self.by_name[c.name]
        self.used = True
        vals = [ctx.col(x) for x in a.args]
        sorts, args = [], []
        for v in vals:
            if v.v is not None:
                sorts.append(v.v.sort())
                args.append(v.v)
            sorts.append(z3.BoolSort())
            args.append(v.null)
        sym = "atom!" + hashlib.sha1(a.key.encode()).hexdigest()[:12] + "!" + \
              "-".join(v.kind or "null" for v in vals)
        fv = z3.Function(sym + "!v", *sorts, z3.BoolSort())
        fn = z3.Function(sym + "!n", *sorts, z3.BoolSort())
        return V(fv(*args), fn(*args), "bool")

    def ctx(self, base: Ctx) -> Ctx:
        return Ctx(lambda c: self.value(c, base) if self.is_atom(c) else base.col(c), base.aggf)


# ---------------------------------------------------------------------------
# Bounded check over several base tables
# ---------------------------------------------------------------------------
class MultiTableEncoder(PlanEncoder):
    """:class:`PlanEncoder` over several symbolic base tables (one per table name), with
    uninterpreted predicates for filters and join conditions it cannot model."""

    def __init__(self, tables: dict[str, Table], atoms: Atoms):
        super().__init__(next(iter(tables.values())))
        self.tables = tables
        self.atoms = atoms

    def _scan(self, n: Scan):
        t = self.tables.get(n.table)
        if t is None:
            raise Unsupported(f"no symbolic table for {n.table!r}")
        if [c for c, _ in n.columns] != [c for c, _ in t.columns]:
            raise Unsupported(f"scans of {n.table} disagree on its columns")
        return t.rel()

    def row_ctx(self, fields, vals) -> Ctx:
        # PlanEncoder.row_ctx is the public hook of the split encoder; older encoders
        # call _row_ctx (both names route here, so either encoder sees the atoms).
        base = getattr(super(), "row_ctx", None) or super()._row_ctx
        return self.atoms.ctx(base(fields, vals))

    _row_ctx = row_ctx

    def _select(self, n: Select):
        child = self.encode(n.child)
        if child.rows:
            pred = self.atoms.atomize(n.predicate, self.row_ctx(n.child.fields, child.rows[0][1]))
            if pred is not n.predicate:
                n = Select(n.child, pred)
        return super()._select(n)

    def _join(self, n: Join):
        if n.residual is not None:
            L, R = self.encode(n.left), self.encode(n.right)
            if L.rows and R.rows:
                ctx0 = self.row_ctx(n.left.fields + n.right.fields, L.rows[0][1] + R.rows[0][1])
                res = self.atoms.atomize(n.residual, ctx0)
                if res is not n.residual:
                    n = Join(n.left, n.right, n.kind, n.equi, res)
        return super()._join(n)


def scans_of(*plans: Node) -> dict[str, Scan]:
    """table name -> its Scan, over all plans; two different column lists for one table
    are unsupported (they would not be the same relation)."""
    out: dict[str, Scan] = {}
    for p in plans:
        for n in walk(p):
            if isinstance(n, Scan):
                prev = out.setdefault(n.table, n)
                if prev.columns != n.columns:
                    raise Unsupported(f"two different column lists for table {n.table!r}")
    if not out:
        raise Unsupported("the plans read no base table")
    return out


@contextmanager
def _nonlinear(abstract: bool) -> Iterator[Callable[[], bool]]:
    """The encoder's "x*y and x/y of two non-constants are uninterpreted" setting; yields
    "was it used?". Through the encoder's ``encoding(abstract_nonlinear=...)`` context
    where it has one, else through its module flags."""
    encoding = getattr(_encode, "encoding", None)
    if encoding is not None:
        with encoding(abstract_nonlinear=abstract) as enc:
            yield lambda: bool(enc.nonlinear_used)
        return
    flags, used = _encode.ABSTRACT_NONLINEAR, _encode.NONLINEAR_USED
    flags[0], used[0] = abstract, False
    try:
        yield lambda: bool(used[0])
    finally:
        flags[0] = False


def _encode_pair(plan_a: Node, plan_b: Node, K: int, abstract: bool):
    with _nonlinear(abstract) as used:
        scans = scans_of(plan_a, plan_b)
        tables = {name: Table(name, s.columns, K, tag=f"t{i}!") for i, (name, s) in enumerate(sorted(scans.items()))}
        atoms = Atoms()
        enc = MultiTableEncoder(tables, atoms)
        rel_a, rel_b = enc.encode(plan_a), enc.encode(plan_b)
        wa, wb = len(plan_a.fields), len(plan_b.fields)
        if wa != wb:
            raise Unsupported(f"arity differs: {wa} and {wb} columns")
        return scans, tables, atoms, rel_a, rel_b, bags_differ(rel_a, rel_b), used()


def _key_constraints(scans: dict[str, Scan], tables: dict[str, Table]) -> list:
    """Every table's declared keys (unique and NOT NULL; dependencies) on its rows."""
    return [c for name, t in tables.items() for c in declared_key_constraints(scans[name].keys, t.rows, t.col_index)]


def _bounded_solver(tables: dict[str, Table], differ, timeout_ms: int) -> RestartingSolver:
    s = new_solver(timeout_ms)
    s.add(differ)
    # Symmetry breaking (the plans are order-free): present rows first, per table.
    for t in tables.values():
        for i in range(1, t.K):
            s.add(z3.Implies(t.rows[i][0], t.rows[i - 1][0]))
    return s


def check_plans_equivalent(plan_a: Node, plan_b: Node, K: int = DEFAULT_K,
                           timeout_ms: int = DEFAULT_TIMEOUT_MS, *, declared_keys: bool = False) -> Result:
    """Bounded bag equivalence of two IR plans over the same base tables (module doc).
    ``declared_keys``: only tables satisfying their scans' declared keys
    (:mod:`superop.ir.keys`) are considered. Never raises for unmodelled input: returns
    ``unsupported``."""
    t0 = time.perf_counter()
    left = lambda: timeout_ms - (time.perf_counter() - t0) * 1000  # noqa: E731
    done = lambda status, reason, **kw: Result(status, method="bounded", K=K,  # noqa: E731
                                               seconds=time.perf_counter() - t0, reason=reason, **kw)
    if any(is_nondeterministic(n) for p in (plan_a, plan_b) for n in walk(p)):
        return done(UNSUPPORTED, "a plan evaluates a nondeterministic expression")
    try:
        scans, tables, atoms, ra, rb, differ, abstracted = _encode_pair(plan_a, plan_b, K, True)
        if declared_keys:
            differ = z3.And(differ, *_key_constraints(scans, tables))
        s = _bounded_solver(tables, differ, timeout_ms)
        r = s.check()
        if r != z3.unsat and abstracted and left() > 0:
            # the nonlinear abstraction may have invented a difference: decide exactly
            scans, tables, atoms, ra, rb, differ, _ = _encode_pair(plan_a, plan_b, K, False)
            if declared_keys:
                differ = z3.And(differ, *_key_constraints(scans, tables))
            s = _bounded_solver(tables, differ, int(left()))
            r = s.check()
    except (Unsupported, z3.Z3Exception) as why:
        return done(UNSUPPORTED, str(why))
    if r == z3.unsat:
        return done(VERIFIED, f"no base tables of at most {K} rows each distinguish the outputs",
                    details={"tables": sorted(tables), "uninterpreted_predicates": len(atoms.by_name)})
    if r == z3.unknown:
        return done(UNKNOWN, f"solver: {s.reason_unknown() if left() > 0 else 'timeout'}")
    if atoms.used:
        return done(UNKNOWN, "the outputs differ only under some interpretation of the "
                             "uninterpreted predicates (not decided)")
    m = s.model()
    ex = {name: {"columns": [c for c, _ in t.columns], "types": [ty for _, ty in t.columns],
                 "rows": concrete_rel(m, t.rel())} for name, t in tables.items()}
    out_a, out_b = concrete_rel(m, ra), concrete_rel(m, rb)
    first = next(iter(sorted(tables)))
    cex = Counterexample(table=first, columns=ex[first]["columns"], types=ex[first]["types"],
                         rows=ex[first]["rows"], plan_output=out_a, program_output=out_b)
    return done(REFUTED, "the outputs differ on the counterexample tables", counterexample=cex,
                details={"tables": ex, "a_output": out_a, "b_output": out_b})


# ---------------------------------------------------------------------------
# Unbounded row-wise proof for select-project-join plans
# ---------------------------------------------------------------------------
def is_spj(node: Node) -> bool:
    """σ, π, ρ and inner/cross joins: the operators of a filter-map over a product."""
    return isinstance(node, (Select, Project, Rename)) or (
        isinstance(node, Join) and node.kind in ("inner", "cross"))


def spj_leaves(node: Node) -> list[Node]:
    """The inputs of the product, one entry per occurrence, in tree order."""
    if is_spj(node):
        out = []
        for c in node.children:
            out += spj_leaves(c)
        return out
    return [node]


class _RowEval:
    def __init__(self, atoms: Atoms):
        self.atoms = atoms

    def ctx(self, fields, vals) -> Ctx:
        def col(c: exp.Column) -> V:
            try:
                return vals[resolve_field(tuple(fields), c)]
            except KeyError as err:
                raise Unsupported(str(err)) from None
        return self.atoms.ctx(Ctx(col))

    def pred(self, e: exp.Expression, fields, vals) -> z3.BoolRef:
        ctx = self.ctx(fields, vals)
        try:       # modelled as a whole (the usual case): encode it once, not check-then-encode
            return is_true(ev(e, ctx))
        except Unsupported:
            return is_true(ev(self.atoms.atomize(e, ctx), ctx))

    def rows(self, node: Node, leaf_vals) -> tuple[z3.BoolRef, list[V]]:
        """(keep, values) of ``node`` for the product tuple ``leaf_vals`` (an iterator over
        each leaf occurrence's values, consumed in tree order)."""
        if not is_spj(node):
            return z3.BoolVal(True), next(leaf_vals)
        if isinstance(node, Select):
            keep, vals = self.rows(node.child, leaf_vals)
            return z3.And(keep, self.pred(node.predicate, node.child.fields, vals)), vals
        if isinstance(node, Project):
            keep, vals = self.rows(node.child, leaf_vals)
            ctx = self.ctx(node.child.fields, vals)
            return keep, [ev(e, ctx) for e, _ in node.items]
        if isinstance(node, Rename):
            keep, vals = self.rows(node.child, leaf_vals)
            try:
                return keep, [vals[resolve_field(node.child.fields, f.column())] for f, _ in node.mapping]
            except KeyError as err:
                raise Unsupported(str(err)) from None
        kl, vl = self.rows(node.left, leaf_vals)
        kr, vr = self.rows(node.right, leaf_vals)
        fields, vals = node.left.fields + node.right.fields, vl + vr
        conds = [kl, kr]
        for a, b in node.equi:
            conds.append(self.pred(exp.EQ(this=a.copy(), expression=b.copy()), fields, vals))
        if node.residual is not None:
            conds.append(self.pred(node.residual, fields, vals))
        return z3.And(*conds), vals


def _leaf_types(leaf: Node, leaf_types: Optional[Callable[[Node], Sequence[str]]]) -> list[str]:
    if isinstance(leaf, Scan):
        return [t for _, t in leaf.columns]
    if leaf_types is None:
        raise Unsupported(f"column types of the input {leaf.op} are unknown")
    types = list(leaf_types(leaf))
    if len(types) != len(leaf.fields):
        raise Unsupported(f"{len(types)} types for an input of {len(leaf.fields)} columns")
    return types


def _matchings(la: list[Node], lb: list[Node], cap: int = 120):
    """Bijections b-occurrence -> a-occurrence between structurally equal inputs."""
    groups: dict[Node, list[int]] = {}
    for i, n in enumerate(la):
        groups.setdefault(n, []).append(i)
    slots: dict[Node, list[int]] = {}
    for j, n in enumerate(lb):
        if n not in groups:
            return
        slots.setdefault(n, []).append(j)
    if any(len(groups[n]) != len(slots.get(n, ())) for n in groups):
        return
    keys = list(groups)
    perms = [list(itertools.permutations(groups[k])) for k in keys]
    for n, combo in enumerate(itertools.product(*perms)):
        if n >= cap:
            return
        m = {}
        for k, perm in zip(keys, combo):
            for j, i in zip(slots[k], perm):
                m[j] = i
        yield m


def prove_spj_equivalent(plan_a: Node, plan_b: Node, timeout_ms: int = DEFAULT_TIMEOUT_MS,
                         leaf_types: Optional[Callable[[Node], Sequence[str]]] = None) -> Result:
    """Unbounded bag equivalence of two select-project-join plans by the row-wise argument
    of the module doc. Inputs (the non-SPJ nodes at the bottom) are matched by structural
    equality; ``leaf_types(node)`` gives the Spark types of a non-Scan input's columns.
    ``verified`` (method ``rowwise``) is a proof for inputs of every size; ``refuted`` only
    when the difference is a real one (one row per distinct base table, no abstraction);
    otherwise ``unknown``."""
    t0 = time.perf_counter()
    done = lambda status, reason, **kw: Result(status, method="rowwise", K=None,  # noqa: E731
                                               seconds=time.perf_counter() - t0, reason=reason, **kw)
    for p in (plan_a, plan_b):
        for n in walk(p):
            if is_nondeterministic(n):
                return done(UNSUPPORTED, "a plan evaluates a nondeterministic expression")
    la, lb = spj_leaves(plan_a), spj_leaves(plan_b)
    if len(plan_a.fields) != len(plan_b.fields):
        return done(UNSUPPORTED, f"arity differs: {len(plan_a.fields)} and {len(plan_b.fields)} columns")
    matchings = list(_matchings(la, lb))
    if not matchings:
        return done(UNSUPPORTED, "the plans do not read the same inputs (as a multiset)")
    last = None
    for m in matchings:
        try:
            atoms = Atoms()
            leaf_vars = []
            for i, leaf in enumerate(la):
                kinds = [kind_of_type(t) for t in _leaf_types(leaf, leaf_types)]
                leaf_vars.append([V(fresh(k, f"in{i}!{j}"), z3.Bool(f"in{i}!{j}!null"), k)
                                  for j, k in enumerate(kinds)])
            ev_ = _RowEval(atoms)
            keep_a, out_a = ev_.rows(plan_a, iter(leaf_vars))
            keep_b, out_b = ev_.rows(plan_b, iter([leaf_vars[m[j]] for j in range(len(lb))]))
            same = z3.And(*[not_distinct(x, y) for x, y in zip(out_a, out_b)]) if out_a else z3.BoolVal(True)
            s = new_solver(max(1, int(timeout_ms - (time.perf_counter() - t0) * 1000)))
            s.add(z3.Not(z3.And(keep_a == keep_b, z3.Implies(keep_a, same))))
            r = s.check()
        except (Unsupported, z3.Z3Exception) as why:
            return done(UNSUPPORTED, str(why))
        if r == z3.unsat:
            return done(VERIFIED, "keep and map agree on every product tuple",
                        details={"inputs": len(la), "uninterpreted_predicates": len(atoms.by_name)})
        last = (r, s, atoms)
    r, s, atoms = last
    if r == z3.unknown:
        return done(UNKNOWN, f"solver: {s.reason_unknown()}")
    distinct_scans = all(isinstance(x, Scan) for x in la) and len({x.table for x in la}) == len(la)
    if not atoms.used and distinct_scans and len(matchings) == 1:
        return done(REFUTED, "a product tuple is kept or mapped differently (one row per table "
                             "shows the difference)")
    return done(UNKNOWN, "the row-wise sufficient condition does not hold; equivalence not decided")


def certificate(result: Result, claim_inputs: dict) -> dict:
    """A self-describing certificate record for a plan-vs-plan result."""
    claim = ROWWISE_CLAIM if result.method == "rowwise" else BOUNDED_CLAIM.format(K=result.K)
    out = {"status": result.status, "method": result.method, "K": result.K,
           "seconds": round(result.seconds, 4), "claim": claim, "assumptions": ASSUMPTIONS,
           "z3_version": z3.get_version_string(), "inputs": claim_inputs}
    if result.status != VERIFIED:
        out["reason"] = result.reason
    return out
