"""The decision cache: pay the rewriter's Spark planning once per query shape.

A decision is keyed by

* the query's **template** — its SQL with the literals that are plain comparison operands
  (``col = 'x'``, ``x < 10``, ``IN (..)``, ``BETWEEN``, ``LIKE``) replaced by ``?`` and
  their types kept (``int``/``bigint``/``decimal(p,s)``/``string``). Every other literal
  stays in the template: ordinals (``ORDER BY 1``), ``LIMIT``, function arguments that
  can change a type (``round(x, 2)``), casts, intervals, and literal-only comparisons that
  Spark folds (``1 = 0``);
* the catalog's checksum;
* a **version of every table** the query reads (the text of the relation's catalog entry —
  schema, view text, statistics; ANALYZE changes it);
* the Spark settings that change plans or how the text is read (:data:`PLAN_CONF`), and
  the current catalog and namespace.

A cached rewrite is re-rendered for the new literals: when the decision was made the
chosen candidate was also generated with *sentinel* literals (twice, with two different
sentinel sets), giving the rewritten SQL with a hole wherever each literal flows; the
holes are kept only if filling them with the decision's own literals reproduces the
rewritten SQL byte for byte and both sentinel sets agree — otherwise a hit re-generates
the SQL through the same rewrite (lowering, matching, SQL generation; no Spark planning).
Either way the SQL served is the rewrite of *these* literals, never of another query's.

If the cost estimate used Spark's CBO row counts for a filter (those depend on the
literal values), the decision is **literal-sensitive** and is cached per literal set.

What a hit asks Spark, and why nothing less is sound (tablestats.SessionProbe.snapshot):
**one JVM call**, answered by a helper compiled into the driver (jvmprobe.py), that reads

* **the settings** — some change what the SQL *means* (``spark.sql.ansi.enabled``:
  overflow, casts, division by zero; ``caseSensitive``, ``escapedStringLiterals``,
  ``doubleQuotedIdentifiers``, the session time zone), and a proof holds under the
  semantics it was made for, so a changed one must miss at once: no staleness window;
* **the current catalog and namespace** (``USE db`` resolves a name elsewhere);
* **a version per table** — the text of the relation's catalog entry as Spark resolves the
  name (schema with nullability, view text, database, location, properties, statistics,
  creation time to the second). A proved rewrite holds for all data, so new data or new
  statistics only change the *benefit* decision; but a table or view replaced under the
  same name can have another schema, other declared constraints or resolve the text
  differently — a new version, so a miss on the next call. The one cost input with a
  staleness window: a view replaced by one of the same schema and text within the same
  second (new data, same meaning) keeps its version until the next second.

Where the helper cannot be compiled (or on Spark Connect) the same values come from
per-key calls (``1 + 2 × tables`` round trips; Connect: one ``getAll`` RPC and SQL per
table). The catalog checksum is compared in Python.

A hit's Python work: the exact-text path is two dictionary lookups; the template path
tokenizes the text and, for a token shape seen before (:class:`Shape`), takes the template
from the shape instead of parsing (the parser builds its tree from token types and texts
alone, so the same shape with the same non-parameter literals is the same template).

Thread-safe, bounded (LRU).
"""
from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Optional

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

from ..ir.dialect import DIALECT
from ..ir.lower import parse


def _lru_put(d: OrderedDict, key, value, maxsize: int) -> None:
    """Insert ``key`` as the most recent entry of ``d`` and evict the oldest beyond ``maxsize``
    (the caller holds its lock)."""
    d[key] = value
    d.move_to_end(key)
    while len(d) > maxsize:
        d.popitem(last=False)


# plans, and how the SQL text is read and resolved (a decision made under one of these
# settings is no decision under another: with escapedStringLiterals the rewriter refuses)
PLAN_CONF = ("spark.sql.autoBroadcastJoinThreshold", "spark.sql.adaptive.enabled",
             "spark.sql.shuffle.partitions", "spark.sql.cbo.enabled", "spark.sql.cbo.planStats.enabled",
             "spark.sql.ansi.enabled", "spark.sql.optimizer.excludedRules",
             "spark.sql.parser.escapedStringLiterals", "spark.sql.caseSensitive",
             "spark.sql.ansi.doubleQuotedIdentifiers", "spark.sql.session.timeZone")

_COMPARE = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.Like, exp.ILike)
_INT_MAX = 2 ** 31 - 1


# ---------------------------------------------------------------------------
# templates
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Template:
    key: str                     # the SQL with ? for parameters, plus their types
    literals: tuple              # the parameters' SQL text, in order
    types: tuple                 # their kinds ("s", "i", "l", "d4,2")
    tables: tuple                # tables/views the query reads (lower case, as written)


