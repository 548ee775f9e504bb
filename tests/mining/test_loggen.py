"""The query-log generator: what it plants, its ground truth, and that its SQL runs on Spark."""
import json
from collections import Counter

import random

import pytest

from superop.families import REGISTRY, get, regroup
from superop.ir import lower, shape
from superop.mining.detect import detect
from superop.mining.normalize import normalize, template_id
from superop.workloads.loggen import (LOG_SCHEMA, generate_log, generate_tables, load_truth, mining_schema,
                                      planted_examples, planted_near_misses)
from superop.workloads.loggen.sqlkit import Kit, Template


def test_plants_every_family_kind_and_table2_shape():
    g = generate_log(800, seed=3)
    vs = g.truth["variants"]
    assert len(vs) >= 30
    # every registered family plants at least one example
    assert {v["family"] for v in vs} == {f.name for f in REGISTRY} == {"DU", "GA", "DJ", "MJ", "WM", "NB", "PJ",
                                                                        "EX"}
    assert {v["join_kind"] for v in vs if v["family"] == "DJ"} >= {"inner", "left", "right",
                                                                   "full", "semi"}
    assert {v["agg"] for v in vs if v["family"] == "MJ"} == {"MIN", "MAX"}
    assert {v["n_inputs"] for v in vs if v["family"] == "DU"} >= {2, 3, 4}
    # the planted 3-way inner join tree is an n-way Diamond Join variant (issue 12)
    assert {v["n_inputs"] for v in vs if v["family"] == "DJ"} == {2, 3}
    assert sorted({r for v in vs for r in v["table2"]}) == list(range(1, 21))
    # σ/π/ρ appear in several orders on the abstract edges
    edges = {seg for v in vs for seg in v["shape"].strip("()∪⋈⟕⟖⟗⋉").replace(")", ",")
             .replace("(", ",").replace("|", ",").split(",") if len(seg.strip()) > 1}
    assert {"ρσπ", "σπ", "πσ", "ρπσ", "ρπ", "πρ"} <= {e.strip() for e in edges}
    assert all(v["templates"] >= 2 and v["executions"] >= v["templates"] for v in vs
               if not v["dashboard"])
    # one dashboard per family: a single template run dashboard_runs times
    dash = [v for v in vs if v["dashboard"]]
    assert sorted(v["family"] for v in dash) == ["DJ", "DU", "MJ"]
    assert all((v["templates"], v["executions"]) == (1, g.truth["generator"]["dashboard_runs"])
               for v in dash)
    nm = {n["reason"]: n for n in g.truth["near_misses"]}
    assert set(nm) == {"different_grouping_keys", "join_not_on_grouping_keys", "join_on_subset_of_keys",
                       "different_inputs", "filter_below_min_max", "aggregate_not_min_max", "join_condition",
                       "rank_may_tie", "use_filter_not_constant"}
    assert {nm[r]["attempted_family"] for r in ("join_condition", "rank_may_tie", "use_filter_not_constant")} == \
        {"GA", "NB", "PJ"}


def test_planted_positions_are_unique_and_new_families_come_last():
    """Each planted variant keeps its position: the global aggregate, the neighbour self-join
    and the pivot join were added after every other family's examples and near-misses."""
    seqs = [s.seq for s in planted_examples()]
    assert len(set(seqs)) == len(seqs)
    assert [(s.seq, s.family) for s in planted_examples()][-3:] == [(50, "GA"), (51, "NB"), (52, "PJ")]
    near = [(seq, f.name, r.value) for seq, f, r, _ in planted_near_misses()]
    assert len({seq for seq, _, _ in near}) == len(near)
    assert near[-3:] == [(6, "GA", "join_condition"), (7, "NB", "rank_may_tie"), (8, "PJ", "use_filter_not_constant")]


