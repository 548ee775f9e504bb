"""What a rule does to its own example, as the report shows it: the rewritten SQL and
Spark's shuffle exchanges before and after (over empty tables of the schema)."""
from __future__ import annotations

from superop.rules_out.catalog import make_catalog, make_rule
from superop.rules_out.coverage import covered_rule
from superop.rules_out.examples import rule_examples
from superop.verify.certify import check_and_certify

SCHEMA = {"rule_example_ev": {"a": "int", "b": "int", "s": "int"}, "$keys": {}}
DU = ("SELECT a, SUM(s) AS t FROM rule_example_ev WHERE b > 0 GROUP BY a "
      "UNION ALL SELECT a, COUNT(*) FROM rule_example_ev GROUP BY a")


def test_examples_before_and_after(spark):
    # the example is rewritten only where a proof covers it, as in the runtime: the nightly
    # records a member's SQL, whose bounded certificate (K >= 4) the rule carries
    cert = check_and_certify(DU, SCHEMA, K=4)
    assert cert["status"] == "verified", cert.get("reason")
    du = covered_rule("DU", [cert], rule_id="du")
    du["template"]["parameters"]["examples"] = [{"sql": DU}]
    dj = make_rule("DJ", rule_id="dj")
    dj["template"]["parameters"]["examples"] = [{"sql": "SELECT * FROM missing_table"}]
    bare = make_rule("MJ", rule_id="bare")                                  # records no example
    cat = make_catalog([du, dj, bare])
    ex = rule_examples(cat, SCHEMA, spark)
    assert set(ex) == {"du", "dj"}
    assert ex["du"]["applied"] == ["du"] and "UNION ALL" not in ex["du"]["rewritten_sql"].upper()
    assert ex["du"]["exchanges_before"] == 2 and ex["du"]["exchanges_after"] == 1
    assert ex["du"]["spark_version"] == spark.version and "error" not in ex["du"]
    # a query that cannot be rewritten or planned says why, with no numbers
    assert ex["dj"]["error"] and "exchanges_before" not in ex["dj"]
    # the caller's session is left as it was
    assert not spark.catalog.tableExists("rule_example_ev")
