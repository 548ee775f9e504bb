"""The pivot join's symbolic proof instances (``PJ.proof_instances()``) made concrete: each
uninterpreted edge function replaced by a deterministic expression, so that the bounded
verifier on this branch (which has no uninterpreted functions) checks the program the
runtime builds for them. The template-proof engine proves the symbolic instances
themselves once it lands."""
from __future__ import annotations

from sqlglot import exp

from superop.families.kit.family import ProofInstance
from superop.ir.lower import parse

# a concrete body per function (over its arguments, by position)
_BODIES = {
    "p": "a0 IS NULL OR a2 > 0",
    "f1": "a2", "f2": "a2 + a0", "f3": "a2", "f4": "a2 - a1", "f5": "a2",
    # q_i(k, c, n, s, mn, mx, av), g_i(k, c, n, s, mn, mx, av), theta_i(x1, xi)
    "q": "a1 > 0 AND (a3 IS NULL OR a3 >= a4)",
    "g": "a3 + a2",
    "theta": "a0 IS NULL OR a1 IS NULL OR a0 >= a1 - 3",
}


def _body(name: str) -> str:
    base = name.rstrip("0123456789") if name not in _BODIES else name
    return _BODIES[base]


def concrete_sql(inst: ProofInstance) -> str:
    """The instance's SQL with every declared function call replaced by its body."""
    tree = parse(inst.sql)

    def sub(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Anonymous) and str(node.this) in inst.functions:
            body = parse(f"SELECT {_body(str(node.this))}").selects[0]
            args = list(node.expressions)

            def arg(c: exp.Expression) -> exp.Expression:
                if isinstance(c, exp.Column) and not c.table and c.name.startswith("a") and c.name[1:].isdigit():
                    return exp.Paren(this=args[int(c.name[1:])].copy())
                return c
            return exp.Paren(this=body.transform(arg))
        return node
    return tree.transform(sub).sql(dialect="spark")