def _kind(lit: exp.Literal) -> Optional[str]:
    """The literal's type class, or None if it is not parameterized (doubles, tiny decimals)."""
    if lit.is_string:
        return "s"
    t = lit.this
    if re.fullmatch(r"\d+", t):
        # Spark's grammar reads the sign as part of the number: -2147483648 is an int
        limit = _INT_MAX + 1 if isinstance(lit.parent, exp.Neg) else _INT_MAX
        return "i" if int(t) <= limit else "l"
    m = re.fullmatch(r"(\d*)\.(\d+)", t)
    if m:
        p, s = len((m.group(1) or "").lstrip("0")) + len(m.group(2)), len(m.group(2))
        return f"d{max(p, s)},{s}" if max(p, s) >= 4 else None
    return None


def _signed(lit: exp.Literal) -> exp.Expression:
    """The literal with its sign: ``-100`` parses as ``Neg(100)``, and the sign is part of the
    value (``b > -100`` and ``b > 3`` are one template)."""
    return lit.parent if isinstance(lit.parent, exp.Neg) else lit


def _operand(lit: exp.Literal) -> bool:
    """Is the (signed) literal a plain operand of a comparison against a non-constant?"""
    node = _signed(lit)
    par = node.parent
    if isinstance(par, _COMPARE):
        other = par.expression if par.this is node else par.this
        return other is not None and other.find(exp.Column) is not None
    if isinstance(par, exp.In) and node in (par.expressions or []):
        return par.this is not None and par.this.find(exp.Column) is not None
    if isinstance(par, exp.Between) and node is not par.this:
        return par.this is not None and par.this.find(exp.Column) is not None
    return False


def parameters(tree: exp.Expression) -> list[tuple[exp.Expression, str]]:
    """The literals a template parameterizes, in document order, with their kinds: the
    node to replace (the literal, or its ``Neg`` for a negative number) and the kind of
    the literal."""
    out = []
    for lit in tree.find_all(exp.Literal, bfs=False):      # document order
        if _operand(lit):
            k = _kind(lit)
            if k is not None:
                out.append((_signed(lit), k))
    return out


def tables_of(tree: exp.Expression) -> tuple:
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    seen = []
    for t in tree.find_all(exp.Table):
        if not t.name or t.name.lower() in ctes:
            continue
        full = ".".join(p for p in (t.catalog, t.db, t.name) if p).lower()
        if full not in seen:
            seen.append(full)
    return tuple(seen)


def _parse_template(sql: str) -> tuple[Template, exp.Expression]:
    tree = parse(sql)
    params = parameters(tree)
    lits = tuple(lit.sql(dialect="spark") for lit, _ in params)
    kinds = tuple(k for _, k in params)
    t2 = tree.copy()
    for lit, _ in parameters(t2):
        lit.replace(exp.Placeholder())
    key = t2.sql(dialect="spark") + " -- " + ",".join(kinds)
    return Template(key=key, literals=lits, types=kinds, tables=tables_of(tree)), tree


def template_of(sql: str) -> Template:
    """The query's template. A text whose tokens have a known shape (the same tokens, up
    to the values of its literals) takes its template from the shape without parsing
    (:class:`ShapeMemo`); any other text is parsed."""
    toks = _tokens(sql)
    key = shape_key(toks) if toks is not None else None
    if key is not None:
        sh = SHAPES.get(key)
        t = sh.template_for(toks) if sh is not None else None
        if t is not None:
            return t
    tpl, tree = _parse_template(sql)
    if key is not None and toks is not None:
        sh = Shape.record(tpl, tree, toks)
        if sh is not None:
            SHAPES.put(key, sh)
    return tpl


# ---------------------------------------------------------------------------
# templates from tokens (a repeated dashboard text costs a tokenization, not a parse)
# ---------------------------------------------------------------------------
_LITERAL_TOKENS = frozenset({TokenType.STRING, TokenType.NUMBER})


def _tokens(sql: str) -> Optional[list]:
    try:
        return Dialect.get_or_raise(DIALECT).tokenize(sql)
    except Exception:   # the parse reports the error
        return None


def shape_key(toks: list) -> tuple:
    """The tokens with the text of every string and number literal left out (types,
    other texts and comments kept: sqlglot renders comments into the template)."""
    return tuple((t.token_type, None if t.token_type in _LITERAL_TOKENS else t.text, tuple(t.comments))
                 for t in toks)


