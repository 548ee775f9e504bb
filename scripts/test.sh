#!/usr/bin/env bash
# Installs superop with its test extras into .venv (the tested versions: constraints.txt)
# and runs the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
pip install -q --upgrade pip >/dev/null
pip install -q -e ".[test]" -c constraints.txt
# static checks first (configuration in pyproject.toml; versions pinned in constraints.txt):
# ruff on the whole package, mypy (strict on the packages that opted in, e.g. superop.families)
ruff check superop tests benchmarks
mypy
set +e
# --durations: every run (CI included) lists its slowest tests, so the 15-minute budget is
# watched run by run; a later --durations=N in "$@" overrides the default.
# -n: two pytest-xdist workers (each with its own local Spark session); --dist loadfile keeps
# a test file, and the module fixtures it builds, on one worker. SUPEROP_TEST_WORKERS=0 runs
# in one process (a later -n in "$@" overrides too).
python -m pytest -q -ra --durations=25 -n "${SUPEROP_TEST_WORKERS:-2}" --dist loadfile "$@"
rc=$?
set -e
# 5 = no tests collected: not a failure (e.g. a selection that matches nothing).
if [ "$rc" -eq 5 ]; then exit 0; fi
exit "$rc"
