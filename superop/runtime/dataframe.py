"""DataFrame programs through the runtime: ``SuperOpSession.optimize`` / ``explain_df``.

    so = SuperOpSession(spark, "catalog.json")
    fast = df.transform(so.optimize)          # same columns and rows; df itself when nothing pays
    print(so.explain_df(df))                  # what was decided and why

A DataFrame has no SQL text. Its plan — Catalyst's analyzed plan on a classic session
(:mod:`.dataframe_classic`), the client's protobuf ``Relation`` on Spark Connect
(:mod:`.dataframe_connect`) — is lowered to the same plan IR a query lowers to, with every
input the IR reads as a table (a catalog table or view, a file read, local, cached or
checkpointed data) bound as a **leaf**: a placeholder in the generated SQL that
``spark.sql(text, **{placeholder: leaf_df})`` binds to the original leaf DataFrame. From
there the decision is the session's own (``SuperOpSession._decide``): the families' one
matching path, the catalog's rule admission, the template programs, Spark-native SQL and
the benefit gate — with the original planned as the DataFrame itself and each candidate as
the bound SQL. A rewrite is returned only with the DataFrame's exact schema (names, types,
order); on any failure ``optimize`` returns ``df`` itself and ``explain_df`` says why.
"""
from __future__ import annotations

import logging
import re
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ..ir.generate import to_sql
from ..ir.lowering.frames import FrameLowered, Leaf
from ..ir.nodes import Node
from ..rewrite.rewriter import RewriteResult, unchanged
from .dataframe_classic import leaf_frame, lower_classic, replan
from .dataframe_connect import connect_leaf_frame, lower_connect_frame
from .plan import analyze_plan, planned_frame
from .tablestats import is_connect

log = logging.getLogger("superop.runtime")

_PLACEHOLDER = re.compile(r"`?(__so_leaf_[0-9a-f]+_\d+)`?")


def bind_text(sql: str) -> tuple[str, list[str]]:
    """``sql`` as a ``spark.sql(text, **leaves)`` template: braces escaped, every leaf
    placeholder (a table name, maybe back-quoted) as ``{placeholder}``; and the
    placeholders it reads."""
    used: list[str] = []
    if not _PLACEHOLDER.search(sql):
        return sql, used

    def sub(m: re.Match) -> str:
        if m.group(1) not in used:
            used.append(m.group(1))
        return "{" + m.group(1) + "}"
    return _PLACEHOLDER.sub(sub, sql.replace("{", "{{").replace("}", "}}")), used


@dataclass
class Frame:
    """A DataFrame lowered for the decision path: its IR, and how to run SQL over it."""
    df: Any
    spark: Any
    lowered: FrameLowered
    leaf_df: Callable[[Leaf], Any]
    _bound: dict[str, Any] = field(default_factory=dict)

    @property
    def plan(self) -> Node:
        return self.lowered.plan

    def leaf(self, placeholder: str) -> Any:
        if placeholder not in self._bound:
            leaf = next(x for x in self.lowered.leaves if x.placeholder == placeholder)
            self._bound[placeholder] = self.leaf_df(leaf)
        return self._bound[placeholder]

    def run(self, sql: str) -> Any:
        """``sql`` (generated from this frame's IR) as a DataFrame over the bound leaves."""
        text, used = bind_text(sql)
        if not used:
            return self.spark.sql(sql)
        return self.spark.sql(text, **{p: self.leaf(p) for p in used})

    def types_of(self, node: Node) -> list[str]:
        return [f.dataType.simpleString() for f in self.run(to_sql(node)).schema.fields]

    def describe(self) -> str:
        kinds: dict[str, int] = {}
        for x in self.lowered.leaves:
            kinds[x.kind] = kinds.get(x.kind, 0) + 1
        text = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        opaque = "; ".join(dict.fromkeys(self.lowered.reasons))
        return f"DataFrame plan lowered with {len(self.lowered.leaves)} leaves ({text})" + (
            f"; not modelled (bound as opaque inputs): {opaque}" if opaque else "; fully modelled")


def frame_of(spark: Any, df: Any) -> Frame:
    token = uuid.uuid4().hex[:8]
    if not is_connect(spark):
        low, jplan = lower_classic(df, token)
        return Frame(replan(spark, df), spark, low, lambda leaf: leaf_frame(spark, jplan, leaf.path))
    low, rel = lower_connect_frame(spark, df, token)
    return Frame(df, spark, low, lambda leaf: connect_leaf_frame(spark, rel, leaf.path))


@dataclass
class FrameDecision:
    """What :func:`optimize` decided for one DataFrame."""
    original: Any
    result: Any                       # the DataFrame returned
    rewrite: RewriteResult
    frame: Optional[Frame] = None


