"""The rule-catalog file format (format version 1): one JSON document, its JSON Schema
(``catalog.schema.json`` beside this file), the checksum, atomic writing, loading from a
file or an MLflow URI, and builders for rule dicts.

Document::

    {"format": "superop-rule-catalog", "format_version": 1,
     "version": "...", "created_at": "...Z", "tool_version": "0.1.0",
     "source": {"log": ..., "window": {"start": ..., "end": ...}, "content_hash": ...},
     "checksum": "sha256:<hex>",            # over canonical_json(rules)
     "rules": [rule, ...]}

A rule (see ``$defs/rule`` in the schema) names its family (DU / DJ / MJ), its core
operators and abstract edges (each edge lists the optional operators σ/π/ρ it admits as
``Select``/``Project``/``Rename``), for joins the admitted join kinds, the streamability
check, the Fig. 10 template, its certificates and its support.

The runtime refuses a catalog unless the schema holds, the checksum matches and every rule
carries certificates that are all ``verified`` (:func:`load_catalog`). This module imports
neither Spark, Z3 nor MLflow (MLflow only lazily, for ``models:/`` / ``runs:/`` URIs).
"""
from __future__ import annotations

import copy
import datetime as _dt
import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from ..errors import SuperopError

FORMAT = "superop-rule-catalog"
FORMAT_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("catalog.schema.json")
OPTIONAL_OPS = ("Select", "Project", "Rename")
JOIN_KINDS = ("inner", "left", "right", "full", "semi", "anti")
FAMILIES = ("DU", "DJ", "MJ")
_MLFLOW_SCHEMES = ("models:/", "runs:/", "mlflow-artifacts:/", "mlflow-artifacts:")


class CatalogError(SuperopError):
    """A catalog that cannot be used (missing, malformed, tampered, unverified)."""


