"""Min & Join (MJ): one MIN or MAX aggregate of ONE shared input joined back to the rows of
that input on the grouping keys (the paper's Fig. 6(c), SuperOp_MJ of Fig. 10) — inner,
left, right, full, semi and anti joins, the aggregate on either side.

    ⋈ Join
    ├── e2 [σπρ]* ── γ GroupBy (min|max) ── e1 [σπρ]* ── Spool
    └── e3 [σπρ]* ── Spool

Edge order: e1 Spool → γ, e2 γ → ⋈, e3 Spool → ⋈ (whatever side the aggregate is on).
Streaming (Fig. 11): the partition sorted on the MIN/MAX column makes the running value
final at the first row; a σ below the MIN/MAX on non-key columns breaks that (Fig. 13).

The package: ``family.py`` (the declaration, ``MJ``), ``template.py`` (the template
program), ``forms.py`` (the group-limit and partition-wide forms), ``proofs.py`` (the
symbolic proof instances), ``reasons.py`` (folds, form names, reason codes).
"""
from __future__ import annotations

from .family import MJ, MinJoin
from .forms import admits_partition_wide, argument_equality, group_limit_program, partition_wide_program
from .proofs import emits_aggregate_alone
from .reasons import GROUP_LIMIT, MIN_MAX, PARTITION_WIDE, GroupLimitReason, MJReason, PartitionWideReason

__all__ = ["MJ", "MinJoin", "MJReason", "GroupLimitReason", "PartitionWideReason", "MIN_MAX", "GROUP_LIMIT",
           "PARTITION_WIDE", "group_limit_program", "partition_wide_program", "admits_partition_wide",
           "argument_equality", "emits_aggregate_alone"]
