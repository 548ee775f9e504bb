"""Calls superop makes while deciding are never decided on themselves.

After :func:`superop.runtime.enable`, ``spark.sql`` goes through the runtime — including the
``spark.sql`` calls the runtime makes to plan and analyse (``EXPLAIN COST``, a candidate's
output types) and the final call that runs the chosen SQL. A thread-local flag set while
superop works (:func:`working`) makes those calls plain ``spark.sql``.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

_STATE = threading.local()


def active() -> bool:
    """Is superop deciding or running a query in this thread?"""
    return getattr(_STATE, "depth", 0) > 0


@contextmanager
def working() -> Iterator[None]:
    _STATE.depth = getattr(_STATE, "depth", 0) + 1
    try:
        yield
    finally:
        _STATE.depth -= 1
