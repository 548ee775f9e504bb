"""Certificate assembly for the nightly job: the bounded certificate of every instance a
verified pattern was seen in (about the program the runtime builds for it, at the bound
synthesis verified at, lower only after a Z3 timeout), the generalization stage's pattern
carrying them, and the unbounded template proofs a rule's members need
(``Family.proofs_for``).

A bounded certificate is about ONE instance (``superop.families.identity``: the match
alone, canonical); the runtime applies a match only under a proof of its own instance. So
the job certifies the candidate's instance in every template it saw (mining records them:
``candidates.parquet`` → ``instances``), not only the example's, with the column types
Spark gives the instance's output and source (:func:`spark_types`): the runtime compiles
an instance a certificate covers with those types, so what it runs is what was checked.
"""
from __future__ import annotations

import json
import logging
from typing import Any, Callable, Optional

from .. import families
from ..families import Side
from ..families.coverage import cover_bound
from ..families.identity import instance_of_sql
from ..families.parametric import parametric_of
from ..ir.parameters import VALUE_PLACEHOLDER
from ..rewrite.proofs import parametric_covers
from ..rules_out.generalize import Pattern
from ..verify.certify import check_and_certify, prove_and_certify
from .candidates import MIN_BOUND, bounds, timed_out
from .records import Outcome

log = logging.getLogger(__name__)

# (instance SQL, its schema) -> (output column types, source column types) as Spark gives them
Types = Callable[[str, dict], tuple[Optional[list], Optional[dict]]]


def spark_types(spark: Any) -> Types:
    """Spark's types of an instance's output and of its one source table's columns: the
    instance's tables as empty temp views of a private session, the instance analyzed."""
    def types(sql: str, schema: dict) -> tuple[Optional[list], Optional[dict]]:
        tables = {t: cols for t, cols in schema.items() if not t.startswith("$")}
        try:
            sess = spark.newSession()
            for t, cols in tables.items():
                ddl = ", ".join(f"`{c}` {ty}" for c, ty in cols.items())
                sess.createDataFrame([], ddl).createOrReplaceTempView(t)
            # a sub-query's value parameter is bound to NULL: it is only ever a comparison
            # operand (superop.ir.subqueries), so no output column's type depends on it
            values = {m.group(0)[1:]: None for m in VALUE_PLACEHOLDER.finditer(sql)}
            out = [f.dataType.simpleString() for f in sess.sql(sql, args=values or None).schema.fields]
        except Exception as e:  # types are what the certificate records; unknown: none
            log.info("no Spark types for an instance: %s", str(e).splitlines()[0] if str(e) else e)
            return None, None
        return out, (dict(next(iter(tables.values()))) if len(tables) == 1 else None)
    return types


def bounded_certificate(o: Outcome, schema: dict, K: int, verify_timeout_s: float,
                        min_bound: int = MIN_BOUND, types: Optional[Types] = None,
                        parametric_timeout_s: Optional[float] = None,
                        made: Optional[dict[str, dict]] = None) -> Optional[dict]:
    """The bounded certificate of one verified pattern's own instance: about the program
    the RUNTIME builds for it (``build_program`` of the matched diamond) at the bound the
    synthesis stage verified at, at most K (lower, down to ``min_bound``, only after a Z3
    timeout), with how the SQL the runtime emits is covered (``emitted_sql``). The
    synthesizer's program and its verification stay in synthesis.json as the synthesis
    stage's evidence; they are not the certificate."""
    if not o.verified:
        return None
    sql, sch = (o.sql, o.schema) if o.schema else (o.example_sql or o.sql, schema)
    return certify_instance(sql, sch, certificate_bound(o, K), verify_timeout_s, min_bound, types, o.candidate, made,
                            parametric_timeout_s)


def certificate_bound(o: Outcome, K: int) -> int:
    """At most the bound the synthesis stage verified at; lower only after a Z3 timeout —
    except where that bound is below the runtime's cover bound: a certificate there covers
    nothing (every session would prove the instance again on first sight), so the job's K
    is tried again, the parametric form with its own, longer limit (synthesis' timeout may
    only mean the machine was busy)."""
    synthesized = int((o.verifier or {}).get("K") or K)
    return K if synthesized < cover_bound() <= K else min(K, synthesized)


