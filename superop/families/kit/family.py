"""The interface of a super-operator family declaration (one module per family under
``superop.families``; the registry lists them). A family says, once:

* its **pattern** on the plan IR — :meth:`Family.recognize` turns the generic structure at
  a core node (:class:`~superop.families.kit.diamond.Shape`) into a typed
  :class:`~superop.families.kit.records.Match` of its abstract tree or a
  :class:`~superop.families.kit.records.NearMiss` with a typed reason, or None (not its
  shape at all); :meth:`Family.premise_failure` checks its remaining streamability
  premises and :meth:`Family.key_premise` states the join premise of Algorithms 2-3
  (decided by union-find in matching and by Z3 in the verifier);
* its **abstract edges** — :meth:`Family.layout` places each branch's edges in the
  family's edge order; everything else (edge names, the order of a match's edges, the
  catalog shape, the report's tree, reading edges off a mined shape) is derived from it;
* what it **supports** — join kinds, aggregate sides, branch counts, accumulator functions;
* its **streamability** premises (Algorithms 1-3) — :meth:`Family.streamability`;
* its **template** program (Fig. 10) — :meth:`Family.build_program`, callable on any match;
* its **proof obligations** — :meth:`Family.proof_instances`: symbolic instances of its
  template, each with what its proof covers (the verifier proves the program
  :meth:`Family.build_program` returns for them; the z3 side is loaded by the verifier
  only); :meth:`Family.proofs_for` — the instances a rule needs;
* its **Spark-native** specifics — :meth:`Family.prefilter` (the generic compiler in
  ``superop.runtime.compile`` turns any DSL program into SQL);
* its **catalog names** and the **examples** the log generator plants.

Families import only the IR, the DSL and this kit — never a stage.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from sqlglot import exp

from ...dsl import Program, sort_distinct
from ...ir.analysis import Edge, capture_parameters
from ...ir.nodes import Rename
from ...ir.render import JOIN_SYMBOL
from .covers import EDGE_OPS, Covers
from .diamond import Shape
from .planting import ExampleKit, ExampleSpec, ExpectedFinding
from .program import accumulator_funcs
from .records import CatalogNames, EdgeDecl, KeyPremise, Match, NearMiss, ReasonCode, Side, TemplateError

_SYM = {"Select": "σ", "Project": "π", "Rename": "ρ"}
_OP_OF_SYM = {v: k for k, v in _SYM.items()}


def distinct_funcs(m: Match, family: "Family") -> set[str]:
    """How the instance's template folds its COUNT(DISTINCT)s: ``count_distinct_sorted``
    (constant state, the partition sorted on the one distinct column) or ``count_distinct``
    (a set per partition) — a certificate about one says nothing about the other."""
    prog = m.program
    if prog is None:
        try:       # what superop.families.build_program builds: the template, sorted folds
            prog = sort_distinct(family.build_program(m))
        except TemplateError:
            return {"count_distinct"}
    return {a.func for a in prog.accumulators if a.func.startswith("count_distinct")} or {"count_distinct"}


@dataclass(frozen=True)
class Slot:
    """One branch of a family's abstract tree, in core-input order: the index of its lower
    edge (Spool → γ; None for a row path), of its upper edge (γ → core, or Spool → core),
    the catalog name of its GroupBy (None for a row path) and how the report draws it."""
    lower: Optional[int]
    upper: int
    group_by: Optional[str] = None
    drawn: str = ""


@dataclass(frozen=True)
class Streamability:
    """Why an instance streams (Algorithms 1-3), for the verifier's report."""
    text: str
    details: dict[str, Any]


@dataclass(frozen=True)
class ProofInstance:
    """A symbolic instance of the family's template (SQL whose edge predicates and
    projections are uninterpreted calls), for proofs through the program encoder
    (``superop.verify.template_proofs``): the program proved is what the family's
    :meth:`Family.build_program` returns for the instance's match. ``functions`` declares
    each uninterpreted function with its result type (the verifier encodes a call as an
    arbitrary value, NULL-ness and error of its arguments); ``assumptions`` say why the
    instance stands for every instance its ``covers`` record describes.

    Several instances may share one ``covers`` record (parts of one claim: the template
    builds a different program for each part, e.g. Min & Join with and without a join
    residual); a record counts as proved only when all its parts are."""
    name: str
    sql: str
    schema: dict[str, dict[str, str]]
    covers: Covers
    functions: dict[str, str] = field(default_factory=dict)   # uninterpreted function -> result kind
    assumptions: tuple[str, ...] = ()

    @property
    def family(self) -> str:
        return self.covers.family


