"""Certificates (bounded + template): what they cover and what they are about, re-checking
against what they claim, and `superop verify --catalog / --sql / --templates`."""
from __future__ import annotations

import copy
import json

import pytest

from superop.cli import main
from superop.dsl import Program
from superop.families.coverage import runtime_program
from superop.rules_out.catalog import checksum, make_catalog
from superop.rules_out.coverage import covered_rule
from superop.verify import certify as C
from superop.verify.certificate import program_sha256, sha256_of, structural_check
from superop.verify.certify import check_and_certify, prove_and_certify, recheck_detail

from .conftest import SCHEMA
from .test_equivalence import FIG8, fig8_prog

K = 2
DU_Q = ("SELECT a, sum(s) AS t FROM ops WHERE b > 0 GROUP BY a "
        "UNION ALL SELECT a, count(*) AS t FROM (SELECT a AS a FROM ops) u GROUP BY a")
DJ_Q = ("SELECT x.a, x.t, y.mb FROM (SELECT a, sum(s) AS t FROM ops GROUP BY a) x JOIN "
        "(SELECT a, max(b) AS mb FROM ops WHERE c > 0 GROUP BY a) y ON x.a = y.a")


@pytest.fixture(scope="module")
def du_cert():
    return check_and_certify(DU_Q, SCHEMA, K=K, emitted=True)


@pytest.fixture(scope="module")
def dj_cert():
    return check_and_certify(DJ_Q, SCHEMA, K=K, emitted=True)


@pytest.fixture(scope="module")
def dj_left_proof():
    return prove_and_certify("DJ", join_kind="left")


def _fresh(cert):
    """Re-check from scratch (no per-process memo of re-runs)."""
    C._RERUN.clear()
    return recheck_detail(cert, require_runtime=True)


def test_bounded_certificate_is_about_the_runtime_program(du_cert):
    c = du_cert
    assert c["status"] == "verified" and c["method"] == "bounded" and c["K"] == K
    assert c["program_source"] == "runtime-template" and c["inputs"]["replaces"] == "match"
    assert c["program_sha256"] == program_sha256(runtime_program(DU_Q, SCHEMA))
    assert c["inputs"]["program"] == runtime_program(DU_Q, SCHEMA).to_json()
    assert c["covers"] == {"family": "DU", "join_kinds": [], "branches": 2, "agg_side": None,
                           "aggregates": ["count_star", "sum"],
                           "edges": [["Select"], ["Project"], [], []]}
    assert c["inputs_sha256"] == sha256_of(c["inputs"])
    # the DU's two emits compile to a generator the lowerer does not read: differential tests
    assert c["emitted_sql"]["checked_by"] == "differential-tests" and c["emitted_sql"]["sql"]
    ok, why = _fresh(json.loads(json.dumps(c)))      # plain JSON, re-checked from scratch
    assert ok and why.startswith("re-checked"), why


def test_emitted_sql_checked_by_the_bounded_verifier_where_modelled(dj_cert):
    em = dj_cert["emitted_sql"]
    assert em["checked_by"] == "bounded" and em["status"] == "verified" and "GROUP BY" in em["sql"]
    ok, why = _fresh(dj_cert)
    assert ok, why


def test_tampered_certificates_do_not_hold(du_cert):
    t = copy.deepcopy(du_cert)
    t["inputs"]["sql"] = t["inputs"]["sql"].replace("b > 0", "b > 1")
    assert structural_check(t) == (False, "inputs do not match inputs_sha256 (tampered)")
    # another program, honestly re-hashed: the hash of the program checked no longer matches
    t = copy.deepcopy(du_cert)
    t["inputs"]["program"] = fig8_prog().to_json()
    t["inputs_sha256"] = sha256_of(t["inputs"])
    assert "program_sha256" in structural_check(t)[1]
    # ... and with program_sha256 updated too: not what the runtime builds for the pattern
    t["program_sha256"] = sha256_of(t["inputs"]["program"])
    ok, why = structural_check(t)
    assert not ok and "runtime now builds a different program" in why
    # covers widened beyond the pattern
    t = copy.deepcopy(du_cert)
    t["covers"]["edges"] = [["Select", "Project", "Rename"]] * 4
    ok, why = structural_check(t)
    assert not ok and "covers" in why
    # a refuted certificate never holds
    bad = check_and_certify(FIG8, SCHEMA, fig8_prog(with_flag=False), K=K)
    assert bad["status"] == "refuted" and not recheck_detail(bad)[0]


