"""TPC-DS as a workload: the 99 queries (:mod:`.queries`), their substitution parameters
(:mod:`.params`), a query log with a warehouse-like execution mix (:mod:`.log`), the tables
of ``tpcgen-cli tpcds parquet`` (:mod:`.schema`, :mod:`.data`). README.md beside this file."""
from .queries import parse_query_names, queries, query_number
from .schema import TPCDS_KEYS, TPCDS_SCHEMA, register_tpcds, tpcds_schema

__all__ = ["TPCDS_KEYS", "TPCDS_SCHEMA", "tpcds_schema", "parse_query_names", "queries", "query_number",
           "register_tpcds"]
