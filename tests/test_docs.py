"""The docs describe the product, not its history (docs/DEVELOPING.md, "Benchmarks and docs").

* no Markdown file of the README, docs/ or superop/ names issues, sessions, branches or
  scratch paths under /tmp (the same pattern as
  ``grep -riE "issue [0-9]+|session [0-9]+|branch [a-z0-9]+|/tmp/" README.md docs superop --include=*.md``);
* docs/BENCHMARKS.md stays a results page of at most 400 lines;
* every ``superop COMMAND [SUBCOMMAND]`` the README shows in code exists in the CLI;
* the README's example schema file loads with its declared keys;
* no table cell holds a code span with an unescaped ``|`` (it would split the cell).
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from superop.cli import build_parser
from superop.ir.schema import load_keys_file, load_schema

ROOT = Path(__file__).resolve().parents[1]
HISTORY = re.compile(r"issue [0-9]+|session [0-9]+|branch [a-z0-9]+|/tmp/", re.IGNORECASE)


def markdown_files() -> list[Path]:
    files = [ROOT / "README.md"]
    for top in ("docs", "superop"):
        files += sorted((ROOT / top).rglob("*.md"))
    return files


def test_the_check_sees_the_docs():
    names = {p.relative_to(ROOT).as_posix() for p in markdown_files()}
    assert {"README.md", "docs/ARCHITECTURE.md", "docs/BENCHMARKS.md", "docs/DEVELOPING.md",
            "superop/share/README.md", "superop/runtime/README.md"} <= names


def test_no_history_or_scratch_paths_in_the_docs():
    hits = []
    for path in markdown_files():
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = HISTORY.search(line)
            if m:
                hits.append(f"{path.relative_to(ROOT)}:{no}: {m.group(0)!r} in {line.strip()[:100]}")
    assert not hits, "docs narrate history or name scratch paths:\n" + "\n".join(hits)


def test_the_pattern_catches_what_it_should():
    for bad in ("see Issue 13", "session 7 measured", "on branch mj7", "--out /tmp/x"):
        assert HISTORY.search(bad), bad
    for fine in ("out/nightly", "a session of Spark", "the branches of a diamond", "$DIR/x"):
        assert not HISTORY.search(fine), fine


def test_benchmarks_is_a_results_page():
    lines = (ROOT / "docs" / "BENCHMARKS.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 400, f"docs/BENCHMARKS.md has {len(lines)} lines (at most 400)"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:                      # argparse keeps its sub-parsers here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _code_of(markdown: str) -> list[str]:
    """The README's code: fenced blocks and inline code spans."""
    fenced = re.findall(r"```[^\n]*\n(.*?)```", markdown, re.S)
    rest = re.sub(r"```[^\n]*\n.*?```", "", markdown, flags=re.S)
    return fenced + re.findall(r"`([^`\n]+)`", rest)


def readme_commands() -> set[tuple[str, str]]:
    """(command, sub-command or "") for every `superop COMMAND ...` in the README's code."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = set()
    for code in _code_of(text):
        for m in re.finditer(r"(?<![\w./-])superop\s+([a-z][\w-]*)(?:\s+([a-z][\w-]*))?", code):
            found.add((m.group(1), m.group(2) or ""))
    return found


def test_every_command_the_readme_names_exists():
    top = _subcommands(build_parser())
    named = readme_commands()
    assert {c for c, _ in named} >= {"mine", "rewrite", "catalog", "verify", "share"}, named
    missing = []
    for command, sub in sorted(named):
        if command not in top:
            missing.append(f"superop {command}")
            continue
        subs = _subcommands(top[command])
        if subs and sub and sub not in subs:
            missing.append(f"superop {command} {sub}")
    assert not missing, f"README names commands `superop --help` does not have: {missing}"


def test_the_readme_schema_example_loads(tmp_path):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## The schema file", 1)[1]
    example = re.search(r"```json\n(.*?)```", section, re.S).group(1)
    path = tmp_path / "schema.json"
    path.write_text(example)
    schema = load_schema(path)
    assert set(schema) == {"customer", "customer_sales", "$keys"}
    keys = load_keys_file(str(path))
    assert [k.text() for k in keys["customer"]] == ["c_customer_sk", "c_customer_id"]
    assert [k.text() for k in keys["customer_sales"]] == ["c_customer_id -> c_first_name, c_last_name"]
    assert json.loads(example)["$keys"]


def test_no_unescaped_pipe_in_a_table_cell():
    bad = []
    for path in markdown_files():
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("|"):
                bad += [f"{path.relative_to(ROOT)}:{no}: `{span}`" for span in re.findall(r"`([^`]*)`", line)
                        if re.search(r"(?<!\\)\|", span)]
    assert not bad, "write \\| inside a table cell:\n" + "\n".join(bad)