def test_a_given_program_is_not_what_the_runtime_runs():
    c = check_and_certify(FIG8, SCHEMA, fig8_prog(), K=K)
    assert c["status"] == "verified" and c["program_source"] == "given"
    assert recheck_detail(c)[0]
    ok, why = recheck_detail(c, require_runtime=True)
    assert not ok and "runtime does not build" in why


def test_template_certificate(dj_left_proof, monkeypatch):
    c = dj_left_proof
    assert c["status"] == "verified" and c["method"] == "inductive" and c["K"] is None
    assert c["template"] == "DJ/left" and c["covers"]["join_kinds"] == ["left"]
    assert c["covers"]["aggregates"] == ["avg", "count", "count_star", "max", "min", "sum"]
    assert c["program_sha256"] == program_sha256(Program.from_json(c["program"]))
    assert all(o["status"] == "proved" for o in c["obligations"]) and c["assumptions"] and c["claim"]
    ok, why = _fresh(c)
    assert ok, why
    # the template changes (the NULL-key guard removed): the certificate is not about it any more
    from superop.families.kit import program as kit_program  # DJ's join emits (join_tree_emits)
    monkeypatch.setattr(kit_program, "keys_not_null", lambda keys: None)
    ok, why = structural_check(c)
    assert not ok and "not the program the template builds now" in why


def _catalog(tmp_path, rules):
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(make_catalog(rules)))
    return path


def test_cli_verify_catalog(tmp_path, capsys, du_cert, dj_cert, monkeypatch):
    monkeypatch.setenv("SUPEROP_TRUST_DIR", str(tmp_path / "trust"))
    proof = prove_and_certify("DU", branches=2)
    rules = [covered_rule("DU", [proof, du_cert], rule_id="du-2way"),
             covered_rule("DJ", [dj_cert], rule_id="dj-inner")]
    path = _catalog(tmp_path, rules)
    assert main(["verify", "--catalog", str(path), "--json", "--record"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["ok"] and len(rep["certificates"]) == 3 and all(c["holds"] for c in rep["certificates"])
    assert rep["recorded"] and (tmp_path / "trust").is_dir()

    # a forged certificate and a swapped program (catalog re-checksummed): exit 1, one line each
    cat = json.loads(path.read_text())
    cat["rules"][0]["certificates"].append({"status": "verified", "method": "inductive", "produced_by": "me"})
    cat["rules"][1]["certificates"][0]["inputs"]["program"] = fig8_prog().to_json()
    cat["checksum"] = checksum(cat["rules"])
    path.write_text(json.dumps(cat))
    assert main(["verify", "--catalog", str(path), "--record"]) == 1
    out = capsys.readouterr()
    assert "FAILS  du-2way#2" in out.out and "not produced by superop.verify" in out.out
    assert "FAILS  dj-inner#0" in out.out and "tampered" in out.out
    assert "recorded" not in out.err

    (tmp_path / "bad.json").write_text("{}")
    assert main(["verify", "--catalog", str(tmp_path / "bad.json")]) == 2


def test_cli_verify_one_program(tmp_path, capsys):
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "good.json").write_text(json.dumps(fig8_prog().to_json()))
    (tmp_path / "bad.json").write_text(json.dumps(fig8_prog(with_flag=False).to_json()))
    base = ["verify", "--sql", FIG8, "--schema", str(tmp_path / "schema.json"), "--bound", "2"]
    assert main(base + ["--program", str(tmp_path / "good.json"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "verified" and recheck_detail(out["certificate"])[0]
    assert main(base + ["--program", str(tmp_path / "bad.json")]) == 1
    assert capsys.readouterr().out.startswith("refuted")
    assert main(base) == 2   # no --program: one-line error


def test_cli_verify_templates(capsys, monkeypatch):
    assert main(["verify", "--templates", "--only", "DJ/semi"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("verified  DJ/semi") and "4/4 obligations" in out
    assert main(["verify", "--templates", "--only", "MJ/full/agg-left/min"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # the window form's two parts, then the partition-wide form's (its own instances)
    assert [ln.split()[:2] for ln in lines] == [["verified", "MJ/full/agg-left/min"],
                                                ["verified", "MJ/full/agg-left/min/residual"],
                                                ["verified", "MJ/full/agg-left/min/partition-wide"],
                                                ["verified", "MJ/full/agg-left/min/partition-wide/residual"]]
    # the flag of the template as it was (the residual on every row): refuted, exit 1
    from superop.dsl import e
    from superop.families.mj import template as mj_template
    monkeypatch.setattr(mj_template, "_group_survives_per_row", lambda A, b, keys: e("TRUE"))
    assert main(["verify", "--templates", "--only", "MJ/full/agg-left/min/residual"]) == 1
    assert "failed: fold.step" in capsys.readouterr().out
