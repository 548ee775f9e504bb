"""Signed catalogs: the runtime loads a catalog signed by a trusted key for this build, in
milliseconds and without z3; it refuses an unsigned, altered, foreign-key or other-build
catalog with a one-line reason. Signatures come from the steps that check certificates:
`superop verify --record`, `superop catalog promote` (and the nightly job, test_nightly)."""
from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from superop.cli import main
from superop.rules_out.catalog import CatalogError, accept, checksum, load_catalog, make_catalog, make_rule
from superop.rules_out.coverage import covered_rule
from superop.rules_out.signing import Signer, public_spec, sign_catalog, signing_key, trusted_keys
from superop.rules_out.trust import recheck_locally
from tests.runtime.runtime_fixtures import rule_certificates

ROOT = Path(__file__).resolve().parents[2]
FORGED = {"status": "verified", "method": "inductive", "produced_by": "someone"}


@pytest.fixture(scope="module")
def rules():
    return [covered_rule("DJ", rule_certificates("dj-inner"), rule_id="dj-inner")]


@pytest.fixture(scope="module")
def signed(rules):
    return sign_catalog(make_catalog(rules, version="t"), signing_key(), "tests")


def _other_key() -> Signer:
    return Signer(Ed25519PrivateKey.generate(), "another machine")