# ---------------------------------------------------------------------------
# canonical form, checksum
# ---------------------------------------------------------------------------
def canonical_json(obj: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, UTF-8 kept as is."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def checksum(rules: Sequence[dict]) -> str:
    """``sha256:<hex>`` over the canonical JSON of the rule list."""
    return "sha256:" + hashlib.sha256(canonical_json(list(rules)).encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------
@lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def problems(catalog: Any, require_verified: bool = True) -> list[str]:
    """Every reason the catalog is unusable (empty list = fine)."""
    import jsonschema
    out: list[str] = []
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
    """Checks JSON Schema cannot express compactly."""
    out = []
    fam = r["family"]
    expected = {"DU": ("SuperOp_DU", "diamond-union-all"), "DJ": ("SuperOp_DJ", "diamond-join"),
                "MJ": ("SuperOp_MJ", "min-join")}[fam]
    if r["template"]["name"] != expected[0]:
        out.append(f"family {fam} needs template {expected[0]}, not {r['template']['name']}")
    if r["streamability"] != expected[1]:
        out.append(f"family {fam} needs streamability check {expected[1]}, not {r['streamability']}")
    if fam in ("DJ", "MJ") and not r.get("join_kinds"):
        out.append(f"family {fam} needs join_kinds")
    n_edges = {"DU": 2 * r.get("branches", 2), "DJ": 4, "MJ": 3}[fam]
    if len(r["abstract_edges"]) != n_edges:
        out.append(f"family {fam} has {n_edges} abstract edges, not {len(r['abstract_edges'])}")
    names = [e["name"] for e in r["abstract_edges"]]
    if len(set(names)) != len(names):
        out.append("abstract edge names must be unique")
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
    from ..mlflow_store import register
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


def load_catalog(path_or_uri: str | os.PathLike, require_verified: bool = True) -> dict:
    """Read, schema-check, checksum-check and certificate-check a catalog from a file or
    an MLflow URI. Raises :class:`CatalogError` with a one-line reason."""
    s = str(path_or_uri)
    path = _resolve_mlflow(s) if is_mlflow_uri(s) else Path(s)
    if not path.is_file():
        raise CatalogError(f"catalog not found: {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CatalogError(f"catalog {path} is not valid JSON: {e}") from None
    return validate(data, require_verified, where=f"catalog {s}")


def write_catalog(path: str | os.PathLike, catalog: dict, require_verified: bool = False) -> dict:
    """Set the checksum, validate, and write atomically (a failure leaves the old file).
    Returns the catalog as written."""
    from ..cliutil import atomic_write_text
    cat = copy.deepcopy(catalog)
    cat["checksum"] = checksum(cat.get("rules", []))
    validate(cat, require_verified, where=f"catalog {path}")
    atomic_write_text(path, json.dumps(cat, indent=2, ensure_ascii=False) + "\n")
    return cat


# ---------------------------------------------------------------------------
# builders
# ---------------------------------------------------------------------------
_SYM = {"Select": "σ", "Project": "π", "Rename": "ρ"}
_JOIN_SYM = {"inner": "⋈", "left": "⟕", "right": "⟖", "full": "⟗", "semi": "⋉", "anti": "▷"}


def _edge(name: str, frm: str, to: str, optional: Iterable[str]) -> dict:
    opt = [o for o in OPTIONAL_OPS if o in set(optional)]
    return {"name": name, "from": frm, "to": to, "optional": opt}


def _sym(ops: Sequence[str]) -> str:
    return "".join(_SYM[o] for o in ops) or "∅"


def make_rule(family: str, *, rule_id: Optional[str] = None, join_kinds: Sequence[str] = ("inner",),
              edges: Optional[Sequence[Sequence[str]]] = None,
              optional: Sequence[str] = OPTIONAL_OPS, branches: int = 2,
              aggregates: Optional[Sequence[str]] = None, certificates: Sequence[dict] = (),
              proof: str = "unbounded", support: Optional[dict] = None,
              first_seen: Optional[str] = None, last_seen: Optional[str] = None,
              description: Optional[str] = None, parameters: Optional[dict] = None) -> dict:
    """A rule dict for one abstract tree of Fig. 6. ``edges`` gives the optional operators
    per abstract edge in the paper's order (DU: e1..e_n spool→γ_i, then e_{n+1}..e_{2n}
    γ_i→∪; DJ: e1 spool→γ1, e2 spool→γ2, e3 γ1→⋈, e4 γ2→⋈; MJ: e1 spool→γ, e2 γ→⋈,
    e3 spool→⋈); default: ``optional`` on every edge."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}")
    if family == "DU":
        core = ["Spool"] + ["GroupBy"] * branches + ["UnionAll"]
        ends = [("Spool", f"GroupBy#{i + 1}") for i in range(branches)] + \
               [(f"GroupBy#{i + 1}", "UnionAll") for i in range(branches)]
        template, stream = "SuperOp_DU", "diamond-union-all"
    elif family == "DJ":
        core = ["Spool", "GroupBy", "GroupBy", "Join"]
        ends = [("Spool", "GroupBy#1"), ("Spool", "GroupBy#2"), ("GroupBy#1", "Join"), ("GroupBy#2", "Join")]
        template, stream = "SuperOp_DJ", "diamond-join"
    else:
        core = ["Spool", "GroupBy", "Join"]
        ends = [("Spool", "GroupBy"), ("GroupBy", "Join"), ("Spool", "Join")]
        template, stream = "SuperOp_MJ", "min-join"
    if edges is None:
        edges = [tuple(optional)] * len(ends)
    if len(edges) != len(ends):
        raise ValueError(f"{family} needs {len(ends)} edges")
    abstract_edges = [_edge(f"e{i + 1}", f, t, ops) for i, ((f, t), ops) in enumerate(zip(ends, edges))]
    kinds = [k for k in JOIN_KINDS if k in set(join_kinds)] if family != "DU" else []
    if rule_id is None:
        tag = "-".join(kinds) if kinds else f"{branches}way"
        rule_id = f"{family.lower()}-{tag}"
    es = [_sym(e["optional"]) for e in abstract_edges]
    if family == "DU":
        n = branches
        shape = "(" + ", ".join(f"[{es[i]}]*|γ|[{es[n + i]}]*" for i in range(n)) + ")∪"
    elif family == "DJ":
        shape = f"([{es[0]}]*|γ|[{es[2]}]*, [{es[1]}]*|γ|[{es[3]}]*)" + "/".join(_JOIN_SYM[k] for k in kinds)
    else:
        shape = f"([{es[0]}]*|γ|[{es[1]}]*, [{es[2]}]*)" + "/".join(_JOIN_SYM[k] for k in kinds)
    rule = {
        "id": rule_id, "family": family, "shape": shape,
        "core_operators": core, "abstract_edges": abstract_edges,
        "streamability": stream,
        "template": {"name": template, "parameters": dict(parameters or {})},
        "proof": proof,
        "certificates": [dict(c) for c in certificates],
        "support": dict(support or {"patterns": 0, "distinct_queries": 0, "executions": 0, "cost_share": 0.0}),
        "first_seen": first_seen, "last_seen": last_seen,
    }
    if family != "DU":
        rule["join_kinds"] = kinds
    else:
        rule["branches"] = branches
    if aggregates is not None:
        rule["aggregates"] = list(aggregates)
    if description:
        rule["description"] = description
    return rule


def certificate(status: str, method: str, produced_by: str, **extra) -> dict:
    """A certificate entry, e.g. from ``superop.verify``'s ``Result.to_json()``."""
    c = {"status": status, "method": method, "produced_by": produced_by,
         "checked_at": _now()}
    c.update(extra)
    return c


def make_catalog(rules: Sequence[dict], *, version: Optional[str] = None,
                 source: Optional[dict] = None, created_at: Optional[str] = None,
                 tool_version: Optional[str] = None) -> dict:
    from .. import __version__
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
