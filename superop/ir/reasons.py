"""The base of every typed refusal reason (near-misses, blocked matches).

It lives in the IR so that the lowest layer that refuses a match (:mod:`superop.ir.safety`)
and the family registry above it (``superop.families.kit.records``) share one reason type:
mining writes the code of the same member the runtime refuses with."""
from __future__ import annotations

from enum import Enum


class ReasonCode(str, Enum):
    """Base of every near-miss reason enum: the value is the stable code written to
    mining outputs (``near_misses.parquet``); ``text`` says it in one line; ``hint`` tells
    the query's author what to change so that the query matches (the report's near-miss
    section shows it). A family with reasons of its own declares a subclass next to its
    pattern."""
    text: str
    hint: str

    def __new__(cls, code: str, text: str, hint: str = "") -> "ReasonCode":
        obj = str.__new__(cls, code)
        obj._value_ = code
        obj.text = text
        obj.hint = hint
        return obj

    def __str__(self) -> str:
        return str(self.value)
