"""The super-operator DSL and its reference semantics. Imports neither Spark nor Z3.

``program`` — programs of the paper's Fig. 7-12: partition keys, guarded accumulators,
guarded emits (pure data + printing). ``expr_eval`` — SQL expressions on Python values
with three-valued logic. ``interpreter`` — a program run on rows (``run_program``).
``plan_eval`` — an IR plan evaluated on Python rows. The families build programs, the
synthesizer searches them, the verifier encodes them and the compiler turns them into
Spark SQL: all of them import this package, which imports only ``superop.ir``.

    from superop.dsl import Program, Accumulator, PartitionEmit
"""
from .program import (AGG_FUNCS, BUFFERING, BY_FUNCS, GROUPED, LAYOUTS, MOMENT_FUNCS, NAMESPACES, SET_FUNCS,
                      STREAMING,
                      Accumulator, Flag, Neighbour, NoAccumulator, PartitionEmit, Precondition, Program,
                      RowEmit, RowNumber, SortKey, accumulator_call, by_pair, by_parts, distinct_sort_obstacle,
                      e, precondition_from_json, ref, sort_distinct)

__all__ = ["AGG_FUNCS", "BUFFERING", "BY_FUNCS", "GROUPED", "LAYOUTS", "MOMENT_FUNCS", "NAMESPACES", "SET_FUNCS",
           "STREAMING",
           "Accumulator", "Flag", "Neighbour", "NoAccumulator", "PartitionEmit", "Precondition", "Program",
           "RowEmit", "RowNumber", "SortKey", "accumulator_call", "by_pair", "by_parts",
           "distinct_sort_obstacle", "e", "precondition_from_json", "ref", "sort_distinct"]
