"""`superop catalog ...`: export, diff, show, promote, versions."""
from __future__ import annotations

import json
import sys

from ..cliutil import add_json_arg
from ..errors import SuperopError
from ..storage import atomic_write_text
from .catalog import load_catalog
from .diff import diff, format_diff
from .registry import promote, versions
from .report import to_html, to_markdown


def register(sub) -> None:
    p = sub.add_parser("catalog", help="inspect, export, diff and promote rule catalogs")
    cs = p.add_subparsers(dest="catalog_cmd", metavar="ACTION")

    e = cs.add_parser("export", help="export a catalog as json, md or html")
    e.add_argument("--catalog", required=True, help="catalog file or MLflow URI")
    e.add_argument("--format", choices=("json", "md", "html"), default="md")
    e.add_argument("--out", help="write here (atomically) instead of stdout")
    e.add_argument("--no-verify-certs", action="store_true",
                   help="export even if some certificate is not verified")
    e.set_defaults(func=_export)

    d = cs.add_parser("diff", help="added, removed and changed rules between two catalogs")
    d.add_argument("old", help="the older catalog (file or MLflow URI)")
    d.add_argument("new", help="the newer catalog (file or MLflow URI)")
    add_json_arg(d, "the differences")
    d.set_defaults(func=_diff)

    s = cs.add_parser("show", help="one line per rule")
    s.add_argument("--catalog", required=True, help="catalog file or MLflow URI")
    add_json_arg(s, "the rules")
    s.set_defaults(func=_show)

    tracking = ("MLflow tracking URI of the store, e.g. sqlite:///out/nightly/mlflow.db "
                "(default: $MLFLOW_TRACKING_URI)")
    pr = cs.add_parser("promote", help="point the MLflow alias 'production' at a registered "
                                       "catalog version (after re-checking it)")
    pr.add_argument("--version", required=True, help="the registered version to promote")
    pr.add_argument("--tracking-uri", help=tracking)
    pr.add_argument("--alias", default="production", help="the alias to move (default production)")
    add_json_arg(pr, "the promoted model URI")
    pr.set_defaults(func=_promote)

    v = cs.add_parser("versions", help="registered catalog versions, their aliases and tags")
    v.add_argument("--tracking-uri", help=tracking)
    add_json_arg(v, "the versions")
    v.set_defaults(func=_versions)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])


def _load(path: str, verified: bool = True) -> dict:
    return load_catalog(path, require_verified=verified)


def _export(args) -> int:
    cat = _load(args.catalog, not args.no_verify_certs)
    if args.format == "json":
        text = json.dumps(cat, indent=2, ensure_ascii=False) + "\n"
    elif args.format == "md":
        text = to_markdown(cat)
    else:
        text = to_html(cat)
    if args.out:
        atomic_write_text(args.out, text)
        print(args.out)
    else:
        sys.stdout.write(text)
    return 0


def _diff(args) -> int:
    d = diff(_load(args.old, False), _load(args.new, False))
    print(json.dumps(d, indent=2) if args.json else format_diff(d))
    return 0


def _show(args) -> int:
    cat = _load(args.catalog, False)
    if args.json:
        print(json.dumps([{"id": r["id"], "family": r["family"], "shape": r["shape"],
                           "support": r["support"], "proof": r.get("proof"),
                           "certificates": sorted({c.get("status") for c in r.get("certificates", [])})}
                          for r in cat["rules"]], indent=2, ensure_ascii=False))
        return 0
    for r in cat["rules"]:
        s = r["support"]
        certs = {c.get("status") for c in r.get("certificates", [])}
        print(f"{r['id']:40s} {r['shape']:50s} patterns={s.get('patterns')} "
              f"executions={s.get('executions')} proof={r.get('proof')} certs={','.join(sorted(certs))}")
    return 0


def _promote(args) -> int:
    uri = promote(args.version, args.tracking_uri, alias=args.alias)
    print(json.dumps({"model_uri": uri, "version": str(args.version)}) if args.json else uri)
    return 0


def _versions(args) -> int:
    vs = versions(args.tracking_uri)
    if not vs:
        raise SuperopError("no registered catalog versions (run `superop mine` first)")
    if args.json:
        print(json.dumps(vs, indent=2))
        return 0
    for v in vs:
        t = v.get("tags", {})
        print(f"{v['version']:>4}  {','.join(v['aliases']) or '-':24s} "
              f"rules={t.get('superop.rule_count', '?')} families={t.get('superop.families', '?')} "
              f"{t.get('superop.verification', '')}  run={v['run_id']}  {v['source']}")
    return 0
