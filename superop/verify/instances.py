"""Symbolic instances of the super-operator families: the queries whose template programs
the unbounded proofs (:mod:`superop.verify.template_proofs`) are about.

An instance is SQL over ``t(k, a, b)`` whose edge predicates and projections are calls of
functions nobody defines — ``p1(k, a, b)``, ``f12(k, a, b)``, ``q1(k, c, n, ...)``,
``g1(...)``, ``theta(...)`` — declared in :attr:`Instance.functions` with their result
type. sqlglot parses them as ``exp.Anonymous``; the verifier encodes them as
uninterpreted functions (value, NULL-ness and *error* each an arbitrary function of the
arguments), so a proof about the instance holds for every deterministic predicate and
projection, including partial ones that raise. The program proved is the one the
runtime builds: :func:`program_of` lowers the SQL with ``superop.ir.lower``, matches it
with ``superop.ir.analysis.decompose`` and calls ``superop.synth.templates.build_program``.

Why one σ and one π per edge cover every σ/π/ρ chain: the template builder reads an edge
only through Algorithm 5 (``capture_parameters``: one summary predicate φ and one
projection π over the edge's bottom), and a chain σ_a π σ_b evaluates exactly like σ_φ
with φ = a AND b∘π (the same rows, the same expressions evaluated on them, AND
short-circuiting as the chain filters). Instantiating the uninterpreted φ and π with
those compositions turns the instance into the chain.

Instances per family (this module is pure data + the builder call; it imports no z3, so
the runtime can recompute a certificate's program hash):

* DU/2, DU/3 — n GROUP BYs on ``k`` glued by UNION ALL; every branch aggregates
  count(*), count, sum, min, max, avg of its own projections under its own predicate,
  then filters (``q_i``) and projects (``g_i``) over the key and every aggregate.
* DJ/<kind> for inner, left, right, full, semi, anti — two such branches joined
  ``ON l.k = r.k AND theta(l.x, r.y)`` (the residual reads both aggregate projections).
* MJ/<kind>/<agg-left|agg-right>/<min|max> — ``min(a)`` (``max(a)``) per ``k`` filtered
  by ``q`` and projected by ``g``, joined back to the rows of ``t`` filtered by ``p`` and
  projected by ``f``, ``ON m.k = o.k AND theta(...)``. The residual reads the aggregate's
  projection where the template allows it (the aggregate side neither preserved by an
  outer join nor the left side of a semi/anti join) and the key otherwise (the template
  refuses a residual over aggregates there). No σ on the edge into the aggregate and a
  bare-column argument: the streaming template (Fig. 10 with the sort of Algorithm 3).

When the family registry (``superop.families``) lands, each family's ``proof_instances()``
returns its part of :data:`INSTANCES` and this module goes away.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..ir import lower
from ..ir.analysis import Decomposition, decompose, walk_edge

JOIN_KINDS = ("inner", "left", "right", "full", "semi", "anti")
STREAMING_FOLDS = ("count_star", "count", "sum", "min", "max", "avg")
SCHEMA = {"t": {"k": "int", "a": "int", "b": "int"}}
ALL_OPS = ["Select", "Project", "Rename"]


@dataclass(frozen=True)
class Instance:
    id: str                                  # "DU/2", "DJ/left", "MJ/inner/agg-left/min"
    family: str                              # DU | DJ | MJ
    sql: str
    functions: dict                          # uninterpreted function name -> result kind
    aggregates: tuple[str, ...]              # the folds the instance aggregates with
    edges: tuple[tuple[str, ...], ...]       # σ/π/ρ per abstract edge the proof covers
    join_kind: Optional[str] = None
    branches: int = 2
    agg_side: Optional[str] = None           # MJ: "left" | "right"
    schema: dict = field(default_factory=lambda: SCHEMA)
    assumptions: tuple[str, ...] = ()

    @property
    def params(self) -> dict:
        """The parameters ``prove_template`` is called with (and certificates record)."""
        p: dict = {"family": self.family}
        if self.family == "DU":
            p["branches"] = self.branches
        else:
            p["join_kind"] = self.join_kind
        if self.family == "MJ":
            p["agg_left"] = self.agg_side == "left"
            p["func"] = self.aggregates[0]
        return p

    def covers(self) -> dict:
        """The certificate's ``covers`` record."""
        return {"family": self.family,
                "join_kinds": [self.join_kind] if self.join_kind else [],
                "branches": self.branches, "agg_side": self.agg_side,
                "aggregates": sorted(self.aggregates),
                "edges": [list(e) for e in self.edges]}


