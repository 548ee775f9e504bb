"""Benchmarks: super-operators against stock Spark (`superop bench`)."""
