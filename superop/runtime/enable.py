"""Drop-in: make ``spark.sql(...)`` of an existing session go through the runtime.

    import superop.runtime
    so = superop.runtime.enable(spark, "models:/superop-catalog@production")   # **SuperOpSession options
    spark.sql(query)          # rewritten when a verified rule pays off, else the original
    superop.runtime.disable(spark)

``enable`` replaces the ``sql`` method of that one session object (classic or Spark
Connect; other sessions and the class are untouched) by a function that hands every query
to :meth:`SuperOpSession.sql` and returns its DataFrame. Passed through unchanged, without a
decision: a call with ``args`` or keyword arguments (parameterized SQL, ``{df}``
formatting), a statement that is not a query (DDL, DML, SET, EXPLAIN, ...), and the calls
superop itself makes while deciding (:mod:`superop.runtime.reentry`). The settings of
:mod:`superop.runtime.confs` are read on every call: ``spark.superop.enabled=false`` turns it
off on the next call, without ``disable``.

For ``spark-submit`` jobs whose code should not change: :func:`enable_from_conf` reads the
catalog from ``spark.superop.catalog``; ``import superop.runtime.autoenable`` (e.g. from a
``sitecustomize.py`` on the driver's ``PYTHONPATH``) calls it for every session the job
creates (see the README, "Switching it on without changing code").
"""
from __future__ import annotations

import functools
import logging
from typing import Any, Optional

from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

from ..errors import SuperopError
from ..ir.dialect import DIALECT
from . import confs
from .reentry import active
from .session import SuperOpSession

log = logging.getLogger("superop.runtime")

ATTR = "_superop_session"          # the SuperOpSession of an enabled session object
_QUERY_START = frozenset({TokenType.SELECT, TokenType.WITH, TokenType.FROM, TokenType.VALUES,
                          TokenType.L_PAREN, TokenType.TABLE})


def is_query(text: str) -> bool:
    """Does the statement start like a query (SELECT, WITH, FROM, VALUES, TABLE, ``(``)?"""
    try:
        toks = Dialect.get_or_raise(DIALECT).tokenize(text)
    except Exception:   # noqa: BLE001 - the runtime decides (and fails safe) on what it cannot read
        return True
    return bool(toks) and toks[0].token_type in _QUERY_START


def enabled_session(spark) -> Optional[SuperOpSession]:
    """The SuperOpSession ``spark.sql`` goes through, or None."""
    return spark.__dict__.get(ATTR)


def enable(spark, catalog, **options: Any) -> SuperOpSession:
    """Route ``spark.sql`` of ``spark`` through a :class:`SuperOpSession` of ``catalog``
    (``options``: its keyword arguments); returns it. Enabling again replaces the catalog."""
    so = SuperOpSession(spark, catalog, **options)    # a refused catalog changes nothing
    if enabled_session(spark) is not None:
        disable(spark)
    plain = spark.sql

    @functools.wraps(plain)
    def sql(sqlQuery: str, args: Any = None, **kwargs: Any):
        if active() or args is not None or kwargs or not isinstance(sqlQuery, str) or not is_query(sqlQuery):
            if not active():
                so.ops.counters.bump("passed_through")
            return plain(sqlQuery, args, **kwargs)
        return so.sql(sqlQuery)

    spark.sql = sql                 # the instance's attribute: this session object only
    spark.__dict__[ATTR] = so
    log.info("superop: enabled on %s with catalog %s (checksum %s)", type(spark).__name__,
             so.catalog.get("version"), so.catalog.get("checksum"))
    return so


def disable(spark) -> Optional[SuperOpSession]:
    """Restore the plain ``spark.sql``; returns the SuperOpSession that was enabled (its
    shadow comparisons finished and decision logs flushed), or None."""
    so = spark.__dict__.pop(ATTR, None)
    spark.__dict__.pop("sql", None)
    if so is not None:
        so.close()
    return so


def enable_from_conf(spark, **options: Any) -> Optional[SuperOpSession]:
    """:func:`enable` with the catalog of ``spark.superop.catalog`` (and the gate of
    ``spark.superop.gate``, first sight of ``spark.superop.certify``); None, changing nothing, when no catalog is set or
    ``spark.superop.enabled`` is false. A catalog that is set but refused raises."""
    values = confs.read_keys(spark, (confs.CATALOG, confs.GATE, confs.ENABLED, confs.CERTIFY))
    catalog = (values.get(confs.CATALOG) or "").strip()
    if not catalog or not confs.read(spark).enabled:
        return None
    for key, option, check in ((confs.GATE, "gate", confs.gate_mode), (confs.CERTIFY, "certify", confs.certify_mode)):
        if values.get(key) and option not in options:
            try:
                options[option] = check(values[key].strip())
            except ValueError as e:
                raise SuperopError(f"{key}: {e}") from None
    return enable(spark, catalog, **options)
