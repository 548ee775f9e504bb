"""Super-operator synthesis. ``superop.synth.dsl`` (the DSL) imports neither Spark nor Z3."""