# ---------------------------------------------------------------------------
# builders (pure SQL text)
# ---------------------------------------------------------------------------
_AGG_ITEMS = ("count(*) AS c", "count({f}1(k, a, b)) AS n", "sum({f}2(k, a, b)) AS s",
              "min({f}3(k, a, b)) AS mn", "max({f}4(k, a, b)) AS mx", "avg({f}5(k, a, b)) AS av")
_AGG_COLS = "k, c, n, s, mn, mx, av"


def _branch(i: int, out: str) -> str:
    items = ", ".join(x.format(f=f"f{i}") for x in _AGG_ITEMS)
    return (f"SELECT k, g{i}({_AGG_COLS}) AS {out} FROM (SELECT k, {items} FROM t "
            f"WHERE p{i}(k, a, b) GROUP BY k) u{i} WHERE q{i}({_AGG_COLS})")


def _branch_functions(i: int) -> dict:
    fs = {f"p{i}": "bool", f"q{i}": "bool", f"g{i}": "int"}
    fs.update({f"f{i}{j}": "int" for j in range(1, 6)})
    return fs


_COMMON = (
    "one grouping key column (k INT); the proof uses only NULL-safe equality of keys, the "
    "encoding every key type shares",
    "aggregate arguments of type INT; the folds treat every argument type alike (min/max in the "
    "type's order, sum/avg over numbers)",
    "edge predicates and projections are deterministic: each is an arbitrary (uninterpreted) "
    "function of its inputs, which may return NULL or raise",
    "ANSI mode: errors are outcomes; the program may not raise where the query does not",
    "emit outputs are evaluated only where the emit's guard holds (the DSL's semantics; the "
    "emitted SQL must preserve it, see each bounded certificate's emitted_sql)",
)
_SUBSET = ("a query aggregating with a subset of these functions, or with several calls of one, "
           "is this instance with the other calls' projections never raising and ignored by the "
           "upper edge: every accumulator folds independently and the upper edges are arbitrary "
           "functions of the aggregates")


def du(n: int) -> Instance:
    sql = " UNION ALL ".join(_branch(i, "x") for i in range(1, n + 1))
    fns: dict = {}
    for i in range(1, n + 1):
        fns.update(_branch_functions(i))
    return Instance(f"DU/{n}", "DU", sql, fns, STREAMING_FOLDS,
                    tuple(tuple(ALL_OPS) for _ in range(2 * n)), branches=n,
                    assumptions=_COMMON + (_SUBSET,))


def dj(kind: str) -> Instance:
    cols = "l.k, l.x" if kind in ("semi", "anti") else "l.k, l.x, r.k AS rk, r.y"
    join = {"semi": "LEFT SEMI JOIN", "anti": "LEFT ANTI JOIN"}.get(kind, f"{kind.upper()} JOIN")
    sql = (f"SELECT {cols} FROM ({_branch(1, 'x')}) l {join} ({_branch(2, 'y')}) r "
           "ON l.k = r.k AND theta(l.x, r.y)")
    fns = {**_branch_functions(1), **_branch_functions(2), "theta": "bool"}
    return Instance(f"DJ/{kind}", "DJ", sql, fns, STREAMING_FOLDS,
                    tuple(tuple(ALL_OPS) for _ in range(4)), join_kind=kind,
                    assumptions=_COMMON + (_SUBSET, "the join's equalities are on the grouping key; "
                                           "every other conjunct is the residual theta"))


