"""`superop rewrite` checks every input before Spark starts (one-line errors, exit 2) and says
on stderr, in one line, what it did; costs on tables without statistics are words, not
seconds of Spark's 8 EiB default size."""
from __future__ import annotations

import json

import pytest

from superop.cli import main
from superop.rules_out.catalog import make_catalog, write_catalog
from superop.rules_out.signing import signing_key
from superop.runtime import commands

from .test_differential import DU

SCHEMA = {"ops": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"}}


@pytest.fixture(scope="module")
def files(tmp_path_factory, runtime_rules):
    d = tmp_path_factory.mktemp("inputs")
    write_catalog(d / "catalog.json", make_catalog(runtime_rules), signer=signing_key())
    write_catalog(d / "unsigned.json", make_catalog(runtime_rules))
    (d / "schema.json").write_text(json.dumps(SCHEMA))
    return d


@pytest.fixture
def no_spark(monkeypatch):
    def boom(*a, **kw):
        raise AssertionError("Spark was started before the inputs were checked")
    monkeypatch.setattr(commands, "get_spark", boom)


@pytest.mark.parametrize("case,want", [
    ({"--sql": ""}, "expected one SQL statement, got 0"),
    ({"--sql": "SELEC a FROM ops"}, "cannot parse SQL"),
    ({"--sql": "SELECT a FROM nowhere"}, "reads table nowhere, which --schema"),
    ({"--sql-file": "missing.sql"}, "SQL file not found"),
    ({"--schema": "missing.json"}, "schema file not found"),
    ({"--schema": "arrow.json"}, "column ops.s has type 'decimal128(7, 2)'"),
    ({"--schema": "view.json"}, "column ops.d has type 'string_view'"),
    ({"--catalog": "unsigned.json"}, "it is not signed"),
    ({"--catalog": "nope.json"}, "catalog not found"),
])
def test_bad_input_is_refused_before_spark(files, no_spark, capsys, case, want):
    (files / "arrow.json").write_text(json.dumps({"ops": dict(SCHEMA["ops"], s="decimal128(7, 2)")}))
    (files / "view.json").write_text(json.dumps({"ops": dict(SCHEMA["ops"], d="string_view")}))
    args = {"--catalog": "catalog.json", "--schema": "schema.json", "--sql": DU["sigma"]}
    if "--sql-file" in case:
        del args["--sql"]
    args.update(case)
    argv = ["rewrite"]
    for k, v in args.items():
        argv += [k, str(files / v) if k != "--sql" else v]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and want in err, err
    if "decimal128" in want:
        assert "Spark calls it decimal(7, 2)" in err
    if "string_view" in want:
        assert "Spark calls it string" in err


def test_plain_output_says_in_one_stderr_line_what_happened(spark, ops, files, capsys):
    cat, sch = str(files / "catalog.json"), str(files / "schema.json")
    assert main(["rewrite", "--catalog", cat, "--schema", sch, "--sql", DU["sigma"]]) == 0
    out, err = capsys.readouterr()
    assert "INLINE(FILTER(ARRAY(" in "".join(out.split())
    line = err.strip().splitlines()[-1]
    assert line.startswith("superop rewrite: applied du-2way") and "shuffle exchanges 2 -> 1" in line
    q = "SELECT a, sum(s) AS t FROM ops GROUP BY a"
    assert main(["rewrite", "--catalog", cat, "--schema", sch, "--sql", q]) == 0
    out, err = capsys.readouterr()
    assert out == q + "\n"
    assert err.strip().splitlines()[-1].startswith("superop rewrite: unchanged — no rule matches")


def test_costs_without_statistics_are_words(spark, ops, files, capsys):
    """--schema tables are empty views Spark has no size for: no seconds in the reason."""
    cat, sch = str(files / "catalog.json"), str(files / "schema.json")
    assert main(["rewrite", "--catalog", cat, "--schema", sch, "--sql", DU["sigma"], "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    verdicts = " ".join(c.get("verdict", "") for c in out["candidates"])
    assert "statistics are missing for" in verdicts and "8 EiB" in verdicts
    assert " s -> " not in verdicts and "e+" not in verdicts
