"""Min & Join's symbolic proof instances: per join kind, aggregate side and fold, the
window form's instances (with and without a join residual where the aggregate side is
emitted alone), the partition-wide form's where the template has row emits, and the
group-limit form's where the join emits only matched rows.
"""
from __future__ import annotations

from typing import Sequence

from ..kit import symbolic
from ..kit.covers import EDGE_OPS, Covers
from ..kit.family import ProofInstance
from ..kit.planting import JOIN_SQL
from ..kit.records import Side
from .forms import admits_group_limit, admits_partition_wide
from .reasons import GROUP_LIMIT, MIN_MAX, PARTITION_WIDE


def proof_instances(join_kinds: Sequence[str]) -> tuple[ProofInstance, ...]:
    """Every instance of the family over ``join_kinds`` (see ``MinJoin.proof_instances``)."""
    out: list[ProofInstance] = []
    for kind in join_kinds:
        for side in (Side.LEFT, Side.RIGHT):
            for func in MIN_MAX:
                out += _mj_instances(kind, side, func)
                if admits_partition_wide(kind, side):
                    out += _mj_instances(kind, side, func, PARTITION_WIDE)
                if admits_group_limit(kind, side):
                    out.append(_group_limit_instance(kind, side, func))
    return tuple(out)


def emits_aggregate_alone(kind: str, side: Side) -> bool:
    """Does the template emit the aggregate side's row on its own (outer-preserved, or the
    left side of a semi/anti join), deciding it by "some row matched"?"""
    preserved = kind == "full" or (kind == "left" and side is Side.LEFT) or (kind == "right" and side is Side.RIGHT)
    return preserved or (kind in ("semi", "anti") and side is Side.LEFT)


def _mj_instances(kind: str, side: Side, func: str, form: str = "") -> list[ProofInstance]:
    """The instances of one join kind / side / fold in ``form`` ("": the window form;
    another form's names insert ``/<form>`` before ``/residual``)."""
    covers = Covers.make("MJ", join_kinds=[kind], branches=2, agg_side=side.value, aggregates=[func],
                         edges=[("Project", "Rename"), EDGE_OPS, EDGE_OPS], variant=form)
    rows = "SELECT k, f(k, a, b) AS x FROM t WHERE p(k, a, b)"
    fns = {"p": "bool", "q": "bool", "f": "int", "g": "int", "theta": "bool"}
    arg = ("the aggregate's argument is a source column and the edge into the aggregate has no σ (the "
           "streaming template sorts the partition on that column)")
    name = f"MJ/{kind}/agg-{side.value}/{func}" + (f"/{form}" if form else "")
    if form == PARTITION_WIDE:
        arg += ("; the partition-wide form: the same program reading the partition's final MIN/MAX "
                "(buffering, no sort; partition_wide_program)")
    if not emits_aggregate_alone(kind, side):
        parts = [(name, "q(k, m)", " AND theta(o.x, m.y)", "theta reads the aggregate's projection and the row")]
    else:
        parts = [(name, "q(k, m)", "", "no join residual beyond the key equality (with one, see "
                  f"{name}/residual: the two instances are the two parts of one covers record)"),
                 (name + "/residual", "q(k)", " AND theta(o.x, m.k)",
                  "a join residual theta over the key and the row, and a filter q above the aggregate on "
                  "the key only (the template refuses a residual behind a filter on aggregates here: the "
                  "query evaluates the residual only for keys whose group survives)")]
    out = []
    for pname, having, residual, note in parts:
        agg = f"SELECT k, g(k, m) AS y FROM (SELECT k, {func}(a) AS m FROM t GROUP BY k) u WHERE {having}"
        join = JOIN_SQL[kind]
        if side is Side.LEFT:
            cols = "m.k, m.y" if kind in ("semi", "anti") else "m.k, m.y, o.k AS ok, o.x"
            sql = f"SELECT {cols} FROM ({agg}) m {join} ({rows}) o ON m.k = o.k{residual}"
        else:
            cols = "o.k, o.x" if kind in ("semi", "anti") else "o.k, o.x, m.k AS mk, m.y"
            sql = f"SELECT {cols} FROM ({rows}) o {join} ({agg}) m ON o.k = m.k{residual}"
        out.append(ProofInstance(pname, sql, symbolic.SCHEMA, covers, fns,
                                 symbolic.COMMON_ASSUMPTIONS + (arg, note)))
    return out


def _group_limit_instance(kind: str, side: Side, func: str) -> ProofInstance:
    """MJ/<kind>/agg-<side>/<func>/group-limit: the rows whose ``a`` equals ``func(a)`` of
    their key (``o.a = m.mn`` in the join), with σ/π on both edges above and a residual."""
    covers = Covers.make("MJ", join_kinds=[kind], branches=2, agg_side=side.value, aggregates=[func],
                         edges=[("Project", "Rename"), EDGE_OPS, EDGE_OPS], variant=GROUP_LIMIT)
    rows = "SELECT k, a, f(k, a, b) AS x FROM t WHERE p(k, a, b)"
    agg = f"SELECT k, m AS mn, g(k, m) AS y FROM (SELECT k, {func}(a) AS m FROM t GROUP BY k) u WHERE q(k, m)"
    join = JOIN_SQL[kind]
    if side is Side.LEFT:
        sql = (f"SELECT m.k, m.y, o.k AS ok, o.x FROM ({agg}) m {join} ({rows}) o "
               f"ON m.k = o.k AND o.a = m.mn AND theta(o.x, m.y)")
    else:
        cols = "o.k, o.x" if kind == "semi" else "o.k, o.x, m.k AS mk, m.y"
        sql = f"SELECT {cols} FROM ({rows}) o {join} ({agg}) m ON o.k = m.k AND o.a = m.mn AND theta(o.x, m.y)"
    fns = {"p": "bool", "q": "bool", "f": "int", "g": "int", "theta": "bool"}
    return ProofInstance(f"MJ/{kind}/agg-{side.value}/{func}/{GROUP_LIMIT}", sql, symbolic.SCHEMA, covers, fns,
                         symbolic.COMMON_ASSUMPTIONS + (
                             "the aggregate's argument is a source column and the edge into the aggregate has "
                             "no σ; the join keeps only the rows whose argument column equals the aggregate "
                             "(the group-limit form: group_limit_program of the window form's program)",))
