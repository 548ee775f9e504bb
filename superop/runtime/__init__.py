"""The production runtime: load a signed rule catalog, match its abstract rules on the
plan IR, generate Spark-native super-operator SQL, and apply it behind a benefit gate.

    from superop.runtime import SuperOpSession, enable, disable, enable_from_conf

Imports neither Z3 nor MLflow (MLflow only lazily for ``models:/`` catalog URIs).
"""
from ..rewrite.compile import NoNativeForm, compile_program
from .generic import run_generic
from ..rewrite.rewriter import Match, RewriteResult, Rewriter, rewrite_structural
from .session import SuperOpSession
from .enable import disable, enable, enable_from_conf, enabled_session

__all__ = ["SuperOpSession", "Rewriter", "RewriteResult", "Match", "compile_program",
           "run_generic", "NoNativeForm", "rewrite_structural", "enable", "disable",
           "enable_from_conf", "enabled_session"]
