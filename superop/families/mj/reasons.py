"""Min & Join's names: its folds (MIN, MAX), its template's forms (the window form, the
group-limit form, the partition-wide form) and the reason codes of its near-misses and of
an instance that has no group-limit or partition-wide form.
"""
from __future__ import annotations

from ..kit.records import ReasonCode

MIN_MAX = ("min", "max")
# the template's second form (Covers.variant of its proof instances): the rows whose MIN/MAX
# column equals the partition's MIN/MAX, i.e. RANK() OVER (PARTITION BY keys ORDER BY v) = 1
# over the rows with v NOT NULL — Spark plans a WindowGroupLimit below the exchange for it
GROUP_LIMIT = "group-limit"
# the template's third form: the window form's program with its row emits reading the
# partition's FINAL state (buffering, no sort) — Spark evaluates f(v) OVER (PARTITION BY
# keys), sorting on the keys only, where the window form's running f(v) sorts on (keys, v)
PARTITION_WIDE = "partition-wide"


class MJReason(ReasonCode):
    """Why a one-aggregate self-join is not a Min & Join."""
    AGGREGATE_NOT_MIN_MAX = ("aggregate_not_min_max",
                             "the joined-back aggregate is not exactly one MIN or a MAX")
    MIN_MAX_ARGUMENT = ("min_max_argument",
                        "the MIN/MAX argument does not depend on exactly one source column")
    FILTER_BELOW_MIN_MAX = ("filter_below_min_max",
                            "a filter on non-key columns below the MIN/MAX (Fig. 13: not streamable)")
    # the aggregate side emitted alone decides "no row matched" with a flag folded row by
    # row; the query evaluates the join residual only on the pairs it forms
    RESIDUAL_ON_AGGREGATES = ("residual_on_aggregates",
                              "a join residual reads the aggregate on a side emitted alone (outer/semi/anti): "
                              "no row can evaluate it before its partition ends")
    RESIDUAL_BEHIND_AGGREGATE_FILTER = (
        "residual_behind_aggregate_filter",
        "a join residual on a side emitted alone behind a filter on the aggregate: the query evaluates it "
        "only for keys whose group survives, which no row can tell (a partial residual would raise)")


class GroupLimitReason(ReasonCode):
    """Why a Min & Join instance has no group-limit form (it keeps the window form)."""
    EMITS_MORE_THAN_MATCHED_ROWS = (
        "emits_more_than_matched_rows",
        "the join emits rows or groups without a match (outer-preserved side, anti join, or the "
        "aggregate side emitted alone): no row of a group may be dropped before the join")
    NO_ARGUMENT_EQUALITY = (
        "no_argument_equality",
        "the join does not require the row's MIN/MAX column to equal the aggregate (every row of a "
        "group is joined, not only its minimum rows)")
    NOT_ONE_BARE_MIN_MAX = (
        "not_one_bare_min_max",
        "the program folds more than one unguarded MIN/MAX over a bare column (a σ below the "
        "aggregate, a computed argument or a flag)")


class PartitionWideReason(ReasonCode):
    """Why a Min & Join instance has no partition-wide form (it keeps the window form)."""
    NO_RUNNING_STATE = (
        "no_running_state",
        "the window form's row emits read no running MIN/MAX (it is not streaming with a sort): it "
        "already reads the partition's final state, so the partition-wide form would be the same program")
