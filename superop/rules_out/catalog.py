"""The rule-catalog file format (format version 1): one JSON document, its JSON Schema
(``catalog.schema.json`` beside this file), the checksum, atomic writing, loading from a
file or an MLflow URI, and builders for rule dicts.

Document::

    {"format": "superop-rule-catalog", "format_version": 1,
     "version": "...", "created_at": "...Z", "tool_version": "0.1.0",
     "source": {"log": ..., "window": {"start": ..., "end": ...}, "content_hash": ...},
     "checksum": "sha256:<hex>",            # over canonical_json(rules)
     "rules": [rule, ...],
     # optional, for the report (the runtime reads neither):
     "near_misses": {"found": ..., "items": [near_miss, ...]},   # superop.mining.near_misses
     "rule_examples": {rule_id: rule_example, ...}}               # superop.rules_out.examples

A rule (see ``$defs/rule`` in the schema) names its family (one of
``superop.families.REGISTRY``), its core operators and abstract edges (each edge lists the
optional operators σ/π/ρ it admits as ``Select``/``Project``/``Rename``), for joins the
admitted join kinds and aggregate sides, the streamability check, the Fig. 10 template,
its certificates and its support. The schema's enums (families, join kinds, aggregates,
template and check names) are generated from the family registry (:func:`schema`).

The runtime refuses a catalog unless the schema holds, the checksum matches, every rule
carries certificates that are all ``verified`` and the catalog is signed by a trusted key
for this superop build (:func:`load_catalog` / :func:`accept` ->
:func:`superop.rules_out.signing.check_signature`; the signature covers every field,
certificates included). This module imports neither Spark, Z3 nor MLflow (MLflow only
lazily, for ``models:/`` / ``runs:/`` URIs).
"""
from __future__ import annotations

import copy
import datetime as _dt
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional, Sequence

from .. import __version__, families
from ..errors import CatalogError
from ..families import EDGE_OPS, Covers, Side
from ..ir.nodes import JOIN_KINDS
from ..mlflow_store import register
from ..storage import atomic_write_text
from ..verify.certificate import structural_check
from .canonical import canonical_json, checksum
from .signing import Signature, Signer, TrustedKeys, check_signature, sign_catalog

__all__ = ["CatalogError", "canonical_json", "checksum", "load_catalog", "read_catalog", "accept", "sign",
           "validate", "problems", "write_catalog", "make_rule", "make_catalog", "certificate"]

FORMAT = "superop-rule-catalog"
FORMAT_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("catalog.schema.json")
OPTIONAL_OPS = EDGE_OPS
JOIN_KINDS_ORDER = JOIN_KINDS   # the IR's order (cross: WinMagic's keyless join-back)
_MLFLOW_SCHEMES = ("models:/", "runs:/", "mlflow-artifacts:/", "mlflow-artifacts:")


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------
def generated_schema() -> dict:
    """The catalog JSON Schema: the structure of ``catalog.schema.json`` with every enum
    taken from the family registry (``python -m superop.rules_out.catalog`` rewrites the
    file; a test keeps it equal to this)."""
    sch = json.loads(SCHEMA_PATH.read_text())
    fams = families.REGISTRY
    defs = sch["$defs"]
    defs["optional_op"] = {"enum": list(EDGE_OPS)}
    kinds = [k for k in JOIN_KINDS_ORDER if any(k in f.join_kinds for f in fams)]
    defs["join_kind"] = {"enum": kinds}
    rule = defs["rule"]["properties"]
    rule["family"] = {"enum": [f.name for f in fams]}
    rule["streamability"] = {"enum": [f.catalog.long_name for f in fams]}
    rule["template"]["properties"]["name"] = {"enum": [f.catalog.template for f in fams]}
    aggs: list[str] = []
    for f in fams:
        aggs += [a for a in f.aggregates if a not in aggs]
    rule["aggregates"]["items"] = {"enum": aggs}
    rule["agg_sides"]["items"] = {"enum": [s.value for s in Side]}
    defs["near_miss"]["properties"]["family"] = {"enum": [f.name for f in fams]}
    return sch


@lru_cache(maxsize=1)
def schema() -> dict:
    return generated_schema()


