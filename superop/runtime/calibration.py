"""The benefit gate's cost constants and their calibration history: seconds per unit of
each feature of a physical plan (:data:`CONSTANTS`, fitted by
``benchmarks/cost_calibration.py``), the estimation defaults used where Spark has no
statistic, the gate's threshold, and which constant prices which feature
(:data:`FEATURES`). :mod:`superop.runtime.plan_cost` computes the features,
:mod:`superop.runtime.cost` decides.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class CostConstants:
    """Seconds per unit of each feature, plus estimation defaults.

    The per-unit constants below were fitted on 2026-11-23 (session 5) by
    ``python benchmarks/cost_calibration.py --rows 1m --repeat 3 --catalog <mined catalog>``
    (then ``--from-json ... --replan`` with this code's features): the micro set on the
    mined catalog at 1 M rows, 21 original/rewrite pairs — every candidate form, so the
    Min-Join window and group-limit forms are separate points, and the MJ queries with and
    without broadcast joins — 63 timed plans; non-negative least squares on relative error
    with a weak prior towards the hand-set guesses, λ = 0.01 (record:
    ``benchmarks/results/cost_calibration_1m.txt``). Measured on a 2-core machine shared
    with other engineers (load average 1.7 at the start, 11-17 for most of the run).
    Fit quality: Pearson 0.90 in-sample / 0.87 leave-one-query-out between predicted and
    measured log ratios; decisions right 20/21 both ways, no pair measured slower than
    0.95x accepted (the one miss: the window form of mj_argmin without broadcasts,
    measured 1.46x, predicted 0.98x; its group-limit form, 1.38x, is applied instead).
    The 200 k-row fit before it priced a sort at 9.6e-7 s/row and a WindowGroupLimit's
    output at group_ratio² of its input: the group-limit form of mj_argmin, measured
    0.52-0.53x against an original that broadcasts its per-key minimum, was predicted
    1.05x and applied; it is now predicted 0.77x (0.88x out of sample) and refused."""
    # -- seconds per unit ----------------------------------------------------------------
    query_s: float = 1.40              # fixed per query (job submission, result)
    stage_s: float = 0.389             # per exchange (a stage boundary: scheduling, task start-up)
    scan_byte_s: float = 1.13e-8
    shuffle_byte_s: float = 3.76e-8
    broadcast_byte_s: float = 2.50e-8
    sort_row_s: float = 1.74e-6
    agg_row_s: float = 1.00e-6
    join_row_s: float = 1.52e-7
    # a window row: 3.33e-6 s in the session-5 fit, whose windows all ordered their partitions;
    # session 7 split it (their sum kept) into every window row + the rows of a window with an
    # ORDER BY, fitted on the Min & Join window vs partition-wide forms — plans that differ only
    # there — at 1 M rows (docs/BENCHMARKS.md "partition-wide form")
    window_row_s: float = 1.8e-7
    window_order_row_s: float = 3.15e-6
    generate_row_s: float = 1.09e-7
    # -- the decision ----------------------------------------------------------------------
    min_speedup: float = 1.05           # predicted original/candidate needed to apply a rewrite: the
                                        # margin the fit's out-of-sample error calls for (calibration's
                                        # `margin`: above every pair measured < 0.95x; highest 0.96x)
    # -- estimation defaults (used only where Spark has no statistic) ------------------------
    sel_eq: float = 0.25                # x = literal
    sel_range: float = 0.4              # x < literal, ...
    sel_null: float = 0.05              # x IS NULL
    sel_other: float = 0.5              # anything else (LIKE, UDFs, ...)
    group_ratio: float = 0.1            # groups per input row of an aggregate (no NDV known)
    partial_copies: float = 2.0         # copies of a group a partial aggregate emits (≈ map tasks
                                        # holding the group)
    columnar_expansion: float = 4.0     # in-memory bytes per on-disk byte of parquet/orc (rows
                                        # from a file size when no row count is known)
    default_width: float = 8.0          # bytes of a column of unknown type
    row_overhead: float = 8.0           # bytes per row (UnsafeRow header)

    def __post_init__(self):
        # a negative price would make a plan cheaper for doing more; a threshold below 1
        # would apply rewrites the model itself calls slower
        bad = [k for k, v in asdict(self).items() if not (isinstance(v, (int, float)) and v >= 0)]
        if bad:
            raise ValueError(f"cost constants must be non-negative numbers: {', '.join(bad)}")
        if self.min_speedup < 1.0:
            raise ValueError(f"min_speedup must be >= 1 (never slower), not {self.min_speedup:g}")

    def to_json(self) -> dict:
        return asdict(self)


CONSTANTS = CostConstants()

# Feature -> constant attribute (the linear part of the model; calibration fits these).
FEATURES = {
    "stages": "stage_s",
    "scan_bytes": "scan_byte_s",
    "shuffle_bytes": "shuffle_byte_s",
    "broadcast_bytes": "broadcast_byte_s",
    "sort_rows": "sort_row_s",
    "agg_rows": "agg_row_s",
    "join_rows": "join_row_s",
    "window_rows": "window_row_s",
    "window_order_rows": "window_order_row_s",
    "generate_rows": "generate_row_s",
}
