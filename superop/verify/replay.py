"""Replaying a counterexample outside Z3: the original SQL on Spark and the program
through the reference interpreter (``superop.synth.interpreter``), over the
counterexample's rows. A counterexample is only believed when these two really differ.

The SQL runs against a uniquely named temporary view (the table reference is re-aliased
to the original name), so replaying never shadows a view other code registered.
"""
from __future__ import annotations

import datetime
import decimal
import itertools
import math
import re
from collections import Counter
from typing import Any, Optional

from sqlglot import exp

from ..dsl import Program
from ..dsl.interpreter import run_program
from ..ir.dialect import DIALECT
from ..ir.lower import parse
from ..ir.names import TableName
from ..sparkutil import bag
from .result import Counterexample

_seq = itertools.count()


def _retarget(sql: str, table: str, view: str) -> str:
    target = TableName.parse(table).normalized()      # the table as written, maybe qualified
    tree = parse(sql)
    for t in list(tree.find_all(exp.Table)):
        try:
            name = TableName.from_table(t)
        except ValueError:
            continue
        if name.normalized() == target:
            alias = t.alias or name.name
            for k in ("catalog", "db"):
                t.set(k, None)
            t.set("this", exp.to_identifier(view))
            t.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    return tree.sql(dialect=DIALECT)


def _literal(v: Any, t: str) -> Optional[str]:
    """A Spark SQL literal of ``v`` as type ``t`` (None: not rendered here)."""
    if v is None:
        return f"CAST(NULL AS {t})"
    if isinstance(v, bool):
        s = "TRUE" if v else "FALSE"
    elif isinstance(v, int):
        s = str(v)
    elif isinstance(v, float) and math.isfinite(v):
        s = f"'{v!r}'"                        # parsed back exactly by the cast
    elif isinstance(v, decimal.Decimal) and v.is_finite():
        s = f"'{v}'"
    elif isinstance(v, str) and all(32 <= ord(ch) < 127 for ch in v):
        s = "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    elif type(v) is datetime.date:
        s = f"'{v.isoformat()}'"
    else:
        return None
    return f"CAST({s} AS {t})"


def _values_sql(cex: Counterexample) -> Optional[str]:
    """The rows as an inline typed VALUES query (None when a value is not rendered)."""
    if not cex.rows:
        return None
    rows = []
    for r in cex.rows:
        lits = [_literal(v, t) for v, t in zip(r, cex.types)]
        if any(x is None for x in lits):
            return None
        rows.append("(" + ", ".join(str(x) for x in lits) + ")")
    cols = ", ".join("`" + c.replace("`", "``") + "`" for c in cex.columns)
    return f"SELECT * FROM VALUES {', '.join(rows)} AS v({cols})"


def run_sql_on_rows(spark, sql: str, cex: Counterexample) -> list[tuple]:
    view = f"{re.sub(r'[^A-Za-z0-9_]', '_', cex.table)}__cex{next(_seq)}"
    # an inline VALUES relation needs no Python worker (createDataFrame's does): same
    # rows, same types, a fraction of the latency; createDataFrame for what it cannot say
    values = _values_sql(cex)
    if values is not None:
        spark.sql(f"CREATE OR REPLACE TEMP VIEW `{view}` AS {values}")
    else:
        spark.createDataFrame([tuple(r) for r in cex.rows], cex.ddl()).createOrReplaceTempView(view)
    try:
        return [tuple(r) for r in spark.sql(_retarget(sql, cex.table, view)).collect()]
    finally:
        spark.catalog.dropTempView(view)


def run_program_on_rows(program: Program, cex: Counterexample) -> list[tuple]:
    import pandas as pd
    df = pd.DataFrame([list(r) for r in cex.rows], columns=list(cex.columns), dtype=object)
    return run_program(program, df)


def replay(spark, sql: str, program: Program, cex: Counterexample) -> tuple[Counter, Counter]:
    """(bag of Spark's SQL output, bag of the interpreter's program output)."""
    return bag(run_sql_on_rows(spark, sql, cex)), bag(run_program_on_rows(program, cex))
