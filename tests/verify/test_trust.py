"""Trust on load: a catalog reaches the runtime only if its certificates were re-checked
(or a re-check of exactly this catalog was recorded); forged certificates are refused by
SuperOpSession, load_catalog, `superop rewrite` and `superop verify`."""
from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from superop.cli import main
from superop.rules_out import trust
from superop.rules_out.catalog import CatalogError, checksum, load_catalog, make_catalog, make_rule
from superop.rules_out.coverage import covered_rule
from superop.verify.certify import check_and_certify, prove_and_certify

from .conftest import SCHEMA

DJ_Q = ("SELECT x.a, x.t, y.mb FROM (SELECT a, sum(s) AS t FROM ops GROUP BY a) x JOIN "
        "(SELECT a, max(b) AS mb FROM ops WHERE c > 0 GROUP BY a) y ON x.a = y.a")
FORGED = {"status": "verified", "method": "inductive", "produced_by": "someone"}


@pytest.fixture(scope="module")
def honest_rules():
    return [covered_rule("DJ", [check_and_certify(DJ_Q, SCHEMA, K=2)], rule_id="dj-inner")]


@pytest.fixture
def trust_dir(tmp_path, monkeypatch):
    d = tmp_path / "trust"
    monkeypatch.setenv("SUPEROP_TRUST_DIR", str(d))
    monkeypatch.setattr(trust, "_RECHECKED", {})       # nothing re-checked in this process yet
    return d


def _write(tmp_path, rules, name="catalog.json"):
    p = tmp_path / name
    p.write_text(json.dumps(make_catalog(rules)))
    return p


def test_forged_certificate_is_refused_everywhere(spark, tmp_path, trust_dir, capsys):
    from superop.runtime import SuperOpSession
    forged = make_catalog([make_rule("DU", certificates=[FORGED])])
    with pytest.raises(CatalogError) as e:
        SuperOpSession(spark, forged)
    msg = str(e.value)
    assert "refused" in msg and "not produced by superop.verify" in msg and "\n" not in msg
    p = _write(tmp_path, [make_rule("DU", certificates=[FORGED])])
    with pytest.raises(CatalogError, match="not produced by superop.verify"):
        load_catalog(p)
    assert main(["rewrite", "--catalog", str(p), "--sql", "SELECT 1", "--no-gate"]) == 2
    err = capsys.readouterr().err.strip()
    assert "refused" in err and len(err.splitlines()) == 1
    assert main(["verify", "--catalog", str(p)]) == 1


def test_a_template_certificate_for_another_program_is_refused(tmp_path, trust_dir, monkeypatch):
    p = _write(tmp_path, [covered_rule("DJ", [prove_and_certify("DJ", join_kind="inner")])])
    assert load_catalog(p)["rules"][0]["id"] == "dj-inner"
    monkeypatch.setattr(trust, "_RECHECKED", {})
    from superop.families.kit import program as kit_program  # DJ's join emits (join_tree_emits)
    monkeypatch.setattr(kit_program, "keys_not_null", lambda keys: None)   # the runtime's template changed
    with pytest.raises(CatalogError, match="not the program the template builds now"):
        load_catalog(p)


def test_a_certificate_about_the_synthesizers_program_is_refused(tmp_path, trust_dir):
    from .test_equivalence import FIG8, fig8_prog
    given = check_and_certify(FIG8, SCHEMA, fig8_prog(), K=2)
    assert given["status"] == "verified"
    p = _write(tmp_path, [make_rule("DU", certificates=[given])])
    with pytest.raises(CatalogError, match="runtime does not build"):
        load_catalog(p)


