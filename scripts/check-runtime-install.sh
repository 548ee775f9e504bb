#!/usr/bin/env bash
# Proves that installing superop (runtime only, no extras) into an environment that already
# has a PySpark 4.x keeps that PySpark: a fresh virtualenv gets PySpark $PYSPARK_VERSION
# (default 4.0.5, a different 4.x than the tested one in constraints.txt), then superop
# from this checkout; the script fails if pip replaced PySpark or pulled in the mining
# stack (z3, mlflow, pandas), and runs `superop rewrite --no-gate` there.
# Slow (downloads PySpark): run by hand or in CI when the budget allows, not by pytest.
#   ./scripts/check-runtime-install.sh            # PYSPARK_VERSION=4.1.4 ./scripts/...
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
WANT=${PYSPARK_VERSION:-4.0.5}
VENV=${VENV:-$(mktemp -d /tmp/superop-runtime-venv.XXXXXX)}
echo "== fresh virtualenv $VENV with pyspark==$WANT"
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q "pyspark==$WANT"
echo "== pip install superop (runtime only) from $ROOT"
"$VENV/bin/pip" install "$ROOT" 2>&1 | grep -Ei "^(Successfully|Requirement already satisfied: pyspark)" || true
GOT=$("$VENV/bin/python" -c "import pyspark; print(pyspark.__version__)")
echo "pyspark after installing superop: $GOT"
if [ "$GOT" != "$WANT" ]; then
  echo "FAIL: installing superop replaced PySpark $WANT with $GOT" >&2
  exit 1
fi
for m in z3 mlflow pandas matplotlib; do
  if "$VENV/bin/python" -c "import importlib.util,sys; sys.exit(importlib.util.find_spec('$m') is None)"; then
    echo "FAIL: the runtime-only install brought $m" >&2
    exit 1
  fi
done
echo "== superop rewrite --no-gate in that environment"
TMP=$(mktemp -d /tmp/superop-runtime-check.XXXXXX)
"$VENV/bin/python" - "$TMP" <<'PY'
import json, sys
from pathlib import Path
from superop.rules_out.catalog import make_catalog, make_rule
d = Path(sys.argv[1])
# a catalog whose one rule carries a (structurally) verified certificate entry: enough for
# the loader's checks; this script proves installation, not proofs
cert = {"status": "verified", "method": "unbounded", "produced_by": "check-runtime-install",
        "checked_at": "2026-01-01T00:00:00Z"}
cat = make_catalog([make_rule("DJ", join_kinds=["inner"], certificates=[cert])], version="check")
(d / "catalog.json").write_text(json.dumps(cat))
(d / "schema.json").write_text(json.dumps({"ops": {"a": "int", "b": "int", "c": "int"}}))
PY
"$VENV/bin/superop" rewrite --no-gate --catalog "$TMP/catalog.json" --schema "$TMP/schema.json" \
  --sql "SELECT x.a, x.n, y.m FROM (SELECT a, COUNT(*) AS n FROM ops GROUP BY a) x JOIN (SELECT a, MAX(b) AS m FROM ops GROUP BY a) y ON x.a = y.a" --json \
  | "$VENV/bin/python" -c "import json,sys; r=json.load(sys.stdin); print('changed:', r['changed'], 'applied:', r['applied']); sys.exit(0 if r['changed'] else 1)"
"$VENV/bin/pip" list 2>/dev/null | grep -Ei "^(pyspark|sqlglot|jsonschema|superop|py4j) "
echo "OK: PySpark $WANT kept; superop runtime installed and working"
rm -rf "$TMP"
