"""Fixtures of the family tests: the proof-only rule catalog (every family's template proofs,
run once) and the runtime tests' tiny tables (NULLs, duplicates, empty groups) as views."""
from __future__ import annotations

import pytest

from ..runtime.runtime_fixtures import ACCOUNTS_ROWS, ACCOUNTS_SCHEMA, OPS_ROWS, OPS_SCHEMA, SCHEMA, values_view


@pytest.fixture(scope="session")
def proof_catalog():
    """One rule per core skeleton of every registered family, admitting exactly what its
    verified template proofs cover (Z3 runs here); a family whose proofs the template-proof
    engine does not run yet (the pivot join) gets rules from bounded certificates of its
    proof instances instead (:func:`pending_proof_rules`); a family with neither (GA, NB)
    gets the rules the nightly's generalization makes of its fixture entries' bounded
    certificates (:func:`bounded_rules`; each admits exactly the instances certified)."""
    from superop.rules_out.builtin import builtin_rules
    from superop.rules_out.catalog import make_catalog
    rules = builtin_rules(per="skeleton")
    proved = {r["family"] for r in rules}
    pending = pending_proof_rules(proved)
    covered = proved | {r["family"] for r in pending}
    return make_catalog(rules + pending + bounded_rules(covered), version="families-fixtures")


def bounded_rules(skip_families=(), sqls=None, schema=None, K: int = 3, only_verified: bool = False) -> list[dict]:
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

    from .fixtures import all_entries
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


def pending_proof_rules(proved: set[str], K: int = 3) -> list[dict]:
    """For each family with declared proof instances but no template-proof rule: per
    instance, the bounded certificate (real Z3, ``K`` rows) of the program the runtime
    builds for the instance made concrete (``pivot_instances.concrete_sql``), and a rule
    admitting exactly what that certificate covers."""
    from superop import families
    from superop.ir import lower
    from superop.rules_out.catalog import make_rule
    from superop.rules_out.coverage import certificate_covers
    from superop.verify.certify import check_and_certify

    from .pivot_instances import concrete_sql
    out = []
    for fam in families.REGISTRY:
        if fam.name in proved:
            continue
        for inst in fam.proof_instances():
            sql = concrete_sql(inst)
            m = families.first_match(lower(sql, inst.schema).plan, finished=True)
            assert m is not None and m.program is not None, inst.name
            cert = check_and_certify(sql, inst.schema, m.program, K=K)
            assert cert["status"] == "verified", (inst.name, cert.get("reason"))
            covers, why = certificate_covers(cert)
            assert covers is not None, why
            cert["covers"] = covers.to_json()
            kind = covers.join_kinds[0]
            out.append(make_rule(fam.name, rule_id=fam.rule_id(fam.skeleton(covers)), join_kinds=[kind],
                                 branches=covers.branches, edges=covers.edges, aggregates=covers.aggregates,
                                 admits=[covers], certificates=[cert], proof="bounded"))
    return out


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
