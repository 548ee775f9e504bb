"""The family registry: one declaration per family, read by every stage; a new family is
one module plus one registry line (shown with a family that exists only in the tests)."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import superop
from superop import families
from superop.families import registry
from superop.ir import lower
from superop.workloads.loggen import BUNDLED_LOG, BUNDLED_TRUTH, generate_log

from .toy_family import TU

S = {"ops": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"}}
PKG = Path(superop.__file__).parent
THREE = ("SELECT a, COUNT(*) AS n FROM ops GROUP BY a UNION ALL SELECT a, SUM(b) FROM ops WHERE c > 0 "
         "GROUP BY a UNION ALL SELECT a, MIN(c) FROM ops WHERE d = 'x' GROUP BY a")


def test_the_registry_lists_each_family_once():
    names = [f.name for f in families.REGISTRY]
    assert names == ["DU", "GA", "DJ", "MJ", "NB", "PJ"] and families.names() == tuple(names)
    assert len({f.catalog.long_name for f in families.REGISTRY}) == len(names)
    assert all(families.get(n) is f for n, f in zip(names, families.REGISTRY))
    with pytest.raises(KeyError, match="known: DU, GA, DJ, MJ, NB, PJ"):
        families.get("XX")


def test_supported_sets_are_what_the_templates_implement():
    dj, mj = families.get("DJ"), families.get("MJ")
    keyed = ("inner", "left", "right", "full", "semi", "anti")
    assert dj.join_kinds == keyed and mj.join_kinds == keyed
    assert dj.supports(2) and dj.supports(3)              # n-way: inner trees (recognize refuses outer ones)
    assert families.get("DU").supports(5)
    assert [s.value for s in mj.sides] == ["left", "right"] and mj.aggregates == ("min", "max")


def test_edge_order_is_declared_once_and_everything_else_derives_from_it():
    du, dj, mj = (families.get(n) for n in ("DU", "DJ", "MJ"))
    assert [(e.name, e.frm, e.to) for e in dj.edge_decls()] == [
        ("e1", "Spool", "GroupBy#1"), ("e2", "Spool", "GroupBy#2"),
        ("e3", "GroupBy#1", "Join"), ("e4", "GroupBy#2", "Join")]
    assert [(e.name, e.frm, e.to) for e in mj.edge_decls()] == [
        ("e1", "Spool", "GroupBy"), ("e2", "GroupBy", "Join"), ("e3", "Spool", "Join")]
    assert [e.to for e in du.edge_decls(3)] == ["GroupBy#1", "GroupBy#2", "GroupBy#3"] + ["UnionAll"] * 3
    assert mj.core_operators() == ["Spool", "GroupBy", "Join"]
    # a match's edges come out in that order, whatever side the aggregate is on
    m = families.first_match(lower("SELECT o.a, m.mb FROM (SELECT * FROM ops WHERE s > 0) o "
                                   "JOIN (SELECT a, MIN(b) AS mb FROM ops GROUP BY a) m ON o.a = m.a", S).plan)
    assert m.agg_side is families.Side.RIGHT and mj.edge_ops(m) == [[], [], ["Select"]]


STAGES = ["mining/detect.py", "mining/job.py", "rewrite/rewriter.py", "rules_out/generalize.py",
          "rules_out/catalog.py", "rules_out/report.py", "rules_out/coverage.py", "rules_out/builtin.py",
          "synth/space.py", "synth/parts.py", "synth/program_builder.py",
          "verify/streamability.py", "pipeline/nightly.py", "pipeline/candidates.py", "pipeline/certificates.py",
          "bench/rewriters.py"] + [
    f"workloads/loggen/{p.name}" for p in (PKG / "workloads/loggen").glob("*.py")]
NAMES = {n for f in families.REGISTRY for n in (f.name, f"SuperOp_{f.name}", f.catalog.long_name)}


@pytest.mark.parametrize("path", STAGES)
def test_stages_name_no_family_and_list_no_join_kinds(path):
    """No stage module spells a family name or lists join kinds: they read the registry."""
    tree = ast.parse((PKG / path).read_text())
    consts = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    assert not [c.value for c in consts if c.value in NAMES], path
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            kinds = {e.value for e in node.elts if isinstance(e, ast.Constant)} & {"inner", "left", "right", "full"}
            assert len(kinds) < 3, (path, ast.unparse(node))


def test_the_bundled_log_is_planted_from_the_registry_byte_for_byte():
    import gzip
    g = generate_log(3000, 7)
    assert g.lines == gzip.open(BUNDLED_LOG, "rb").read().decode("utf-8", "surrogateescape").splitlines()
    assert json.loads(json.dumps(g.truth)) == json.loads(BUNDLED_TRUTH.read_text())


@pytest.fixture
def toy_registry(monkeypatch):
    from superop.rules_out import catalog
    reg = (TU,) + registry.REGISTRY
    monkeypatch.setattr(registry, "REGISTRY", reg)
    monkeypatch.setattr(families, "REGISTRY", reg)
    monkeypatch.setattr(registry, "_BY_NAME", {f.name: f for f in reg})
    catalog.schema.cache_clear()
    yield reg
    catalog.schema.cache_clear()


def test_a_new_family_is_one_module_and_one_registry_line(toy_registry):
    """Every stage picks the test-only family up from the registry: mining, the catalog
    (schema enums, rule builder, validation), the report, generalization and the runtime."""
    from superop.mining.detect import detect
    from superop.rewrite.rewriter import Rewriter, rewrite_structural
    from superop.rules_out.catalog import make_catalog, make_rule, schema, validate
    from superop.rules_out.generalize import Pattern, generalize
    from superop.rules_out.report import draw_tree
    plan = lower(THREE, S).plan
    assert [(str(f.status), f.family) for f in detect(plan)] == [("candidate", "TU")]
    assert "TU" in schema()["$defs"]["rule"]["properties"]["family"]["enum"]
    m = families.first_match(plan, finished=True)
    point = TU.point(m)
    cert = {"status": "verified", "method": "test", "produced_by": "tests/families (toy family)",
            "covers": point.to_json()}
    rules, _ = generalize([Pattern("c1", "TU", "shape", THREE, [list(e) for e in point.edges], branches=3,
                                   aggregates=list(point.aggregates), certificate=cert)])
    assert [r["id"] for r in rules] == ["tri-union"] and rules[0]["template"]["name"] == "SuperOp_TU"
    cat = validate(make_catalog(rules))
    assert draw_tree(rules[0]).splitlines()[0] == "∪ UnionAll"
    r = rewrite_structural(Rewriter(cat), THREE, S)
    assert r.changed and r.applied == ["tri-union"]
    # a two-input union is still DU's
    assert [f.family for f in detect(lower(THREE.rsplit(" UNION ALL ", 1)[0], S).plan)] == ["DU"]
    assert make_rule("TU", branches=3)["core_operators"] == ["Spool", "GroupBy", "GroupBy", "GroupBy", "UnionAll"]
