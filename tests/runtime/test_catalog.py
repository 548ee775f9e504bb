"""The catalog format: schema, checksum, certificates, atomic write, MLflow URIs (signatures:
tests/rules_out/test_signing.py)."""
from __future__ import annotations

import copy
import json

import pytest

from superop.rules_out.catalog import (
    CatalogError,
    canonical_json,
    certificate,
    checksum,
    load_catalog,
    make_catalog,
    make_rule,
    problems,
    write_catalog,
)
from superop.rules_out.signing import signing_key


def test_roundtrip_and_checksum(tmp_path, runtime_rules):
    cat = make_catalog(runtime_rules, version="t1", source={"log": "x.jsonl", "window": None,
                                                            "content_hash": "sha256:00"})
    p = tmp_path / "catalog.json"
    written = write_catalog(p, cat, signer=signing_key(), signed_by="tests")
    loaded = load_catalog(p)
    assert loaded == written and loaded["signature"]["signed_by"] == "tests"
    assert loaded["checksum"] == checksum(loaded["rules"])
    # canonical JSON: key order does not change the checksum
    shuffled = [dict(reversed(list(r.items()))) for r in loaded["rules"]]
    assert checksum(shuffled) == loaded["checksum"]
    assert canonical_json({"b": 1, "a": "σ"}) == '{"a":"σ","b":1}'
    ids = [r["id"] for r in loaded["rules"]]
    assert "du-2way" in ids and "dj-full" in ids and "mj-semi" in ids


def test_refuses_tampered_unverified_and_malformed(tmp_path, runtime_rules):
    cat = make_catalog(runtime_rules)
    bad = copy.deepcopy(cat)
    bad["rules"][0]["abstract_edges"][0]["optional"] = ["Select"]        # tampered
    p = tmp_path / "c.json"
    p.write_text(json.dumps(bad))
    with pytest.raises(CatalogError, match="checksum mismatch"):
        load_catalog(p, require_verified=False)
    unv = copy.deepcopy(cat)
    unv["rules"][1]["certificates"].append(certificate("unknown", "bounded", "superop.verify", K=4))
    unv["checksum"] = checksum(unv["rules"])
    assert any("certificate status unknown" in x for x in problems(unv))
    with pytest.raises(CatalogError, match="unknown"):
        write_catalog(p, unv, signer=signing_key())         # nothing unverified is signed
    none = copy.deepcopy(cat)
    none["rules"][2]["certificates"] = []
    none["checksum"] = checksum(none["rules"])
    assert any("no certificate" in x for x in problems(none))
    mal = copy.deepcopy(cat)
    mal["rules"][0]["id"] = "Not Kebab"
    mal["rules"][0]["family"] = "XX"
    mal["checksum"] = checksum(mal["rules"])
    assert len(problems(mal)) >= 2
    p.write_text("{not json")
    with pytest.raises(CatalogError, match="not valid JSON"):
        load_catalog(p, require_verified=False)
    with pytest.raises(CatalogError, match="not found"):
        load_catalog(tmp_path / "missing.json")
    with pytest.raises(CatalogError, match="template"):
        r = make_rule("DU", certificates=[certificate("verified", "inductive", "t")])
        r["template"]["name"] = "SuperOp_MJ"
        write_catalog(tmp_path / "x.json", make_catalog([r]))


def test_write_is_atomic(tmp_path, runtime_rules):
    p = tmp_path / "catalog.json"
    good = write_catalog(p, make_catalog(runtime_rules))
    bad = make_catalog(runtime_rules)
    bad["rules"][0]["family"] = "nope"
    with pytest.raises(CatalogError):
        write_catalog(p, bad)
    assert load_catalog(p, require_verified=False) == good     # the previous catalog is untouched
    assert [f.name for f in tmp_path.iterdir()] == ["catalog.json"]


def test_load_from_mlflow_run(tmp_path, monkeypatch, runtime_rules):
    mlflow = pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")   # a throwaway local store
    src = tmp_path / "out" / "catalog.json"
    cat = write_catalog(src, make_catalog(runtime_rules), signer=signing_key())
    mlflow.set_tracking_uri((tmp_path / "mlruns").as_uri())
    try:
        # an experiment of this store (the fluent API may remember another store's one)
        exp_id = mlflow.create_experiment("catalog-load-test")
        with mlflow.start_run(experiment_id=exp_id) as run:
            mlflow.log_artifact(str(src), artifact_path="catalog")
        loaded = load_catalog(f"runs:/{run.info.run_id}/catalog")
        assert loaded == cat
        with pytest.raises(CatalogError):
            load_catalog(f"runs:/{run.info.run_id}/nothing-here")
    finally:
        mlflow.set_tracking_uri(None)
