"""What covers the rewrites a catalog applies to a query log, and how its certificates cover
the SQL the runtime emits.

    python benchmarks/proof_coverage.py --catalog out/nightly/catalog.json \
        --log "$(python -m superop.workloads.bundled)" [--schema FILE] [--json]

Every statement of the log is rewritten structurally (``superop.rewrite``, no Spark, no
first-sight certification): per family, the matches applied and the proof each explanation
names (an unbounded template proof, a bounded certificate of the instance or of its
parametric form), the matches
a rule admitted but no proof covered (left unchanged and recorded — never applied), and,
per family, the catalog's certificates and how many check their emitted SQL bounded.
"""
from __future__ import annotations

import argparse
import collections
import gzip
import json
import re
import sys
from pathlib import Path

from superop.ir.schema import load_schema_arg
from superop.rewrite.rewriter import Rewriter, rewrite_structural
from superop.workloads.loggen import mining_schema

_APPLIED = re.compile(r"(\S+) at (\w+) .*?covered by the (unbounded proof|bounded certificate K=\d+ of parametric"
                      r"|bounded certificate)")


def statements(log: Path) -> list[str]:
    opener = gzip.open if str(log).endswith(".gz") else open
    out = []
    with opener(log, "rt") as f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            text = row.get("statement_text") if isinstance(row, dict) else None
            if isinstance(text, str) and text.lstrip().lower().startswith(("select", "with", "(")):
                out.append(text)
    return out


def certificates(cat: dict) -> dict:
    fam: dict = collections.defaultdict(collections.Counter)
    for r in cat["rules"]:
        for c in r.get("certificates") or []:
            f = fam[r["family"]]
            f["certificates"] += 1
            f[c.get("method")] += 1
            em = c.get("emitted_sql") or {}
            if em.get("checked_by") == "bounded" and em.get("status") == "verified":
                f["emitted_checked_bounded"] += 1
    return {k: dict(v) for k, v in sorted(fam.items())}


def coverage(cat: dict, sqls: list[str], schema: dict) -> dict:
    rw = Rewriter(cat)
    fam: dict = collections.defaultdict(collections.Counter)
    distinct = list(dict.fromkeys(sqls))
    for sql in distinct:
        try:
            r = rewrite_structural(rw, sql, schema)
        except Exception:  # a statement the lowering refuses: not rewritten, as at runtime
            continue
        if not r.changed:
            continue
        found = _APPLIED.findall(r.explanation)
        if len(found) != len(r.applied):
            raise AssertionError(f"an applied match names no proof: {r.explanation}")
        for _rule, family, proof in found:
            fam[family]["applied"] += 1
            fam[family]["by " + ("parametric certificate" if proof.endswith("parametric") else proof)] += 1
    for inst in rw.uncovered_instances():
        fam[_family_of(cat, inst)]["admitted, uncovered (left unchanged)"] += 1
    return {"statements": len(sqls), "distinct": len(distinct),
            "families": {k: dict(v) for k, v in sorted(fam.items())}}


def _family_of(cat: dict, inst) -> str:
    from superop.families.coverage import match_of
    try:
        return match_of(inst.sql, inst.schema).family
    except ValueError:
        return "?"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--catalog", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--schema", help="the log's schema file (default: the bundled workload's)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    cat = json.loads(Path(a.catalog).read_text())
    schema = load_schema_arg(a.schema) if a.schema else mining_schema()
    out = {"catalog": a.catalog, "certificates": certificates(cat),
           **coverage(cat, statements(Path(a.log)), schema)}
    if a.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{out['statements']} statements ({out['distinct']} distinct texts)")
    print(f"{'family':6} {'applied':>7} {'by unbounded':>12} {'by instance':>11} {'by parametric':>13} "
          f"{'uncovered, kept':>15}")
    for f, c in out["families"].items():
        print(f"{f:6} {c.get('applied', 0):7} {c.get('by unbounded proof', 0):12} "
              f"{c.get('by bounded certificate', 0):11} {c.get('by parametric certificate', 0):13} "
              f"{c.get('admitted, uncovered (left unchanged)', 0):15}")
    print(f"{'family':6} {'certificates':>12} {'inductive':>9} {'bounded':>7} {'emitted checked bounded':>24}")
    tot = collections.Counter()
    for f, c in out["certificates"].items():
        tot.update(c)
        print(f"{f:6} {c.get('certificates', 0):12} {c.get('inductive', 0):9} {c.get('bounded', 0):7} "
              f"{c.get('emitted_checked_bounded', 0):24}")
    n = tot.get("certificates", 0)
    print(f"emitted SQL checked bounded: {tot.get('emitted_checked_bounded', 0)}/{n} certificates"
          + (f" ({100 * tot.get('emitted_checked_bounded', 0) / n:.0f} %)" if n else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
