"""The generic executor: any verified program on Spark, for programs the compiler has no
native SQL form for (``superop.rewrite.compile.NoNativeForm``).

One exchange (repartition by the program's keys), a sort within partitions, then the
reference interpreter (``superop.dsl.interpreter``) per partition in ``mapInPandas``.
Executors need superop and pandas.
"""
from __future__ import annotations

from ..dsl import Program
from ..dsl.interpreter import run_program
from ..rewrite.compile import NoNativeForm


def run_generic(spark, program: Program, source_df, output_schema):
    """Run any verified program on Spark: one exchange (repartition by the keys), sort
    within partitions (keys, then the program's sort), then the reference interpreter
    per partition in ``mapInPandas``. ``output_schema`` is a StructType or DDL string."""
    keys = list(program.keys)
    if not keys:
        raise NoNativeForm("a program without partition keys")
    order = keys + [k.column for k in program.sort]
    df = source_df.repartition(*keys).sortWithinPartitions(*order)
    prog_json = program.to_json()
    columns = list(source_df.columns)

    def run(batches):
        import pandas as pd     # on the executor (the runtime-only install has no pandas)
        prog = Program.from_json(prog_json)
        parts = list(batches)
        if not parts:
            return
        pdf = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
        if len(pdf) == 0:
            return
        pdf = pdf[columns]
        rows = run_program(prog, pdf)  # partitions of the program = equal keys inside this batch
        out = pd.DataFrame.from_records(rows, columns=list(prog.output)) if rows else \
            pd.DataFrame({c: pd.Series([], dtype=object) for c in prog.output})
        yield out

    return df.mapInPandas(run, schema=output_schema)