def _param_text(toks: list, i: int, neg: bool) -> tuple[str, Optional[str]]:
    """A parameter's SQL text and kind from its token, built as the parser builds it
    (``Literal(this=token.text)``, under ``Neg`` for a signed number)."""
    t = toks[i]
    lit = exp.Literal(this=t.text, is_string=t.token_type == TokenType.STRING)
    node = exp.Neg(this=lit) if neg else lit
    return node.sql(dialect="spark"), _kind(lit)


@dataclass(frozen=True)
class Shape:
    """What parsing told about one token shape: the template (key, kinds, tables), which
    literal tokens are its parameters (token index, signed), and the text of every other
    literal token. sqlglot's parser builds a tree from token types and texts alone (a
    string or number literal token becomes ``Literal(this=text)``), so another text with
    the same shape, the same non-parameter literals and parameters of the same kinds has
    the same template with its own parameter values."""
    template: Template
    params: tuple       # ((token index, negated), ...) in the template's parameter order
    fixed: tuple        # ((token index, text), ...) of the other literal tokens

    @classmethod
    def record(cls, tpl: Template, tree: exp.Expression, toks: list) -> Optional["Shape"]:
        """The shape of a parsed text, or None if its literals cannot be traced to tokens
        one to one (a raw-text command, a literal the parser made up, a sign elsewhere)."""
        if tree.find(exp.Command) is not None:
            return None
        at = {t.start: i for i, t in enumerate(toks) if t.token_type in _LITERAL_TOKENS}
        params = []
        for node, _ in parameters(tree):
            lit = node.this if isinstance(node, exp.Neg) else node
            i = at.get((lit.meta or {}).get("start", -1))
            neg = isinstance(node, exp.Neg)
            if i is None or (neg and (i == 0 or toks[i - 1].token_type != TokenType.DASH)):
                return None
            params.append((i, neg))
        if len({i for i, _ in params}) != len(params):
            return None
        texts = [_param_text(toks, i, neg) for i, neg in params]
        if tuple(x for x, _ in texts) != tpl.literals or tuple(k for _, k in texts) != tpl.types:
            return None
        taken = {i for i, _ in params}
        fixed = tuple((i, toks[i].text) for i in sorted(at.values()) if i not in taken)
        return cls(tpl, tuple(params), fixed)

    def template_for(self, toks: list) -> Optional[Template]:
        """The template of a text of this shape, or None (another non-parameter literal,
        a parameter of another kind: parse it)."""
        if any(toks[i].text != text for i, text in self.fixed):
            return None
        texts = [_param_text(toks, i, neg) for i, neg in self.params]
        if tuple(k for _, k in texts) != self.template.types:
            return None
        return replace(self.template, literals=tuple(x for x, _ in texts))


class ShapeMemo:
    """A thread-safe LRU from token shapes to :class:`Shape` (one per shape: the last
    text parsed wins)."""

    def __init__(self, maxsize: int = 1024):
        self.maxsize = maxsize
        self._d: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> Optional[Shape]:
        with self._lock:
            sh = self._d.get(key)
            if sh is not None:
                self._d.move_to_end(key)
            return sh

    def put(self, key: tuple, shape: Shape) -> None:
        with self._lock:
            _lru_put(self._d, key, shape, self.maxsize)

    def clear(self) -> None:
        with self._lock:
            self._d.clear()


SHAPES = ShapeMemo()


def _sentinel(kind: str, i: int, which: int) -> exp.Literal:
    if kind == "s":
        return exp.Literal.string(f"__so_lit{which}_{i}__")
    if kind == "i":
        return exp.Literal.number(str(1_987_650_000 + 100 * which + i))
    if kind == "l":
        return exp.Literal.number(str(9_187_650_000_000 + 100 * which + i))
    p, s = (int(x) for x in kind[1:].split(","))
    digits = (f"{8 - which}6" + str(i).rjust(2, "0")).rjust(p, "7")[-p:]
    return exp.Literal.number(f"{digits[:p - s] or '0'}.{digits[p - s:]}")


def with_sentinels(sql: str, which: int) -> tuple[str, list[str]]:
    """``sql`` with every parameter replaced by a sentinel literal of the same kind (set
    ``which`` = 0 or 1), and the sentinels' SQL text in parameter order."""
    tree = parse(sql)
    sents = []
    for i, (lit, kind) in enumerate(parameters(tree)):
        s = _sentinel(kind, i, which)
        sents.append(s.sql(dialect="spark"))
        lit.replace(s)
    return tree.sql(dialect="spark"), sents