def mj(kind: str, agg_left: bool, func: str) -> Instance:
    agg_preserved = kind == "full" or (kind == "left" and agg_left) or (kind == "right" and not agg_left)
    agg_emits_alone = agg_preserved or (kind in ("semi", "anti") and agg_left)
    agg = (f"SELECT k, g(k, m) AS y FROM (SELECT k, {func}(a) AS m FROM t GROUP BY k) u WHERE q(k, m)")
    rows = "SELECT k, f(k, a, b) AS x FROM t WHERE p(k, a, b)"
    theta = "theta(o.x, m.k)" if agg_emits_alone else "theta(o.x, m.y)"
    join = {"semi": "LEFT SEMI JOIN", "anti": "LEFT ANTI JOIN"}.get(kind, f"{kind.upper()} JOIN")
    if agg_left:
        cols = "m.k, m.y" if kind in ("semi", "anti") else "m.k, m.y, o.k AS ok, o.x"
        sql = f"SELECT {cols} FROM ({agg}) m {join} ({rows}) o ON m.k = o.k AND {theta}"
    else:
        cols = "o.k, o.x" if kind in ("semi", "anti") else "o.k, o.x, m.k AS mk, m.y"
        sql = f"SELECT {cols} FROM ({rows}) o {join} ({agg}) m ON o.k = m.k AND {theta}"
    fns = {"p": "bool", "q": "bool", "f": "int", "g": "int", "theta": "bool"}
    notes = ("the aggregate's argument is a source column and the edge into the aggregate has no "
             "σ (the streaming template sorts the partition on that column)",
             "theta reads " + ("only the key on the aggregate side (the template refuses a residual "
                               "over aggregates when the aggregate side is emitted alone)"
                               if agg_emits_alone else "the aggregate's projection"))
    side = "left" if agg_left else "right"
    return Instance(f"MJ/{kind}/agg-{side}/{func}", "MJ", sql, fns, (func,),
                    (("Project", "Rename"), tuple(ALL_OPS), tuple(ALL_OPS)),
                    join_kind=kind, agg_side=side, assumptions=_COMMON + notes)


def all_instances() -> list[Instance]:
    out = [du(2), du(3)]
    out += [dj(k) for k in JOIN_KINDS]
    out += [mj(k, s, f) for k in JOIN_KINDS for s in (True, False) for f in ("min", "max")]
    return out


INSTANCES = {i.id: i for i in all_instances()}


def find(family: str, join_kind: Optional[str] = None, agg_left: bool = True,
         branches: int = 2, func: str = "min") -> Instance:
    """The instance for ``prove_template``'s parameters."""
    if family == "DU":
        key = f"DU/{branches}"
    elif family == "DJ":
        key = f"DJ/{join_kind}"
    elif family == "MJ":
        key = f"MJ/{join_kind}/agg-{'left' if agg_left else 'right'}/{func}"
    else:
        raise ValueError(f"unknown family {family!r}")
    if key not in INSTANCES:
        raise ValueError(f"no symbolic instance {key}")
    return INSTANCES[key]


# ---------------------------------------------------------------------------
# the code that runs
# ---------------------------------------------------------------------------
def diamond(inst: Instance) -> Decomposition:
    """The instance's match (the diamond at the plan's root or below optional operators)."""
    low = lower(inst.sql, inst.schema)
    if not low.fully_lowered:
        raise ValueError(f"instance {inst.id} does not lower: {low.opaque_reasons}")
    plan = low.plan
    d = decompose(plan, plan)
    if d is None:
        top = walk_edge(plan)
        d = decompose(top.bottom, plan) if top.bottom is not plan else None
    if d is None or d.family != inst.family:
        raise ValueError(f"instance {inst.id} is not a {inst.family} match")
    return d


def program_of(inst: Instance):
    """The program the runtime's template builder returns for the instance."""
    from ..synth.templates import build_program
    return build_program(diamond(inst))
