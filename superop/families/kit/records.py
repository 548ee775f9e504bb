"""Typed records that cross stage boundaries: what a family recognized (:class:`Match`),
what it refused and why (:class:`NearMiss` with a :class:`ReasonCode`), the side of a
join, and the template's refusal (:class:`TemplateError`). No Spark, no Z3."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Optional, Protocol, Union

from ...ir.analysis import Edge
from ...ir.dependencies import Determines
from ...ir.nodes import JOIN_KINDS, Aggregate, Join, Node
from ...ir.reasons import ReasonCode as ReasonCode  # re-exported: the families' reason base


class Premise(Protocol):
    """What a match relies on about its input beyond the plan (a declared key's functional
    dependency, :class:`~superop.ir.dependencies.Determines`; a keyed filter join,
    :class:`.keyedfilter.KeyedFilter`): its text in covers records and explanations."""
    def text(self) -> str: ...

    def pretty(self) -> str: ...

    def reads(self) -> tuple[str, ...]: ...

if TYPE_CHECKING:
    from ...dsl import Program

# join kinds with a partition key (a cross join has none)
KEYED_JOIN_KINDS = tuple(k for k in JOIN_KINDS if k != "cross")


class TemplateError(Exception):
    """The matched tree is not an instance the family's template implements (with the
    reason; ``code``: the family's typed near-miss reason, else ``template_refused``)."""

    def __init__(self, message: str, code: Optional["ReasonCode"] = None) -> None:
        super().__init__(message)
        self.code = code


class Side(str, Enum):
    """A side of a join (the input an aggregate path is on)."""
    LEFT = "left"
    RIGHT = "right"

    @property
    def pos(self) -> int:
        """The join input's position (0 = left)."""
        return 0 if self is Side.LEFT else 1

    @property
    def other(self) -> "Side":
        return Side.RIGHT if self is Side.LEFT else Side.LEFT


class Reason(ReasonCode):
    """Why a diamond-shaped sub-plan is not an instance (shared by the diamond families)."""
    STACKED_AGGREGATES = (
        "stacked_aggregates",
        "a path holds two aggregates",
        "Aggregate once per path: compute the inner GROUP BY in a CTE that both paths read, or merge the two levels"
        " into one GROUP BY.")
    DIFFERENT_INPUTS = (
        "different_inputs",
        "the paths do not read one shared input (no Spool)",
        "Let every path read the same input (same tables, joins and filters below the GROUP BYs); keep "
        "path-specific conditions above it, in each path's WHERE or as FILTER (WHERE ...) on the aggregate.")
    COMPUTED_GROUPING_KEY = (
        "computed_grouping_key",
        "a grouping key is computed, not an input column",
        "Group on a column: compute the key (a CASE, date_trunc(...), ...) as a column of the shared input (a CTE "
        "or sub-query) and GROUP BY that column.")
    DIFFERENT_GROUPING_KEYS = (
        "different_grouping_keys",
        "the aggregate paths are grouped on different keys (input columns; Algorithm 1)",
        "Group every path on the same input columns; for a coarser grain, aggregate on the shared keys first and "
        "roll up above.")
    GLOBAL_AGGREGATE = (
        "global_aggregate",
        "an aggregate without grouping keys (no partition key)",
        "Group the aggregates on a column they share (GROUP BY k on every path); a global aggregate has no key to "
        "partition on.")
    MIXED_UNION_INPUTS = (
        "mixed_union_inputs",
        "some union inputs are not aggregate paths",
        "Make every UNION ALL input an aggregate of the shared input; union the other inputs in a separate UNION "
        "ALL above.")
    JOIN_KIND_UNSUPPORTED = (
        "join_kind_unsupported",
        "the join kind has no template in this family",
        "Join the aggregates with a join kind the family has a template for (the rules' join kinds in this "
        "catalog).")
    JOIN_NOT_ON_GROUPING_KEYS = (
        "join_not_on_grouping_keys",
        "the join does not equate the grouping keys (Algorithms 2-3)",
        "Join the two aggregates with equalities on their grouping keys (ON a.k = b.k for each key), not on other "
        "columns or inequalities.")
    JOIN_ON_SUBSET_OF_KEYS = (
        "join_on_subset_of_keys",
        "the join equates only some of the grouping keys (Algorithms 2-3)",
        "Join on every grouping key, group both sides only on the keys you join on, or declare in the schema's keys"
        " that the joined keys determine the others.")
    TOO_MANY_BRANCHES = (
        "too_many_branches",
        "more inputs than the family's template takes (an n-way diamond)",
        "Give the operator no more inputs than the family's template takes: nest the extra aggregates in a second "
        "UNION ALL or join above.")
    DUPLICATE_SOURCE_COLUMNS = (
        "duplicate_source_columns",
        "the shared input has duplicate column names",
        "Give the shared input's columns distinct names (alias the duplicates in the SELECT that builds it).")
    NOT_SINGLE_OUTPUT = (
        "not_single_output",
        "a node inside the sub-plan is also read from outside it",
        "Do not reuse an intermediate result of the pattern elsewhere in the query: let the other use read its own "
        "sub-query of the base table.")
    TEMPLATE_REFUSED = (
        "template_refused",
        "the family's template cannot build this instance",
        "No query change is known: the family's template cannot build this instance (the mining output's detail "
        "says what it refused).")


