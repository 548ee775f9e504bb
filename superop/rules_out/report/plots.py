"""The report's charts, drawn with matplotlib as SVG (text as paths: the picture needs no
font on the reader's machine) and embedded in report.html. matplotlib comes with the
nightly job's install (``superop[mine]``); without it :func:`unavailable` says why and the
report shows no charts.

Each function returns a :class:`Figure` block, or None when there is nothing to draw.
"""
from __future__ import annotations

import io
from typing import Optional

from . import labels as L
from .blocks import Figure

BLUE, GREY, ORANGE = "#2f6fb0", "#a8b3bf", "#d9822b"
_RC = {"svg.fonttype": "path", "svg.hashsalt": "superop-report", "font.size": 11,
       "font.family": ["DejaVu Sans"], "axes.spines.top": False, "axes.spines.right": False}
WIDTH_IN = 6.0          # inches (SVG: 72 pt each): two charts side by side on a wide screen


def unavailable() -> Optional[str]:
    """Why charts cannot be drawn here (None: they can)."""
    try:
        import matplotlib  # noqa: F401  (optional dependency)
    except ImportError:
        return "charts need matplotlib, which superop[mine] installs (pip install 'superop[mine]')"
    return None


def _svg(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    return buf.getvalue()


def _axes(n: int):
    """A figure and axes for ``n`` horizontal bars, first on top."""
    from matplotlib.figure import Figure as MplFigure
    fig = MplFigure(figsize=(WIDTH_IN, 0.8 + 0.3 * n), dpi=100)
    ax = fig.add_subplot()
    ax.invert_yaxis()
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="#e5e8eb", linewidth=0.8)
    ax.set_axisbelow(True)
    ax.margins(x=0.14, y=0.02)
    return fig, ax


def _barh(names: list[str], vals: list[float], colours, xlabel: str, labels: list[str]) -> bytes:
    """One horizontal bar per name (first on top), each labelled at its end."""
    from matplotlib import rc_context
    with rc_context(_RC):
        fig, ax = _axes(len(names))
        bars = ax.barh(range(len(names)), vals, height=0.7, color=colours)
        ax.bar_label(bars, labels=labels, padding=3, fontsize=9.5)
        ax.set_yticks(range(len(names)), names)
        ax.set_xlabel(xlabel)
        return _svg(fig)


def cost_share_chart(catalog: dict) -> Optional[Figure]:
    """Each rule's share of the log's query time, with the recurring near-misses' beside."""
    rules = sorted(catalog.get("rules") or [], key=lambda r: -float((r.get("support") or {}).get("cost_share") or 0))
    if not rules:
        return None
    names = [r["id"] for r in rules]
    vals = [100 * float((r.get("support") or {}).get("cost_share") or 0) for r in rules]
    near = (catalog.get("near_misses") or {}).get("items") or []
    colours = [BLUE] * len(names)
    if near:
        names.append("recurring near-misses (no rule yet)")
        vals.append(100 * sum(float(n.get("cost_share") or 0) for n in near))
        colours.append(ORANGE)
    data = _barh(names, vals, colours, "share of the log's query time (%)", [_pct(v) for v in vals])
    total = sum(vals[:len(rules)])
    return Figure(data, "image/svg+xml",
                  f"Bar chart: the share of the log's query time in queries each rule covers; "
                  f"{len(rules)} rules, {total:.1f} % in all.",
                  "Share of the log's query time in the queries each rule covers (a query can contain "
                  "several rules' sub-queries). Orange: the recurring near-misses below.")


def exchanges_chart(catalog: dict) -> Optional[Figure]:
    """Shuffle exchanges of each rule's example before and after the rewrite."""
    examples = catalog.get("rule_examples") or {}
    pts = [(r["id"], examples[r["id"]]) for r in catalog.get("rules") or []
           if r["id"] in examples and examples[r["id"]].get("exchanges_after") is not None]
    if not pts:
        return None
    names = [rid for rid, _ in pts]
    before = [int(e["exchanges_before"]) for _, e in pts]
    after = [int(e["exchanges_after"]) for _, e in pts]
    from matplotlib import rc_context
    with rc_context(_RC):
        fig, ax = _axes(len(names))
        ys = range(len(names))
        ax.barh(ys, before, height=0.7, color=GREY, label="before")
        bars = ax.barh(ys, after, height=0.7, color=BLUE, label="after the rewrite")
        for y, b, a in zip(ys, before, after):
            ax.annotate(f"{b} → {a}", (max(a, b), y), xytext=(3, 0), textcoords="offset points",
                        va="center", fontsize=9.5)
        ax.set_yticks(ys, names)
        ax.set_xlabel("shuffle exchanges in Spark's physical plan")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.legend(handles=[bars.patches[0], ax.patches[0]], labels=["after the rewrite", "before"],
                  loc="lower left", bbox_to_anchor=(0, 1), ncol=2, frameon=False)
        data = _svg(fig)
    return Figure(data, "image/svg+xml",
                  f"Bar chart: shuffle exchanges of each rule's example before and after the rewrite; "
                  f"{sum(before)} before and {sum(after)} after in all.",
                  "Shuffle exchanges Spark plans for each rule's example sub-query: grey before, blue after "
                  "the rewrite (tables of the log's schema, planned as large tables).")


def _pct(v: float) -> str:
    return L.pct(v / 100)
