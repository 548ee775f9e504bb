"""Fixtures of the family tests: the proof-only rule catalog (every family's template proofs,
run once) and the runtime tests' tiny tables (NULLs, duplicates, empty groups) as views."""
from __future__ import annotations

import pytest

from ..runtime.runtime_fixtures import (ACCOUNTS_ROWS, ACCOUNTS_SCHEMA, OPS_ROWS, OPS_SCHEMA, SCHEMA,
                                        values_view)


@pytest.fixture(scope="session")
def proof_catalog():
    """One rule per core skeleton of every registered family, admitting exactly what its
    verified template proofs cover (Z3 runs here); a family whose proofs the template-proof
    engine does not run yet (the pivot join) gets rules from bounded certificates of its
    proof instances instead (:func:`pending_proof_rules`)."""
    from superop.rules_out.builtin import builtin_rules
    from superop.rules_out.catalog import make_catalog
    rules = builtin_rules(per="skeleton")
    return make_catalog(rules + pending_proof_rules({r["family"] for r in rules}), version="families-fixtures")


def pending_proof_rules(proved: set[str], K: int = 3) -> list[dict]:
    """For each family with declared proof instances but no template-proof rule: per
    instance, the bounded certificate (real Z3, ``K`` rows) of the program the runtime
    builds for the instance made concrete (``pivot_instances.concrete_sql``), and a rule
    admitting exactly what that certificate covers."""
    from superop import families
    from superop.ir import lower
    from superop.rules_out.catalog import make_rule
    from superop.rules_out.coverage import certificate_covers
    from superop.verify.certificate import check_and_certify

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
