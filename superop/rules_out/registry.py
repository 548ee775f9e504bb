"""The rule catalog in the MLflow Model Registry.

Every nightly catalog is logged as an MLflow pyfunc model (:mod:`superop.rules_out.pyfunc`:
SQL text in, rewritten SQL and the rules applied out, with a signature; ``catalog.json``,
``schema.json`` and the reports as artifacts) and registered as a new version of
``superop-catalog`` with the alias ``candidate`` and tags describing it
(:func:`catalog_tags`: checksum, rule count, families, verification verdict). A person (or a
CI gate) promotes a reviewed version with ``superop catalog promote --version N``, which
re-loads and validates that version (:func:`load_version`) and moves the ``production``
alias. Rolling back is promoting an older version. Both readers work on the result:

    mlflow.pyfunc.load_model("models:/superop-catalog@production").predict([sql])
    SuperOpSession(spark, "models:/superop-catalog@production")
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from .. import __version__
from ..errors import SuperopError
from ..mlflow_store import register
from ..tracking import tracking_uri as using
from .catalog import load_catalog
from .pyfunc import CODE_PATH, signature
from .trust import recheck_and_record

MODEL_NAME = "superop-catalog"
CANDIDATE, PRODUCTION = "candidate", "production"
ARTIFACT_NAME = "catalog"         # the logged model's name inside its run


def _client(tracking_uri: Optional[str] = None):
    from mlflow import MlflowClient

    register()
    return MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)


def catalog_tags(catalog: dict) -> dict[str, str]:
    """What a registry user filters and reviews by, without downloading the catalog."""
    rules = catalog.get("rules", [])
    certs = [c for r in rules for c in r.get("certificates", [])]
    verified = sum(1 for c in certs if c.get("status") == "verified")
    unbounded = sum(1 for r in rules if r.get("proof") == "unbounded")
    verdict = "verified" if rules and verified == len(certs) and all(
        r.get("certificates") for r in rules) else ("empty" if not rules else "not-verified")
    return {
        "superop.checksum": str(catalog.get("checksum")),
        "superop.rule_count": str(len(rules)),
        "superop.families": ",".join(sorted({r["family"] for r in rules})) or "-",
        "superop.verification": verdict,
        "superop.certificates": f"{verified}/{len(certs)} verified; {unbounded}/{len(rules)} "
                                f"rules with an unbounded proof",
        "superop.catalog_version": str(catalog.get("version")),
        "superop.format_version": str(catalog.get("format_version")),
    }


def log_catalog_model(catalog_path, schema: dict, extra_artifacts: dict[str, str] | None = None):
    """Log the catalog as a pyfunc model into the active MLflow run; returns MLflow's
    ModelInfo (``model_uri`` = ``models:/m-...``)."""
    import tempfile

    import mlflow

    with tempfile.TemporaryDirectory(prefix="superop-model-") as tmp:
        schema_path = Path(tmp) / "schema.json"
        schema_path.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")
        artifacts = {"catalog": str(catalog_path), "schema": str(schema_path)}
        artifacts.update(extra_artifacts or {})
        import warnings
        with warnings.catch_warnings():
            # hints about type hints / input examples: the signature is given explicitly
            warnings.filterwarnings("ignore", message=".*(type hints|input example).*")
            return mlflow.pyfunc.log_model(
                name=ARTIFACT_NAME, python_model=str(CODE_PATH), artifacts=artifacts,
                signature=signature(), pip_requirements=[f"superop=={__version__}"])


def register_catalog_model(model_uri: str, catalog: dict, tracking_uri: Optional[str] = None,
                           name: str = MODEL_NAME, alias: str = CANDIDATE,
                           run_id: Optional[str] = None) -> str:
    """Register a logged catalog model as a new version of ``name`` (with
    :func:`catalog_tags`) and point ``alias`` at it; returns the version."""
    c = _client(tracking_uri)
    try:
        c.get_registered_model(name)
    except Exception:
        c.create_registered_model(name, description="superop rule catalogs: verified "
                                  "super-operator rewrite rules (pyfunc: SQL in, rewritten SQL out)")
    tags = catalog_tags(catalog)
    model_id = model_uri.split("/", 1)[-1] if model_uri.startswith("models:/m-") else None
    mv = c.create_model_version(name, source=model_uri, run_id=run_id, tags=tags,
                                model_id=model_id,
                                description=f"nightly catalog {catalog.get('version')}: "
                                            f"{tags['superop.rule_count']} rules "
                                            f"({tags['superop.families']})")
    c.set_registered_model_alias(name, alias, mv.version)
    return str(mv.version)


def load_version(version: str, tracking_uri: Optional[str] = None,
                 name: str = MODEL_NAME) -> dict:
    """The catalog of one registered version, downloaded and validated (schema, checksum,
    every certificate verified) — the one check a version passes before an alias moves."""
    with using(tracking_uri):
        return load_catalog(f"models:/{name}/{version}")    # raises CatalogError if unusable


def promote(version: str, tracking_uri: Optional[str] = None, name: str = MODEL_NAME,
            alias: str = PRODUCTION, check: bool = True) -> str:
    """Point ``alias`` at ``version`` after re-loading and validating that catalog."""
    c = _client(tracking_uri)
    try:
        c.get_model_version(name, str(version))
    except Exception:
        raise SuperopError(f"no version {version} of registered model {name}") from None
    if check:   # re-check the certificates (always, not a recorded verdict) and tag the version
        with using(tracking_uri):
            uri = f"models:/{name}/{version}"
            recheck_and_record(load_catalog(uri, require_verified=False), uri)
    c.set_registered_model_alias(name, alias, str(version))
    return f"models:/{name}@{alias}"


def versions(tracking_uri: Optional[str] = None, name: str = MODEL_NAME) -> list[dict]:
    c = _client(tracking_uri)
    try:
        rm = c.get_registered_model(name)
    except Exception:
        return []
    aliases: dict[str, list[str]] = {}
    for a, v in (rm.aliases or {}).items():
        aliases.setdefault(str(v), []).append(a)
    out = []
    for mv in c.search_model_versions(f"name='{name}'"):
        out.append({"version": str(mv.version), "run_id": mv.run_id, "source": mv.source,
                    "aliases": sorted(aliases.get(str(mv.version), [])),
                    "tags": dict(mv.tags or {})})
    return sorted(out, key=lambda d: int(d["version"]))
