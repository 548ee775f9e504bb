"""Switch the runtime on for every SparkSession a process creates, from its settings.

``import superop.runtime.autoenable`` (one line, e.g. in a ``sitecustomize.py`` on the
driver's ``PYTHONPATH``) wraps ``SparkSession.Builder.getOrCreate`` (classic and Spark
Connect) so that each session it returns gets :func:`superop.runtime.enable_from_conf` —
which does nothing unless ``spark.superop.catalog`` is set. A session is enabled once; a
refused catalog is logged and the session is returned unchanged (the job runs, without
superop).
"""
from __future__ import annotations

import functools
import logging

from .enable import enable_from_conf, enabled_session

log = logging.getLogger("superop.runtime")


def _wrap(builder_cls) -> None:
    plain = builder_cls.getOrCreate
    if getattr(plain, "_superop_wrapped", False):
        return

    @functools.wraps(plain)
    def get_or_create(self, *a, **kw):
        spark = plain(self, *a, **kw)
        if enabled_session(spark) is None:
            try:
                enable_from_conf(spark)
            except Exception as e:   # noqa: BLE001 - the job must run, with or without superop
                log.error("superop: not enabled: %s", str(e).splitlines()[0] if str(e) else type(e).__name__)
        return spark

    get_or_create._superop_wrapped = True      # type: ignore[attr-defined]
    get_or_create._superop_plain = plain       # type: ignore[attr-defined]
    builder_cls.getOrCreate = get_or_create


def _builders() -> list:
    from pyspark.sql import SparkSession
    out = [SparkSession.Builder]
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
        out.append(ConnectSession.Builder)
    except ImportError:          # no Connect client installed
        pass
    return out


def install() -> None:
    for b in _builders():
        _wrap(b)


def uninstall() -> None:
    """Restore the plain ``getOrCreate`` (sessions already enabled stay enabled)."""
    for b in _builders():
        plain = getattr(b.getOrCreate, "_superop_plain", None)
        if plain is not None:
            b.getOrCreate = plain


install()