def test_recorded_recheck_is_what_a_runtime_without_z3_accepts(tmp_path, trust_dir, honest_rules,
                                                                monkeypatch, capsys):
    p = _write(tmp_path, honest_rules)
    monkeypatch.setattr(trust, "z3_available", lambda: False)
    with pytest.raises(trust.UntrustedCatalog, match="never re-checked.*--record"):
        load_catalog(p)
    monkeypatch.setattr(trust, "z3_available", lambda: True)
    assert main(["verify", "--catalog", str(p), "--record"]) == 0
    assert "recorded: trust store" in capsys.readouterr().err
    monkeypatch.setattr(trust, "_RECHECKED", {})
    monkeypatch.setattr(trust, "z3_available", lambda: False)
    cat = load_catalog(p)
    assert trust.ensure_trusted(cat, str(p)).how.startswith("recorded as re-checked")
    # any other catalog (here: the same rules with other support numbers) is not recorded
    other = copy.deepcopy(json.loads(p.read_text()))
    other["rules"][0]["support"]["executions"] = 99
    other["checksum"] = checksum(other["rules"])
    q = tmp_path / "other.json"
    q.write_text(json.dumps(other))
    with pytest.raises(trust.UntrustedCatalog, match="never re-checked"):
        load_catalog(q)


def test_with_z3_the_runtime_rechecks_itself(tmp_path, trust_dir, honest_rules):
    p = _write(tmp_path, honest_rules)
    v = trust.ensure_trusted(load_catalog(p, require_verified=False), str(p))
    assert v.ok and v.how == "re-checked" and v.certificates == 1
    assert not trust_dir.exists()                 # re-checking on load records nothing


def test_runtime_without_z3_and_mlflow(tmp_path, trust_dir, honest_rules):
    good = _write(tmp_path, honest_rules, "good.json")
    trust.record(trust.recheck(json.loads(good.read_text())), str(good))
    bad = _write(tmp_path, [make_rule("DU", certificates=[FORGED])], "bad.json")
    code = ("import sys; sys.modules['z3'] = None; sys.modules['mlflow'] = None\n"
            "from superop.rules_out.catalog import load_catalog, CatalogError\n"
            f"print(len(load_catalog({str(good)!r})['rules']))\n"
            "try:\n"
            f"    load_catalog({str(bad)!r})\n"
            "except CatalogError as e:\n"
            "    print('refused', 'not produced by superop.verify' in str(e))\n"
            "assert 'z3' not in [m for m in sys.modules if sys.modules[m] is not None]\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180,
                         env={**__import__("os").environ, "SUPEROP_TRUST_DIR": str(trust_dir)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "refused", "True"]


def test_promote_rechecks_and_tags_the_version(tmp_path, trust_dir, honest_rules, monkeypatch, seed_mlflow_db):
    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    from superop.rules_out.registry import MODEL_NAME, promote
    from superop.tracking import tracking_uri
    uri = seed_mlflow_db(tmp_path / "mlflow.db")       # a copy of a migrated store
    c = MlflowClient(tracking_uri=uri)
    exp_id = c.create_experiment("trust", artifact_location=(tmp_path / "art").as_uri())
    c.create_registered_model(MODEL_NAME)

    def version_of(rules) -> str:
        run = c.create_run(exp_id)
        src = _write(tmp_path, rules)
        c.log_artifact(run.info.run_id, str(src), "catalog")
        c.set_terminated(run.info.run_id)
        return str(c.create_model_version(MODEL_NAME, source=run.info.artifact_uri + "/catalog",
                                          run_id=run.info.run_id).version)

    v1 = version_of(honest_rules)
    other = copy.deepcopy(honest_rules)
    other[0]["support"] = dict(other[0]["support"], executions=7)
    v2 = version_of(other)
    assert promote(v1, uri) == "models:/superop-catalog@production"
    tags = c.get_model_version("superop-catalog", v1).tags
    assert tags[trust.TAG] == checksum(honest_rules)
    # a runtime without z3 and without a local record: accepts the promoted version by its tag
    monkeypatch.setenv("SUPEROP_TRUST_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setattr(trust, "_RECHECKED", {})
    monkeypatch.setattr(trust, "z3_available", lambda: False)
    with tracking_uri(uri):
        cat = load_catalog("models:/superop-catalog@production")
        assert trust.ensure_trusted(cat, "models:/superop-catalog@production").how.startswith(
            "recorded as re-checked (MLflow tag")
        with pytest.raises(trust.UntrustedCatalog, match="never re-checked"):
            load_catalog(f"models:/superop-catalog/{v2}")
