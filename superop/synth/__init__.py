"""Super-operator synthesis: CEGIS over the DSL (``superop.dsl``), checked with Z3.

    from superop.synth.synthesizer import synthesize
    synthesize(sub_plan, K=4, timeout_s=60) -> SynthResult(status, program, streaming,
                                                           counterexample, reason, ...)

Modules: ``space`` (the search space read off a sub-plan), ``synthesizer`` (CEGIS + Z3),
``literals`` (literal kinds of a plan), ``corpus`` (test/benchmark queries), ``commands``
(``superop synth``). The reference semantics the search uses as its oracle (the DSL
interpreter, the IR evaluated on Python rows) live in ``superop.dsl``.
"""
