"""The tables a generated log reads (the paper's example tables; docs/DEVELOPING.md) and
the vocabularies of its literals."""
from __future__ import annotations

from .. import tpch

LOG_SCHEMA: dict[str, dict[str, str]] = {
    "ops": {"a": "int", "b": "int", "c": "int", "d": "string", "s": "int"},
    "mailbox": {"mailboxguid": "string", "ts": "bigint", "eventid": "string",
                "activityid": "string", "machinename": "string", "eventname": "string"},
    "accounts": {"a": "int", "region": "string", "tier": "int"},
}

NUMERIC = ("int", "bigint", "double", "float", "smallint", "tinyint")

OP_KINDS = ["read", "write", "delete", "list", "copy", "stat", "append", "rename"]
EVENTS = ["Created", "Deleted", "Moved", "Read", "Flagged", "Archived", "Synced", "Purged"]
REGIONS = ["us", "eu", "apac", "latam", "mea", "cn"]


def mining_schema() -> dict[str, dict[str, str]]:
    """Schema of every table a generated log may reference (LOG_SCHEMA + TPC-H if present)."""
    out = {k: dict(v) for k, v in LOG_SCHEMA.items()}
    try:
        out.update({k.lower(): {c.lower(): t for c, t in v.items()}
                    for k, v in getattr(tpch, "TPCH_SCHEMA", {}).items()})
    except Exception:  # pragma: no cover - tpch module absent or broken
        pass
    return out