class Family:
    """Base of every family declaration. Subclasses set the class attributes and
    implement the methods marked abstract; the rest is derived from :meth:`layout`."""

    name: str = ""                       # "DU"
    catalog: CatalogNames
    core_name: str = ""                  # the core operator's catalog name: "UnionAll" | "Join"
    join_kinds: tuple[str, ...] = ()     # supported join kinds (IR names); () for a union
    sides: tuple[Optional[Side], ...] = (None,)
    min_branches: int = 2
    max_branches: Optional[int] = 2      # None = any number
    aggregates: tuple[str, ...] = ()     # DSL accumulator functions the template folds
    reasons: tuple[type[ReasonCode], ...] = ()

    # -- pattern --------------------------------------------------------------------
    def recognize(self, shape: Shape) -> Optional[Match | NearMiss]:
        raise NotImplementedError

    def premise_failure(self, m: Match) -> Optional[tuple[ReasonCode, str]]:
        """The family's streamability premises beyond Algorithm 1 and the join premise
        (e.g. Min & Join's one MIN/MAX over one column): (reason, detail) when they fail.
        A recognized instance that fails them is still an instance of the abstract tree
        (its template may build a buffering program) but not a super-operator."""
        return None

    def key_premise(self, m: Match) -> Optional[KeyPremise]:
        """The join premise of Algorithms 2-3 (None: the family has no join)."""
        return None

    def supports(self, branches: int, join_kind: Optional[str] = None) -> bool:
        if branches < self.min_branches or (self.max_branches is not None and branches > self.max_branches):
            return False
        return join_kind is None or not self.join_kinds or join_kind in self.join_kinds

    # -- abstract edges -----------------------------------------------------------------
    def layout(self, branches: int, side: Optional[Side] = None) -> tuple[Slot, ...]:
        raise NotImplementedError

    def n_edges(self, branches: int) -> int:
        return 1 + max(max(s.upper, s.lower if s.lower is not None else -1)
                       for s in self.layout(branches, self.sides[0]))

    def edge_decls(self, branches: int = 2) -> tuple[EdgeDecl, ...]:
        slots = self.layout(branches, self.sides[0])
        decls: dict[int, EdgeDecl] = {}
        for s in slots:
            if s.lower is not None:
                decls[s.lower] = EdgeDecl(f"e{s.lower + 1}", "Spool", s.group_by or "GroupBy")
            decls[s.upper] = EdgeDecl(f"e{s.upper + 1}", s.group_by or "Spool", self.core_name)
        return tuple(decls[i] for i in sorted(decls))

    def core_operators(self, branches: int = 2) -> list[str]:
        slots = self.layout(branches, self.sides[0])
        return ["Spool"] + ["GroupBy" for s in slots if s.group_by] + [self.core_name]

    def edges(self, m: Match) -> list[Edge]:
        """The match's edges in the family's edge order."""
        slots = self.layout(len(m.branches), m.agg_side)
        out: dict[int, Edge] = {}
        for s, b in zip(slots, m.branches):
            if s.lower is not None:
                assert b.lower is not None
                out[s.lower] = b.lower
            out[s.upper] = b.upper
        return [out[i] for i in sorted(out)]

    def edge_ops(self, m: Match) -> list[list[str]]:
        """The optional operators on each edge (catalog names, σ π ρ order); a pure FROM
        alias is not an operator."""
        return [edge_op_names(e) for e in self.edges(m)]

    # -- what an instance is ------------------------------------------------------------
    def point(self, m: Match) -> Covers:
        """The instance as a covers record (what a certificate about it covers, what a
        rule must admit to apply to it)."""
        funcs: set[str] = set()
        for b in m.branches:
            if b.agg is not None:
                f = accumulator_funcs(b.agg)
                funcs |= set(f or ())
        if "count_distinct" in funcs:
            funcs = (funcs - {"count_distinct"}) | distinct_funcs(m, self)
        return Covers.make(self.name, join_kinds=[m.join_kind] if m.join_kind else [],
                           branches=len(m.branches), agg_side=m.agg_side.value if m.agg_side else None,
                           aggregates=funcs, edges=self.edge_ops(m),
                           premises=[p.text() for p in m.premises])

    def maximal_aggregate_sets(self, aggregates: Sequence[str]) -> list[frozenset[str]]:
        """The largest sets of functions one instance may fold together (a rule admitting
        ``aggregates`` admits each of them): all of them, unless the family folds one."""
        return [frozenset(aggregates)]

    def summary_agg(self, m: Match) -> str:
        """A short aggregate label for mining outputs ("" unless the family has one)."""
        return ""

    # -- streamability, template, code generation ---------------------------------------------
    def streamability(self, m: Match) -> Streamability:
        raise NotImplementedError

    def build_program(self, m: Match) -> "Program":
        raise NotImplementedError

    # alternative forms of the template (the default form is ""); each is its own program,
    # proved by its own proof instances (their ``covers.variant`` is the form's name)
    forms: tuple[str, ...] = ("",)

    def program_form(self, m: Match, program: "Program", form: str) -> "Program":
        """The program of ``form`` for ``m`` (``program``: the default form's, from
        :meth:`build_program`); TemplateError with the reason when ``m`` does not admit it."""
        if form:
            raise TemplateError(f"family {self.name} has no form {form!r}")
        return program

    def prefilter(self, m: Match, program: "Program") -> Optional[exp.Expr]:
        """A filter on the shared source that keeps every row the program can use (so
        the branches' filters still reach the scan); None = no filter."""
        return None

    # -- generalization and the catalog --------------------------------------------------
    def skeleton(self, point: Covers) -> tuple[Any, ...]:
        """The core skeleton rules are grouped by."""
        return (self.name, point.branches, point.join_kinds[0] if point.join_kinds else None, point.agg_side)

    def rule_id(self, skeleton: tuple[Any, ...]) -> str:
        raise NotImplementedError

    def default_rule_tag(self, kinds: list[str], branches: int) -> str:
        """The tail of a catalog rule id made without one (``make_rule``): the join kinds,
        and the branch count where the family takes several."""
        if not kinds:
            return f"{branches}way"
        return "-".join(kinds + ([f"{branches}way"] if self.max_branches != self.min_branches else []))

    def describe(self, skeleton: tuple[Any, ...], n_patterns: int) -> str:
        raise NotImplementedError

    def core_symbol(self, join_kinds: Sequence[str]) -> str:
        return "/".join(JOIN_SYMBOL[k] for k in join_kinds) if join_kinds else "∪"

    def shape_pattern(self, edges: Sequence[Sequence[str]], join_kinds: Sequence[str],
                      branches: int, side: Optional[Side]) -> str:
        """The catalog's shape of an abstract tree: per branch ``[e_lower]*|γ|[e_upper]*``."""
        segs = []
        for s in self.layout(branches, side or self.sides[0]):
            up = "[" + ("".join(_SYM[o] for o in edges[s.upper]) or "∅") + "]*"
            if s.lower is None:
                segs.append(up)
            else:
                low = "[" + ("".join(_SYM[o] for o in edges[s.lower]) or "∅") + "]*"
                segs.append(f"{low}|γ|{up}")
        return "(" + ", ".join(segs) + ")" + self.core_symbol(join_kinds)

    def draw_tree(self, edges: Sequence[dict[str, Any]], join_kinds: Sequence[str], branches: int,
                  side: Optional[Side]) -> list[str]:
        """The report's drawing of the abstract tree (root on top, the Spool the shared leaf)."""
        def label(e: dict[str, Any]) -> str:
            ops = " ".join(_SYM[o] for o in e["optional"])
            return f"{e['name']} [{ops}]*" if ops else f"{e['name']} (empty)"
        if join_kinds:
            lines = [" / ".join(JOIN_SYMBOL[k] for k in join_kinds) + " Join (" + ", ".join(join_kinds) + ")"]
        else:
            lines = [f"{self.core_symbol(())} {self.core_name}"]
        slots = self.layout(branches, side or self.sides[0])
        for i, s in enumerate(slots):
            last = i == len(slots) - 1
            branch, pad = ("└── ", "    ") if last else ("├── ", "│   ")
            chain = [label(edges[s.upper])]
            if s.lower is not None:
                chain += [s.drawn or f"γ {s.group_by}", label(edges[s.lower])]
            chain.append("Spool (shared input)")
            for j, item in enumerate(chain):
                lines.append((branch if j == 0 else pad + "    " * (j - 1) + "└── ") + item)
        return lines

    def edges_from_shape(self, shape: str) -> Optional[list[list[str]]]:
        """The optional operators per edge read off a mined shape string (the query as
        written), in the family's edge order; None if the string is not a plain instance."""
        parsed = parse_plain_shape(shape)
        if parsed is None:
            return None
        for side in self.sides:
            try:
                slots = self.layout(len(parsed), side)
            except ValueError:
                continue
            if [s.lower is not None for s in slots] != [g for g, _, _ in parsed]:
                continue
            out: list[list[str]] = [[] for _ in range(self.n_edges(len(parsed)))]
            for s, (_, low, up) in zip(slots, parsed):
                out[s.upper] = _ops_of_syms(up)
                if s.lower is not None:
                    out[s.lower] = _ops_of_syms(low)
            return out
        return None

    # -- proofs (the z3 side lives in modules the verifier loads) -------------------------
    def proof_instances(self) -> tuple[ProofInstance, ...]:
        """Symbolic instances of the template, each proved for every table size by
        ``superop.verify.template_proofs`` through the program encoder (the family's one
        proof obligation; what each proof covers is its instance's ``covers``)."""
        return ()

    def proof_instance(self, name: str) -> ProofInstance:
        for inst in self.proof_instances():
            if inst.name == name:
                return inst
        raise KeyError(f"family {self.name} has no proof instance {name!r}")

    def proof_instance_name(self, join_kind: Optional[str] = None, agg_left: bool = True, branches: int = 2,
                            func: str = "min") -> str:
        """The name of the instance for a join kind / aggregate side / function / branch
        count (what ``superop.families.instances.find_by`` looks up). A family with one
        instance is its own name."""
        return self.name

    def proofs_for(self, skeleton: tuple[Any, ...], aggregates: Sequence[str] = ()) -> tuple[ProofInstance, ...]:
        """The proof instances a rule of ``skeleton`` needs (``aggregates``: the functions
        its members fold; an instance is needed when it folds one of them, or when none
        are given): every instance of that skeleton, all parts of each covers record."""
        want = set(aggregates)
        return tuple(i for i in self.proof_instances()
                     if self.skeleton(i.covers) == tuple(skeleton)
                     and (not want or want & set(i.covers.aggregates)))

    # -- examples for the log generator ---------------------------------------------------
    def examples(self) -> tuple["ExampleSpec", ...]:
        """Variants the log generator plants (each with its position in the bundled log)."""
        return ()

    def near_miss_examples(self) -> tuple[tuple[int, ReasonCode, str], ...]:
        """(position, reason, description) of the near-misses the generator plants."""
        return ()

    def plant(self, spec: "ExampleSpec", kit: "ExampleKit") -> str:
        raise NotImplementedError

    def plant_near_miss(self, reason: ReasonCode, kit: "ExampleKit") -> str:
        raise NotImplementedError

    def expected(self, spec: "ExampleSpec") -> tuple["ExpectedFinding", ...]:
        """What mining must report for a planted example (the generator's ground truth,
        built from the spec's own decoration lists, never from the IR)."""
        return (ExpectedFinding.candidate(spec.join_kind, self.example_shape(spec), len(spec.branches)),)

    def example_shape(self, spec: "ExampleSpec") -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<family {self.name} ({self.catalog.long_name})>"


