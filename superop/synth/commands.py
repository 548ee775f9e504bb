"""`superop synth`: synthesize (and verify) a super-operator program for one sub-query."""
from __future__ import annotations

import json

from ..cliutil import add_json_arg, add_sql_args, deprecated, read_sql, timeout_s
from ..errors import SuperopError
from ..ir import lower, shape, to_sql
from ..ir.dialect import pretty_sql
from ..ir.schema import load_schema_arg
from .corpus import PAPER_SCHEMA
from .parts import NotSupported, analyze
from .result import UNSUPPORTED, SynthResult
from .subplan import find_subplan
from .synthesizer import synthesize


def register(sub) -> None:
    p = sub.add_parser("synth", help="synthesize + verify a super-operator program for one sub-query",
                       description="Synthesizes a super-operator program for one sub-query and "
                                   "verifies it with Z3 (bounded), or prints a counterexample.")
    add_sql_args(p)
    add_json_arg(p)
    p.add_argument("--bound", type=int, default=4, dest="K", metavar="K",
                   help="Z3 bound: input tables of at most K rows (default 4)")
    deprecated(p, "-K", "--K", dest="K", use="--bound", type=int)
    p.add_argument("--timeout-s", type=timeout_s, default=120.0, dest="timeout", metavar="S",
                   help="search time limit in seconds (default 120)")
    deprecated(p, "--timeout", dest="timeout", use="--timeout-s", type=timeout_s)
    p.add_argument("--no-verify", action="store_true", help="test candidates only (status is then unknown)")
    p.add_argument("--streaming-only", action="store_true",
                   help="accept only streaming programs (constant state per partition)")
    p.add_argument("--whole", action="store_true",
                   help="synthesize for the whole query only (default: when the whole query is not a "
                        "super-operator shape, use its top-most sub-query that is)")
    p.set_defaults(func=run)


def _cex_text(c: dict) -> str:
    lines = [f"  counterexample ({c.get('origin')}), killed: {c.get('choice', '')}"]
    if "tables" in c:
        for t, d in c["tables"].items():
            lines.append(f"    input {t}({', '.join(d['columns'])}): {d['rows']}")
        lines.append(f"    (the program reads only {c.get('program_reads')})")
    else:
        lines.append(f"    input {c.get('table')}({', '.join(c.get('columns', []))}): {c.get('rows')}")
    lines.append(f"    sub-query output: {c.get('plan_output')}")
    lines.append(f"    program output:   {c.get('program_output')}")
    return "\n".join(lines)


def run(args) -> int:
    if args.K < 1:
        raise SuperopError("--bound must be at least 1")
    sql = read_sql(args)
    schema = load_schema_arg(args.schema) or PAPER_SCHEMA   # the paper's tables when no --schema
    low = lower(sql, schema)
    if not low.fully_lowered:
        res = SynthResult(UNSUPPORTED, reason="; ".join(low.opaque_reasons))
    else:
        plan = low.plan
        sub_sql = None
        if not args.whole:
            try:
                analyze(plan)
            except NotSupported:
                found = find_subplan(plan)
                if found is not None:
                    plan, sub_sql = found, to_sql(found)
        res = synthesize(plan, schema, K=args.K, timeout_s=args.timeout, verify=not args.no_verify,
                         require_streaming=args.streaming_only)
        if sub_sql is not None:
            res.sub_plan_sql = sub_sql
            res.reason = f"for the sub-query of shape {shape(plan)}: " + res.reason
    if args.json:
        print(json.dumps(res.to_json(), indent=2, default=str))
        return 0
    if res.sub_plan_sql:
        print(f"sub-query:\n{pretty_sql(res.sub_plan_sql)}")
    print(f"status: {res.status}" + (f" ({res.family})" if res.family else ""))
    if res.program is not None:
        print(f"memory: {'streaming' if res.streaming else 'buffering'}; checked by {res.checked_by}")
        print(res.program.pretty())
    print(f"reason: {res.reason}")
    print(f"search: {res.candidates_tried} of {res.search_space} candidates tried, {res.tests} test tables, "
          f"{res.seconds:.2f}s")
    if res.counterexample:
        print(_cex_text(res.counterexample))
    if res.streaming_counterexample:
        print("why not streaming:")
        print(_cex_text(res.streaming_counterexample))
    return 0
