"""The tables the generated queries read, as data (NULLs, duplicates, skew, empty groups
after filters) and as Spark temp views."""
from __future__ import annotations

import uuid

from .schema import EVENTS, LOG_SCHEMA, OP_KINDS, REGIONS

def generate_tables(n_ops: int = 2000, seed: int = 11) -> dict:
    """pandas DataFrames for ops, mailbox and accounts."""
    import numpy as np
    import pandas as pd
    r = np.random.default_rng(seed)
    n_acc = max(5, n_ops // 20)
    a = r.zipf(1.6, n_ops) % n_acc
    ops = pd.DataFrame({
        "a": pd.array(a, dtype="Int32"),
        "b": pd.array(r.integers(0, 1000, n_ops), dtype="Int32"),
        "c": pd.array(r.integers(0, 1000, n_ops), dtype="Int32"),
        "d": r.choice(OP_KINDS, n_ops),
        "s": pd.array(r.integers(0, 1000, n_ops), dtype="Int32"),
    })
    for c in ("a", "b", "s"):           # NULLs in keys and measures
        ops.loc[r.random(n_ops) < 0.02, c] = pd.NA
    ops.loc[r.random(n_ops) < 0.02, "d"] = None
    ops = pd.concat([ops, ops.sample(n=max(1, n_ops // 50), random_state=seed)], ignore_index=True)
    n_mb = max(10, n_ops // 2)
    guids = [str(uuid.UUID(int=int(x))) for x in r.integers(1, 2 ** 62, max(3, n_mb // 10))]
    mailbox = pd.DataFrame({
        "mailboxguid": r.choice(guids, n_mb),
        "ts": pd.array(1_790_000_000_000 + r.integers(0, 10_000_000, n_mb), dtype="Int64"),
        "eventid": [f"e{i}" for i in range(n_mb)],
        "activityid": [f"act{x}" for x in r.integers(0, 50, n_mb)],
        "machinename": r.choice([f"host{i:02d}" for i in range(8)], n_mb),
        "eventname": r.choice(EVENTS, n_mb),
    })
    mailbox.loc[r.random(n_mb) < 0.02, "ts"] = pd.NA
    accounts = pd.DataFrame({
        "a": pd.array(np.arange(n_acc), dtype="Int32"),
        "region": r.choice(REGIONS, n_acc),
        "tier": pd.array(r.integers(1, 5, n_acc), dtype="Int32"),
    })
    return {"ops": ops, "mailbox": mailbox, "accounts": accounts}


def register_tables(spark, n_ops: int = 2000, seed: int = 11) -> dict[str, dict[str, str]]:
    """Create temp views ops / mailbox / accounts in ``spark``; returns LOG_SCHEMA."""
    for name, df in generate_tables(n_ops, seed).items():
        ddl = ", ".join(f"{c} {t}" for c, t in LOG_SCHEMA[name].items())
        spark.createDataFrame(df.astype(object).where(df.notna(), None), ddl) \
            .createOrReplaceTempView(name)
    return {k: dict(v) for k, v in LOG_SCHEMA.items()}
