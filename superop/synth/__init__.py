"""Super-operator synthesis: CEGIS over the DSL (``superop.dsl``), checked with Z3.

    from superop.synth.synthesizer import synthesize
    synthesize(sub_plan, K=4, timeout_s=60) -> SynthResult(status, program, streaming,
                                                           counterexample, reason, ...)

Modules: ``parts`` (the parts of a sub-plan a program is built from), ``space`` (the
points of the search space), ``program_builder`` (the program of one point),
``synthesizer`` (CEGIS + Z3), ``testdata`` (generated test tables), ``result``
(``SynthResult``), ``subplan`` (output types, the sub-plan of an embedding query),
``literals`` (literal kinds of a plan), ``corpus`` (test/benchmark queries), ``commands``
(``superop synth``). The reference semantics the search uses as its oracle (the DSL
interpreter, the IR evaluated on Python rows) live in ``superop.dsl``.
"""
