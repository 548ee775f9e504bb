"""Mining <-> runtime, for DataFrame programs: a job run with Spark's event log on
(``dataframe_job.py``, in its own process) is mined from its log (physical plans,
``superop.mining.physical``), its candidate is synthesized, verified and generalized into a
catalog (the nightly job's stages), and the same job's DataFrame, built in this session,
lowers to the same sub-plan — the same lineage fingerprint — and is rewritten by that
catalog."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from superop import families
from superop.mining.fingerprint import lineage_fingerprint
from superop.mining.job import run_mining
from superop.pipeline.candidates import synthesize_candidate
from superop.pipeline.certificates import pattern_of, template_proofs
from superop.rules_out.catalog import make_catalog, write_catalog
from superop.rules_out.generalize import generalize
from superop.rules_out.signing import signing_key
from superop.runtime import SuperOpSession
from superop.runtime.dataframe import frame_of
from superop.sparkutil import bag

from .dataframe_job import LIMITS, TABLE, job
from .runtime_fixtures import SCHEMA


@pytest.fixture(scope="module")
def job_table(spark, dataframe_job_dir):
    """The job's input, in this session under the same name (spark_catalog.default.dfjob_ops)."""
    location = (dataframe_job_dir / "done").read_text()
    spark.sql(f"DROP TABLE IF EXISTS default.{TABLE}")
    spark.sql(f"CREATE TABLE default.{TABLE} USING parquet LOCATION '{location}'")
    yield spark.table(f"default.{TABLE}")
    spark.sql(f"DROP TABLE IF EXISTS default.{TABLE}")


SCHEMA_FILE = {TABLE: SCHEMA["ops"]}       # what `superop mine --schema` would say


@pytest.fixture(scope="module")
def mined(spark, dataframe_job_dir, tmp_path_factory):
    res = run_mining(dataframe_job_dir / "logs", tmp_path_factory.mktemp("mined"), spark=spark,
                     schema=SCHEMA_FILE, mlflow_run=False, progress=False, min_cost_share=0.0)
    return res.candidates.to_dict("records")


def test_the_mined_candidate_is_the_runtime_match(spark, job_table, mined):
    (cand,) = [c for c in mined if c["family"] == "DU"]
    assert (cand["templates"], cand["executions"]) == (1, len(LIMITS))
    assert cand["input_tables"] == f"spark_catalog.default.{TABLE}"
    for lim in (LIMITS[0], 11):                   # the logged literal and a new one
        plan = families.regroup(frame_of(spark, job(job_table, F, lim)).plan)
        m = families.first_match(plan, finished=True)
        assert m is not None and m.family == "DU"
        assert [lineage_fingerprint(m.root)] == list(cand["lineage_fingerprints"])


# The event log's physical plan carries the isnotnull(...) filters Spark infers: lowered to
# NOT x IS NULL, which the synthesizer and the verifier model.
def test_the_mined_catalog_rewrites_the_job(spark, job_table, mined, tmp_path):
    schema = SCHEMA_FILE
    patterns = []
    for c in mined:
        o = synthesize_candidate(c, schema, K=3, synth_timeout_s=120, verify_timeout_s=60)
        assert o.verified, (o.status, o.reason)
        patterns.append(pattern_of(o, schema, K=3, verify_timeout_s=60, min_bound=3))
    rules, rejected = generalize(patterns, template_proofs(60000))
    assert rules and not rejected, [r.reason for r in rejected]
    path = tmp_path / "catalog.json"
    write_catalog(path, make_catalog(rules, version="dataframe-job"), signer=signing_key(), signed_by="tests")
    so = SuperOpSession(spark, str(path), gate="exchanges")
    df = job(job_table, F, 4)
    out = df.transform(so.optimize)
    text = so.explain_df(df)
    assert out is not df, text
    assert text.startswith(f"superop: rewritten — applied {rules[0]['id']}")
    assert "shuffle exchanges 2 -> 1" in text
    assert bag(out.collect()) == bag(df.collect())
