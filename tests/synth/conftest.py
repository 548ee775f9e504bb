"""Fixtures of the synthesis tests: the corpus synthesized once (testing only, no Z3 —
the Z3 path has its own, smaller tests) and tiny generated tables for Spark."""
from __future__ import annotations

import random

import pandas as pd
import pytest

from superop.ir import lower
from superop.synth.corpus import CORPUS, PAPER_SCHEMA
from superop.synth.synthesizer import synthesize

OPS_COLS = ["a", "b", "c", "d", "s"]
ACC_COLS = ["a", "region", "tier"]


def gen_ops(seed: int, n: int) -> list[tuple]:
    """ops rows with colliding keys, NULLs everywhere, duplicates, values on both sides of
    the corpus' constants. Independent of the synthesizer's own generator on purpose."""
    rng = random.Random(seed)
    rows: list[tuple] = []
    for _ in range(n):
        if rows and rng.random() < 0.2:
            rows.append(rng.choice(rows))
            continue
        pick = lambda dom: None if rng.random() < 0.15 else rng.choice(dom)  # noqa: E731
        rows.append((pick([1, 2, 3]), pick([0, 1, 2, 3, 4]), pick([-1, 0, 1, 2]),
                     pick(["r", "w", "x", "a"]), pick([0, 1, 2, 3, 4, 11, 99, 100, 101])))
    return rows


def gen_accounts(seed: int, n: int) -> list[tuple]:
    rng = random.Random(seed + 1000)
    return [(rng.choice([1, 2, 3, None]), rng.choice(["eu", "us", None]), rng.choice([1, 2, None]))
            for _ in range(n)]


def _shift(rows, k):
    return [((r[0] + k) if r[0] is not None else None,) + tuple(r[1:]) for r in rows]


# One table made of three independently drawn parts whose partition keys do not overlap
# (so per-key behaviour is as if each part ran alone), with one Spark run per query:
# Spark costs seconds per query on a loaded 2-core machine.
OPS_ROWS = gen_ops(1, 12) + _shift(gen_ops(2, 25), 10) + _shift(gen_ops(3, 7), 20)
ACC_ROWS = gen_accounts(1, 3) + _shift(gen_accounts(2, 3), 10)
DATASETS = [(OPS_ROWS, ACC_ROWS)]


def frame(rows, cols) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=cols, dtype=object)


@pytest.fixture(scope="session")
def datasets():
    """[(ops rows, accounts rows), ...] and a rows -> object-typed DataFrame helper."""
    return DATASETS, frame


@pytest.fixture(scope="session")
def schema():
    return PAPER_SCHEMA


@pytest.fixture(scope="session")
def corpus_results():
    """name -> (sql, plan, SynthResult), every corpus entry synthesized without Z3."""
    out = {}
    for name, sql, _, _ in CORPUS:
        plan = lower(sql, PAPER_SCHEMA).plan
        out[name] = (sql, plan, synthesize(plan, PAPER_SCHEMA, verify=False, timeout_s=60))
    return out


@pytest.fixture(scope="session")
def spark(spark):
    """A child session of the run's Spark session (shared SparkContext, its own temporary
    views and settings): these tests register their own ``ops`` / ``accounts`` data, which
    must not replace the views the other packages' tests read in the same worker."""
    return spark.newSession()


@pytest.fixture(scope="session")
def register_views(spark):
    """register(i) makes dataset i the `ops` / `accounts` views of the session."""
    def register(i: int):
        ops, acc = DATASETS[i]
        spark.createDataFrame(ops, "a INT, b INT, c INT, d STRING, s INT").createOrReplaceTempView("ops")
        spark.createDataFrame(acc, "a INT, region STRING, tier INT").createOrReplaceTempView("accounts")
    return register
