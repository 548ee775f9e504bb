"""A catalog with everything the report shows: rules of three families (join kinds whose
symbols common fonts lack), their examples before/after with exchange counts, recurring
near-misses, a pattern not admitted and the run summary."""
from __future__ import annotations

from superop.rules_out.catalog import make_catalog, make_rule

LONG_SQL = ("SELECT o.a, o.b, o.c, o.d, o.s, g.a AS ga, g.tot FROM ops AS o JOIN (SELECT ops.a, AVG(ops.b) AS tot, "
            + ", ".join(f"SUM(ops.c * {i}) AS very_long_column_name_number_{i}" for i in range(30))
            + " FROM ops AS ops GROUP BY ops.a) AS g ON o.a = g.a")


def report_catalog() -> dict:
    dj = make_rule("DJ", join_kinds=["inner", "left", "right", "full"],
                   support={"patterns": 3, "distinct_queries": 5, "executions": 1200, "cost_share": 0.081})
    du = make_rule("DU", branches=3, support={"patterns": 1, "distinct_queries": 2, "executions": 40,
                                              "cost_share": 0.02})
    mj = make_rule("MJ", support={"patterns": 2, "distinct_queries": 3, "executions": 33, "cost_share": 0.012})
    dj["template"]["parameters"]["examples"] = [{
        "sql": "SELECT a.k, a.n, b.m FROM (SELECT k, COUNT(*) AS n FROM ops GROUP BY k) AS a LEFT JOIN "
               "(SELECT k, MAX(s) AS m FROM ops WHERE d = 'append' GROUP BY k) AS b ON a.k = b.k",
        "pseudo_code": "for each row r of ops partitioned by k:\n  n += 1\n  if r.d = 'append': m = max(m, r.s)"}]
    mj["template"]["parameters"]["examples"] = [{"sql": LONG_SQL}]
    cat = make_catalog([dj, du, mj], version="2026-01-02T03:04:05Z",
                       source={"log": "/data/logs/query_log.jsonl.gz", "window": None,
                               "content_hash": "sha256:" + "ab" * 32})
    cat["rule_examples"] = {
        dj["id"]: {"rule": dj["id"], "sql": "...", "applied": [dj["id"]], "exchanges_before": 3,
                   "exchanges_after": 1, "spark_version": "4.0.1",
                   "rewritten_sql": "SELECT k, COUNT(*) AS n, MAX(CASE WHEN d = 'append' THEN s END) AS m "
                                    "FROM ops GROUP BY k"},
        mj["id"]: {"rule": mj["id"], "sql": LONG_SQL, "applied": [], "exchanges_before": 2,
                   "spark_version": "4.0.1", "error": "not rewritten: no rule matches"}}
    cat["near_misses"] = {
        "selection": "cost: >= 2 executions and >= 0.5% of the log's summed duration", "found": 12,
        "recurring": 3, "items": [
            {"family": "MJ", "reason": "aggregate_not_min_max", "shape": "(, γ)⋈", "join_kind": "inner",
             "templates": 3, "executions": 36, "cost_share": 0.0139, "example_sql": LONG_SQL,
             "input_tables": ["ops"]},
            {"family": "DU", "reason": "different_grouping_keys", "shape": "(γ, σ|γ)∪", "join_kind": "",
             "templates": 2, "executions": 26, "cost_share": 0.011, "input_tables": ["ops"],
             "example_sql": "SELECT a, COUNT(*) AS n FROM ops GROUP BY a UNION ALL "
                            "SELECT b, COUNT(*) FROM ops WHERE c > 1 GROUP BY b"},
            {"family": "DJ", "reason": "join_on_subset_of_keys", "shape": "(σ|γ, π|γ)⟕", "join_kind": "left",
             "templates": 1, "executions": 18, "cost_share": 0.0097, "input_tables": ["ops"],
             "example_sql": "SELECT * FROM (SELECT a, b, COUNT(*) AS n FROM ops WHERE c > 3 GROUP BY a, b) AS x "
                            "LEFT JOIN (SELECT a, b, SUM(s) AS t FROM ops GROUP BY a, b) AS y ON x.a = y.a"}]}
    cat["rejected"] = [{"candidate": "DJ-1", "shape": "(σ|γ, γ)⟗", "reason": "refuted: a|b"}]
    cat["report"] = {"queries_read": 3120, "malformed": 42, "templates": 196, "candidates": 42,
                     "selection": "cost: >= 2 executions", "candidates_single_template": 30, "verified": 42,
                     "refuted": 0, "unknown": 0, "no_program": 0, "crashed": 0, "rules": 3}
    return cat