class _DecisionLog:
    """The last decisions per session, by DataFrame (the original and what was returned)."""

    def __init__(self, size: int = 256):
        self.size = size
        self._lock = threading.Lock()
        self._items: OrderedDict[int, tuple[Callable[[], Any], FrameDecision]] = OrderedDict()

    def put(self, d: FrameDecision) -> None:
        with self._lock:
            for df in (d.original, d.result):
                self._items[id(df)] = (_ref(df), d)
                self._items.move_to_end(id(df))
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def get(self, df: Any) -> Optional[FrameDecision]:
        with self._lock:
            hit = self._items.get(id(df))
        return hit[1] if hit is not None and hit[0]() is df else None


def _ref(obj: Any) -> Callable[[], Any]:
    try:
        return weakref.ref(obj)
    except TypeError:
        return lambda: obj


_LOGS: "weakref.WeakKeyDictionary[Any, _DecisionLog]" = weakref.WeakKeyDictionary()
_LOGS_LOCK = threading.Lock()


def _log_of(so: Any) -> _DecisionLog:
    with _LOGS_LOCK:
        if so not in _LOGS:
            _LOGS[so] = _DecisionLog()
        return _LOGS[so]


def _reads_cache(df: Any) -> bool:
    """Spark's physical plan of a Connect DataFrame reads a cached relation."""
    return "InMemoryTableScan" in df._explain_string(mode="simple")


def _schema(df: Any) -> list[tuple[str, Any]]:
    return [(f.name, f.dataType) for f in df.schema.fields]


def optimize(so: Any, df: Any) -> Any:
    """See :meth:`superop.runtime.SuperOpSession.optimize`."""
    t0 = time.perf_counter()
    frame: Optional[Frame] = None
    try:
        frame = frame_of(so.spark, df)
        res, _ = so._decide("", t0, frame)
        out = df
        if res.changed and is_connect(so.spark) and _reads_cache(df):
            why = ("the DataFrame reads data the session cached, and Spark Connect's client plan does not "
                   "say which part (a rewrite could read the source instead); original kept")
            res = unchanged("", why, res.timings_ms, exchanges_before=res.exchanges_before)
        if res.changed:
            new = planned_frame(res)        # the DataFrame the gate planned, else plan it now
            if new is None:
                new = frame.run(res.sql)
            if _schema(new) != _schema(df):
                why = "the rewritten DataFrame's schema differs from the original's; original kept"
                res = unchanged("", why, res.timings_ms, exchanges_before=res.exchanges_before)
            else:
                out = new
    except Exception as e:  # fail-safe: never break the user's program
        msg = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        log.warning("superop: DataFrame not optimized, original kept (%s)", msg)
        res = unchanged("", f"DataFrame not optimized, original kept: {msg}", error=msg)
        out = df
    res.timings_ms["total_ms"] = (time.perf_counter() - t0) * 1e3
    _log_of(so).put(FrameDecision(df, out, res, frame))
    return out


def decision_of(so: Any, df: Any) -> Optional[RewriteResult]:
    """The decision :func:`optimize` recorded for ``df`` (the original or what it returned):
    the rules applied, the exchanges and costs the gate saw, the explanation; None when
    ``df`` has not been through ``so.optimize`` (or dropped out of the session's log)."""
    d = _log_of(so).get(df)
    return None if d is None else d.rewrite


def _fresh(spark: Any, df: Any) -> Any:
    return df if is_connect(spark) else replan(spark, df)


def explain(so: Any, df: Any) -> str:
    """See :meth:`superop.runtime.SuperOpSession.explain_df`."""
    d = _log_of(so).get(df)
    if d is None:
        optimize(so, df)
        d = _log_of(so).get(df)
    assert d is not None
    r = d.rewrite
    lines = [f"superop: {'rewritten' if r.changed else 'unchanged'} — {r.explanation}"]
    if d.frame is not None:
        lines.append(d.frame.describe())
    try:
        before = analyze_plan(so.spark, "", constants=so.constants, df=_fresh(so.spark, d.original))
        after = (analyze_plan(so.spark, "", constants=so.constants, df=_fresh(so.spark, d.result))
                 if r.changed else None)
    except Exception as e:  # noqa: BLE001 - the explanation above is still worth showing
        lines.append(f"(plans not available: {str(e).splitlines()[0] if str(e) else type(e).__name__})")
        return "\n".join(lines)
    lines.append(f"exchanges before: {before.exchanges} shuffle, {before.reused} reused; "
                 f"predicted cost {before.cost:.3g} s")
    if after is not None:
        lines.append(f"exchanges after:  {after.exchanges} shuffle, {after.reused} reused; "
                     f"predicted cost {after.cost:.3g} s")
    lines += ["", "== physical plan before ==", before.tree]
    if after is not None:
        lines += ["== physical plan after ==", after.tree,
                  "== rewritten SQL (leaves bound as {placeholder}) ==", bind_text(r.sql)[0]]
    return "\n".join(lines)
