"""What each rule of a catalog does to its own example: the rewritten SQL and the shuffle
exchanges of Spark's physical plans before and after (the report's before/after pictures).

The example is the first one the rule records (``template.parameters.examples``); it is
rewritten by the structural rewriter (``superop rewrite --no-gate``: every admitted match,
no benefit gate) and both queries are planned by Spark over EMPTY tables of the log's
schema in a private session: an empty RDD relation has no size estimate, so Spark plans
it like a large table (no broadcast joins) — the plan a warehouse-sized table gets. A
query that does not plan (an example over a source read as one table, a table missing
from the schema) records the error instead of numbers.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Optional

from ..explain import explain_text, parse_explain
from ..rewrite.rewriter import Rewriter, rewrite_structural
from ..sparkutil import empty_tables


@dataclass(frozen=True)
class RuleExample:
    """One rule's example before and after: ``exchanges_*`` are the shuffle exchanges of
    Spark's physical plans (None when a plan could not be made; ``error`` says why)."""
    rule: str
    sql: str
    rewritten_sql: Optional[str]
    applied: list[str]
    exchanges_before: Optional[int]
    exchanges_after: Optional[int]
    spark_version: str
    error: Optional[str] = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def first_example(rule: dict) -> Optional[str]:
    ex = (rule.get("template", {}).get("parameters") or {}).get("examples") or []
    return ex[0].get("sql") if ex and ex[0].get("sql") else None


def _exchanges(spark, sql: str) -> int:
    return parse_explain(explain_text(spark, sql)).exchanges


def rule_example(rw: Rewriter, rule: dict, schema: dict, spark) -> Optional[RuleExample]:
    """The before/after of one rule's first example (None: the rule records no example)."""
    sql = first_example(rule)
    if sql is None:
        return None
    out: dict[str, Any] = dict(rule=rule["id"], sql=sql, rewritten_sql=None, applied=[],
                               exchanges_before=None, exchanges_after=None, spark_version=spark.version)
    try:
        res = rewrite_structural(rw, sql, schema)
        if res.changed:
            out.update(rewritten_sql=res.sql, applied=list(res.applied))
        out["exchanges_before"] = _exchanges(spark, sql)
        if res.changed:
            out["exchanges_after"] = _exchanges(spark, res.sql)
        else:
            out["error"] = f"not rewritten: {res.explanation}"[:300]
    except Exception as e:  # one example never stops the report
        out["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
    return RuleExample(**out)


def rule_examples(catalog: dict, schema: dict, spark) -> dict[str, dict]:
    """Rule id -> :class:`RuleExample` JSON, for every rule that records an example. The
    tables are empty temp views of ``schema`` in a new session of ``spark`` (the caller's
    session is left as it was)."""
    session = spark.newSession()
    try:
        empty_tables(session, schema)
        rw = Rewriter(catalog)
    except Exception as e:  # the report's evidence never stops the job: each example says why
        why = f"the schema's tables could not be made: {type(e).__name__}: {e}"[:300]
        return {r["id"]: RuleExample(r["id"], sql, None, [], None, None, spark.version, why).to_json()
                for r in catalog.get("rules") or [] if (sql := first_example(r)) is not None}
    out = {}
    for rule in catalog.get("rules") or []:
        ex = rule_example(rw, rule, schema, session)
        if ex is not None:
            out[rule["id"]] = ex.to_json()
    return out
