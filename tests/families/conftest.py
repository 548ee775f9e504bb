"""Fixtures of the family tests: the proof-only rule catalog (every family's template proofs,
run once), the runtime tests' tiny tables (NULLs, duplicates, empty groups) as views, and the
DataFrame twins' sessions and reference rows."""
from __future__ import annotations

from collections import Counter

import pytest

from ..fixtures.families.dataframes import NONDETERMINISTIC, TWINS, Api
from ..shared_fixtures import computed_once
from ..runtime.runtime_fixtures import (ACCOUNTS_ROWS, ACCOUNTS_SCHEMA, OPS_ROWS, OPS_SCHEMA, SCHEMA, connect_session,
                                        values_view)
from .fixtures import all_entries
from .twins_kit import bags


@pytest.fixture(scope="session")
def proof_catalog(template_certificates):
    """One rule per core skeleton of every registered family, admitting exactly what its
    verified template proofs cover (the run's template proofs): every family has unbounded
    proofs, so the fixtures' rewrites are covered by them alone."""
    from superop.rules_out.builtin import builtin_rules
    from superop.rules_out.catalog import make_catalog
    return make_catalog(builtin_rules(per="skeleton", certificates=template_certificates), version="families-fixtures")


def bounded_rules(skip_families=(), sqls=None, schema=None, K: int = 4, only_verified: bool = False) -> list[dict]:
    """Rules from bounded certificates (K rows) of the queries ``sqls`` (default: the
    fixture entries the runtime must rewrite), for the families not in ``skip_families``:
    the runtime-template certificate (``check_and_certify``: the program the runtime builds
    in place of the match, its source as the query computes it), generalized as the nightly
    job does (each rule admits exactly the instances certified). ``only_verified``: skip
    the queries without a verified certificate instead of failing."""
    from superop import families
    from superop.ir import lower, shape
    from superop.rules_out.generalize import Pattern, generalize
    from superop.verify.certify import check_and_certify

    schema = schema or SCHEMA
    if sqls is None:
        sqls = [e.sql for e in all_entries() if e.runtime != "unchanged"]
    patterns = []
    for i, sql in enumerate(sqls):
        m = families.first_match(lower(sql, schema).plan, finished=True)
        if m is None or m.family in skip_families or m.program is None:
            continue
        # the runtime-template certificate: the program the runtime builds, in place of the
        # match inside the whole query (what trust on load accepts)
        cert = check_and_certify(sql, schema, K=K, timeout_ms=60000)
        if only_verified and cert["status"] != "verified":
            continue        # e.g. a sub-plan over two tables: no runtime-template certificate
        assert cert["status"] == "verified", (sql, cert.get("reason"))
        pt = families.get(m.family).point(m)
        patterns.append(Pattern(
            candidate_id=f"q{i}", family=m.family, shape=shape(m.root), sql=sql, edges=[list(x) for x in pt.edges],
            join_kind=m.join_kind, join_kinds=list(pt.join_kinds), branches=pt.branches,
            aggregates=list(pt.aggregates), variant=pt.variant, memory=m.program.memory,
            program=m.program.to_json(), certificate=cert))
    rules, rejected = generalize(patterns)
    assert not rejected, [(x.pattern.candidate_id, x.reason) for x in rejected]
    return rules


@pytest.fixture(scope="session")
def tables(spark):
    values_view(spark, "ops", OPS_SCHEMA, OPS_ROWS)
    values_view(spark, "accounts", ACCOUNTS_SCHEMA, ACCOUNTS_ROWS)
    return SCHEMA


@pytest.fixture(scope="session")
def ops_empty(spark, tables, tmp_path_factory):
    """``ops_empty``: ops's columns, no rows, read from parquet so that Spark cannot prove
    it empty (an empty VALUES view is folded away with every exchange above it)."""
    path = str(tmp_path_factory.mktemp("ops_empty") / "ops_empty")
    spark.table("ops").limit(0).write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("ops_empty")
    return dict(SCHEMA, ops_empty=SCHEMA["ops"])


# -- the DataFrame twins' sessions and reference rows (test_dataframe_twins*.py) -----------
@pytest.fixture(scope="module")
def classic(spark, tables):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    return spark, Api(spark.table("ops"), spark.table("accounts"), F, Window)


@pytest.fixture(scope="module")
def connect(connect_url):
    pytest.importorskip("grpc")
    from pyspark.sql.connect import functions as F
    from pyspark.sql.connect.window import Window

    c = connect_session(connect_url)
    yield c, Api(c.table("ops"), c.table("accounts"), F, Window)
    c.stop()


@pytest.fixture(scope="module")
def twin_catalog(proof_catalog):
    """The families' template-proof rules (every family has unbounded proofs), signed for
    this process: a catalog the runtime trusts."""
    from superop.rules_out.signing import sign_catalog, signing_key
    return sign_catalog(proof_catalog, signing_key(), "tests (fresh proofs)")


@pytest.fixture(scope="session")
def entry_bags(spark, tables, tmp_path_factory) -> dict:
    """Every fixture entry's rows (``twins_kit.json_bag``), by ``Entry.id``, on the tables of
    ``tables`` (NULLs, duplicates, empty groups), before any rewrite: computed once per run
    (whichever worker asks first), the reference of the entries' rewrites and of the drop-in
    (``test_fixtures.py``) and of the DataFrame twins (``test_dataframe_twins.py``)."""
    from pyspark.sql import functions as F

    def make():
        return {k: dict(b) for k, b in bags({e.id: spark.sql(e.sql) for e in all_entries()}, F).items()}
    return {k: Counter(b) for k, b in computed_once(tmp_path_factory, "entry_bags", make).items()}


@pytest.fixture(scope="module")
def twin_bags(classic, tmp_path_factory) -> dict:
    """The bag of rows of every deterministic twin on the classic session (once per run):
    the reference for its SQL entry and for the rewrites on both session kinds (their
    tables hold the same rows)."""
    _, api = classic

    def make():
        frames = {e.name: TWINS[e.name](api) for e in all_entries() if e.name not in NONDETERMINISTIC}
        return {n: dict(b) for n, b in bags(frames, api.F).items()}
    return {n: Counter(b) for n, b in computed_once(tmp_path_factory, "twin_bags", make).items()}
