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


def check_plans_equivalent(plan_a, plan_b, K: int = 3, timeout_ms: int = 20000) -> Result:
    from .plans import check_plans_equivalent as _check
    return _check(plan_a, plan_b, K=K, timeout_ms=timeout_ms)


# The IR encoder pieces other modules build on (plan-vs-plan checks in ``plans.py``),
# exported lazily so importing ``superop.verify`` stays z3-free. name -> (module, attribute)
_ENCODER_EXPORTS = {
    "PlanEncoder": ("encode", "PlanEncoder"), "Table": ("encode", "Table"),
    "Rel": ("encode", "Rel"), "V": ("encode", "V"), "Ctx": ("encode", "Ctx"),
    "ev": ("encode", "ev"), "is_true": ("encode", "is_true"), "fresh": ("encode", "fresh"),
    "kind_of_type": ("encode", "kind_of_type"), "not_distinct": ("encode", "not_distinct"),
    "bags_differ": ("encode", "bags_differ"), "concrete_rel": ("encode", "concrete_rel"),
    "new_solver": ("check", "_new_solver"),
}


def __getattr__(name):
    if name in _ENCODER_EXPORTS:
        import importlib
        mod, attr = _ENCODER_EXPORTS[name]
        return getattr(importlib.import_module(f"{__name__}.{mod}"), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["check_equivalence", "check_plans_equivalent", "Result", "Counterexample", "Unsupported",
           "VERIFIED", "REFUTED", "UNKNOWN", "UNSUPPORTED"]
