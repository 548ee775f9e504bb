"""Neighbour self-join (NB): a ranked view joined to itself on its rank's partition and a
rank offset — ``v.rn = v_lag.rn + 1`` (TPC-DS q47, q57: a view with ``rank() OVER
(PARTITION BY P ORDER BY O)`` joined to ``v1_lag`` and ``v1_lead`` on all of P and
``rn = rn ± 1``) — runs as LAG / LEAD over ONE window of the view.

    ⋈ Join (a left-deep tree of inner / left joins, flattened)
    ├── e1 [σπρ]* ── Spool (the ranked view)        the centre: one output row per row
    ├── e2 [σπρ]* ── Spool                           a use at rank offset o_2
    └── e_n [σπρ]* ── Spool                          a use at rank offset o_n

Edge order: one edge per use, in join-input order.

When it is an instance (else a near-miss with a typed reason):
* every use reads ONE shared view; the joins form a left-deep tree of inner and left joins
  whose left-most use (the centre) is preserved;
* the offset column ``rn`` is ``rank()`` / ``dense_rank()`` whose ORDER BY cannot tie within
  its PARTITION BY (the view groups by P ∪ O below the window), or ``row_number()`` (which
  the matching path's safety check then refuses as order-dependent: each use of the view
  may number ties differently), so
  ``rn`` numbers the rows of each partition 1..n; no filter or limit between the window
  and the view (it would leave gaps). With ties ``rn = rn + 1`` can match several rows or
  none: ``rank_may_tie``;
* each join links its new use to an earlier one by ``rn = rn + c`` (c ≠ 0) and equates
  ALL of P (an equi-join on part of P pairs rows of different partitions:
  ``join_on_subset_of_keys``).

Template (a DSL program reading the view): partitions = P, sorted by ``rn``, precondition
``RowNumber(rn, P)`` (what the match established); per use k a presence marker
``nb.p_k`` = the neighbour at offset o_k exists and passes the use's σ (a marker, not the
neighbour's value, which may be NULL) and its columns ``nb.v_k_j`` (LAG/LEAD of the use's
projection); the rank-offset conjunct and the P equalities become "marker ∧ P NOT NULL"
(an equi-join drops NULL partition keys, LAG does not); every other conjunct of the ON
clause is evaluated over the neighbours' values. Inner joins guard the one row emit; a
left-joined use's columns are NULL unless it matched. Spark runs it as ``lag``/``lead``
``OVER (PARTITION BY P ORDER BY rn)`` of one view instead of joining three copies.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

from sqlglot import exp

from ..dsl import STREAMING, Neighbour, Program, RowEmit, RowNumber, SortKey, ref
from ..ir.analysis import Edge, capture_parameters, walk_edge
from ..ir.dialect import DIALECT
from ..ir.generate import translate_columns
from ..ir.lowering.exprs import conjuncts
from ..ir.nodes import Aggregate, Join, Node, Project, Rename, Select, Sort, Window
from .kit import symbolic
from .kit.covers import EDGE_OPS, Covers
from .kit.diamond import Shape, bare_column, find_field, trace, tree_positions
from .kit.family import NEIGHBOURS, Family, ProofInstance, Slot, Streamability, edge_op_names
from .kit.program import conj, is_true, keys_not_null, to_ns, unparen
from .kit.records import Branch, CatalogNames, Match, NearMiss, Reason, ReasonCode, TemplateError
from .nb_examples import NeighbourExamples

RANKING = {exp.RowNumber: "row_number", exp.Rank: "rank", exp.DenseRank: "dense_rank"}


class NBReason(ReasonCode):
    """Why a self-join of a view on a column offset is not a neighbour self-join."""
    OFFSET_NOT_ON_A_RANK = (
        "offset_not_on_a_rank",
        "the offset column is not a row_number / rank / dense_rank of the view (or rows are filtered or limited "
        "between the ranking and the view)",
        "Join the view on a row_number() / rank() / dense_rank() computed in the view (ON b.rn = a.rn + 1), with no"
        " filter or LIMIT between the ranking and the join.")
    RANK_MAY_TIE = (
        "rank_may_tie",
        "the rank's ORDER BY may tie within its PARTITION BY: rn = rn + c can match several rows or none",
        "Make the ranking's ORDER BY unique within its PARTITION BY: add a unique column as a tie-break (or declare"
        " the key in the schema).")
    USE_NOT_LINKED = (
        "use_not_linked",
        "a use of the view is not joined to an earlier one by a non-zero rank offset",
        "Join each use of the view to an earlier one by rn = rn + c with a non-zero constant c.")
    NOT_LEFT_DEEP = (
        "join_tree_not_left_deep",
        "the uses are not joined one by one (a left-deep tree) with the centre preserved",
        "Join the uses one after another to the centre (v a LEFT JOIN v b ON ... LEFT JOIN v c ON ...), keeping the"
        " centre's rows.")


# ---------------------------------------------------------------------------
# the analysis of a candidate join tree (shared by the pattern and the template)
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class RankInfo:
    """The view's offset column: its ranking function, partition (view positions) and
    whether rn numbers the rows of each partition 1..n."""
    column: int
    func: str
    partition: tuple[int, ...]


@dataclass
class Use:
    """A use of the view joined at ``offset`` from the centre (use 0: offset 0)."""
    index: int
    kind: str = "inner"                                  # the join that brought it in
    offset: int = 0
    psi: list[exp.Expr] = field(default_factory=list)   # unconsumed ON conjuncts (raw)
    psi_join: Optional[Join] = None
    refs: set[int] = field(default_factory=set)          # earlier uses its ON clause reads


@dataclass
class Analysis:
    rank: RankInfo
    uses: list[Use]
    kinds: tuple[str, ...]

    @property
    def variant(self) -> str:
        """Each use's join kind and offset (``inner-1,inner+1``); ``*`` first when the rank
        has no PARTITION BY (the whole view is one partition: another program)."""
        return ("" if self.rank.partition else WHOLE) + ",".join(f"{u.kind}{u.offset:+d}" for u in self.uses[1:])


WHOLE = "*"      # a variant's prefix: the rank has no PARTITION BY


def parse_variant(variant: str) -> tuple[bool, list[tuple[str, int]]]:
    """(partitioned, [(join kind, offset) per use]) of a variant; ValueError if malformed."""
    partitioned = not variant.startswith(WHOLE)
    uses = []
    for part in variant.lstrip(WHOLE).split(","):
        kind = part.rstrip("+-0123456789")
        uses.append((kind, int(part[len(kind):])))
    return partitioned, uses


Failure = tuple[ReasonCode, str]
# an ON conjunct: the conjunct, and for an equi conjunct the (leaf, field) each side reads
Conjunct = tuple[exp.Expr, Optional[tuple[int, int]], Optional[tuple[int, int]]]


def _linear(e: exp.Expr) -> Optional[tuple[exp.Column, int]]:
    """``col``, ``col + c``, ``col - c``, ``c + col`` -> (col, c); else None."""
    e = unparen(e)
    if isinstance(e, exp.Column):
        return e, 0
    if isinstance(e, (exp.Add, exp.Sub)):
        a, b = unparen(e.this), unparen(e.expression)
        ca, cb = _int(b), _int(a)
        if isinstance(a, exp.Column) and ca is not None:
            return a, ca if isinstance(e, exp.Add) else -ca
        if isinstance(e, exp.Add) and isinstance(b, exp.Column) and cb is not None:
            return b, cb
    return None


def _int(e: exp.Expr) -> Optional[int]:
    neg = False
    if isinstance(e, exp.Neg):
        e, neg = unparen(e.this), True
    if isinstance(e, exp.Literal) and not e.is_string:
        try:
            v = int(e.this)
        except ValueError:
            return None
        return -v if neg else v
    return None


def _window_origin(view: Node, idx: int) -> Optional[tuple[Window, int]]:
    """The window item a view column is, through row-preserving operators only (π of a
    bare column, ρ, sort, other windows): a σ or a LIMIT would leave gaps in a row number."""
    node = view
    for _ in range(10_000):
        if isinstance(node, Window):
            nc = len(node.child.fields)
            if idx >= nc:
                return node, idx - nc
            node = node.child
        elif isinstance(node, Rename):
            j = find_field(node.child.fields, node.mapping[idx][0].column())
            if j is None:
                return None
            idx, node = j, node.child
        elif isinstance(node, Project):
            c = bare_column(node.items[idx][0])
            j = None if c is None else find_field(node.child.fields, c)
            if j is None:
                return None
            idx, node = j, node.child
        elif isinstance(node, Sort):
            node = node.child
        else:
            return None
    return None


def _unique_below(win: Window, cols: Sequence[int]) -> bool:
    """Are the window input's columns ``cols`` (P ∪ O) a key of its rows? Yes when, through
    operators that keep or drop rows but never duplicate them (σ π ρ sort, windows), they
    carry every grouping key of an aggregate."""
    node: Node = win.child
    while isinstance(node, (Select, Project, Rename, Sort, Window)):
        node = node.children[0]
    if not isinstance(node, Aggregate):
        return False
    agg = node
    carried = {trace(win.child, c, agg) for c in cols} - {None}
    for k in agg.keys:
        kc = bare_column(k)
        if kc is None:
            return False
        kj = find_field(agg.child.fields, kc)
        if kj is None or not any(
                (b := bare_column(agg.items[o][0])) is not None and find_field(agg.child.fields, b) == kj
                for o in carried if o is not None):
            return False
    return True


def rank_info(view: Node, idx: int) -> Union[RankInfo, Failure]:
    """Does view column ``idx`` number the rows of each partition 1..n?"""
    name = view.fields[idx].name
    found = _window_origin(view, idx)
    if found is None:
        return NBReason.OFFSET_NOT_ON_A_RANK, f"{name} is not a ranking window column of the view"
    win, item = found
    w = win.items[item][0]
    func = RANKING.get(type(w.this)) if isinstance(w, exp.Window) else None
    if func is None:
        return NBReason.OFFSET_NOT_ON_A_RANK, f"{name} is {w.sql(dialect=DIALECT)}"
    child = win.child.fields
    part: list[int] = []
    for p in w.args.get("partition_by") or []:
        c = bare_column(p)
        j = None if c is None else find_field(child, c)
        pos = [i for i in range(len(view.fields)) if j is not None and trace(view, i, win.child) == j]
        if not pos:
            return (Reason.JOIN_ON_SUBSET_OF_KEYS,
                    f"the rank's PARTITION BY {p.sql(dialect=DIALECT)} is not a view column")
        part.append(pos[0])
    if func != "row_number":
        order = w.args.get("order")
        cols: list[Optional[int]] = []
        for p in w.args.get("partition_by") or []:
            c = bare_column(p)
            cols.append(find_field(child, c) if c is not None else None)
        for o in (order.expressions if order is not None else []):
            c = bare_column(o.this if isinstance(o, exp.Ordered) else o)
            cols.append(find_field(child, c) if c is not None else None)
        if None in cols or not _unique_below(win, [c for c in cols if c is not None]):
            return NBReason.RANK_MAY_TIE, f"{func}() over {w.sql(dialect=DIALECT)}"
    return RankInfo(idx, func, tuple(part))


def analyze(root: Node, tops: Sequence[Node], view: Node) -> Union[Analysis, Failure, None]:
    """The neighbour self-join structure of a join tree over uses of ``view`` whose inputs
    are ``tops`` (leaf order); None when no ON conjunct is a column offset between two
    uses (not this family's shape)."""
    def view_field(leaf: int, pos: int) -> Optional[int]:
        return trace(tops[leaf], pos, view)

    # every conjunct of every join, classified
    joins: list[Join] = []
    n: Node = root
    left_deep = True
    while isinstance(n, Join):
        joins.append(n)
        if not any(n.right is t for t in tops):
            left_deep = False
            break
        n = n.left
    joins.reverse()                       # bottom-up: joins[k-1] brings in use k
    offsets_seen: list[tuple[int, int, int, int]] = []      # (view field, leaf a, leaf b, b - a)

    def classify(j: Join) -> tuple[list[Conjunct], Any, Any]:
        lpos = tree_positions(j.left, tops)
        rpos = tree_positions(j.right, tops)
        out: list[Conjunct] = []
        for a, b in j.equi:
            out.append((exp.EQ(this=a.copy(), expression=b.copy()), _side_cols(a, j.left.fields, lpos),
                        _side_cols(b, j.right.fields, rpos)))
        for c in conjuncts(j.residual):
            out.append((c, None, None))
        return out, lpos, rpos

    def offset_of(a_col: Optional[tuple[int, int]], b_col: Optional[tuple[int, int]],
                  a_expr: exp.Expr, b_expr: exp.Expr) -> Optional[tuple[int, int, int, int]]:
        la, lb = _linear(a_expr), _linear(b_expr)
        if la is None or lb is None or a_col is None or b_col is None:
            return None
        (leaf_a, pos_a), (leaf_b, pos_b) = a_col, b_col
        fa, fb = view_field(leaf_a, pos_a), view_field(leaf_b, pos_b)
        if fa is None or fa != fb or leaf_a == leaf_b:
            return None
        return fa, leaf_a, leaf_b, la[1] - lb[1]      # b.f = a.f + (ca - cb)

    classified = []
    for j in (joins if left_deep else []):
        cs, lpos, rpos = classify(j)
        classified.append(cs)
        for c, a_col, b_col in cs:
            if a_col is not None and b_col is not None:
                o = offset_of(a_col, b_col, c.this, c.expression)
                if o is not None and o[3] != 0:
                    offsets_seen.append(o)
    if not left_deep:
        # still only this family's business if some conjunct is a rank offset
        return (NBReason.NOT_LEFT_DEEP, "") if _any_offset(root, tops, view) else None
    if not offsets_seen:
        return None
    rank: Optional[RankInfo] = None
    why: Optional[Failure] = None
    for f in dict.fromkeys(o[0] for o in offsets_seen):
        r = rank_info(view, f)
        if isinstance(r, RankInfo):
            rank = r
            break
        why = why or r
    if rank is None:
        assert why is not None
        return why
    kinds = tuple(j.kind for j in joins)
    bad = [k for k in kinds if k not in ("inner", "left")]
    if bad:
        return Reason.JOIN_KIND_UNSUPPORTED, ", ".join(sorted(set(bad)))
    uses = [Use(0)]
    for k, (j, cs) in enumerate(zip(joins, classified), start=1):
        use = Use(k, j.kind, psi_join=j)
        linked: Optional[tuple[int, int]] = None      # (earlier use, offset of k from it)
        equated: set[int] = set()
        for c, a_col, b_col in cs:
            o = None if a_col is None or b_col is None else offset_of(a_col, b_col, c.this, c.expression)
            if o is not None and o[0] == rank.column and o[3] != 0 and linked is None and o[2] == k:
                linked = (o[1], o[3])
                continue
            if o is not None and o[3] == 0 and o[0] in rank.partition and k in (o[1], o[2]):
                equated.add(o[0])
                use.refs.add(o[1] if o[2] == k else o[2])
                continue
            use.psi.append(c)
        if linked is None:
            return NBReason.USE_NOT_LINKED, f"use {k + 1} ({tops[k].op})"
        missing = [view.fields[p].name for p in rank.partition if p not in equated]
        if missing:
            return Reason.JOIN_ON_SUBSET_OF_KEYS, f"use {k + 1} is not joined on {', '.join(missing)}"
        use.refs.add(linked[0])
        use.offset = uses[linked[0]].offset + linked[1]
        if use.offset == 0:
            return NBReason.USE_NOT_LINKED, f"use {k + 1} is at offset 0 (the row itself)"
        uses.append(use)
    return Analysis(rank, uses, kinds)


def _one_view(branches: Sequence[Branch]) -> Optional[list[Branch]]:
    """The uses' paths extended down to ONE common view: a use written ``(SELECT * FROM v
    WHERE …)`` next to a plain ``v`` stops at the shared ``v`` alias, the plain one below
    it; the highest node every path reaches through σ/π/ρ is the view. None if none."""
    chains = []
    for b in branches:
        chain, n = [b.bottom], b.bottom
        while isinstance(n, (Select, Project, Rename)):
            n = n.children[0]
            chain.append(n)
        chains.append(chain)
    view = next((c for c in chains[0] if all(any(c is x for x in ch) for ch in chains[1:])), None)
    if view is None:
        return None
    out = []
    for b, ch in zip(branches, chains):
        extra = tuple(ch[:[id(x) for x in ch].index(id(view))])
        out.append(b if not extra else Branch(Edge(b.upper.ops + extra, view)))
    return out


def capture_parameters_of(top: Node, view: Node) -> Any:
    return capture_parameters(walk_edge(top, frozenset({id(view)})))


def _side_cols(e: exp.Expr, fields: Sequence[Any], pos: Sequence[tuple[int, int]]) -> Optional[tuple[int, int]]:
    """The (leaf, field) of the one column an equi side reads, if it reads exactly one."""
    cols = list(unparen(e).find_all(exp.Column)) if not isinstance(unparen(e), exp.Column) else [unparen(e)]
    if len(cols) != 1:
        return None
    c = cols[0]
    i = find_field(fields, c) if isinstance(c, exp.Column) else None
    return None if i is None else pos[i]


def _any_offset(root: Node, tops: Sequence[Node], view: Node) -> bool:
    """Does some equi conjunct of the join tree equate a view column of one use with the
    same column of another use plus a constant?"""
    stack = [root]
    while stack:
        j = stack.pop()
        if not isinstance(j, Join) or any(j is t for t in tops):
            continue
        lpos, rpos = tree_positions(j.left, tops), tree_positions(j.right, tops)
        for a, b in j.equi:
            ac, bc = _side_cols(a, j.left.fields, lpos), _side_cols(b, j.right.fields, rpos)
            la, lb = _linear(a), _linear(b)
            if ac and bc and la and lb and la[1] != lb[1] and ac[0] != bc[0] and \
                    trace(tops[ac[0]], ac[1], view) is not None and \
                    trace(tops[ac[0]], ac[1], view) == trace(tops[bc[0]], bc[1], view):
                return True
        stack += [j.left, j.right]
    return False


# ---------------------------------------------------------------------------
# the family
# ---------------------------------------------------------------------------
class NeighbourSelfJoin(NeighbourExamples, Family):
    name = "NB"
    catalog = CatalogNames("neighbour-self-join", "SuperOp_NB",
                           "a ranked view joined to itself on its rank's partition and a rank offset")
    core_name = "Join"
    join_kinds = ("inner", "left")
    sides = (None,)
    min_branches = 2
    max_branches = None
    aggregates = ()
    reasons = (Reason, NBReason)
    proof_shape = NEIGHBOURS
    tie_reason = NBReason.RANK_MAY_TIE      # the near-miss the log generator plants (nb_examples.py)
    # the variants proved by default (superop verify --templates); any other is built from its name
    PROVED_VARIANTS = ("inner-1", "inner+1", "left-1", "left+1", "inner-1,inner+1", "left-1,left+1",
                       "inner+1,left-1", "inner-2", "left-2", "*inner-1", "*left-1")

    # -- pattern ------------------------------------------------------------------------
    def recognize(self, shape: Shape) -> Optional[Match | NearMiss]:
        if not shape.joins or len(shape.paths) < 2:
            return None
        paths = shape.paths
        if any(p.agg is not None for p in paths):
            return None                       # aggregate paths: DJ / MJ / GA
        branches = _one_view([p.branch for p in paths])
        if branches is None:
            return None                       # not a self-join of one view
        view = branches[0].bottom
        tops = [b.upper.top for b in branches]
        r = analyze(shape.root, tops, view)
        if r is None:
            return None
        if not isinstance(r, Analysis):
            reason, detail = r
            return NearMiss(self.name, shape.root, reason, detail, shape.join_kind, len(paths), view)
        return Match(self.name, shape.root, view, tuple(branches),
                     join_kind=shape.join_kind, keys=r.rank.partition)

    def _analysis(self, m: Match) -> Analysis:
        r = analyze(m.root, [b.upper.top for b in m.branches], m.source)
        if not isinstance(r, Analysis):
            raise TemplateError(f"not a neighbour self-join: {r[0].text if r else 'no rank offset'}")
        return r

    # -- abstract edges -------------------------------------------------------------------
    def layout(self, branches: int, side: object = None) -> tuple[Slot, ...]:
        return tuple(Slot(None, i) for i in range(branches))

    def point(self, m: Match) -> Covers:
        """An instance: its join kinds, its number of uses, the operators on each use's
        edge, and (``variant``) the join kind and rank offset of every use — the program
        differs with each (LAG 1 is not LAG 2)."""
        a = self._analysis(m)
        return Covers.make(self.name, join_kinds=set(a.kinds), branches=len(m.branches),
                           edges=[edge_op_names(b.upper) for b in m.branches], variant=a.variant)

    def skeleton(self, point: Covers) -> tuple[Any, ...]:
        return (self.name, point.branches, point.variant, None)

    # -- streamability, template, code generation -------------------------------------------
    def streamability(self, m: Match) -> Streamability:
        a = self._analysis(m)
        keys = [m.source.names[p] for p in a.rank.partition]
        rn = m.source.names[a.rank.column]
        span = max(abs(u.offset) for u in a.uses[1:])
        return Streamability(f"partitions {keys} sorted on {rn} ({a.rank.func}, numbers the rows 1..n): each "
                             f"row reads neighbours at offsets {[u.offset for u in a.uses[1:]]} — a window of "
                             f"{span} rows, constant state",
                             {"keys": keys, "sort": rn, "rank": a.rank.func,
                              "offsets": [u.offset for u in a.uses[1:]]})

    def build_program(self, m: Match) -> Program:
        a = self._analysis(m)
        view = m.source
        names = list(view.names)
        keys = [names[p] for p in a.rank.partition]
        rn = names[a.rank.column]
        tops = [b.upper.top for b in m.branches]
        params = [capture_parameters_of(t, view) for t in tops]
        nbs: list[Neighbour] = []
        values: list[list[exp.Expr]] = []     # per use: its columns as DSL expressions
        match: dict[int, exp.Expr] = {}       # use -> matched (but for NULL keys)
        knn = keys_not_null(keys)                   # an equi-join on P drops NULL keys
        phi0 = to_ns(params[0].predicate, "row")
        values.append([to_ns(e, "row") for _, e in params[0].projection])
        for u in a.uses[1:]:
            prm = params[u.index]
            phi = to_ns(prm.predicate, "row")
            marker = Neighbour(f"p{u.index}", u.offset, phi.copy() if phi is not None else exp.true())
            nbs.append(marker)
            cols: list[exp.Expr] = []
            for j, (_, e) in enumerate(prm.projection):
                arg = to_ns(e, "row")
                if phi is not None:    # the use's π is evaluated only on rows its σ keeps
                    arg = exp.Case(ifs=[exp.If(this=phi.copy(), true=arg)])
                nbs.append(Neighbour(f"v{u.index}_{j}", u.offset, arg))
                cols.append(ref("nb", f"v{u.index}_{j}"))
            # the use's row exists (and passes its σ); the uses its ON clause links it to matched
            pre = conj(is_true(ref("nb", marker.name)),
                       *[match[r] for r in sorted(u.refs) if r != 0 and a.uses[r].kind == "left"])
            assert pre is not None
            psi = self._psi(u, tops, values + [cols], m)
            # ψ only where the neighbour exists (its columns are evaluated there only)
            match[u.index] = pre if psi is None else \
                exp.Case(ifs=[exp.If(this=pre, true=is_true(psi))], default=exp.false())
            if u.kind == "left":      # NULL-extended unless matched (NULL keys never match)
                cond = conj(knn, match[u.index])
                assert cond is not None
                cols = [exp.If(this=cond.copy(), true=c, false=exp.Null()) for c in cols]
            values.append(cols)
        inner = [match[u.index] for u in a.uses[1:] if u.kind == "inner"]
        guard = conj(is_true(phi0), *([knn] if inner and knn is not None else []), *inner)
        outputs = tuple(values[leaf][pos].copy() for leaf, pos in tree_positions(m.root, tops))
        return Program(keys=tuple(keys), output=m.root.names, row_emits=(RowEmit(guard, outputs),),
                       sort=(SortKey(rn, ascending=True),), neighbours=tuple(nbs),
                       requires=(RowNumber(rn, tuple(keys)),), memory=STREAMING)

    @staticmethod
    def _psi(u: Use, tops: Sequence[Node], values: list[list[exp.Expr]], m: Match) -> Optional[exp.Expr]:
        """The use's unconsumed ON conjuncts over the uses' DSL values."""
        j = u.psi_join
        if j is None or not u.psi:
            return None
        lpos, rpos = tree_positions(j.left, tops), tree_positions(j.right, tops)
        lx = [values[leaf][pos] for leaf, pos in lpos]
        rx = [values[leaf][pos] for leaf, pos in rpos]
        out: list[exp.Expr] = []
        equi = {id(c) for c in u.psi if isinstance(c, exp.EQ)}
        for c in u.psi:
            if id(c) in equi and _is_equi_of(c, j):
                out.append(exp.EQ(this=translate_columns(c.this, j.left.fields, lx),
                                  expression=translate_columns(c.expression, j.right.fields, rx)))
            else:
                out.append(translate_columns(c, j.left.fields + j.right.fields, lx + rx))
        return conj(*out)

    # -- generalization and the catalog --------------------------------------------------------
    def rule_id(self, skeleton: tuple[Any, ...]) -> str:
        """``neighbour-self-join-inner-lag1-inner-lead1`` (one part per use after the centre)."""
        parts = []
        if skeleton[2]:
            partitioned, uses = parse_variant(str(skeleton[2]))
            parts = ([] if partitioned else ["whole"]) + [
                f"{kind}-{'lag' if off < 0 else 'lead'}{abs(off)}" for kind, off in uses]
        return f"{self.catalog.long_name}-" + ("-".join(parts) or f"{skeleton[1]}way")

    def describe(self, skeleton: tuple[Any, ...], n_patterns: int) -> str:
        return (f"a ranked view joined to itself at rank offsets ({skeleton[2]}); generalizes {n_patterns} "
                f"verified pattern{'s' if n_patterns != 1 else ''}")

    # -- proofs ---------------------------------------------------------------------------------
    def sort_offsets(self, m: Match) -> tuple[int, ...]:
        return tuple(u.offset for u in self._analysis(m).uses)

    def proof_instance(self, name: str) -> ProofInstance:
        """``NB/<variant>`` for ANY variant (``inner-1,left+2``): one symbolic instance per
        variant, built from its name (the program differs with every kind and offset)."""
        variant = name.split("/", 1)[1] if name.startswith(f"{self.name}/") else ""
        try:
            partitioned, uses = parse_variant(variant)
        except ValueError:
            raise KeyError(f"family {self.name} has no proof instance {name!r}") from None
        if not uses or any(k not in self.join_kinds or d == 0 for k, d in uses):
            raise KeyError(f"family {self.name} has no proof instance {name!r}")
        sql, fns = symbolic.neighbour_instance(uses, partitioned)
        cov = Covers.make(self.name, join_kinds={k for k, _ in uses}, branches=len(uses) + 1,
                          edges=[EDGE_OPS] * (len(uses) + 1), variant=variant)
        return ProofInstance(name, sql, symbolic.NEIGHBOUR_SCHEMA, cov, fns, symbolic.NEIGHBOUR_ASSUMPTIONS)

    def proof_instances(self) -> tuple[ProofInstance, ...]:
        return tuple(self.proof_instance(f"{self.name}/{v}") for v in self.PROVED_VARIANTS)

    def proof_instance_name(self, join_kind: Optional[str] = None, agg_left: bool = True, branches: int = 2,
                            func: str = "min") -> str:
        return f"{self.name}/{join_kind}-1"

    def proofs_for(self, skeleton: tuple[Any, ...], aggregates: Sequence[str] = ()) -> tuple[ProofInstance, ...]:
        """The instance of the skeleton's variant (its kinds and offsets)."""
        try:
            return (self.proof_instance(f"{self.name}/{skeleton[2]}"),)
        except KeyError:
            return ()


def _is_equi_of(c: exp.Expr, j: Join) -> bool:
    return any(c.this == a and c.expression == b for a, b in j.equi)


NB = NeighbourSelfJoin()
