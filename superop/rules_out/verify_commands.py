"""`superop verify`: re-check a rule catalog's certificates, or check one program.

(It lives above the verifier, with the catalog, because it re-checks whole catalogs.)

* ``superop verify --catalog FILE|URI [--record]`` — re-check every certificate against what
  it claims (inputs hash, program hash = the program the runtime builds now, covers) and
  re-run it. Exit 0 only if every rule has at least one certificate and every certificate
  holds and every rule admits only what its certificates cover
  (``superop.rules_out.coverage``). The catalog must pass the format checks of ``superop.rules_out.catalog`` (schema,
  checksum); statuses are re-checked, not trusted. ``--record`` records the successful
  re-check so that a runtime without z3 accepts this exact catalog (the local trust store,
  and the MLflow model version / run for ``models:/`` / ``runs:/`` URIs).
* ``superop verify (--sql TEXT | --sql-file F) --schema F --program P.json [--bound 4]`` —
  bounded equivalence of one sub-query and one program (DSL JSON); prints the result
  (``--json``: the result object incl. counterexample and certificate). Exit 0 iff verified.
* ``superop verify --templates [--only PREFIX]`` — the unbounded proofs of the template
  programs for every symbolic instance the families declare (``Family.proof_instances``), one line each with
  its obligations.
"""
from __future__ import annotations

import json
import sys

from ..cliutil import add_json_arg, add_schema_arg, deprecated, plain, read_sql, seconds_as_ms
from ..dsl import Program
from ..errors import SuperopError
from ..families.instances import all_instances
from ..ir.schema import load_schema_arg
from ..verify.certify import bounded_certificate, recheck_detail
from ..verify.check import check_sql
from ..verify.template_proofs import prove_instance
from . import trust
from .catalog import load_catalog
from .coverage import coverage_problems


def register(subparsers) -> None:
    import argparse

    p = subparsers.add_parser("verify", help="re-check every certificate in a rule catalog",
                              description=plain(__doc__),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--catalog", help="catalog JSON file (or an MLflow URI)")
    g.add_argument("--sql", help="a sub-query to check against --program")
    g.add_argument("--sql-file", metavar="FILE", help="a file holding the sub-query")
    g.add_argument("--templates", action="store_true", help="prove every Fig. 10 template (unbounded)")
    add_schema_arg(p)
    p.add_argument("--program", metavar="FILE",
                   help="program JSON file (superop.synth.dsl.Program.to_json)")
    p.add_argument("--bound", type=int, default=4, dest="K", metavar="K",
                   help="bound on input rows (default 4)")
    deprecated(p, "--K", "-K", dest="K", use="--bound", type=int)
    p.add_argument("--timeout-s", type=seconds_as_ms, default=20000, dest="timeout_ms",
                   metavar="S", help="seconds per Z3 check (default 20)")
    deprecated(p, "--timeout-ms", dest="timeout_ms", use="--timeout-s (seconds)", type=int)
    add_json_arg(p, "a report")
    p.add_argument("--record", action="store_true",
                   help="with --catalog: record a successful re-check (trust store / MLflow tag)")
    p.add_argument("--only", default="", metavar="PREFIX",
                   help="with --templates: instance ids starting with this")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.templates:
        return _templates(args)
    if args.catalog is None:
        return _one(args)
    return _catalog(args)


def _templates(args) -> int:
    out = []
    for inst in all_instances():
        if args.only and not inst.name.startswith(args.only):
            continue
        r = prove_instance(inst, timeout_ms=args.timeout_ms)
        obs = r.details["obligations"]
        out.append({"template": inst.name, "status": r.status, "seconds": round(r.seconds, 3),
                    "obligations": len(obs),
                    "proved": sum(o["status"] == "proved" for o in obs),
                    "failed": [o["name"] for o in obs if o["status"] == "failed"],
                    "unknown": [o["name"] for o in obs if o["status"] == "unknown"],
                    "reason": r.reason})
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for o in out:
            bad = (f"  failed: {', '.join(o['failed'])}" if o["failed"] else "") + \
                  (f"  unknown: {', '.join(o['unknown'])}" if o["unknown"] else "")
            print(f"{o['status']:9s} {o['template']:28s} {o['proved']}/{o['obligations']} obligations "
                  f"{o['seconds']:7.3f}s{bad}")
        print(f"{sum(o['status'] == 'verified' for o in out)}/{len(out)} templates proved, "
              f"{sum(o['seconds'] for o in out):.1f}s", file=sys.stderr)
    return 0 if out and all(o["status"] == "verified" for o in out) else 1


def _one(args) -> int:
    if not args.program:
        raise SuperopError("--program FILE is required with --sql/--sql-file")
    if not args.schema:
        raise SuperopError("--schema FILE is required with --sql/--sql-file")
    try:
        with open(args.program) as f:
            prog = Program.from_json(json.load(f))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SuperopError(f"cannot read program {args.program}: {e}") from None
    sql, schema = read_sql(args), load_schema_arg(args.schema)
    r = check_sql(sql, schema, prog, K=args.K, timeout_ms=args.timeout_ms)
    if r.status == "verified":
        r.certificate = bounded_certificate(sql, schema, prog, r, args.timeout_ms)
    if args.json:
        print(json.dumps(r.to_json(), indent=2, default=str))
    else:
        print(f"{r.status} (K={r.K}, {r.seconds:.2f}s): {r.reason}")
        if r.counterexample is not None:
            c = r.counterexample
            print(f"  input {c.table}({', '.join(c.columns)}): {c.rows}")
            print(f"  SQL output:     {c.plan_output}")
            print(f"  program output: {c.program_output}")
    return 0 if r.status == "verified" else 1


def _catalog(args) -> int:
    cat = load_catalog(args.catalog, require_verified=False)   # CatalogError -> exit 2
    report, all_ok = [], True
    for rule in cat["rules"]:
        for i, c in enumerate(rule.get("certificates") or []):
            ok, why = recheck_detail(c, require_runtime=True)
            all_ok &= ok
            report.append({"rule": rule["id"], "certificate": i, "method": c.get("method"),
                           "K": c.get("K"), "holds": ok, "why": why})
        for why in coverage_problems(rule):   # the per-rule check trust on load runs too
            all_ok = False
            report.append({"rule": rule["id"], "certificate": None, "holds": False,
                           "why": f"not covered: {why}"})
    recorded = []
    if all_ok and report and args.record:
        recorded = trust.record(trust.recheck(cat), args.catalog)
    if args.json:
        print(json.dumps({"ok": all_ok, "certificates": report, "recorded": recorded}, indent=2))
    else:
        for r in report:
            tag = "holds" if r["holds"] else "FAILS"
            where = f"{r['rule']}#{r['certificate']}" if r["certificate"] is not None else r["rule"]
            meth = f" [{r.get('method')}{', K=' + str(r['K']) if r.get('K') else ''}]" if r.get("method") else ""
            print(f"{tag}  {where}{meth}: {r['why']}")
        print(f"{sum(r['holds'] for r in report)}/{len(report)} certificates hold", file=sys.stderr)
        for w in recorded:
            print(f"recorded: {w}", file=sys.stderr)
    return 0 if all_ok and report else 1
