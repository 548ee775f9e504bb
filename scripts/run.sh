#!/usr/bin/env bash
# Installs superop with the nightly job's extra into .venv (the tested versions:
# constraints.txt) and runs the nightly job on the bundled workload with embedded defaults
# (local Spark, local MLflow store under out/).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
pip install -q --upgrade pip >/dev/null
pip install -q -e ".[mine]" -c constraints.txt
if ! command -v java >/dev/null 2>&1; then
  echo "superop needs Java 17 (e.g. apt-get install openjdk-17-jre-headless)" >&2
  exit 1
fi
OUT=${SUPEROP_OUT:-out/nightly}
exec superop mine --log "$(python -m superop.workloads.bundled)" --out "$OUT" "$@"
