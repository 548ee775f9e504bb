"""Z3 verification of super-operator programs against SQL sub-plans.

    from superop.verify import check_equivalence, Result
    check_equivalence(sub_plan, program, K=4) -> Result(status=verified|refuted|unknown|unsupported)

Modules: ``result`` (result types), the encodings — ``values`` (one SQL value, 3-valued
logic), ``exprs`` (expressions with NULL and ANSI error semantics, encoding settings,
uninterpreted functions), ``folds`` (aggregates as folds), ``relations`` (bags, the
symbolic table), ``plan_encoder`` (the plan IR), ``program_encoder`` (the DSL), ``bags``
(comparing outcomes) — then ``check`` (bounded equivalence), ``plans`` (plan vs plan),
``emitted`` (the SQL the runtime emits), ``streamability`` (Algorithms 1-3),
``template_proofs`` (unbounded proofs of the template programs over the families'
symbolic instances, ``superop.families.instances``), ``certificate`` (JSON certificates
+ re-checking), ``replay`` (counterexample replay on Spark + the reference interpreter).
Importing this package imports z3; the runtime never does.
"""
from .check import check_equivalence
from .plans import check_plans_equivalent
from .result import REFUTED, UNKNOWN, UNSUPPORTED, VERIFIED, Counterexample, Result, Unsupported

__all__ = ["check_equivalence", "check_plans_equivalent", "Result", "Counterexample", "Unsupported",
           "VERIFIED", "REFUTED", "UNKNOWN", "UNSUPPORTED"]
