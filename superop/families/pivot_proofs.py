"""The pivot join's symbolic instances: what its unbounded proofs (through the program
encoder, ``Family.proof_shape`` "groups-join") are about. The grouping keys a use fixes
to a constant are parameters of the proof (it quantifies over them)."""
from __future__ import annotations

from .kit.covers import EDGE_OPS, Covers
from .kit.family import ProofInstance
from .kit.records import KEYED_JOIN_KINDS

# The shared aggregate folds every streaming function of its own projections under its
# own predicate; each use fixes y to its constant, filters (q_i) and projects (g_i) over
# the key and the aggregates; the joins' residual theta reads both uses' projections.
PROOF_SCHEMA = {"f": {"k": "int", "y": "int", "a": "int"}}
_AGG = ("count(*) AS c, count(f1(k, y, a)) AS n, sum(f2(k, y, a)) AS s, min(f3(k, y, a)) AS mn, "
        "max(f4(k, y, a)) AS mx, avg(f5(k, y, a)) AS av")
_COLS = "k, c, n, s, mn, mx, av"
STREAMING_FOLDS = ("count_star", "count", "sum", "min", "max", "avg")


def _use_sql(i: int, const: int) -> str:
    return f"SELECT k, y, g{i}({_COLS}) AS x FROM t WHERE y = {const} AND q{i}({_COLS})"


def proof_instance_sql(kind: str, n: int) -> str:
    join = {"semi": "LEFT SEMI JOIN", "anti": "LEFT ANTI JOIN"}.get(kind, f"{kind.upper()} JOIN")
    cols = ", ".join(f"u{i}.k AS k{i}, u{i}.y AS y{i}, u{i}.x AS x{i}"
                     for i in (range(1, 2) if kind in ("semi", "anti") else range(1, n + 1)))
    frm = f"({_use_sql(1, 2001)}) u1"
    for i in range(2, n + 1):
        frm += (f" {join} ({_use_sql(i, 2000 + i)}) u{i} "
                f"ON u1.k = u{i}.k AND theta{i}(u1.x, u{i}.x)")
    return (f"WITH t AS (SELECT k, y, {_AGG} FROM f WHERE p(k, y, a) GROUP BY k, y) "
            f"SELECT {cols} FROM {frm}")


PROOF_ASSUMPTIONS = (
    "one partition key column (k INT) and one fixed key (y INT); the proof uses only NULL-safe "
    "equality of keys, the encoding every key type shares",
    "each use's constant is a symbolic value (the proof quantifies over it: any constants, equal or "
    "not); a use's filter y = c holds on the groups of y = c only",
    "aggregate arguments of type INT; the folds treat every argument type alike",
    "edge predicates, projections and the joins' residuals are deterministic: each is an arbitrary "
    "(uninterpreted) function of its inputs, which may return NULL or raise",
    "ANSI mode: errors are outcomes; the program may not raise where the query does not",
    "σ/π/ρ chains on an edge reduce to one σ and one π per edge (Algorithm 5)",
    "a query aggregating with a subset of these functions is this instance with the other calls' "
    "projections never raising and ignored by the upper edges",
)


def proof_functions(n: int) -> dict[str, str]:
    fs = {"p": "bool", **{f"f{j}": "int" for j in range(1, 6)}}
    for i in range(1, n + 1):
        fs.update({f"q{i}": "bool", f"g{i}": "int", f"theta{i}": "bool"})
    return fs


def _instances() -> tuple[ProofInstance, ...]:
    out = []
    for kind in KEYED_JOIN_KINDS:
        for n in ((2, 3) if kind in ("inner", "left") else (2,)):
            cov = Covers.make("PJ", join_kinds=[kind], branches=n, aggregates=STREAMING_FOLDS,
                              edges=[EDGE_OPS] * (n + 1))
            out.append(ProofInstance(f"PJ/{kind}/{n}", proof_instance_sql(kind, n), PROOF_SCHEMA, cov,
                                     proof_functions(n), PROOF_ASSUMPTIONS,
                                     parameters={str(2000 + i): "int" for i in range(1, n + 1)}))
    return tuple(out)


PROOF_INSTANCES = _instances()
