"""MLflow tracking of superop's jobs, through MLflow's fluent API.

* :func:`store_for` — where a job's runs go: ``$MLFLOW_TRACKING_URI`` when set (the
  store's own artifact locations), otherwise a local SQLite store beside the job's outputs,
  ``sqlite:///DIR/mlflow.db``, whose experiments keep their artifacts in ``DIR/mlartifacts``
  under a store-relative location (:mod:`superop.mlflow_store`): moving ``DIR`` keeps every
  run, model and registered version loadable.
* :class:`Tracker` — one parent run with nested child runs (``mlflow.start_run(nested=True)``),
  so runs carry MLflow's standard tags (``mlflow.user``, ``mlflow.source.name``/``type``)
  plus ``mlflow.source.git.commit`` of the superop checkout and ``superop.version``;
  params and metrics are logged in batches; the job's input is recorded as an MLflow dataset
  (:meth:`Tracker.dataset`). The caller's tracking URI, experiment and active runs are
  restored when the parent run ends, so a job can run inside other code.
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import __version__
from .errors import SuperopError
from .mlflow_store import DEFAULT_LOCATION, register
from .storage import local_path

PARAM_MAX = 6000        # MLflow's limit on a param value


@dataclass(frozen=True)
class Store:
    tracking_uri: str
    artifact_location: Optional[str]     # for experiments superop creates; None = the store's


def store_for(out_dir) -> Store:
    """The tracking store of a job writing to ``out_dir`` (see module doc). A non-local
    ``out_dir`` (``s3a://``, ``hdfs://``...) needs ``MLFLOW_TRACKING_URI``: a SQLite store
    cannot live there."""
    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        return Store(env, None)
    local = local_path(str(out_dir))
    if local is None:
        raise SuperopError(f"--out {out_dir} is not a local directory, so the default MLflow "
                           f"store (DIR/mlflow.db) cannot live there: set MLFLOW_TRACKING_URI")
    return Store(f"sqlite:///{Path(local).resolve()}/mlflow.db", DEFAULT_LOCATION)


def tracking_uri_for(out_dir) -> str:
    return store_for(out_dir).tracking_uri


def quiet_mlflow() -> None:
    """MLflow, Alembic and SQLAlchemy log schema migrations and hints at INFO/WARNING."""
    for name in ("mlflow", "alembic", "sqlalchemy"):
        logging.getLogger(name).setLevel(logging.ERROR)


def git_commit() -> Optional[str]:
    """The commit of the superop checkout this code runs from (None if not a git checkout)."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def standard_tags() -> dict[str, str]:
    tags = {"superop.version": __version__,
            "superop.command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:])[:5000]}
    commit = git_commit()
    if commit:
        tags["mlflow.source.git.commit"] = commit
    return tags


class _MlflowState:
    """MLflow's global tracking/registry URIs exactly as the caller had them: the module
    globals AND the environment variables ``set_tracking_uri`` also sets (restoring through
    ``get_tracking_uri()`` would leave a default URI in the environment, which later reads
    as a user's ``MLFLOW_TRACKING_URI``)."""

    ENV = ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI", "MLFLOW_EXPERIMENT_ID")

    def __init__(self):
        from mlflow.tracking import fluent
        from mlflow.tracking._model_registry import utils as reg
        from mlflow.tracking._tracking_service import utils as trk
        self.tracking = trk._tracking_uri
        self.registry = reg._registry_uri
        self.experiment = fluent._active_experiment_id
        self.env = {k: os.environ.get(k) for k in self.ENV}

    def point_at(self, uri: str) -> None:
        import mlflow
        mlflow.set_tracking_uri(uri)
        mlflow.set_registry_uri(uri)

    def restore(self) -> None:
        import mlflow
        from mlflow.tracking import fluent
        from mlflow.tracking._model_registry import utils as reg
        mlflow.set_tracking_uri(self.tracking)
        reg._registry_uri = self.registry
        fluent._active_experiment_id = self.experiment
        for k, v in self.env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class tracking_uri:
    """Temporarily point MLflow's global tracking and registry URIs at ``uri``
    (downloads of ``models:/`` URIs read them), restoring the caller's afterwards."""

    def __init__(self, uri: Optional[str]):
        self.uri = uri

    def __enter__(self):
        register()
        self.state = _MlflowState()
        if self.uri:
            self.state.point_at(self.uri)
        return self

    def __exit__(self, *exc):
        self.state.restore()


class Tracker:
    """A parent run and its nested child runs (see module doc).

    ``start(name)`` opens the parent, ``start(name, parent_id)`` a child of the active run;
    ``end(run_id, ok)`` closes a run (and any child still open inside it, as FAILED). Ending
    the parent restores the caller's MLflow state."""

    def __init__(self, store: Store, experiment: str):
        import mlflow
        from mlflow import MlflowClient
        quiet_mlflow()
        register()
        self.store = store
        self._saved = _MlflowState()
        self._saved.point_at(store.tracking_uri)
        try:
            self.client = MlflowClient(tracking_uri=store.tracking_uri,
                                       registry_uri=store.tracking_uri)
            e = self.client.get_experiment_by_name(experiment)
            self.exp_id = e.experiment_id if e is not None else \
                self.client.create_experiment(experiment, artifact_location=store.artifact_location)
        except BaseException:
            self._restore()
            raise
        self._stack: list[str] = []
        self._outer = mlflow.active_run()       # a caller's run: ours nests under it

    @property
    def uri(self) -> str:
        return self.store.tracking_uri

    def start(self, name: str, parent: Optional[str] = None, tags: Optional[dict] = None) -> str:
        import mlflow
        if parent is not None and (not self._stack or self._stack[-1] != parent):
            raise RuntimeError(f"run {parent} is not the active run")
        # models logged in the run belong to the run's experiment
        mlflow.set_experiment(experiment_id=self.exp_id)
        nested = bool(self._stack) or self._outer is not None
        run = mlflow.start_run(experiment_id=self.exp_id, run_name=name, nested=nested,
                               tags={**standard_tags(), **(tags or {})})
        self._stack.append(run.info.run_id)
        return run.info.run_id

    def end(self, rid: str, ok: bool = True) -> None:
        import mlflow
        if rid not in self._stack:
            return
        while self._stack:
            top = self._stack.pop()
            mlflow.end_run("FINISHED" if ok and top == rid else "FAILED")
            if top == rid:
                break
        if not self._stack:
            self._restore()

    def close(self) -> None:
        """End every run still open (as FAILED) and restore the caller's MLflow state."""
        if self._stack:
            self.end(self._stack[0], ok=False)
        else:
            self._restore()

    def _restore(self) -> None:
        self._saved.restore()

    # -- logging ----------------------------------------------------------------------
    def _active(self, rid: str) -> bool:
        return bool(self._stack) and self._stack[-1] == rid

    def params(self, rid: str, d: dict) -> None:
        """One batch call (values as strings, cut at MLflow's limit)."""
        vals = {k: str(v)[:PARAM_MAX] for k, v in d.items()}
        if not vals:
            return
        if self._active(rid):
            import mlflow
            mlflow.log_params(vals)
        else:
            from mlflow.entities import Param
            self.client.log_batch(rid, params=[Param(k, v) for k, v in vals.items()])

    def metrics(self, rid: str, d: dict) -> None:
        vals = {k: float(v) for k, v in d.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if not vals:
            return
        if self._active(rid):
            import mlflow
            mlflow.log_metrics(vals)
        else:
            import time

            from mlflow.entities import Metric
            ts = int(time.time() * 1000)
            self.client.log_batch(rid, metrics=[Metric(k, v, ts, 0) for k, v in vals.items()])

    def tags(self, rid: str, d: dict) -> None:
        vals = {k: str(v)[:5000] for k, v in d.items()}
        if self._active(rid):
            import mlflow
            mlflow.set_tags(vals)
        else:
            from mlflow.entities import RunTag
            self.client.log_batch(rid, tags=[RunTag(k, v) for k, v in vals.items()])

    def artifact(self, rid: str, path, sub: Optional[str] = None) -> None:
        self.client.log_artifact(rid, str(path), sub)

    def dataset(self, rid: str, *, name: str, digest: str, path: Optional[str] = None,
                table: Optional[str] = None, columns: Optional[list[tuple[str, str]]] = None,
                context: str = "mining") -> None:
        """Record the job's input (a log path or a table) as an MLflow dataset of ``rid``."""
        from mlflow.data.meta_dataset import MetaDataset
        from mlflow.data.spark_dataset_source import SparkDatasetSource
        from mlflow.entities import InputTag
        from mlflow.types import ColSpec, Schema
        src = SparkDatasetSource(table_name=table) if table else SparkDatasetSource(path=path)
        types = {"string": "string", "double": "double", "bigint": "long", "int": "integer"}
        schema = Schema([ColSpec(types.get(t, "string"), c) for c, t in columns]) if columns else None
        ds = MetaDataset(src, name=name, digest=digest.split(":")[-1][:32], schema=schema)
        self.client.log_inputs(rid, datasets=[
            _dataset_input(ds, [InputTag("mlflow.data.context", context)])])


def _dataset_input(ds, tags):
    from mlflow.entities import DatasetInput
    return DatasetInput(dataset=ds._to_mlflow_entity(), tags=tags)
