"""Store-relative MLflow artifact locations: the ``superop-store:`` URI scheme.

MLflow records local artifact locations as absolute paths, so moving a local store
(``DIR/mlflow.db`` + ``DIR/mlartifacts``) breaks every artifact and model download. The
experiments superop creates in its own local store therefore use
``superop-store:mlartifacts`` as artifact location: a path relative to the directory that
holds the SQLite tracking database, resolved each time an artifact is read or written.
Move ``DIR`` anywhere, point ``MLFLOW_TRACKING_URI`` at ``sqlite:///<new DIR>/mlflow.db``
and ``mlflow.pyfunc.load_model("models:/superop-catalog@production")`` still works.

MLflow finds this repository through the ``mlflow.artifact_repository`` entry point that
superop's package metadata declares (so a plain ``import mlflow`` in a process that never
imported superop resolves the scheme); :func:`register` also adds it in-process, for an
environment whose package metadata is stale. This module imports MLflow only when a
repository is made (MLflow loads the entry point while it is itself being imported).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Optional

SCHEME = "superop-store"
DEFAULT_LOCATION = f"{SCHEME}:mlartifacts"


def store_dir(tracking_uri: Optional[str] = None) -> Path:
    """The directory of the SQLite database ``tracking_uri`` (default: MLflow's current
    tracking URI) names; relative artifact locations are resolved against it."""
    if tracking_uri is None:
        import mlflow
        tracking_uri = mlflow.get_tracking_uri()
    prefix = "sqlite:///"
    if not str(tracking_uri).startswith(prefix):
        raise ValueError(f"{SCHEME}: artifact locations are relative to a local SQLite store "
                         f"(sqlite:///DIR/mlflow.db); the tracking URI is {tracking_uri!r}")
    return Path(str(tracking_uri)[len(prefix):]).parent


def resolve(uri: str, tracking_uri: Optional[str] = None) -> str:
    """``superop-store:<relative path>`` -> ``file:///<store dir>/<relative path>``."""
    rel = str(uri)[len(SCHEME) + 1:].lstrip("/")
    return (store_dir(tracking_uri).resolve() / rel).as_uri()


@lru_cache(maxsize=1)
def _repository_class():
    # defined on first use: MLflow loads the entry point while it is itself being imported
    from mlflow.store.artifact.local_artifact_repo import LocalArtifactRepository

    class StoreRelativeArtifactRepository(LocalArtifactRepository):
        """A local artifact directory named relative to the tracking store's directory."""

        def __init__(self, artifact_uri: str, tracking_uri: Optional[str] = None,
                     registry_uri: Optional[str] = None) -> None:
            super().__init__(resolve(artifact_uri, tracking_uri), tracking_uri, registry_uri)

    return StoreRelativeArtifactRepository


def repository(artifact_uri: str, tracking_uri: Optional[str] = None,
               registry_uri: Optional[str] = None):
    """The artifact repository of a ``superop-store:`` URI (MLflow's entry point)."""
    return _repository_class()(artifact_uri, tracking_uri=tracking_uri, registry_uri=registry_uri)


def register() -> None:
    """Make the scheme known to MLflow in this process (idempotent)."""
    from mlflow.store.artifact.artifact_repository_registry import _artifact_repository_registry
    repos = _artifact_repository_registry.get_registered_artifact_repositories()
    if SCHEME not in repos:
        _artifact_repository_registry.register(SCHEME, repository)
