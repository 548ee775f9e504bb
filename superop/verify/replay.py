"""Replaying a counterexample outside Z3: the original SQL on Spark and the program
through the reference interpreter (``superop.synth.interpreter``), over the
counterexample's rows. A counterexample is only believed when these two really differ.

The SQL runs against a uniquely named temporary view (the table reference is re-aliased
to the original name), so replaying never shadows a view other code registered.
"""
from __future__ import annotations

import itertools
import re
from collections import Counter

from sqlglot import exp

from ..ir.dialect import DIALECT
from ..synth.dsl import Program
from .result import Counterexample

_seq = itertools.count()


def _retarget(sql: str, table: str, view: str) -> str:
    from ..ir.lower import parse
    from ..ir.names import TableName
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


def run_sql_on_rows(spark, sql: str, cex: Counterexample) -> list[tuple]:
    view = f"{re.sub(r'[^A-Za-z0-9_]', '_', cex.table)}__cex{next(_seq)}"
    df = spark.createDataFrame([tuple(r) for r in cex.rows], cex.ddl())
    df.createOrReplaceTempView(view)
    try:
        return [tuple(r) for r in spark.sql(_retarget(sql, cex.table, view)).collect()]
    finally:
        spark.catalog.dropTempView(view)


def run_program_on_rows(program: Program, cex: Counterexample) -> list[tuple]:
    import pandas as pd
    from ..synth.interpreter import run_program
    df = pd.DataFrame([list(r) for r in cex.rows], columns=list(cex.columns), dtype=object)
    return run_program(program, df)


def replay(spark, sql: str, program: Program, cex: Counterexample) -> tuple[Counter, Counter]:
    """(bag of Spark's SQL output, bag of the interpreter's program output)."""
    from ..sparkutil import bag
    return bag(run_sql_on_rows(spark, sql, cex)), bag(run_program_on_rows(program, cex))
