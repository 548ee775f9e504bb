"""Unbounded proofs of the global-aggregate diamond, the neighbour self-join, the pivot join
and the COUNT(DISTINCT) fold — through the same program encoder as every template proof —
and, per family, mutations of the template's program that the proof must refuse (a proof
that cannot fail proves nothing)."""
from __future__ import annotations

from dataclasses import replace

import pytest
from sqlglot import exp

from superop.dsl import Neighbour, PartitionEmit, SortKey
from superop.families.instances import find, program_of
from superop.verify.template_proofs import prove_instance


def _prove(name: str, program=None):
    return prove_instance(find(name), timeout_ms=60000, program=program)


@pytest.mark.parametrize("name", ["GA/2", "GA/3", "NB/inner-1", "NB/left-1", "NB/inner-1,inner+1",
                                  "NB/inner+1,left-1", "NB/left-2", "NB/*inner-1", "PJ/inner/2", "PJ/left/2",
                                  "PJ/full/2", "PJ/semi/2", "PJ/anti/2", "PJ/inner/3", "DU/2/distinct",
                                  "GA/3/distinct"])
def test_the_template_is_proved_for_every_table_size(name, instance_proofs):
    """The run's proof of the instance (``prove_instance``, made once: ``instance_proofs``)."""
    r = instance_proofs[name]
    assert r["status"] == "verified", (r["reason"], [o for o in r["details"]["obligations"] if o["status"] != "proved"])
    assert r["details"]["obligations"] and all(o["status"] == "proved" for o in r["details"]["obligations"])


def _failed(r) -> set[str]:
    return {o["name"] for o in r.details["obligations"] if o["status"] != "proved"}


def test_ga_mutants_fail():
    prog = program_of(find("GA/2"))
    # the HAVING of the branches dropped: the product is emitted although a branch's row is not
    no_having = replace(prog, partition_emits=(PartitionEmit(None, prog.partition_emits[0].outputs),))
    r = _prove("GA/2", no_having)
    assert r.status == "refuted" and "emit" in _failed(r)
    # a branch's accumulator folds every row, not only the rows its predicate keeps
    a0 = prog.accumulators[1]
    unguarded = replace(prog, accumulators=(prog.accumulators[0], replace(a0, guard=None), *prog.accumulators[2:]))
    r = _prove("GA/2", unguarded)
    assert r.status == "refuted" and _failed(r) & {"fold.step", "emit"}


def test_nb_mutants_fail():
    prog = program_of(find("NB/inner-1"))
    # LAG 2 for LAG 1
    two = replace(prog, neighbours=tuple(replace(n, offset=-2) for n in prog.neighbours))
    r = _prove("NB/inner-1", two)
    assert r.status != "verified" and r.reason
    # the inner join's guard dropped: a row without its neighbour is emitted
    em = prog.row_emits[0]
    r = _prove("NB/inner-1", replace(prog, row_emits=(replace(em, guard=None),)))
    assert r.status == "refuted" and "emit.row" in _failed(r)
    # the centre's own predicate read on the neighbour (marker of the wrong row)
    marker = prog.neighbours[0]
    assert isinstance(marker, Neighbour)
    r = _prove("NB/inner-1", replace(prog, neighbours=(replace(marker, arg=exp.true()), *prog.neighbours[1:])))
    assert r.status == "refuted" and "emit.row" in _failed(r)


def test_pj_mutants_fail():
    prog = program_of(find("PJ/inner/2"))
    # the first use's sum folds the rows of every year, not only of its constant
    i = next(j for j, a in enumerate(prog.accumulators) if a.func == "sum")
    bad = replace(prog, accumulators=tuple(replace(a, guard=None) if j == i else a
                                           for j, a in enumerate(prog.accumulators)))
    r = _prove("PJ/inner/2", bad)
    assert r.status == "refuted" and _failed(r) & {"fold.step", "emit"}
    # the joined emit without the second use's presence flag: a key with no row of 2002 joins
    em = prog.partition_emits[0]
    r = _prove("PJ/inner/2", replace(prog, partition_emits=(replace(em, guard=None),)))
    assert r.status == "refuted" and "emit" in _failed(r)


def test_count_distinct_mutants_fail():
    prog = program_of(find("DU/2/distinct"))
    i = next(j for j, a in enumerate(prog.accumulators) if a.func == "count_distinct_sorted")
    # counting every value, not the distinct ones
    as_count = replace(prog, accumulators=tuple(replace(a, func="count") if j == i else a
                                                for j, a in enumerate(prog.accumulators)))
    assert _prove("DU/2/distinct", as_count).status != "verified"
    # the sorted fold without the sort order that makes equal values adjacent
    unsorted = replace(prog, sort=(SortKey("b"),))
    assert _prove("DU/2/distinct", unsorted).status != "verified"
