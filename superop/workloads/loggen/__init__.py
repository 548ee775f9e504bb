"""Realistic query-log generator for the mining job, with its ground truth.

The log looks like Databricks ``system.query.history`` rows (statement_id, statement_text,
start_time, end_time, total_duration_ms, executed_by, execution_status, read_bytes,
shuffle_bytes) over the paper's example tables ``ops``, ``mailbox`` and ``accounts``.

What is planted
---------------
* super-operator *variants*, as every registered family declares them (today: Diamond
  UnionAll 2..4-way, Diamond Join inner / left / right / full / semi, Min & Join MIN/MAX
  inner / left / right, WinMagic, self EXISTS semi / anti, two cross-joined global
  aggregates, a ranked view joined to itself one rank back, a pivot join of two uses of
  one aggregate); every shape of Table 2 of the super-operator paper; σ/π/ρ
  decorations in varying orders on every abstract edge. A 3-way inner Diamond Join is
  planted too, as an n-way variant (an outer n-way tree's truth would be a near-miss,
  ``too_many_branches``, plus its inner two-input diamond as a variant).
  A variant is identified by ``(family, join_kind, shape)`` where ``shape`` is the paper's
  post-order string as :func:`superop.ir.shape` writes it. Each variant is instantiated by
  several distinct *templates* (different aggregates, columns, aliases, predicate columns)
  and every template runs several times with fresh random literals.
* near-misses that look like diamonds but are not super-operators (different grouping keys,
  join on non-key columns or on a subset of the keys, two different tables, a filter below
  the MIN of a Min & Join, a non-MIN/MAX aggregate joined back, global aggregates joined on
  a condition, a rank that may tie, a pivot use filtered on a range).
* noise: dimension joins, plain scans, top-k, windows, TPC-H queries when
  :mod:`superop.workloads.tpch` is available; malformed lines, non-SQL statements, SQL that
  does not parse, unknown tables and failed/canceled executions.

The ground truth records, per variant, the expected shape string (built by the generator from
its own decoration lists, not by the IR), the number of distinct templates and the number of
successful executions, so the mining tests can assert exact support counts.

Literals inside one query are drawn without repetition, so two branches of a diamond never
become structurally identical by chance (that would merge them into one shared node).

Layout: :mod:`.logfile` (generic log writing and the ground truth), :mod:`.sqlkit` (the SQL
kit a family plants its examples with), :mod:`.noise`, :mod:`.tables`, :mod:`.schema`. What
is planted comes from the family registry: every family declares its examples and
near-misses (``Family.examples`` / ``Family.plant`` in ``superop.families``).
"""
from __future__ import annotations

from .logfile import (BUNDLED_LOG, BUNDLED_TRUTH, DATA_DIR, GeneratedLog, generate_log, load_truth,
                      planted_examples, planted_near_misses, write_log)
from .schema import LOG_SCHEMA, NUMERIC, mining_schema
from .tables import generate_tables, register_tables

__all__ = ["BUNDLED_LOG", "BUNDLED_TRUTH", "DATA_DIR", "GeneratedLog", "generate_log", "load_truth",
           "planted_examples", "planted_near_misses", "write_log", "LOG_SCHEMA", "NUMERIC",
           "mining_schema", "generate_tables", "register_tables", "main"]


def main(argv=None) -> int:
    """python -m superop.workloads.loggen --out log.jsonl[.gz] [--queries N] [--seed S]
    [--truth truth.json]"""
    import argparse
    p = argparse.ArgumentParser(prog="python -m superop.workloads.loggen",
                                description="generate a query log with planted super-operators")
    p.add_argument("--out", required=True)
    p.add_argument("--queries", type=int, default=3000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--truth")
    a = p.parse_args(argv)
    t = write_log(a.out, a.queries, a.seed, truth_path=a.truth)
    print(f"{t['lines']} lines, {len(t['variants'])} planted variants -> {a.out}")
    return 0
