"""Orchestration of the stages (the nightly job), above mining, synthesis, verification
and the rule catalog."""