def certify_instance(sql: str, schema: dict, K: int, verify_timeout_s: float, min_bound: int = MIN_BOUND,
                     types: Optional[Types] = None, what: str = "",
                     made: Optional[dict[str, dict]] = None,
                     parametric_timeout_s: Optional[float] = None) -> Optional[dict]:
    """The certificate of the instance of ``sql``'s match at K rows, lower only after a Z3
    timeout (None when the runtime would not rewrite it): of the instance's parametric form
    (``superop.families.parametric``: one certificate for every literal value) when it is
    verified and binds back to this instance, else of the instance itself. The parametric
    form is checked at K only, and only when K reaches the runtime's cover bound (below it a
    certificate covers nothing), within ``parametric_timeout_s`` (default: the instance's
    limit) — it is worth more time, as it covers every instance of the form. ``made``: the
    parametric certificates already made in this run, by instance key (reused, refusals
    included)."""
    try:
        inst = instance_of_sql(sql, schema)
    except ValueError as e:   # e.g. the template refuses the pattern: nothing the runtime would run
        log.warning("no certificate for %s: %s", what, e)
        return None
    # Spark's types of the CANONICAL instance, the one certified: a recorded instance may
    # list its columns in another order, and types read from it would be cast onto the
    # wrong columns of the SQL the runtime compiles
    out_types, in_types = types(inst.sql, inst.schema) if types is not None else (None, None)
    par = parametric_of(inst) if K >= cover_bound() else None
    if par is not None:
        made = {} if made is None else made
        if par.instance.key not in made:
            made[par.instance.key] = _certify(par.instance.sql, par.instance.schema, K,
                                              parametric_timeout_s or verify_timeout_s, K,
                                              out_types, in_types, what)
        cert = made[par.instance.key]
        if cert is not None and cert.get("status") == "verified" and parametric_covers(cert, inst):
            return cert
    return _certify(sql, schema, K, verify_timeout_s, min_bound, out_types, in_types, what)


def _certify(sql: str, schema: dict, K: int, verify_timeout_s: float, min_bound: int,
             out_types: Optional[list], in_types: Optional[dict], what: str) -> Optional[dict]:
    cert = None
    for k in bounds(K, min_bound):
        try:
            cert = check_and_certify(sql, schema, K=k, timeout_ms=int(verify_timeout_s * 1000),
                                     output_types=out_types, input_types=in_types)
        except Exception as e:  # e.g. the template refuses the pattern: nothing the runtime would run
            log.warning("no certificate for %s: %s", what, e)
            return None
        if not timed_out(cert):
            return cert
    return cert


def instance_certificates(o: Outcome, K: int, verify_timeout_s: float, min_bound: int = MIN_BOUND,
                          types: Optional[Types] = None, skip: Optional[str] = None,
                          parametric_timeout_s: Optional[float] = None,
                          made: Optional[dict[str, dict]] = None) -> list[dict]:
    """The certificates of the pattern's instance in every template mining saw it in
    (``Outcome.instances``), but the one ``skip`` (the pattern's own); the verified ones."""
    out, seen = [], {skip}
    made = {} if made is None else made
    for text in o.instances:
        try:
            inst = json.loads(text)
        except ValueError:
            continue
        cert = certify_instance(inst["sql"], inst["schema"], certificate_bound(o, K), verify_timeout_s, min_bound,
                                types, o.candidate, made, parametric_timeout_s)
        if cert is None or cert.get("instance") in seen:
            continue
        seen.add(cert.get("instance"))
        if cert.get("status") == "verified":
            out.append(cert)
        else:
            log.warning("the instance of %s in one template is %s: %s", o.candidate, cert.get("status"),
                        str(cert.get("reason") or "")[:200])
    return out


def pattern_of(o: Outcome, schema: dict, K: int, verify_timeout_s: float,
               min_bound: int = MIN_BOUND, types: Optional[Types] = None,
               parametric_timeout_s: Optional[float] = None,
               made: Optional[dict[str, dict]] = None) -> Optional[Pattern]:
    """The generalization stage's pattern of one verified outcome, with its certificates
    (None for an outcome that is not verified or has no recorded point). ``made``: the
    parametric certificates of this run so far (one proof serves every pattern whose
    instances share a parametric form)."""
    if not o.verified or o.edges is None or o.support is None:
        return None
    made = {} if made is None else made
    cert = bounded_certificate(o, schema, K, verify_timeout_s, min_bound, types, parametric_timeout_s, made)
    more = instance_certificates(o, K, verify_timeout_s, min_bound, types, (cert or {}).get("instance"),
                                 parametric_timeout_s, made) if cert else []
    return Pattern(
        candidate_id=o.candidate, family=o.family, shape=o.shape, sql=o.sql,
        edges=o.edges, edges_written=o.edges_written, join_kind=o.join_kind,
        branches=o.branches, agg_side=Side(o.agg_side) if o.agg_side else None,
        aggregates=o.aggregates, variant=o.variant, premises=list(o.premises), memory=o.memory or "streaming",
        program=o.program, pseudo_code=o.pseudo_code, certificate=cert, instance_certificates=more,
        distinct_queries=o.support.templates, executions=o.support.executions,
        cost_share=o.support.cost_share, template_ids=o.template_ids)


def template_proofs(timeout_ms: int = 20000):
    """Unbounded (inductive) proofs of the template instances a rule's members need (the
    family says which: ``Family.proofs_for``), each certificate with what its instance
    covers."""
    def proofs(skeleton: tuple, members: list) -> list[dict]:
        fam = families.get(skeleton[0])
        aggs = sorted({a for m in members for a in m.aggregates})
        out = []
        for inst in fam.proofs_for(skeleton, aggs):
            try:
                out.append(prove_and_certify(inst, timeout_ms=timeout_ms))
            except Exception as e:  # a failing proof means "bounded only", never "verified"
                log.warning("template proof %s failed: %s", inst.name, e)
                return []
        return out
    return proofs
