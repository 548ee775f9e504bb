"""superop: find, prove and apply shuffle-eliminating super-operator rewrites for Spark SQL."""
__version__ = "0.1.0"