def problems(catalog: Any, require_verified: bool = True, json_schema: bool = True) -> list[str]:
    """Every reason the catalog is unusable (empty list = fine). ``json_schema=False``
    skips the JSON Schema (importing jsonschema alone takes most of a second): only for a
    catalog whose signature holds for this build, whose signer checked it against this
    very schema (the schema is part of the build fingerprint)."""
    out: list[str] = []
    if json_schema:
        import jsonschema
        v = jsonschema.Draft202012Validator(schema())
        for err in sorted(v.iter_errors(catalog), key=lambda e: list(e.absolute_path)):
            where = "/".join(str(p) for p in err.absolute_path) or "(top)"
            out.append(f"{where}: {err.message}")
    if out or not isinstance(catalog, dict):
        return out
    rules = catalog["rules"]
    want = checksum(rules)
    if catalog["checksum"] != want:
        out.append(f"checksum mismatch: catalog says {catalog['checksum']}, rules hash to {want}")
    seen: set[str] = set()
    for i, r in enumerate(rules):
        rid = r["id"]
        if rid in seen:
            out.append(f"rules/{i}: duplicate rule id {rid!r}")
        seen.add(rid)
        out.extend(f"rules/{i} ({rid}): {p}" for p in _rule_semantics(r))
        if require_verified:
            certs = r["certificates"]
            if not certs:
                out.append(f"rules/{i} ({rid}): no certificate")
            bad = [c["status"] for c in certs if c["status"] != "verified"]
            if bad:
                out.append(f"rules/{i} ({rid}): certificate status {', '.join(sorted(set(bad)))} "
                           "(every certificate must be verified)")
    return out


def _rule_semantics(r: dict) -> list[str]:
    """Checks JSON Schema cannot express compactly (against the family's declaration)."""
    out = []
    fam = families.get(r["family"])
    names = fam.catalog
    if r["template"]["name"] != names.template:
        out.append(f"family {fam.name} needs template {names.template}, not {r['template']['name']}")
    if r["streamability"] != names.long_name:
        out.append(f"family {fam.name} needs streamability check {names.long_name}, not {r['streamability']}")
    if fam.join_kinds and not r.get("join_kinds"):
        out.append(f"family {fam.name} needs join_kinds")
    bad = [k for k in r.get("join_kinds") or () if k not in fam.join_kinds]
    if bad:
        out.append(f"family {fam.name} has no template for join kinds {bad}")
    branches = r.get("branches", 2)
    if not fam.supports(branches):
        out.append(f"family {fam.name} does not take {branches} branches")
        return out
    n_edges = fam.n_edges(branches)
    if len(r["abstract_edges"]) != n_edges:
        out.append(f"family {fam.name} has {n_edges} abstract edges, not {len(r['abstract_edges'])}")
    names_ = [e["name"] for e in r["abstract_edges"]]
    if len(set(names_)) != len(names_):
        out.append("abstract edge names must be unique")
    sides = {s.value for s in fam.sides if s is not None}
    bad_sides = [s for s in r.get("agg_sides") or () if s not in sides]
    if bad_sides:
        out.append(f"family {fam.name} has no aggregate side {bad_sides}")
    for a in r.get("admits") or ():
        try:
            c = Covers.from_json(a)
        except ValueError as e:
            out.append(str(e))
            continue
        if c.family != fam.name or len(c.edges) != n_edges:
            out.append(f"admits entry {c.describe()} is not a {fam.name} record with {n_edges} edges")
    return out


def validate(catalog: Any, require_verified: bool = True, where: str = "catalog") -> dict:
    """Raise :class:`CatalogError` listing what is wrong; return the catalog if fine."""
    ps = problems(catalog, require_verified)
    if ps:
        more = f" (+{len(ps) - 5} more)" if len(ps) > 5 else ""
        raise CatalogError(f"{where} refused: " + "; ".join(ps[:5]) + more)
    return catalog


# ---------------------------------------------------------------------------
# loading / writing
# ---------------------------------------------------------------------------
def is_mlflow_uri(s: str) -> bool:
    return str(s).startswith(_MLFLOW_SCHEMES)