def _write(tmp_path, cat, name="catalog.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(cat, indent=2))
    return p


def _refused(path) -> str:
    with pytest.raises(CatalogError) as e:
        load_catalog(path)
    msg = str(e.value)
    assert "\n" not in msg and "refused" in msg
    return msg


def test_a_signed_catalog_loads_without_z3_or_mlflow(tmp_path, signed):
    """In a process that cannot import z3 or mlflow; a bound (not a benchmark): loading a
    signed catalog takes milliseconds, the bound is 1 s."""
    p = _write(tmp_path, signed)
    code = ("import sys, time\n"
            "sys.modules['z3'] = None; sys.modules['mlflow'] = None\n"
            "import superop.runtime\n"
            "from superop.rules_out.catalog import load_catalog\n"
            "t = time.perf_counter()\n"
            f"cat = load_catalog({str(p)!r})\n"
            "dt = time.perf_counter() - t\n"
            "assert dt < 1.0, dt\n"
            "assert not [m for m in sys.modules if m.split('.')[0] in ('z3', 'mlflow') and sys.modules[m]]\n"
            "print(len(cat['rules']), cat['signature']['signed_by'])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=ROOT, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "tests"]


def _bump_rule(c):
    c["rules"][0]["support"]["executions"] += 1


def _bump_certificate(c):
    c["rules"][0]["certificates"][0]["checked_at"] = "2000-01-01T00:00:00Z"


def _widen_admits(c):
    c["rules"][0]["join_kinds"] = ["inner", "left"]


@pytest.mark.parametrize("change", [_bump_rule, _bump_certificate, _widen_admits],
                         ids=["rule-support", "certificate-field", "rule-join-kinds"])
def test_an_altered_catalog_is_refused(tmp_path, signed, change):
    bad = copy.deepcopy(signed)
    change(bad)
    assert "altered after it was signed" in _refused(_write(tmp_path, bad))
    bad["checksum"] = checksum(bad["rules"])                            # checksum made to agree
    msg = _refused(_write(tmp_path, bad))
    assert "altered after it was signed" in msg
    with pytest.raises(CatalogError, match="altered after it was signed"):
        accept(bad)


def test_an_unsigned_catalog_is_refused(tmp_path, rules):
    p = _write(tmp_path, make_catalog(rules))
    msg = _refused(p)
    assert "it is not signed" in msg and f"superop verify --catalog {p} --record" in msg


def test_a_catalog_signed_with_another_key_is_refused_unless_that_key_is_trusted(tmp_path, rules, monkeypatch):
    other = _other_key()
    p = _write(tmp_path, sign_catalog(make_catalog(rules), other, "elsewhere"))
    msg = _refused(p)
    assert f"signed by key {other.key_id}, which is not trusted here" in msg
    # an operator trusts that key explicitly (then only the keys listed count)
    monkeypatch.setenv("SUPEROP_TRUSTED_KEYS", public_spec(other.public))
    assert load_catalog(p)["rules"][0]["id"] == "dj-inner"
    assert signing_key().key_id not in trusted_keys().keys
    # a PEM file or a directory of them works the same
    d = tmp_path / "trusted"
    d.mkdir()
    from cryptography.hazmat.primitives import serialization
    (d / "other.pub").write_bytes(other.public.public_bytes(serialization.Encoding.PEM,
                                                             serialization.PublicFormat.SubjectPublicKeyInfo))
    monkeypatch.setenv("SUPEROP_TRUSTED_KEYS", str(d))
    assert load_catalog(p)


def test_the_session_reads_trusted_keys_from_its_conf(spark, tmp_path, rules):
    from superop.runtime import SuperOpSession
    other = _other_key()
    cat = sign_catalog(make_catalog(rules, version="k"), other, "elsewhere")
    with pytest.raises(CatalogError, match="not trusted here"):
        SuperOpSession(spark, cat)
    spark.conf.set("spark.superop.trustedKeys", public_spec(other.public))
    try:
        assert SuperOpSession(spark, cat).catalog["version"] == "k"
    finally:
        spark.conf.unset("spark.superop.trustedKeys")


def test_a_catalog_signed_by_another_build_is_refused(tmp_path, signed):
    """A real upgrade: a copy of superop whose family code differs by one line loads the
    catalog this build signed, and refuses it (the certificates are about other programs)."""
    p = _write(tmp_path, signed)
    copy_root = tmp_path / "upgraded"
    shutil.copytree(ROOT / "superop", copy_root / "superop", ignore=shutil.ignore_patterns("__pycache__"))
    du = copy_root / "superop" / "families" / "du.py"
    du.write_text(du.read_text() + "\n# a changed line: another build\n")
    code = ("import superop, sys\n"
            f"assert superop.__file__.startswith({str(copy_root)!r}), superop.__file__\n"
            "from superop.rules_out.catalog import load_catalog, CatalogError\n"
            "try:\n"
            f"    load_catalog({str(p)!r})\n"
            "except CatalogError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=copy_root, env=dict(os.environ, PYTHONPATH=str(copy_root)))
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip()
    assert len(line.splitlines()) == 1 and "checked and signed by another build of superop" in line
    assert "re-check and re-sign it: superop verify --catalog" in line


def test_verify_record_signs_and_refuses_to_sign_a_forgery(tmp_path, rules, capsys):
    p = _write(tmp_path, make_catalog(rules))
    assert main(["verify", "--catalog", str(p), "--record"]) == 0
    assert "recorded: signed with key" in capsys.readouterr().err
    cat = load_catalog(p)
    assert cat["signature"]["signed_by"] == "superop verify --record"
    assert cat["rules"] == json.loads(json.dumps(rules))           # nothing else changed
    forged = _write(tmp_path, make_catalog([make_rule("DU", certificates=[FORGED])]), "forged.json")
    assert main(["verify", "--catalog", str(forged), "--record"]) == 1
    assert "signature" not in json.loads(forged.read_text())
    assert main(["verify", "--catalog", "models:/superop-catalog/1", "--record"]) == 2
    assert "needs --out FILE" in capsys.readouterr().err


def test_in_memory_catalogs_are_signed_or_rechecked_here(spark, rules, signed):
    from superop.runtime import SuperOpSession
    unsigned = make_catalog(rules, version="mem")
    with pytest.raises(CatalogError, match=r"catalog \(in-memory\) refused: it is not signed"):
        SuperOpSession(spark, unsigned)
    assert SuperOpSession(spark, recheck_locally(unsigned)).catalog["version"] == "mem"
    assert SuperOpSession(spark, signed).catalog["version"] == "t"
    forged = make_catalog([make_rule("DU", certificates=[FORGED])])
    with pytest.raises(CatalogError) as e:
        SuperOpSession(spark, recheck_locally(forged))
    assert "not produced by superop.verify" in str(e.value) and "\n" not in str(e.value)


def test_promote_resigns_a_version_signed_by_another_key(tmp_path, rules, seed_mlflow_db):
    """A version signed by the nightly job's key (not the promoter's) is re-checked and
    registered again, re-signed, and the alias moves to that new version; a version the
    promoter signed moves the alias as it is."""
    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    from superop.rules_out.registry import MODEL_NAME, promote
    from superop.tracking import tracking_uri
    uri = seed_mlflow_db(tmp_path / "mlflow.db")
    c = MlflowClient(tracking_uri=uri)
    exp_id = c.create_experiment("sign", artifact_location=(tmp_path / "art").as_uri())
    c.create_registered_model(MODEL_NAME)
    run = c.create_run(exp_id)
    src = _write(tmp_path, sign_catalog(make_catalog(rules, version="n"), _other_key(), "superop mine"))
    c.log_artifact(run.info.run_id, str(src), "catalog")
    c.set_terminated(run.info.run_id)
    v1 = str(c.create_model_version(MODEL_NAME, source=run.info.artifact_uri + "/catalog",
                                    run_id=run.info.run_id).version)
    assert promote(v1, uri) == "models:/superop-catalog@production"
    prod = c.get_model_version_by_alias(MODEL_NAME, "production")
    assert prod.version != v1 and prod.tags["superop.resigned_from"] == v1
    assert prod.tags["superop.signed_by_key"] == signing_key().key_id
    with tracking_uri(uri):
        cat = load_catalog("models:/superop-catalog@production")
        assert cat["version"] == "n" and cat["signature"]["key_id"] == signing_key().key_id
        with pytest.raises(CatalogError, match="not trusted here"):
            load_catalog(f"models:/superop-catalog/{v1}")
    n_versions = len(c.search_model_versions(f"name='{MODEL_NAME}'"))
    promote(prod.version, uri)                   # already signed here: no new version
    assert len(c.search_model_versions(f"name='{MODEL_NAME}'")) == n_versions
    assert c.get_model_version_by_alias(MODEL_NAME, "production").version == prod.version
