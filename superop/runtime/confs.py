"""The runtime's Spark settings, read on every call so that they act on a live session.

==================================  ===============================================================
``spark.superop.enabled``           ``false``: every query runs unchanged (the kill switch); default true
``spark.superop.rules.exclude``     comma-separated rule ids never applied
``spark.superop.decisionLog``       where decision records go: a JSON Lines path or ``table:NAME``
``spark.superop.shadow``            fraction (0..1) of rewritten queries whose original also runs,
                                    off the caller's path, and is compared (shadow mode)
``spark.superop.catalog``           the catalog ``enable_from_conf`` loads (path or MLflow URI)
``spark.superop.trustedKeys``       public keys a catalog may be signed with (see rules_out.signing)
``spark.superop.gate``              the benefit gate of ``enable_from_conf``: cost | exchanges
``spark.superop.decisionStore``     directory of persisted decisions (default: beside a catalog file)
``spark.superop.certify``           first sight of ``enable_from_conf``: auto | background | off
==================================  ===============================================================

Classic sessions read each key (a py4j call each); Spark Connect sessions read all set
settings in one RPC.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .tablestats import is_connect

PREFIX = "spark.superop."
ENABLED = PREFIX + "enabled"
EXCLUDE = PREFIX + "rules.exclude"
DECISION_LOG = PREFIX + "decisionLog"
SHADOW = PREFIX + "shadow"
CATALOG = PREFIX + "catalog"
TRUSTED_KEYS = PREFIX + "trustedKeys"
GATE = PREFIX + "gate"
DECISION_STORE = PREFIX + "decisionStore"
CERTIFY = PREFIX + "certify"
PER_CALL = (ENABLED, EXCLUDE, DECISION_LOG, SHADOW)
GATES = ("cost", "exchanges", "ungated")


def gate_mode(gate) -> str:
    """The benefit gate's mode from what a caller passed (True/None: cost, False: ungated)."""
    if gate is True or gate is None:
        return "cost"
    if gate is False:
        return "ungated"
    if gate == "off":
        raise ValueError("gate='off' is not a kill switch: to run every query unchanged set "
                         "spark.superop.enabled=false (or superop.runtime.disable(spark)); to rewrite "
                         "without the benefit gate use gate='ungated'")
    if gate not in GATES:
        raise ValueError(f"gate must be one of {GATES} (or True/False), not {gate!r}")
    return gate


CERTIFY_MODES = ("auto", "background", "off")


def certify_mode(certify) -> str:
    """First sight's mode (``superop.runtime.first_sight``; True: auto, False: off)."""
    mode = {True: "auto", False: "off"}.get(certify, certify) if isinstance(certify, bool) else certify
    if mode not in CERTIFY_MODES:
        raise ValueError(f"certify must be one of {CERTIFY_MODES} (or True/False), not {certify!r}")
    return mode


@dataclass(frozen=True)
class RuntimeConf:
    enabled: bool = True
    exclude: frozenset = frozenset()
    decision_log: Optional[str] = None
    shadow: Optional[float] = None       # None: the session's own setting


def _bool(v: Optional[str], default: bool) -> bool:
    if v is None or not v.strip():
        return default
    return v.strip().lower() not in ("false", "0", "no", "off")


def _fraction(v: Optional[str]) -> Optional[float]:
    if v is None or not v.strip():
        return None
    try:
        x = float(v)
    except ValueError:
        return None
    return min(max(x, 0.0), 1.0)


def read_keys(spark, keys: tuple) -> dict:
    """The values of ``keys`` that are set (absent keys are missing)."""
    if is_connect(spark):
        every = spark.conf.getAll
        return {k: every[k] for k in keys if k in every}
    out = {}
    for k in keys:
        v = spark.conf.get(k, None)
        if v is not None:
            out[k] = v
    return out


def read(spark) -> RuntimeConf:
    """The per-call settings of ``spark`` (a setting that cannot be read counts as unset,
    except the kill switch: it counts as ``false`` — when in doubt, run the original)."""
    try:
        v = read_keys(spark, PER_CALL)
    except Exception:   # noqa: BLE001 - a session that cannot answer: superop steps aside
        return RuntimeConf(enabled=False)
    exclude = frozenset(x.strip() for x in v.get(EXCLUDE, "").split(",") if x.strip())
    return RuntimeConf(enabled=_bool(v.get(ENABLED), True), exclude=exclude,
                       decision_log=(v.get(DECISION_LOG) or "").strip() or None,
                       shadow=_fraction(v.get(SHADOW)))


def get(spark, key: str) -> Optional[str]:
    return read_keys(spark, (key,)).get(key)
