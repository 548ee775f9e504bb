"""Super-operator synthesis. ``superop.synth.dsl`` (the DSL) imports neither Spark nor Z3.

    from superop.synth import run_program, synthesize
    run_program(program, df) -> list[tuple]            # reference semantics (interpreter)
    synthesize(sub_plan, K=4, timeout_s=60) -> SynthResult(status, program, streaming,
                                                           counterexample, reason, ...)

Modules: ``dsl`` (programs), ``templates`` (Fig. 10 templates), ``expr_eval`` (SQL
expressions with three-valued logic), ``interpreter`` (run_program), ``plan_eval`` (the
IR evaluated on Python rows: the oracle of the search), ``space`` (the search space read
off a sub-plan), ``synthesizer`` (CEGIS + Z3), ``corpus`` (test/benchmark queries),
``commands`` (``superop synth``). Attributes load lazily so that importing the DSL stays cheap.
"""

_LAZY = {"run_program": "interpreter", "run_program_rows": "interpreter",
         "synthesize": "synthesizer", "SynthResult": "synthesizer", "Synthesizer": "synthesizer",
         "eval_plan": "plan_eval"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(name)


__all__ = list(_LAZY)