# ---------------------------------------------------------------------------
# helpers shared by the families
# ---------------------------------------------------------------------------
def edge_op_names(edge: Optional[Edge]) -> list[str]:
    if edge is None:
        return []
    seen = set()
    for o in edge.ops:
        if isinstance(o, Rename) and o.is_identity():
            continue  # a FROM alias is not an operator
        seen.add(type(o).__name__)
    return [o for o in EDGE_OPS if o in seen]


def source_predicate(edge: Optional[Edge]) -> Optional[exp.Expr]:
    """The summary predicate of an edge that ends at the source (Algorithm 5)."""
    return None if edge is None else capture_parameters(edge).predicate


def branches_prefilter(branches: Sequence[Any]) -> Optional[exp.Expr]:
    """OR of the branches' lower-edge predicates when every branch filters (a row no branch
    keeps folds into no accumulator), else None."""
    preds = [source_predicate(b.lower) for b in branches]
    if any(p is None for p in preds):
        return None
    return exp.Paren(this=exp.or_(*[p.copy() for p in preds if p is not None], copy=False))


def shape_segment(lower: str, core: Optional[str], upper: str) -> str:
    """A branch of a shape string as :func:`superop.ir.shape` writes it (bottom-up)."""
    return "|".join(p for p in (lower, core, upper) if p)


def parse_plain_shape(shape: str) -> Optional[list[tuple[bool, str, str]]]:
    """``(seg, seg, ...)<core>`` -> per branch (has γ, σπρ below γ, σπρ above); None if the
    shape nests core operators or holds other symbols."""
    if not shape.startswith("(") or ")" not in shape:
        return None
    inner = shape[1:shape.rindex(")")]
    if "(" in inner:
        return None
    out = []
    for b in inner.split(", "):
        segs = b.split("|") if b else []
        if "γ" in segs:
            i = segs.index("γ")
            if segs.count("γ") != 1 or i > 1 or len(segs) - i > 2:
                return None
            out.append((True, segs[0] if i == 1 else "", segs[i + 1] if i + 1 < len(segs) else ""))
        elif len(segs) <= 1:
            out.append((False, "", segs[0] if segs else ""))
        else:
            return None
    if any(ch not in _OP_OF_SYM for _, lo, up in out for ch in lo + up):
        return None
    return out


def _ops_of_syms(syms: str) -> list[str]:
    seen = {_OP_OF_SYM[ch] for ch in syms}
    return [o for o in EDGE_OPS if o in seen]
