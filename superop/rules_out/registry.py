"""The rule catalog in the MLflow Model Registry.

Every nightly catalog is logged as an MLflow pyfunc model (:mod:`superop.rules_out.pyfunc`:
SQL text in, rewritten SQL and the rules applied out, with a signature; ``catalog.json``,
``schema.json`` and the reports as artifacts) and registered as a new version of
``superop-catalog`` with the alias ``candidate`` and tags describing it
(:func:`catalog_tags`: checksum, rule count, families, verification verdict). A person (or a
CI gate) promotes a reviewed version with ``superop catalog promote --version N``
(:func:`promote`): it re-checks every certificate of that version with Z3, and

* if the version's catalog is already signed with the promoter's signing key for this
  superop build, moves the ``production`` alias to it;
* otherwise (unsigned, signed by another key — e.g. the nightly job's —, or by an older
  build) registers the re-signed catalog as a **new version** (a registered version is
  immutable; tag ``superop.resigned_from`` = N, the same schema and reports) and moves the
  alias there.

So ``production`` always names a catalog signed by the promoter's key for the promoter's
build; production runtimes need to trust only that key. Rolling back is promoting an older
version (re-signed if it needs it). Both readers work on the result:

    mlflow.pyfunc.load_model("models:/superop-catalog@production").predict([sql])
    SuperOpSession(spark, "models:/superop-catalog@production")
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Optional

from .. import __version__
from ..errors import SuperopError
from ..mlflow_store import register
from ..tracking import tracking_uri as using
from .catalog import load_catalog, write_catalog
from .pyfunc import CODE_PATH, signature
from .signing import Signer, signed_here, signing_key
from .trust import recheck_and_sign

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
        "superop.signed_by_key": str((catalog.get("signature") or {}).get("key_id") or "unsigned"),
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
                           name: str = MODEL_NAME, alias: Optional[str] = CANDIDATE,
                           run_id: Optional[str] = None) -> str:
    """Register a logged catalog model as a new version of ``name`` (with
    :func:`catalog_tags`) and point ``alias`` (if any) at it; returns the version."""
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
    if alias:
        c.set_registered_model_alias(name, alias, mv.version)
    return str(mv.version)


def load_version(version: str, tracking_uri: Optional[str] = None,
                 name: str = MODEL_NAME) -> dict:
    """The catalog of one registered version, downloaded and checked as the runtime checks
    it (schema, checksum, every certificate verified, a trusted signature for this build)."""
    with using(tracking_uri):
        return load_catalog(f"models:/{name}/{version}")    # raises CatalogError if unusable


def promote(version: str, tracking_uri: Optional[str] = None, name: str = MODEL_NAME,
            alias: str = PRODUCTION, check: bool = True, signer: Optional[Signer] = None) -> str:
    """Point ``alias`` at ``version`` after re-checking it with Z3 — or at a new version
    holding its catalog re-signed by ``signer`` (default :func:`signing_key`) when the
    version is not signed by that key for this build (see the module doc). Returns
    ``models:/name@alias``."""
    c = _client(tracking_uri)
    try:
        c.get_model_version(name, str(version))
    except Exception:
        raise SuperopError(f"no version {version} of registered model {name}") from None
    target = str(version)
    if check:
        signer = signer or signing_key()
        with using(tracking_uri):
            uri = f"models:/{name}/{version}"
            cat = load_catalog(uri, require_verified=False)
            signed, _ = recheck_and_sign(cat, uri, signer, f"superop catalog promote (version {version})")
            if not signed_here(cat, signer):
                target = _register_resigned(c, name, str(version), signed, tracking_uri)
    c.set_registered_model_alias(name, alias, target)
    return f"models:/{name}@{alias}"


def _register_resigned(c, name: str, version: str, signed: dict, tracking_uri: Optional[str]) -> str:
    """Log ``signed`` as a catalog model (with the schema and reports of ``version``) in a
    run of the version's experiment and register it as a new version; returns it."""
    import mlflow
    src = c.get_model_version(name, version)
    exp_id = c.get_run(src.run_id).info.experiment_id if src.run_id else None
    with tempfile.TemporaryDirectory(prefix="superop-promote-") as tmp:
        local = Path(mlflow.artifacts.download_artifacts(artifact_uri=f"models:/{name}/{version}",
                                                         dst_path=str(Path(tmp) / "src")))
        schema_files = sorted(local.rglob("schema.json"))
        schema = json.loads(schema_files[0].read_text()) if schema_files else {}
        extra = {f"report_{p.suffix[1:]}": str(p) for p in sorted(local.rglob("report.*"))
                 if p.suffix in (".md", ".html")}
        path = Path(tmp) / "catalog.json"
        write_catalog(path, signed)
        with mlflow.start_run(experiment_id=exp_id, run_name=f"promote-{version}") as run:
            mlflow.set_tag("superop.resigned_from", version)
            model = log_catalog_model(path, schema, extra)
    new = register_catalog_model(model.model_uri, signed, tracking_uri, name=name, alias=None,
                                 run_id=run.info.run_id)
    c.set_model_version_tag(name, new, "superop.resigned_from", version)
    return new


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
