"""The `superop` command line (docs/ARCHITECTURE.md, "Command line").

Each command lives with its package: a module ``superop.<pkg>.commands`` exposing
``register(subparsers)`` that adds its sub-command(s) with ``set_defaults(func=...)``.
Commands raise :class:`superop.errors.SuperopError` for bad input; this module turns
that (and any unexpected error) into a one-line message and a non-zero exit.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from . import __version__
from .errors import SuperopError

# Packages that contribute commands, in --help order. A package that does not
# provide a `commands` module yet is simply skipped.
COMMAND_MODULES = [
    "superop.pipeline.commands",   # mine
    "superop.synth.commands",      # synth
    "superop.rules_out.verify_commands",  # verify
    "superop.rules_out.commands",  # catalog
    "superop.runtime.commands",    # rewrite
    "superop.bench.commands",      # bench
    "superop.workloads.tpcds.commands",  # workload
    "superop.ir.commands",         # plan
    "superop.share.commands",      # share
]


# packages of the optional extras (pyproject.toml) -> the extra that installs them
_EXTRA_OF = {"z3": "mine", "mlflow": "mine", "pandas": "mine", "pyarrow": "mine",
             "numpy": "mine", "zstandard": "mine", "lz4": "mine", "cramjam": "mine",
             "matplotlib": "bench", "tpchgen": "bench"}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="superop", description=(
        "Find, prove and apply shuffle-eliminating super-operator rewrites for Spark SQL."))
    p.add_argument("--version", action="version", version=f"superop {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log debug output to stderr")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for mod in COMMAND_MODULES:
        try:
            m = importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name == mod:
                continue
            raise
        m.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    # say which Spark settings superop chose because nobody else set them
    logging.getLogger("superop.spark").setLevel(logging.DEBUG if args.verbose else logging.INFO)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        rc = args.func(args)
        return int(rc or 0)
    except SuperopError as e:
        print(f"superop {args.command}: error: {e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:
        extra = _EXTRA_OF.get((e.name or "").split(".")[0])
        if extra is None or args.verbose:
            raise
        print(f"superop {args.command}: error: this command needs {e.name}, which the runtime-only "
              f"install leaves out: pip install 'superop[{extra}]'", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"superop {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # never a bare traceback; -v shows it
        if args.verbose or os.environ.get("SUPEROP_DEBUG"):
            raise
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"superop {args.command}: internal error: {type(e).__name__}: {msg} "
              f"(re-run with -v for details)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
