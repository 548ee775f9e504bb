"""Z3 verification of super-operator programs against SQL sub-plans.

    from superop.verify import check_equivalence, Result
    check_equivalence(sub_plan, program, K=4) -> Result(status=verified|refuted|unknown|unsupported)

Modules: ``result`` (z3-free result types), the encodings — ``values`` (one SQL value,
3-valued logic), ``exprs`` (expressions with NULL and ANSI error semantics, encoding
settings, uninterpreted functions), ``folds`` (aggregates as folds), ``relations`` (bags,
the symbolic table), ``plan_encoder`` (the plan IR), ``program_encoder`` (the DSL),
``bags`` (comparing outcomes) — then ``check`` (bounded equivalence), ``emitted`` (the
SQL the runtime emits), ``streamability`` (Algorithms 1-3), ``instances`` (symbolic
instances, z3-free), ``template_proofs`` (unbounded proofs of the template programs),
``certificate`` (JSON certificates + re-checking), ``replay`` (counterexample replay on
Spark + the reference interpreter). z3 is imported lazily so ``import superop.verify``
stays cheap; the encoder's public names are importable from here.
"""
from .result import (REFUTED, UNKNOWN, UNSUPPORTED, VERIFIED, Counterexample, Result,
                     Unsupported)


def check_equivalence(sub_plan, program, K: int = 4, timeout_ms: int = 20000, **kw) -> Result:
    from .check import check_equivalence as _check
    return _check(sub_plan, program, K=K, timeout_ms=timeout_ms, **kw)


# The encoder's public API, exported lazily (name -> (module, attribute)) so importing
# ``superop.verify`` stays z3-free.
_EXPORTS = {
    # values
    "V": ("values", "V"), "NULL": ("values", "NULL"), "const": ("values", "const"),
    "fresh": ("values", "fresh"), "kind_of_type": ("values", "kind_of_type"),
    "is_true": ("values", "is_true"), "is_false": ("values", "is_false"),
    "not_distinct": ("values", "not_distinct"), "rows_not_distinct": ("values", "rows_not_distinct"),
    "common_kind": ("values", "common_kind"), "lt": ("values", "lt"), "ite": ("values", "ite"),
    # expressions
    "Ctx": ("exprs", "Ctx"), "ev": ("exprs", "ev"), "encoding": ("exprs", "encoding"),
    "bool3": ("exprs", "bool3"), "cmp": ("exprs", "cmp"),
    # relations and encoders
    "Rel": ("relations", "Rel"), "Table": ("relations", "Table"),
    "PlanEncoder": ("plan_encoder", "PlanEncoder"), "row_ctx": ("plan_encoder", "row_ctx"),
    "ProgramEncoder": ("program_encoder", "ProgramEncoder"),
    # outcomes
    "bags_differ": ("bags", "bags_differ"), "outcomes_differ": ("bags", "outcomes_differ"),
    "concrete_rel": ("bags", "concrete_rel"), "concrete": ("bags", "concrete"),
    # checks
    "new_solver": ("check", "new_solver"), "check_outcomes": ("check", "check_outcomes"),
    "check_plans_outcomes": ("check", "check_plans_outcomes"),
    "prove_template": ("template_proofs", "prove_template"),
}


def __getattr__(name):
    if name in _EXPORTS:
        import importlib
        mod, attr = _EXPORTS[name]
        return getattr(importlib.import_module(f"{__name__}.{mod}"), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_plans_equivalent(plan_a, plan_b, K: int = 3, timeout_ms: int = 20000) -> Result:
    from .plans import check_plans_equivalent as _check
    return _check(plan_a, plan_b, K=K, timeout_ms=timeout_ms)


__all__ = ["check_equivalence", "check_plans_equivalent", "Result", "Counterexample", "Unsupported",
           "VERIFIED", "REFUTED", "UNKNOWN", "UNSUPPORTED", *_EXPORTS]