def _resolve_mlflow(uri: str) -> Path:
    """Download the artifact(s) of an MLflow URI; a directory must hold catalog.json.
    E.g. ``models:/superop-catalog@production`` or ``runs:/<id>/catalog/catalog.json``."""
    try:
        import mlflow  # lazy: the runtime must import without mlflow
    except ImportError as e:  # pragma: no cover
        raise CatalogError(f"cannot load {uri}: mlflow is not installed") from e
    register()   # store-relative artifact locations of superop's local stores
    try:
        local = Path(mlflow.artifacts.download_artifacts(artifact_uri=uri))
    except Exception as e:
        raise CatalogError(f"cannot download {uri}: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    if local.is_dir():
        hits = sorted(local.rglob("catalog.json"))
        if not hits:
            raise CatalogError(f"{uri} holds no catalog.json")
        local = hits[0]
    return local


def read_catalog(path_or_uri: str | os.PathLike) -> tuple[dict, str]:
    """The parsed JSON of a catalog file or MLflow URI, unchecked, and its origin."""
    s = str(path_or_uri)
    path = _resolve_mlflow(s) if is_mlflow_uri(s) else Path(s)
    if not path.is_file():
        raise CatalogError(f"catalog not found: {path}")
    try:
        return json.loads(path.read_text(encoding="utf-8")), s
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CatalogError(f"catalog {path} is not valid JSON: {e}") from None


def accept(catalog: Any, origin: str = "(in-memory)", trusted: Optional[TrustedKeys] = None) -> Signature:
    """What the runtime requires of a catalog: a signature by a trusted key for this build
    (:func:`superop.rules_out.signing.check_signature`: nothing changed since it was signed)
    and the format checks (:func:`problems`: checksum, rules, every certificate
    ``verified``; the JSON Schema was checked by the signer with this build's schema).
    Raises :class:`CatalogError` with a one-line reason."""
    where = f"catalog {origin}"
    if not isinstance(catalog, dict):
        raise CatalogError(f"{where} refused: not a JSON object")
    sig = check_signature(catalog, origin, trusted)
    ps = problems(catalog, True, json_schema=False)
    # every certificate's own fields (bound, shown K, instance key, emitted-SQL claim): a
    # signature says who vouched, not that what they signed is not weakened; what this
    # build's code re-derives (the instance alone, the program it builds) its signer checked
    ps += [f"rules/{i} ({r['id']}) certificate #{j}: {why}"
           for i, r in enumerate(catalog.get("rules", [])) for j, c in enumerate(r.get("certificates", []))
           for ok, why in [structural_check(c, require_runtime=True, rederive=False)] if not ok]
    if ps:
        more = f" (+{len(ps) - 5} more)" if len(ps) > 5 else ""
        raise CatalogError(f"{where} refused: " + "; ".join(ps[:5]) + more)
    return sig


def sign(catalog: dict, signer: Signer, signed_by: str) -> dict:
    """The catalog signed by ``signer`` after every format check (JSON Schema included):
    what the runtime's :func:`accept` relies on."""
    validate(catalog, True, where="catalog to sign")
    return sign_catalog(catalog, signer, signed_by)


def load_catalog(path_or_uri: str | os.PathLike | dict, require_verified: bool = True,
                 trusted: Optional[TrustedKeys] = None) -> dict:
    """Read and check a catalog from a file, an MLflow URI or a dict already in memory: with
    ``require_verified`` everything :func:`accept` checks; without, the format only
    (schema, checksum; for commands that inspect or re-check a catalog). Raises
    :class:`CatalogError` with a one-line reason."""
    if isinstance(path_or_uri, dict):
        data, origin = path_or_uri, "(in-memory)"
    else:
        data, origin = read_catalog(path_or_uri)
    if require_verified:
        accept(data, origin, trusted)
        return data
    return validate(data, False, where=f"catalog {origin}")


def write_catalog(path: str | os.PathLike, catalog: dict, require_verified: bool = False,
                  signer: Optional[Signer] = None, signed_by: str = "") -> dict:
    """Set the checksum, validate, sign with ``signer`` (if given) and write atomically (a
    failure leaves the old file). Returns the catalog as written. Without ``signer`` a
    signature the catalog carries is kept as is: it holds only if nothing changed."""
    cat = copy.deepcopy(catalog)
    cat["checksum"] = checksum(cat.get("rules", []))
    validate(cat, require_verified or signer is not None, where=f"catalog {path}")
    if signer is not None:
        cat = sign_catalog(cat, signer, signed_by or "superop")
    atomic_write_text(path, json.dumps(cat, indent=2, ensure_ascii=False) + "\n")
    return cat


# ---------------------------------------------------------------------------
# builders
# ---------------------------------------------------------------------------
def make_rule(family: str, *, rule_id: Optional[str] = None, join_kinds: Sequence[str] = ("inner",),
              edges: Optional[Sequence[Sequence[str]]] = None,
              optional: Sequence[str] = OPTIONAL_OPS, branches: int = 2,
              agg_sides: Optional[Sequence[str]] = None,
              aggregates: Optional[Sequence[str]] = None, certificates: Sequence[dict] = (),
              admits: Optional[Sequence[Covers]] = None,
              proof: str = "unbounded", support: Optional[dict] = None,
              first_seen: Optional[str] = None, last_seen: Optional[str] = None,
              description: Optional[str] = None, parameters: Optional[dict] = None) -> dict:
    """A rule dict for one family's abstract tree. ``edges`` gives the optional operators
    per abstract edge in the family's edge order (``families.get(family).edge_decls``);
    default: ``optional`` on every edge. ``agg_sides`` (families with an aggregate side):
    the sides admitted, default all. ``admits``: the covers records the rule admits
    (default: the product of its kinds, sides, aggregates and edges)."""
    try:
        fam = families.get(family)
    except KeyError as e:
        raise ValueError(str(e)) from None
    if not fam.supports(branches):
        raise ValueError(f"{family} does not take {branches} branches")
    decls = fam.edge_decls(branches)
    if edges is None:
        edges = [tuple(optional)] * len(decls)
    if len(edges) != len(decls):
        raise ValueError(f"{family} needs {len(decls)} edges")
    abstract_edges = [{"name": d.name, "from": d.frm, "to": d.to,
                       "optional": [o for o in OPTIONAL_OPS if o in set(ops)]} for d, ops in zip(decls, edges)]
    kinds = [k for k in JOIN_KINDS_ORDER if k in set(join_kinds)] if fam.join_kinds else []
    sides = [s.value for s in fam.sides if s is not None]
    if agg_sides is not None:
        sides = [s for s in sides if s in set(agg_sides)]
    if rule_id is None:
        rule_id = f"{family.lower()}-{fam.default_rule_tag(kinds, branches)}"
    shape_sides = [Side(x) for x in sides] or [None]
    shape = " | ".join(dict.fromkeys(fam.shape_pattern([e["optional"] for e in abstract_edges], kinds, branches, sd)
                                     for sd in shape_sides))
    rule = {
        "id": rule_id, "family": family, "shape": shape,
        "core_operators": fam.core_operators(branches), "abstract_edges": abstract_edges,
        "streamability": fam.catalog.long_name,
        "template": {"name": fam.catalog.template, "parameters": dict(parameters or {})},
        "proof": proof,
        "certificates": [dict(c) for c in certificates],
        "support": dict(support or {"patterns": 0, "distinct_queries": 0, "executions": 0, "cost_share": 0.0}),
        "first_seen": first_seen, "last_seen": last_seen,
    }
    if fam.join_kinds:
        rule["join_kinds"] = kinds
    if not fam.join_kinds or fam.max_branches != fam.min_branches:
        rule["branches"] = branches
    if sides:
        rule["agg_sides"] = sides
    if aggregates is not None:
        rule["aggregates"] = list(aggregates)
    if admits is not None:
        rule["admits"] = [c.to_json() for c in admits]
    idx = instance_index(rule["certificates"])
    if idx:
        rule["instances"] = idx
    if description:
        rule["description"] = description
    return rule


def instance_index(certificates: Sequence[dict]) -> dict[str, int]:
    """The rule's bounded certificates keyed by the canonical instance each is about
    (``superop.families.identity``): instance key -> index in ``certificates``."""
    out: dict[str, int] = {}
    for i, c in enumerate(certificates):
        if c.get("method") == "bounded" and c.get("status") == "verified" and c.get("instance"):
            out.setdefault(str(c["instance"]), i)
    return out


def certificate(status: str, method: str, produced_by: str, **extra) -> dict:
    """A certificate entry, e.g. from ``superop.verify``'s ``Result.to_json()``."""
    c = {"status": status, "method": method, "produced_by": produced_by,
         "checked_at": _now()}
    c.update(extra)
    return c


def make_catalog(rules: Sequence[dict], *, version: Optional[str] = None,
                 source: Optional[dict] = None, created_at: Optional[str] = None,
                 tool_version: Optional[str] = None) -> dict:
    rules = [copy.deepcopy(r) for r in rules]
    created = created_at or _now()
    return {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "version": version or created,
        "created_at": created,
        "tool_version": tool_version or __version__,
        "source": dict(source or {"log": None, "window": None, "content_hash": None}),
        "checksum": checksum(rules),
        "rules": rules,
    }


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m superop.rules_out.catalog``: rewrite catalog.schema.json with the enums
    of the family registry."""
    atomic_write_text(SCHEMA_PATH, json.dumps(generated_schema(), indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {SCHEMA_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
