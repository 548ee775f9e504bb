"""Per-template analysis that runs inside Spark workers (mapInPandas): lower one example of
each template to the IR, fingerprint every sub-plan, detect candidates and near-misses.

Output rows (ANALYSIS_DDL) are of three kinds: ``status`` (one per template: lowered or the
reason it was skipped), ``subplan`` (one per distinct sub-plan fingerprint in the template)
and ``finding`` (one per candidate / near-miss found in the template).
"""
from __future__ import annotations

import json
from typing import Iterator, Optional

import pandas as pd

from ..errors import SuperopError
from ..families import Match
from ..families.identity import instance_of
from ..ir import Rename, Scan, lower, shape, to_sql, walk
from .detect import detect, detect_with_matches
from .fingerprint import Fingerprinter, LineageFingerprinter
from .physical import PLAN_MARKER, lower_physical
from .logframe import typed_frame

ANALYSIS_COLUMNS = [
    ("template_id", "string"), ("row_kind", "string"), ("status", "string"),
    ("reason", "string"), ("fingerprint", "string"), ("op", "string"), ("shape", "string"),
    ("shape_counts", "string"), ("family", "string"), ("join_kind", "string"),
    ("n_inputs", "int"), ("agg", "string"), ("inputs", "string"), ("example_sql", "string"),
    ("plan_nodes", "int"), ("example_shape", "string"), ("premises", "string"),
    ("instance", "string"), ("lineage", "string"),
]
ANALYSIS_DDL = ", ".join(f"{c} {t}" for c, t in ANALYSIS_COLUMNS)

SUBPLAN_OPS = ("Aggregate", "Join", "UnionAll", "Window", "Sort", "Limit", "Select", "Project",
               "Rename")


def _reason_of_sql_error(msg: str) -> str:
    m = msg.lower()
    if "unknown table" in m:
        return "unknown_table"
    if "cannot parse" in m:
        return "parse_error"
    if "not a query" in m:
        return "not_a_query"
    if "expected one sql statement" in m:
        return "multiple_statements"
    if "resolve" in m or "column" in m:
        return "unresolved_column"
    return "sql_error"


def analyze_template(template_id: str, sql: str, schema: dict) -> list[dict]:

    base = {c: None for c, _ in ANALYSIS_COLUMNS}
    base["template_id"] = template_id
    try:
        if sql.startswith(PLAN_MARKER):     # a DataFrame execution: its physical plan
            low = lower_physical(sql[len(PLAN_MARKER):], schema)
        else:
            low = lower(sql, schema)
    except SuperopError as e:
        return [dict(base, row_kind="status", status="skipped",
                     reason=_reason_of_sql_error(str(e)))]
    except RecursionError:
        return [dict(base, row_kind="status", status="skipped", reason="too_deep")]
    except Exception as e:  # a bug in lowering must not kill the job: count it
        return [dict(base, row_kind="status", status="skipped",
                     reason=f"lowering_failed:{type(e).__name__}")]
    plan = low.plan
    nodes = list(walk(plan))
    out = [dict(base, row_kind="status", status="ok",
                reason="" if low.fully_lowered else "partly_opaque", plan_nodes=len(nodes))]
    fp = Fingerprinter()
    lineage = LineageFingerprinter()
    seen = set()
    for n in nodes:
        if isinstance(n, Scan) or (isinstance(n, Rename) and n.is_identity()):
            continue
        if n.op not in SUBPLAN_OPS:
            continue
        f = fp(n)
        if f in seen:
            continue
        seen.add(f)
        try:
            sh = shape(n)
        except Exception:
            sh = ""
        out.append(dict(base, row_kind="subplan", fingerprint=f, op=n.op, shape=sh,
                        plan_nodes=sum(1 for _ in walk(n))))
    try:
        findings = detect_with_matches(plan)
    except Exception as e:
        out[0]["reason"] = f"detection_failed:{type(e).__name__}"
        findings = []
    for f, m in findings:
        try:
            example = to_sql(f.root)
            # to_sql folds σ/π/ρ into SELECT blocks: record the shape the example re-lowers to
            again = [g for g in detect(lower(example, schema).plan) if g.family == f.family]
            example_shape = again[0].shape if again else ""
        except Exception:  # keep the finding; the next stage cannot re-lower it
            example, example_shape = "", ""
        out.append(dict(base, row_kind="finding", status=f.status.value, reason=f.reason,
                        fingerprint=fp(f.root), op=f.root.op, shape=f.shape,
                        shape_counts=f.shape_counts, family=f.family, join_kind=f.join_kind,
                        n_inputs=f.n_inputs, agg=f.agg, inputs=",".join(f.inputs),
                        example_sql=example, plan_nodes=sum(1 for _ in walk(f.root)),
                        example_shape=example_shape, premises=f.premises, instance=_instance(m),
                        lineage=lineage(f.root)))
    return out


def _instance(m) -> Optional[str]:
    """A candidate's instance in this template (the match alone, canonical:
    ``superop.families.identity``) as JSON — what the nightly job certifies per template."""
    if not isinstance(m, Match):
        return None
    try:
        inst = instance_of(m)
    except Exception:  # an instance that cannot be canonicalized is certified by its example only
        return None
    return None if inst is None else json.dumps({"sql": inst.sql, "schema": inst.schema}, sort_keys=True)


def make_mapper(schema: dict):
    schema_json = json.dumps(schema)

    def mapper(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        sch = json.loads(schema_json)
        for pdf in batches:
            rows = []
            for tid, sql in zip(pdf["template_id"], pdf["example"]):
                rows.extend(analyze_template(tid, sql, sch))
            yield typed_frame(rows, ANALYSIS_COLUMNS)
    return mapper
