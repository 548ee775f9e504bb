"""Catalog registration and promotion in the MLflow Model Registry.

Every nightly catalog is registered as a new version of the registered model
``superop-catalog`` (its source is the run's ``catalog/`` artifact directory) and gets the
alias ``candidate``. Production loads ``models:/superop-catalog@production``; a person (or
a CI gate) promotes a reviewed version with ``superop catalog promote --version N``, which
moves the ``production`` alias. Rolling back is promoting an older version.
"""
from __future__ import annotations

from typing import Optional

from ..errors import SuperopError

MODEL_NAME = "superop-catalog"
CANDIDATE, PRODUCTION = "candidate", "production"


def _client(tracking_uri: Optional[str] = None):
    from mlflow import MlflowClient
    return MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)


class _TrackingUri:
    """Temporarily point MLflow's global tracking URI at ``uri`` (artifact downloads of
    ``models:/`` URIs read it), restoring the caller's setting afterwards."""

    def __init__(self, uri: Optional[str]):
        self.uri = uri

    def __enter__(self):
        import mlflow
        self.old = mlflow.get_tracking_uri()
        if self.uri:
            mlflow.set_tracking_uri(self.uri)

    def __exit__(self, *exc):
        import mlflow
        if self.uri:
            mlflow.set_tracking_uri(self.old)


def register_catalog(run_id: str, artifact_uri: str, tracking_uri: Optional[str] = None,
                     name: str = MODEL_NAME, alias: str = CANDIDATE) -> str:
    """Registers the catalog artifact directory of a run; returns the new version."""
    c = _client(tracking_uri)
    try:
        c.get_registered_model(name)
    except Exception:
        c.create_registered_model(name, description="superop rule catalogs (catalog.json)")
    mv = c.create_model_version(name, source=artifact_uri, run_id=run_id,
                                description="nightly catalog")
    c.set_registered_model_alias(name, alias, mv.version)
    return str(mv.version)


def promote(version: str, tracking_uri: Optional[str] = None, name: str = MODEL_NAME,
            alias: str = PRODUCTION, check: bool = True) -> str:
    """Point ``alias`` at ``version`` after re-loading and validating that catalog."""
    c = _client(tracking_uri)
    try:
        c.get_model_version(name, str(version))
    except Exception:
        raise SuperopError(f"no version {version} of registered model {name}") from None
    if check:   # re-check the certificates (always, not a recorded verdict) and tag the version
        from .catalog import load_catalog
        from .trust import recheck_and_record
        with _TrackingUri(tracking_uri):
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
    aliases = {}
    for a, v in (rm.aliases or {}).items():
        aliases.setdefault(str(v), []).append(a)
    out = []
    for mv in c.search_model_versions(f"name='{name}'"):
        out.append({"version": str(mv.version), "run_id": mv.run_id, "source": mv.source,
                    "aliases": sorted(aliases.get(str(mv.version), []))})
    return sorted(out, key=lambda d: int(d["version"]))
