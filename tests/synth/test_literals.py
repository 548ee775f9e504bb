"""Every constant of the query lands in the generated test domains (regression: a `[1::3]`
slice of the deduplicated literal list kept 1998 but dropped 1999 from a key's domain, so a
candidate whose emit needs `b = 1998 AND b = 1999` on one group — it never emits — passed
all 241 generated tables, as in TPC-DS q4/q11, and cost a Z3 timeout)."""
from __future__ import annotations

import datetime as dt

from superop.ir import lower
from superop.sparkutil import bag
from superop.synth.corpus import PAPER_SCHEMA
from superop.synth.literals import plan_literals
from superop.synth.parts import analyze
from superop.synth.synthesizer import Synthesizer
from superop.synth.testdata import Inputs

# Two years of one key pivoted into one row (q4's shape), with other int constants (0, 1)
# whose neighbours overlap, so deduplication shifts positions in the neighbour list.
PIVOT_YEARS = """
SELECT x.a, y.t AS t2 FROM
 (SELECT a, b, sum(s) AS t FROM ops WHERE b > 0 AND c <> 1 GROUP BY a, b) x
 JOIN (SELECT a, b, sum(s) AS t FROM ops WHERE b > 0 AND c <> 1 GROUP BY a, b) y ON x.a = y.a
WHERE x.b = 1998 AND y.b = 1999
"""


def test_exact_constants_and_their_neighbours_by_kind():
    plan = lower("SELECT a, max(s) FROM ops WHERE b IN (0, 1, 1998, 1999) AND d = 'w' "
                 "AND s < 2.5 GROUP BY a", PAPER_SCHEMA).plan
    lits = plan_literals(plan)
    assert lits.exact["int"] == [0, 1, 1998, 1999]
    assert lits.near["int"] == [-1, 0, 1, 2, 1997, 1998, 1999, 2000]
    assert lits.exact["real"] == [2.5] and lits.near["real"] == [2.0, 2.5, 3.0]
    assert lits.exact["str"] == lits.near["str"] == ["w"]


def test_date_strings_under_a_cast_are_dates():
    plan = lower("SELECT a, count(*) FROM ops WHERE CAST(d AS DATE) = DATE '1998-01-02' "
                 "GROUP BY a", PAPER_SCHEMA).plan
    lits = plan_literals(plan)
    day = dt.date(1998, 1, 2)
    assert day in lits.exact["date"]
    assert {day - dt.timedelta(days=1), day + dt.timedelta(days=1)} <= set(lits.near["date"])


def test_every_constant_is_in_the_key_domain():
    plan = lower(PIVOT_YEARS, PAPER_SCHEMA).plan
    parts = analyze(plan)
    gen = Inputs(parts, plan, {"a", "b"})
    leaf = parts.sources[0]
    b_domain = gen.domains[id(leaf)][[c for c, _ in leaf.columns].index("b")]
    assert {0, 1, 1998, 1999} <= set(b_domain)
    assert 2000 not in b_domain          # a key domain takes no neighbours: groups must collide


def test_generated_tables_refute_the_candidate_that_never_emits():
    plan = lower(PIVOT_YEARS, PAPER_SCHEMA).plan
    s = Synthesizer(plan, verify=False)
    res = s.run()
    # no search candidate survives the generated tables (before the fix one did, unverified)
    assert res.status == "no_program" and res.program is None, res.reason
    assert all(t.origin == "generated" for t in s.tests)
    # the candidate partitioned by (a, b) emitting when b = 1998 AND b = 1999 is refuted by a
    # table where the query returns a row — a 1998 and a 1999 group of one `a`
    cex = s.explain(lambda ch: set(ch.keys) == {"a", "b"} and ch.emits == ("both",))
    assert cex is not None
    assert cex["plan_output"] and not cex["program_output"]
    years = {r[1] for r in cex["rows"]}
    assert {1998, 1999} <= years
    assert bag(map(tuple, cex["plan_output"])) != bag(map(tuple, cex["program_output"]))
