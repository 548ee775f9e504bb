"""`superop verify --catalog FILE`: re-check every certificate in a rule catalog.

Exit 0 only if every rule has at least one certificate and every certificate holds
(re-computed from the inputs it carries). The catalog itself must pass the format
checks of ``superop.rules_out.catalog`` (schema, checksum); certificate statuses are
judged here by re-checking, not by trusting them.
"""
from __future__ import annotations

import json
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser("verify", help="re-check every certificate in a rule catalog",
                              description=__doc__)
    p.add_argument("--catalog", required=True, help="catalog JSON file (or an MLflow URI)")
    p.add_argument("--json", action="store_true", help="print a JSON report")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..rules_out.catalog import load_catalog
    from .certificate import recheck_detail
    cat = load_catalog(args.catalog, require_verified=False)   # CatalogError -> exit 2
    report, all_ok = [], True
    for rule in cat["rules"]:
        certs = rule.get("certificates") or []
        if not certs:
            all_ok = False
            report.append({"rule": rule["id"], "certificate": None, "holds": False,
                           "why": "the rule has no certificate"})
        for i, c in enumerate(certs):
            ok, why = recheck_detail(c)
            all_ok &= ok
            report.append({"rule": rule["id"], "certificate": i, "method": c.get("method"),
                           "K": c.get("K"), "holds": ok, "why": why})
    if args.json:
        print(json.dumps({"ok": all_ok, "certificates": report}, indent=2))
    else:
        for r in report:
            tag = "holds" if r["holds"] else "FAILS"
            where = f"{r['rule']}#{r['certificate']}" if r["certificate"] is not None else r["rule"]
            meth = f" [{r.get('method')}{', K=' + str(r['K']) if r.get('K') else ''}]" if r.get("method") else ""
            print(f"{tag}  {where}{meth}: {r['why']}")
        print(f"{sum(r['holds'] for r in report)}/{len(report)} certificates hold", file=sys.stderr)
    return 0 if all_ok and report else 1
