"""Certificates (bounded + inductive), re-checking, and `superop verify --catalog`."""
from __future__ import annotations

import copy
import json

from superop.cli import main
from superop.rules_out.catalog import checksum, make_catalog, make_rule
from superop.verify.certificate import (check_and_certify, prove_and_certify, recheck_certificate,
                                        recheck_detail, sha256_of)

from .conftest import SCHEMA
from .test_equivalence import FIG8, FIG11, FIG11_PROG, fig8_prog

K = 2


def test_bounded_certificate_is_self_contained_and_rechecks():
    cert = check_and_certify(FIG8, SCHEMA, fig8_prog(), K=K)
    assert cert["status"] == "verified" and cert["method"] == "bounded" and cert["K"] == K
    assert cert["z3_version"] and cert["seconds"] >= 0 and cert["pattern"]
    assert cert["inputs_sha256"] == sha256_of(cert["inputs"])
    assert cert["streamability"]["ok"] and cert["streamability"]["family"] == "DU"
    json.dumps(cert)  # plain JSON
    assert recheck_certificate(json.loads(json.dumps(cert)))


def test_tampered_or_refuted_certificates_do_not_hold():
    cert = check_and_certify(FIG8, SCHEMA, fig8_prog(), K=K)
    t = copy.deepcopy(cert)
    t["inputs"]["sql"] = t["inputs"]["sql"].replace("s < 100", "s < 50")
    ok, why = recheck_detail(t)
    assert not ok and "tampered" in why
    # a wrong program re-hashed "honestly" is re-checked and fails on its own merits
    t2 = copy.deepcopy(cert)
    t2["inputs"]["program"] = fig8_prog(with_flag=False).to_json()
    t2["inputs_sha256"] = sha256_of(t2["inputs"])
    ok, why = recheck_detail(t2)
    assert not ok and "refuted" in why
    bad = check_and_certify(FIG8, SCHEMA, fig8_prog(with_flag=False), K=K)
    assert bad["status"] == "refuted" and not recheck_certificate(bad)


def test_inductive_certificate():
    cert = prove_and_certify("DJ", join_kind="left")
    assert cert["status"] == "verified" and cert["method"] == "inductive" and cert["K"] is None
    assert all(o["status"] == "proved" for o in cert["obligations"])
    assert "LEFT join" in cert["claim"] and cert["assumptions"]
    assert recheck_certificate(cert)


def _catalog(tmp_path, certs_per_rule):
    # each rule admits what its certificates cover: the template proofs' folds, MJ with the
    # aggregate on the right, MIN, no σ into the MIN
    folds = ["count_star", "count", "sum", "min", "max", "avg"]
    rules = [make_rule("DU", rule_id="du-2way", aggregates=folds, certificates=certs_per_rule[0]),
             make_rule("MJ", rule_id="mj-inner", join_kinds=("inner",), agg_sides=["right"], aggregates=["min"],
                       edges=[["Project", "Rename"]] + [["Select", "Project", "Rename"]] * 2,
                       certificates=certs_per_rule[1])]
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(make_catalog(rules)))
    return path


def test_cli_verify_catalog(tmp_path, capsys):
    du = [prove_and_certify("DU", branches=2), check_and_certify(FIG8, SCHEMA, fig8_prog(), K=K)]
    mj = [prove_and_certify("MJ", join_kind="inner", agg_left=False),
          check_and_certify(FIG11, SCHEMA, FIG11_PROG, K=K)]
    path = _catalog(tmp_path, [du, mj])
    assert main(["verify", "--catalog", str(path), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["ok"] and len(rep["certificates"]) == 4 and all(c["holds"] for c in rep["certificates"])

    # one certificate whose program was swapped (and the catalog re-checksummed): exit 1
    cat = json.loads(path.read_text())
    cat["rules"][0]["certificates"][1]["inputs"]["program"] = fig8_prog(with_flag=False).to_json()
    cat["checksum"] = checksum(cat["rules"])
    path.write_text(json.dumps(cat))
    assert main(["verify", "--catalog", str(path)]) == 1
    out = capsys.readouterr().out
    assert "FAILS  du-2way#1" in out and "tampered" in out

    # a catalog that is not one: one-line error, exit 2
    (tmp_path / "bad.json").write_text("{}")
    assert main(["verify", "--catalog", str(tmp_path / "bad.json")]) == 2


def test_cli_verify_one_program(tmp_path, capsys):
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "good.json").write_text(json.dumps(fig8_prog().to_json()))
    (tmp_path / "bad.json").write_text(json.dumps(fig8_prog(with_flag=False).to_json()))
    base = ["verify", "--sql", FIG8, "--schema", str(tmp_path / "schema.json"), "--K", "2"]
    assert main(base + ["--program", str(tmp_path / "good.json"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "verified" and recheck_certificate(out["certificate"])
    assert main(base + ["--program", str(tmp_path / "bad.json")]) == 1
    assert capsys.readouterr().out.startswith("refuted")
    assert main(base) == 2   # no --program: one-line error


def test_cli_verify_templates(capsys):
    assert main(["verify", "--templates"]) == 0
    assert "DJ/full" in capsys.readouterr().out
