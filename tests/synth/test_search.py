"""The CEGIS search: right answers for the corpus, and wrong candidates rejected for the
right reason (each checked on the minimized counterexample the search itself found)."""
from __future__ import annotations

import pytest

from superop.dsl import STREAMING, Program
from superop.dsl.interpreter import run_program_rows
from superop.dsl.plan_eval import eval_plan
from superop.ir import lower
from superop.sparkutil import bag
from superop.synth.corpus import CORPUS, CORPUS_BY_NAME, FOUND, PAPER_SCHEMA
from superop.synth.synthesizer import Synthesizer, synthesize


def plan_of(name):
    return lower(CORPUS_BY_NAME[name][1], PAPER_SCHEMA).plan


def _replay(plan, cex):
    """Re-run a counterexample: (sub-plan output, candidate output) on its input."""
    prog = Program.from_json(cex["candidate_program"])
    if "tables" in cex:
        tables = {t: [tuple(r) for r in d["rows"]] for t, d in cex["tables"].items()}
        read = cex["program_reads"]
        cols = cex["tables"][read]["columns"]
    else:
        tables = {cex["table"]: [tuple(r) for r in cex["rows"]]}
        read, cols = cex["table"], cex["columns"]
    return bag(eval_plan(plan, tables=tables)), bag(run_program_rows(prog, cols, tables[read]))


@pytest.mark.parametrize("name", [c[0] for c in CORPUS])
def test_corpus_status(corpus_results, name):
    _, _, want, want_streaming = CORPUS_BY_NAME[name]
    sql, plan, r = corpus_results[name]
    if want == FOUND:
        assert r.program is not None, r.reason
        assert r.status == "unknown" and r.checked_by == "testing"   # no Z3 in this fixture
        assert r.streaming is want_streaming
        assert r.program.memory == (STREAMING if want_streaming else "buffering")
    else:
        assert r.status == want, r.reason
        assert r.program is None
        # the counterexample that killed the last candidate really separates them
        expected, actual = _replay(plan, r.counterexample)
        assert expected != actual
        assert bag(map(tuple, r.counterexample["plan_output"])) == expected


def test_du_without_emptiness_flag_fails_on_group_where_no_row_passes_the_filter():
    plan = plan_of("du_fig8_select")
    s = Synthesizer(plan, verify=False)
    res = s.run()
    assert res.program is not None and any(f.guard is not None for f in res.program.flags)
    cex = s.explain(lambda ch: ch.paths[0].guarded and not ch.paths[0].flagged)
    assert cex is not None
    # some key group of the counterexample has no row with s < 100 ...
    groups = {}
    for a, _, _, _, s_ in cex["rows"]:
        groups.setdefault(a, []).append(s_)
    empty = [k for k, ss in groups.items() if not any(v is not None and v < 100 for v in ss)]
    assert empty
    # ... and the flag-less candidate emits a left row (sum = NULL) for it that SQL does not
    extra = bag(map(tuple, cex["program_output"])) - bag(map(tuple, cex["plan_output"]))
    assert any(k in empty and v is None for k, v in extra)


def test_inner_join_program_for_left_join_loses_null_extended_rows():
    plan = plan_of("dj_left")
    s = Synthesizer(plan, verify=False)
    res = s.run()
    assert res.program is not None and len(res.program.partition_emits) == 2
    cex = s.explain(lambda ch: ch.emits == ("both",))
    assert cex is not None
    missing = bag(map(tuple, cex["plan_output"])) - bag(map(tuple, cex["program_output"]))
    assert missing and all(row[-1] is None for row in missing)      # (a, x, NULL) rows lost


def test_null_keys_never_join():
    plan = plan_of("dj_inner")
    s = Synthesizer(plan, verify=False)
    s.run()
    cex = s.explain(lambda ch: not ch.null_keys and ch.emits == ("both",) and ch.paths[0].flagged)
    assert cex is not None
    extra = bag(map(tuple, cex["program_output"])) - bag(map(tuple, cex["plan_output"]))
    assert extra and all(row[0] is None for row in extra)          # a NULL-key "match"


def test_fig13_streaming_only_is_no_program_buffering_is_reported_as_such():
    plan = plan_of("mj_fig13_filter_below_min")
    r = synthesize(plan, verify=False, require_streaming=True)
    assert r.status == "no_program" and r.program is None and r.counterexample is not None
    assert "streaming" in r.counterexample["choice"]
    expected, actual = _replay(plan, r.counterexample)
    assert expected != actual
    r2 = synthesize(plan, verify=False)
    assert r2.program is not None and r2.streaming is False and r2.program.memory == "buffering"
    assert r2.streaming_counterexample is not None


def test_unsupported_shapes_say_why(schema):
    for sql in ("SELECT a, count(*) FROM ops GROUP BY a",
                "SELECT o.a, p.b FROM ops o JOIN ops p ON o.a = p.a",
                "SELECT a, count(*) OVER (PARTITION BY a) FROM ops"):
        r = synthesize(sql, schema, verify=False)
        assert r.status == "unsupported" and r.reason


@pytest.mark.parametrize("name", ["du_fig8_select", "dj_semi", "dj_left", "mj_min"])
def test_z3_verifies_the_synthesized_program(name):
    r = synthesize(plan_of(name), K=3, verify=True, timeout_s=90)
    assert r.status == "verified", r.reason
    assert r.checked_by == "z3" and r.verifier["status"] == "verified"


def test_z3_counterexamples_feed_the_search():
    """With a test set too small to separate candidates, Z3 must refute the wrong ones
    and the search must go on to a verified program (CEGIS)."""
    plan = plan_of("du_fig8_select")
    s = Synthesizer(plan, K=3, verify=True, timeout_s=90, initial_tests=0)   # only the empty table
    r = s.run()
    assert r.status == "verified", r.reason
    assert r.z3_counterexamples >= 1
    assert any(t.origin == "z3" for t in s.tests)


def test_join_with_another_table_is_not_one_shared_source(schema):
    sql = ("SELECT x.a, x.n, y.region FROM (SELECT a, count(*) AS n FROM ops GROUP BY a) x "
           "JOIN accounts y ON x.a = y.a")
    r = synthesize(sql, schema, verify=False)
    assert r.status == "no_program" and "not one shared source" in r.reason
    # some candidates never read accounts' columns: they run, and the two tables tell them apart
    assert r.counterexample is not None and "tables" in r.counterexample
    expected, actual = _replay(lower(sql, schema).plan, r.counterexample)
    assert expected != actual
