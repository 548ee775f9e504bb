"""``superop rewrite --catalog FILE (--sql TEXT | --sql-file FILE) [--schema FILE] [--json]``

Prints the rewritten SQL, one clause per line (or, with ``--json``, an object with ``sql``
exactly as generated, ``applied``, ``changed``, ``explanation``, exchange counts and
timings). A query no rule covers is printed unchanged, byte for byte.

The benefit gate plans both queries with Spark: tables come from ``--schema`` (as empty
tables with those column types, in a private Spark session) or, without ``--schema``, from
the Spark catalog. ``--no-gate`` rewrites without Spark (no gate; output names are the
IR's, NULL types are inferred) — for inspection only.
"""
from __future__ import annotations

import json
import logging
import sys

from ..cliutil import add_json_arg, add_spark_args, add_sql_args, plain, read_sql, spark_conf
from ..errors import SuperopError
from ..ir.dialect import pretty_sql
from ..ir.lower import parse
from ..ir.schema import load_schema_arg
from ..rewrite.rewriter import Rewriter, rewrite_structural
from ..rules_out.catalog import load_catalog
from ..sparkutil import get_spark
from .session import SuperOpSession

log = logging.getLogger("superop.runtime")


def register(sub) -> None:
    import argparse

    p = sub.add_parser("rewrite", help="rewrite a Spark SQL query with a verified rule catalog",
                       description=plain(__doc__.split("\n", 2)[2]).strip(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--catalog", required=True, help="catalog.json or an MLflow URI (models:/name@alias)")
    add_sql_args(p)
    add_json_arg(p)
    p.add_argument("--compact", action="store_true",
                   help="print the rewritten SQL on one line, exactly as generated")
    p.add_argument("--no-gate", action="store_true", help="no Spark: structural rewrite without the benefit gate")
    add_spark_args(p)
    p.set_defaults(func=run)


def _empty_tables(spark, schema: dict) -> None:
    """Empty tables with the schema's types: Spark plans them like large tables (an RDD
    relation has no size estimate, so no broadcast joins), which is what the gate needs."""
    from pyspark.sql.types import StructType
    for table, cols in schema.items():
        ddl = ", ".join(f"`{c}` {t}" for c, t in cols.items())
        st = StructType.fromDDL(ddl)
        spark.createDataFrame(spark.sparkContext.emptyRDD(), st).createOrReplaceTempView(table)


def run(args) -> int:
    sql = read_sql(args)
    schema = load_schema_arg(args.schema)
    catalog = load_catalog(args.catalog)
    if args.no_gate:
        if not schema:
            raise SuperopError("--no-gate needs --schema FILE")
        res = rewrite_structural(Rewriter(catalog), sql, schema)
    else:
        parse(sql)  # a syntax error is the user's: report it instead of failing safe
        spark = get_spark(app_name="superop-rewrite", master=args.master,
                          conf=spark_conf(args)).newSession()
        if schema:
            _empty_tables(spark, schema)
        res = SuperOpSession(spark, catalog, schema=schema or None).rewrite(sql)
        if res.error:
            log.warning("rewrite failed: %s", res.error)
    if args.json:
        print(json.dumps(res.to_json(), indent=2, default=str))
    else:
        # an unchanged query exactly as given; a rewritten one for people to read (--compact:
        # exactly as generated); a trailing newline only if it has none
        text = res.sql
        if res.changed and not args.compact:
            text = pretty_sql(text)
        sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))
    return 0
