"""Command-line conventions: one spelling per flag (old ones warn), --json wherever results
are printed, plain-word help, Spark settings never overridden, the runtime-only install."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from superop.cli import build_parser, main
from superop.sparkutil import DEFAULTS, LOG4J2_CONF, plan_conf


def subparsers(parser: argparse.ArgumentParser, prefix=()):
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, p in a.choices.items():
                yield from subparsers(p, prefix + (name,))
            return
    yield prefix, parser


COMMANDS = dict(subparsers(build_parser()))
# commands whose output is a document in a chosen format, a help page or another program's
NO_JSON = {("catalog", "export"), ("bench", "mine"), ("bench", "rewrite"),
           ("workload", "tpcds-schema")}


def flags(p):
    return {o for a in p._actions for o in a.option_strings if a.help != argparse.SUPPRESS}


def test_every_command_that_prints_results_has_json():
    assert len(COMMANDS) >= 12
    missing = [" ".join(c) for c, p in COMMANDS.items() if c not in NO_JSON and "--json" not in flags(p)]
    assert not missing


def test_one_spelling_per_flag():
    seen = set().union(*(flags(p) for p in COMMANDS.values()))
    for old in ("-K", "--K", "-k", "--timeout", "--timeout-ms", "--synth-timeout", "--verify-timeout"):
        assert old not in seen, old            # only hidden deprecated aliases remain
    for c in (("mine",), ("synth",), ("verify",)):
        assert "--bound" in flags(COMMANDS[c])
    for c in (("mine",), ("rewrite",), ("bench", "micro"), ("bench", "tpch"), ("bench", "tpcds")):
        assert {"--master", "--conf"} <= flags(COMMANDS[c])


def test_deprecated_spellings_still_work_and_warn(capsys):
    p = build_parser()
    a = p.parse_args(["verify", "--catalog", "c.json", "--timeout-ms", "1500", "--K", "3"])
    assert (a.timeout_ms, a.K) == (1500, 3)
    b = p.parse_args(["verify", "--catalog", "c.json", "--timeout-s", "1.5", "--bound", "3"])
    assert (b.timeout_ms, b.K) == (1500, 3)
    c = p.parse_args(["mine", "--log", "x", "--out", "o", "-k", "3", "-K", "2", "--synth-timeout", "9"])
    assert (c.k, c.K, c.synth_timeout) == (3, 2, 9.0)
    err = capsys.readouterr().err
    assert "--timeout-ms is deprecated; use --timeout-s" in err and "-k is deprecated" in err
    d = p.parse_args(["mine", "--log", "x", "--out", "o"])
    # unset --min-templates = candidates selected by recurring cost (superop.mining.selection)
    assert (d.k, d.K, d.synth_timeout, d.verify_timeout) == (None, 4, 60.0, 20.0)


def deprecated_flags() -> set[str]:
    return {o for p in COMMANDS.values() for a in p._actions for o in a.option_strings
            if a.help == argparse.SUPPRESS and o.startswith("-")}


def test_no_caller_uses_a_deprecated_spelling():
    """Tests, scripts, benchmarks and docs call the commands with the current flags only
    (the aliases stay for users' own scripts; test_deprecated_spellings_... covers them)."""
    import re
    from pathlib import Path
    old = deprecated_flags()
    assert {"-K", "--K", "-k", "--timeout-ms"} <= old
    root = Path(__file__).resolve().parents[2]
    files = [f for d in ("tests", "scripts", "benchmarks", ".ci") for f in (root / d).rglob("*")
             if f.suffix in (".py", ".sh", ".yml", ".yaml") and f.resolve() != Path(__file__).resolve()]
    files += [root / "README.md", *(root / "docs").glob("*.md")]
    # a flag as an argv element ("-K") or a shell word (superop mine ... -k 2)
    pat = re.compile(r"""(?:["']|\bsuperop\b[^\n]*\s)(%s)(?:["']|[ =]\d)"""
                     % "|".join(re.escape(f) for f in sorted(old, key=len, reverse=True)))
    uses = [f"{f.relative_to(root)}: {line.strip()}" for f in files if f.is_file()
            for line in f.read_text(errors="replace").splitlines()
            if pat.search(line) and "deprecated(" not in line]   # not the alias declarations
    assert not uses


def test_help_is_plain_words(capsys):
    for c, p in COMMANDS.items():
        text = p.format_help()
        assert ":func:" not in text and ":mod:" not in text and "``" not in text, c


def test_spark_settings_from_the_usual_places_are_kept(tmp_path, monkeypatch):
    for v in ("SPARK_CONF_DIR", "SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "MASTER",
              "SUPEROP_SPARK_MASTER", "SUPEROP_DRIVER_MEMORY", "PYSPARK_GATEWAY_PORT"):
        monkeypatch.delenv(v, raising=False)
    settings, chosen = plan_conf()
    assert settings["spark.master"] == DEFAULTS["spark.master"] and "spark.master" in chosen
    assert str(LOG4J2_CONF) in chosen["log4j2"]
    # --conf / --master always apply; what they do not say is defaulted and reported
    settings, chosen = plan_conf("local[1]", {"spark.driver.memory": "1g"})
    assert settings["spark.driver.memory"] == "1g" and "spark.driver.memory" not in chosen
    assert settings["spark.master"] == "local[1]" and "spark.master" not in chosen
    # spark-defaults.conf and PYSPARK_SUBMIT_ARGS are the user's too
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.master  yarn\nspark.driver.memory 2g\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf))
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--conf spark.sql.session.timeZone=Europe/Paris pyspark-shell")
    settings, chosen = plan_conf()
    assert "spark.master" not in settings and "spark.driver.memory" not in settings
    assert "spark.sql.session.timeZone" not in settings
    assert set(chosen) == {"spark.ui.enabled", "spark.ui.showConsoleProgress",
                           "spark.sql.execution.arrow.pyspark.enabled", "log4j2"}
    # a log4j2.properties of one's own: superop does not touch JVM logging
    (conf / "log4j2.properties").write_text("rootLogger.level = info\n")
    settings, chosen = plan_conf()
    assert "spark.driver.extraJavaOptions" not in settings and "log4j2" not in chosen


