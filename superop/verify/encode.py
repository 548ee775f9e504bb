"""Compatibility facade: the Z3 encodings were split along their seams into

* :mod:`.values` — one SQL value (:class:`V`), 3-valued logic, NULL-safe equality;
* :mod:`.exprs` — expressions with Spark's NULL and ANSI error semantics, the encoding
  settings (:func:`encoding`) and uninterpreted functions;
* :mod:`.folds` — aggregates as init / step / finalize folds;
* :mod:`.relations` — :class:`Rel`, the symbolic :class:`Table`, NULL-safe grouping;
* :mod:`.plan_encoder` — the plan IR (:class:`PlanEncoder`);
* :mod:`.program_encoder` — the DSL (:class:`ProgramEncoder`);
* :mod:`.bags` — comparing outcomes (bags or errors) and reading models.

New code imports from those modules (or from ``superop.verify``); this module only
re-exports their public names for existing callers.
"""
from .bags import bags_differ, concrete, concrete_rel, outcomes_differ, outcomes_differ_strict  # noqa: F401
from .exprs import Ctx, bool3, cast, cmp, encoding, ev  # noqa: F401
from .folds import count_distinct, fold  # noqa: F401
from .plan_encoder import PlanEncoder, agg_call_func, agg_calls, row_ctx  # noqa: F401
from .program_encoder import EAGER, GUARDED, ProgramEncoder  # noqa: F401
from .relations import Rel, Table, first_of_group, members_of  # noqa: F401
from .values import (EPOCH, FALSE, NULL, TRUE, V, common_kind, const, default, fresh, is_false,  # noqa: F401
                     is_true, ite, kind_of_type, lt, not_distinct, rows_not_distinct)
