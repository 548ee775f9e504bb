"""The parametric form of an instance: its numeric literals as typed parameters.

A bounded certificate of an instance (:mod:`superop.families.identity`) is about its exact
SQL, literals included, so ``x > 5`` and ``x > 7`` are two instances and a dashboard that
changes a threshold every day would need a certificate per value. The parametric form
replaces each numeric literal in a VALUE position — an operand of a comparison, of
arithmetic, of BETWEEN or IN, under a sign — by a placeholder that carries the literal's
Spark type in its name (``:p0_int``, ``:p1_decimal_2_1``, ``:p2_bigint``). The verifier
reads a placeholder as a free symbolic value of that type (``superop.verify.exprs``), so a
certificate of the parametric form holds for EVERY value of every parameter: it covers each
instance that binds its parameters to literals of those types.

Only value positions are parameters: there a literal and a parameter mean the same, and the
encoder evaluates the operand through its one expression evaluator. A literal anywhere else
(an ordinal, a LIMIT, a window frame, a function's option such as ROUND's scale) stays as
written: it can change what the query computes, not only a value.

The runtime uses a parametric certificate for an instance only when binding the parameters
to the instance's literals gives back exactly the instance's canonical SQL, the program the
runtime builds for it and the SQL it compiles (``superop.rewrite.proofs``); anything the
templates derive from a literal's value breaks that equality and the instance needs its own
certificate.

Pure IR: no Spark, no Z3.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import sqlglot
from sqlglot import exp

from ..ir.dialect import DIALECT
from ..ir.parameters import PLACEHOLDER, arithmetic_in_range, literal_type, parameter_name
from .identity import Instance, instance_of_sql

# parents under which a literal is a value (what it means is its value, nothing else)
_VALUE_PARENTS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.Add, exp.Sub, exp.Mul,
                  exp.Div, exp.Mod, exp.Between, exp.In, exp.Neg)


@dataclass(frozen=True)
class Parametric:
    """An instance's parametric form: ``instance`` (canonical, with placeholders) and the
    literal each parameter is bound to in the concrete instance it was made from."""
    instance: Instance
    bindings: tuple[tuple[str, str], ...]

    def arithmetic_in_range(self) -> bool:
        """The premise a parametric certificate carries (``superop.ir.parameters``): with
        these bindings no integer arithmetic of parameters alone overflows."""
        try:
            tree = sqlglot.parse_one(self.instance.sql, read=DIALECT)
        except sqlglot.errors.ParseError:
            return False
        return arithmetic_in_range(tree, dict(self.bindings))

    def bind(self, text: str) -> str:
        """``text`` (SQL, a program's JSON) with each placeholder replaced by its literal."""
        values = dict(self.bindings)
        return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def slow_parametric(inst: Instance) -> bool:
    """Does ``inst`` fold a sample moment (stddev_samp / var_samp)? The verifier leaves the
    statistic an uninterpreted function of its moments and adds their nonlinear definition
    to decide a difference: Z3 decides such a parametric form, but in several times the
    instance's time (TPC-DS q39: ~110 s against ~25 s under load). The nightly job checks
    it with its own limit; a caller on a time budget (first sight) certifies the instance
    itself."""
    try:
        tree = sqlglot.parse_one(inst.sql, read=DIALECT)
    except sqlglot.errors.ParseError:
        return False
    return any(True for _ in tree.find_all(exp.StddevSamp, exp.Stddev, exp.Variance))


def value_literals(tree: Any) -> list[exp.Literal]:
    return [lit for lit in tree.find_all(exp.Literal)
            if not lit.is_string and isinstance(lit.parent, _VALUE_PARENTS)
            and literal_type(lit.this) is not None]


def parametric_of(inst: Instance) -> Optional[Parametric]:
    """The parametric form of ``inst`` (None when it has no literal in a value position, or
    when binding the parameters does not give back exactly ``inst``'s canonical SQL)."""
    if PLACEHOLDER.search(inst.sql):
        return None          # already parametric
    try:
        tree = sqlglot.parse_one(inst.sql, read=DIALECT)
    except sqlglot.errors.ParseError:
        return None
    lits = value_literals(tree)
    if not lits:
        return None
    bindings = []
    for i, lit in enumerate(lits):
        name = parameter_name(i, literal_type(lit.this) or "")
        bindings.append((name, lit.this))
        lit.replace(exp.Placeholder(this=name))
    try:
        canon = instance_of_sql(tree.sql(dialect=DIALECT), inst.schema, inst.form)
    except ValueError:
        return None
    par = Parametric(canon, tuple(bindings))
    if par.bind(canon.sql) != inst.sql or canon.schema != inst.schema:
        return None
    return par