@dataclass(frozen=True)
class Branch:
    """One input path of a core operator, from the core down to the shared source:
    ``upper`` edge (core input → aggregate), the aggregate, ``lower`` edge (aggregate
    input → source). A row path (Min & Join) has no aggregate: ``upper`` goes straight to
    the source."""
    upper: Edge
    agg: Optional[Aggregate] = None
    lower: Optional[Edge] = None

    @property
    def bottom(self) -> Node:
        return self.lower.bottom if self.lower is not None else self.upper.bottom

    @property
    def edges(self) -> tuple[Edge, ...]:
        return (self.upper,) if self.lower is None else (self.upper, self.lower)


@dataclass(frozen=True, eq=False)
class Match:
    """An instance of a family's abstract tree: the core operator ``root``, its branches
    (in core-input order) over ONE shared ``source``. ``family`` is the family's name
    (``superop.families.get(name)`` is its declaration)."""
    family: str
    root: Node
    source: Node
    branches: tuple[Branch, ...]
    join_kind: Optional[str] = None
    agg_side: Optional[Side] = None      # the aggregate branch of a one-aggregate join
    keys: tuple[int, ...] = ()           # the partition key: source field positions
    program: Optional["Program"] = None  # the template's program, once matching built it
    # declared-key premises the match relies on (superop.ir.keys): grouping keys the joins
    # do not equate, determined by the ones they do
    premises: tuple[Premise, ...] = ()

    @property
    def determines(self) -> tuple[Determines, ...]:
        """The premises that are declared-key dependencies (what a program may require)."""
        return tuple(p for p in self.premises if isinstance(p, Determines))

    @property
    def join(self) -> Optional[Join]:
        return self.root if isinstance(self.root, Join) else None

    @property
    def interior(self) -> frozenset[int]:
        """ids of the nodes a super-operator replaces: the root (and the joins of a join tree
        below it), the aggregates and every operator on the edges (not the shared source)."""
        return frozenset(id(n) for n in self.interior_nodes())

    def interior_nodes(self) -> list[Node]:
        out: list[Node] = [self.root]
        # the joins of a tree of joins between the root and the branches (n-way trees)
        tops = {id(b.upper.top) for b in self.branches}
        stack = list(self.root.children) if isinstance(self.root, Join) else []
        while stack:
            n = stack.pop()
            if id(n) not in tops and isinstance(n, Join):
                out.append(n)
                stack += n.children
        for b in self.branches:
            for e in b.edges:
                out.extend(e.ops)
            if b.agg is not None:
                out.append(b.agg)
        return out

    @property
    def key_names(self) -> tuple[str, ...]:
        names = self.source.names
        return tuple(names[i] for i in self.keys)


@dataclass(frozen=True, eq=False)
class NearMiss:
    """A sub-plan that looks like the family's abstract tree but is not an instance."""
    family: str
    root: Node
    reason: Enum                         # a ReasonCode, or superop.ir.safety's BlockReason
    detail: str = ""
    join_kind: str = ""
    n_inputs: int = 0
    source: Optional[Node] = None        # what the first path reads (for input tables)

    @property
    def code(self) -> str:
        """The stable reason code (what mining writes)."""
        return str(self.reason.value)

    @property
    def why(self) -> str:
        text = getattr(self.reason, "text", None) or getattr(self.reason, "description", None) or self.code
        return str(text) + (f": {self.detail}" if self.detail else "")


Finding = Union[Match, NearMiss]


@dataclass(frozen=True)
class EdgeDecl:
    """One abstract edge of a family's tree: its name (``e1``...), the core operator below
    (``from``) and above (``to``)."""
    name: str
    frm: str
    to: str


@dataclass(frozen=True)
class CatalogNames:
    """How a family is named in the rule catalog and the report."""
    long_name: str           # rule-id prefix and streamability check name
    template: str            # the Fig. 10 template
    description: str         # one line, for the report


@dataclass(frozen=True)
class KeyPremise:
    """Algorithms 2-3: the join's condition must imply, for every partition key column,
    that a left input column carrying it equals a right input column carrying it.
    ``pairs[i]`` = (left positions, right positions) at the join inputs that carry the
    i-th key unchanged (empty when the key does not reach the join on that side)."""
    join: Join
    pairs: tuple[tuple[frozenset[int], frozenset[int]], ...] = field(default=())
