"""Z3 verification of super-operator programs against SQL sub-plans.

    from superop.verify.check import check_equivalence
    check_equivalence(sub_plan, program, K=4) -> Result(status=verified|refuted|unknown|unsupported)

Modules: ``result`` (result types), the encodings — ``values`` (one SQL value, 3-valued
logic), ``exprs`` (expressions with NULL and ANSI error semantics, encoding settings,
uninterpreted functions), ``folds`` (aggregates as folds), ``relations`` (bags, the
symbolic table), ``plan_encoder`` (the plan IR), ``program_encoder`` (the DSL), ``bags``
(comparing outcomes) — then ``check`` (bounded equivalence), ``plans`` (plan vs plan),
``emitted`` (the SQL the runtime emits), ``streamability`` (Algorithms 1-3),
``template_proofs`` (unbounded proofs over the families' symbolic instances),
``certificate`` (the certificate format and its structural check, z3-free), ``certify``
(certifying and re-checking with z3), ``replay`` (counterexample replay on Spark + the
reference interpreter). The package face imports nothing, so the z3-free modules
(``result``, ``certificate``) load without z3.
"""