def test_runtime_commands_work_without_the_mining_stack(tmp_path, monkeypatch):
    """What a runtime-only install has: no z3, mlflow, pandas, pyarrow, numpy, matplotlib. It
    accepts only a signed catalog (superop.rules_out.signing), so the catalog here is real
    (template proofs + a bounded certificate), re-checked and signed first."""
    from superop.rules_out import trust
    from superop.rules_out.catalog import make_catalog
    from superop.rules_out.coverage import covered_rule
    from superop.rules_out.signing import signing_key
    from tests.runtime.runtime_fixtures import rule_certificates
    catalog = make_catalog([covered_rule("DJ", rule_certificates("dj-inner"), rule_id="dj-inner")],
                           version="t")
    signed, _ = trust.recheck_and_sign(catalog, "test", signing_key(), "tests")
    (tmp_path / "c.json").write_text(json.dumps(signed))
    (tmp_path / "s.json").write_text(json.dumps({"ops": {"a": "int", "b": "int"}}))
    sql = ("SELECT x.a, x.n, y.m FROM (SELECT a, COUNT(*) AS n FROM ops GROUP BY a) x "
           "JOIN (SELECT a, MAX(b) AS m FROM ops GROUP BY a) y ON x.a = y.a")
    code = (
        "import sys, json\n"
        "for m in ('z3', 'mlflow', 'pandas', 'pyarrow', 'numpy', 'matplotlib'): sys.modules[m] = None\n"
        "from superop.cli import main\n"
        f"assert main(['rewrite', '--no-gate', '--json', '--catalog', {str(tmp_path / 'c.json')!r}, "
        f"'--schema', {str(tmp_path / 's.json')!r}, '--sql', {sql!r}]) == 0\n"
        f"assert main(['plan', '--sql', 'SELECT a FROM ops', '--schema', {str(tmp_path / 's.json')!r}]) == 0\n"
        f"assert main(['mine', '--log', {str(tmp_path / 's.json')!r}, '--out', {str(tmp_path / 'o')!r}]) == 2\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    first = r.stdout[: r.stdout.index("}\n") + 1]
    assert json.loads(first)["changed"] is True
    assert "pip install 'superop[mine]'" in r.stderr


def test_rewrite_prints_unchanged_sql_byte_for_byte(tmp_path, capsys):
    from superop.rules_out.catalog import make_catalog
    from superop.rules_out.signing import sign_catalog, signing_key
    (tmp_path / "c.json").write_text(json.dumps(sign_catalog(make_catalog([], version="t"), signing_key(), "t")))
    (tmp_path / "s.json").write_text(json.dumps({"ops": {"a": "int"}}))
    q = "select   a\nfrom ops  -- no rule"
    assert main(["rewrite", "--no-gate", "--catalog", str(tmp_path / "c.json"),
                 "--schema", str(tmp_path / "s.json"), "--sql", q]) == 0
    assert capsys.readouterr().out == q + "\n"


def test_generated_log_is_group_readable_and_reproducible(tmp_path):
    """The log generator streams through the atomic writer: the umask's mode (not a temp
    file's 0600), no temp file left, the same seed gives the same bytes."""
    import gzip
    import stat

    from superop.workloads.loggen import write_log
    umask = os.umask(0o022)
    os.umask(umask)
    a, b = tmp_path / "a" / "log.jsonl.gz", tmp_path / "b" / "log.jsonl.gz"
    write_log(a, 40, seed=3, truth_path=tmp_path / "a" / "truth.json")
    write_log(b, 40, seed=3)
    for f in (a, a.parent / "truth.json"):
        assert stat.S_IMODE(f.stat().st_mode) == 0o666 & ~umask, f
    assert sorted(p.name for p in a.parent.iterdir()) == ["log.jsonl.gz", "truth.json"]
    assert a.read_bytes() == b.read_bytes()
    lines = gzip.decompress(a.read_bytes()).decode().splitlines()
    assert len(lines) >= 40 and "statement_text" in json.loads(lines[0])