# ---------------------------------------------------------------------------
# rendering a rewritten SQL for new literals
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Render:
    """The rewritten SQL as text pieces and parameter holes: pieces[0] ?0 pieces[1] ..."""
    pieces: tuple
    holes: tuple

    def fill(self, literals: tuple) -> str:
        out = [self.pieces[0]]
        for h, p in zip(self.holes, self.pieces[1:]):
            out.append(literals[h])
            out.append(p)
        return "".join(out)


def _split(sql: str, sents: list[str]) -> Optional[Render]:
    if not sents:
        return Render((sql,), ())
    pat = re.compile("|".join(f"(?<![\\w.]){re.escape(s)}(?![\\w.])" for s in sents))
    pieces, holes, last = [], [], 0
    for m in pat.finditer(sql):
        pieces.append(sql[last:m.start()])
        holes.append(sents.index(m.group(0)))
        last = m.end()
    pieces.append(sql[last:])
    return Render(tuple(pieces), tuple(holes))


def make_render(rewritten_0: str, sents_0: list[str], rewritten_1: str, sents_1: list[str],
                literals: tuple, expected: str) -> Optional[Render]:
    """A Render if both sentinel generations agree and reproduce ``expected`` with the
    decision's own literals; None = re-generate on every hit."""
    r0, r1 = _split(rewritten_0, sents_0), _split(rewritten_1, sents_1)
    if r0 is None or r1 is None or r0 != r1:
        return None
    if r0.fill(literals) != expected:
        return None
    return r0


# ---------------------------------------------------------------------------
# the cache
# ---------------------------------------------------------------------------
@dataclass
class Decision:
    """A cached gate decision for one template."""
    changed: bool
    label: str = ""                   # the chosen candidate (rewriter.Candidate.label)
    applied: tuple = ()
    explanation: str = ""
    render: Optional[Render] = None   # None with changed: re-generate per hit
    literal_sensitive: bool = False
    literals: tuple = ()
    extra: dict = field(default_factory=dict)   # exchanges/cost before/after, candidates


@dataclass(frozen=True)
class ExactEntry:
    """A served result for one exact SQL text: the tables it reads with their versions
    when it was served (a hit re-reads them: ANALYZE or a replaced view invalidates it),
    and the result's fields."""
    tables: tuple
    versions: tuple
    sql: str
    changed: bool
    applied: tuple
    explanation: str
    extra: dict = field(default_factory=dict)


class DecisionCache:
    """A thread-safe LRU map from (template, catalog, table versions, conf) to a Decision."""

    def __init__(self, maxsize: int = 1024):
        self.maxsize = maxsize
        self._d: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self._exact: OrderedDict = OrderedDict()
        self._exact_tables: OrderedDict = OrderedDict()   # text -> the tables it reads

    @staticmethod
    def key(template: Template, catalog_checksum: str, versions: tuple, conf: tuple) -> tuple:
        return (template.key, catalog_checksum, versions, conf)

    def get(self, key: tuple, literals: tuple) -> Optional[Decision]:
        with self._lock:
            d = self._d.get(key)
            if d is not None and d.literal_sensitive:
                d = self._d.get(key + (literals,))
                k2 = key + (literals,)
            else:
                k2 = key
            if d is None:
                self.misses += 1
                return None
            self._d.move_to_end(k2)
            self.hits += 1
            return d

    def put(self, key: tuple, decision: Decision) -> None:
        with self._lock:
            if decision.literal_sensitive:
                _lru_put(self._d, key, Decision(changed=False, literal_sensitive=True),  # the marker
                         self.maxsize)
                key = key + (decision.literals,)
            _lru_put(self._d, key, decision, self.maxsize)

    # -- the exact-text path: looked up before any parsing ----------------------------------
    def exact_tables(self, sql: str) -> Optional[tuple]:
        """The tables this exact text reads (known once it was decided), so that one JVM
        call can read the settings and their versions together."""
        with self._lock:
            return self._exact_tables.get(sql)

    def get_exact(self, sql: str, catalog_checksum: str, conf: tuple) -> Optional["ExactEntry"]:
        """The entry of this exact SQL text under this catalog and these settings (the
        caller re-checks the table versions it records)."""
        with self._lock:
            e = self._exact.get((sql, catalog_checksum, conf))
            if e is not None:
                self._exact.move_to_end((sql, catalog_checksum, conf))
            return e

    def put_exact(self, sql: str, catalog_checksum: str, conf: tuple, entry: "ExactEntry") -> None:
        with self._lock:
            _lru_put(self._exact, (sql, catalog_checksum, conf), entry, self.maxsize)
            _lru_put(self._exact_tables, sql, entry.tables, self.maxsize)

    def clear(self) -> None:
        with self._lock:
            self._d.clear()
            self._exact.clear()
            self._exact_tables.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._d)