@pytest.mark.parametrize("family", ["GA", "NB", "PJ"])
def test_every_draw_of_a_planted_template_is_the_familys_instance(family):
    """Whatever a template draws (columns, aggregates, join spelling, aliases) and whatever
    literals a run gets, the one matching path sees the family's candidate with the planted
    shape, and each planted near-miss as the family's near-miss with its reason."""
    fam, rng, schema = get(family), random.Random(17), mining_schema()
    for spec in fam.examples():
        for _ in range(12):
            kit = Kit.for_spec(spec, rng)
            sql = Template(fam.plant(spec, kit), kit.slots, "", "").render(rng)
            assert [(f.status.value, f.family, f.join_kind, f.shape) for f in detect(lower(sql, schema).plan)] == \
                [("candidate", family, spec.join_kind, fam.example_shape(spec))], sql
    for _, reason, _ in fam.near_miss_examples():
        for _ in range(12):
            kit = Kit(rng)
            sql = Template(fam.plant_near_miss(reason, kit), kit.slots, "", "").render(rng)
            assert [(f.status.value, f.family, f.reason) for f in detect(lower(sql, schema).plan)] == \
                [("near_miss", family, reason.value)], sql


def test_deterministic_and_well_formed_lines():
    a, b = generate_log(400, seed=5), generate_log(400, seed=5)
    assert a.lines == b.lines and a.truth == b.truth
    assert generate_log(400, seed=6).lines != a.lines
    kinds = Counter()
    for line in a.lines:
        try:
            rec = json.loads(line)
        except ValueError:
            kinds["malformed"] += 1
            continue
        kinds["object" if isinstance(rec, dict) else "other"] += 1
        if isinstance(rec, dict) and rec.get("execution_status") in ("FAILED", "CANCELED"):
            kinds["failed"] += 1
    assert kinds["malformed"] >= 1 and kinds["failed"] >= 1 and kinds["object"] > 300


def test_expected_shapes_agree_with_the_ir():
    """The generator writes expected shapes from its own decoration lists; the IR agrees (in
    the canonical form the families see: an EXISTS's inner filter is a σ of its input)."""
    t = generate_log(300, seed=9).truth
    schema = mining_schema()
    for v in t["variants"]:
        assert v["shape"] in shape(regroup(lower(v["example_sql"], schema).plan)), v["variant_id"]


def test_dashboards_leave_the_rest_of_the_log_unchanged():
    """Dashboards come from their own random generators: without them the log's other lines
    are the same statements (only timestamps move), so planting them shifts no other truth."""
    def texts(lines):
        out = []
        for line in lines:
            try:
                rec = json.loads(line)
            except ValueError:
                out.append(line)
                continue
            out.append(rec.get("statement_text") if isinstance(rec, dict) else line)
        return out
    a, b = generate_log(400, seed=5), generate_log(400, seed=5, dashboard_runs=0)
    runs = a.truth["generator"]["dashboard_runs"]
    assert runs > 0 and len(a.lines) == len(b.lines) + 3 * runs
    extra = Counter(texts(a.lines)) - Counter(texts(b.lines))
    assert sum(extra.values()) == 3 * runs                  # b's lines are all in a
    # ... and the extra ones are the three dashboards run with fresh literals
    tid = lambda sql: template_id(normalize(sql))  # noqa: E731
    dash = {tid(v["example_sql"]) for v in a.truth["variants"] if v["dashboard"]}
    assert len(dash) == 3 and {tid(t) for t in extra} == dash
    va = {v["variant_id"]: v for v in a.truth["variants"] if not v["dashboard"]}
    vb = {v["variant_id"]: v for v in b.truth["variants"] if not v["dashboard"]}
    assert va == vb


def test_bundled_truth_is_consistent():
    t = load_truth()
    assert len(t["variants"]) >= 30 and 2000 <= t["lines"] <= 6000
    assert len({(v["family"], v["join_kind"], v["shape"]) for v in t["variants"]}) == \
        len(t["variants"])


def test_tables_have_nulls_and_duplicates():
    ts = generate_tables(500, seed=1)
    ops = ts["ops"]
    assert set(ts) == set(LOG_SCHEMA)
    assert ops["a"].isna().any() and ops["s"].isna().any()
    assert ops.duplicated().any()
    assert list(ops.columns) == list(LOG_SCHEMA["ops"])


def test_generated_sql_is_valid_spark_sql(tables_session):
    t = generate_log(300, seed=4).truth
    sqls = [v["example_sql"] for v in t["variants"]] + \
        [n["example_sql"] for n in t["near_misses"]]
    for sql in sqls:                                   # Spark analyses every query
        assert tables_session.sql(sql).schema.fields, sql
    by_id = {v["variant_id"]: v for v in t["variants"]}
    # and runs a few of them over data with NULLs and duplicates
    for v in list(by_id.values())[:3]:
        tables_session.sql(v["example_sql"]).collect()
