"""The structural rewrite: a query and a rule catalog in, Spark-native SQL out. No Spark,
no Z3.

``rewriter`` — lower the query, find the families' matches with the registry's one
matching path, keep a match only when a catalog rule admits it, build the family's
template program and regenerate the query around the compiled sub-plan. ``compile`` — a
super-operator program as Spark SQL that runs after one exchange.

The verifier certifies exactly this output (a certificate's emitted SQL is made here);
the runtime (``superop.runtime``) runs it behind the benefit gate.
"""
