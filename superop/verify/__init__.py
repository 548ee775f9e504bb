"""Z3 verification of super-operator programs against SQL sub-plans.

    from superop.verify import check_equivalence, Result
    check_equivalence(sub_plan, program, K=4) -> Result(status=verified|refuted|unknown|unsupported)

Modules: ``result`` (z3-free result types), ``encode`` (IR + DSL encodings), ``check``
(bounded equivalence), ``streamability`` (Algorithms 1-3), ``inductive`` (unbounded
template proofs), ``certificate`` (JSON certificates + re-checking), ``replay``
(counterexample replay on Spark + the reference interpreter).
z3 is imported lazily so ``superop.verify.result`` stays cheap.
"""
from .result import (REFUTED, UNKNOWN, UNSUPPORTED, VERIFIED, Counterexample, Result,
                     Unsupported)


def check_equivalence(sub_plan, program, K: int = 4, timeout_ms: int = 20000) -> Result:
    from .check import check_equivalence as _check
    return _check(sub_plan, program, K=K, timeout_ms=timeout_ms)


__all__ = ["check_equivalence", "Result", "Counterexample", "Unsupported",
           "VERIFIED", "REFUTED", "UNKNOWN", "UNSUPPORTED"]
