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


DATASETS = [(gen_ops(s, n), gen_accounts(s, 3)) for s, n in ((1, 12), (2, 25), (3, 7))]


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
def register_views(spark):
    """register(i) makes dataset i the `ops` / `accounts` views of the session."""
    def register(i: int):
        ops, acc = DATASETS[i]
        spark.createDataFrame(ops, "a INT, b INT, c INT, d STRING, s INT").createOrReplaceTempView("ops")
        spark.createDataFrame(acc, "a INT, region STRING, tier INT").createOrReplaceTempView("accounts")
    return register
