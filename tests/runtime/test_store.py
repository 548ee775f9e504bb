"""Persisted decisions: a session that never saw a template takes the decision another
session stored beside the catalog (signed, under the full cache key) instead of planning;
a tampered, foreign or stale entry is not used. (A new process is a new session with an
empty cache and no memo of token shapes; the cross-process timing is in
benchmarks/startup_bench.py.)"""
from __future__ import annotations

import json

import pytest

from superop.rules_out.catalog import write_catalog
from superop.runtime import SuperOpSession
from superop.runtime.cache import SHAPES
from superop.sparkutil import bag

from .test_differential import DU

Q = DU["sigma"]
Q2 = Q.replace("b > 0", "b > 2")


@pytest.fixture
def catalog_file(tmp_path, catalog):
    p = tmp_path / "catalog.json"
    write_catalog(p, catalog)
    return p


def _fresh(spark, path, **kw) -> SuperOpSession:
    SHAPES.clear()              # as in a new process: no token shape seen yet
    return SuperOpSession(spark, str(path), gate="exchanges", **kw)


def test_a_new_session_takes_the_stored_decision(spark, ops, catalog_file):
    first = _fresh(spark, catalog_file)
    r1 = first.rewrite(Q)
    assert r1.changed and "plan_original_ms" in r1.timings_ms
    stored = list((catalog_file.parent / "catalog.decisions").glob("*.json"))
    assert stored and first.store.writable
    second = _fresh(spark, catalog_file)
    r2 = second.rewrite(Q2)                                   # same template, new literal
    assert r2.timings_ms.get("persisted_hit") == 1.0 and "plan_original_ms" not in r2.timings_ms
    assert r2.explanation.startswith("persisted decision: applied")
    assert r2.sql == first.rewrite(Q2).sql and r2.applied == ["du-2way"]
    assert bag(spark.sql(r2.sql).collect()) == bag(spark.sql(Q2).collect())
    rec = second.counters
    assert rec["rewritten"] == 1
    # an unchanged decision is stored too
    plain = "SELECT a, sum(s) AS t FROM ops GROUP BY a"
    first.rewrite(plain)
    r3 = _fresh(spark, catalog_file).rewrite(plain)
    assert r3.timings_ms.get("persisted_hit") == 1.0 and not r3.changed


def test_a_tampered_or_foreign_entry_is_not_used(spark, ops, catalog_file, caplog):
    _fresh(spark, catalog_file).rewrite(Q)
    for f in (catalog_file.parent / "catalog.decisions").glob("*.json"):
        doc = json.loads(f.read_text())
        if doc["decision"]["changed"]:
            doc["decision"]["render"]["pieces"][0] = "SELECT 1 AS a, 2 AS t --"   # other SQL to run
            f.write_text(json.dumps(doc))
    r = _fresh(spark, catalog_file).rewrite(Q)
    assert r.timings_ms.get("persisted_hit") is None and "plan_original_ms" in r.timings_ms
    assert "stored decision" in caplog.text and "refused" in caplog.text
    assert bag(spark.sql(r.sql).collect()) == bag(spark.sql(Q).collect())


def test_a_replaced_view_misses(spark, ops, catalog_file):
    _fresh(spark, catalog_file).rewrite(Q)
    spark.sql("CREATE OR REPLACE TEMP VIEW ops_s AS SELECT * FROM ops")
    q = Q.replace("FROM ops", "FROM ops_s")
    _fresh(spark, catalog_file).rewrite(q)
    assert _fresh(spark, catalog_file).rewrite(q).timings_ms.get("persisted_hit") == 1.0
    spark.sql("CREATE OR REPLACE TEMP VIEW ops_s AS SELECT * FROM ops WHERE a IS NOT NULL")
    assert _fresh(spark, catalog_file).rewrite(q).timings_ms.get("persisted_hit") is None


def test_without_a_trusted_signing_key_the_store_is_read_only(spark, ops, catalog_file, tmp_path, monkeypatch):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    _fresh(spark, catalog_file).rewrite(Q)
    key = tmp_path / "stranger.pem"
    key.write_bytes(Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    monkeypatch.setenv("SUPEROP_SIGNING_KEY", str(key))       # a key nobody here trusts
    so = _fresh(spark, catalog_file)
    assert not so.store.writable
    assert so.rewrite(Q2).timings_ms.get("persisted_hit") == 1.0       # reading still works
    n = len(list((catalog_file.parent / "catalog.decisions").glob("*.json")))
    so.rewrite("SELECT a, max(s) AS m FROM ops GROUP BY a")
    assert len(list((catalog_file.parent / "catalog.decisions").glob("*.json"))) == n
    assert _fresh(spark, catalog_file, decision_store=False).store is None
