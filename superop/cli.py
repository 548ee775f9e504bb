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

# command -> the module that registers it (``register(subparsers)``), in --help order. Only
# the module of the command being run is imported: a runtime-only install (no z3, mlflow,
# pandas) runs `superop rewrite` and `superop plan`, and another command says which extra
# it needs instead of failing to build the parser.
COMMANDS = {
    "mine": "superop.pipeline.commands",
    "synth": "superop.synth.commands",
    "verify": "superop.rules_out.verify_commands",
    "catalog": "superop.rules_out.commands",
    "rewrite": "superop.runtime.commands",
    "bench": "superop.bench.commands",
    "workload": "superop.workloads.tpcds.commands",
    "plan": "superop.ir.commands",
    "share": "superop.share.commands",
}


# packages of the optional extras (pyproject.toml) -> the extra that installs them
_EXTRA_OF = {"z3": "mine", "mlflow": "mine", "pandas": "mine", "pyarrow": "mine",
             "numpy": "mine", "zstandard": "mine", "lz4": "mine", "cramjam": "mine",
             "matplotlib": "bench", "tpchgen": "bench"}


class MissingExtra(SuperopError):
    """A command needs a package of an optional extra that is not installed."""


def _missing(e: ModuleNotFoundError) -> MissingExtra:
    extra = _EXTRA_OF.get((e.name or "").split(".")[0])
    if extra is None:
        raise e
    return MissingExtra(f"this command needs {e.name}, which the runtime-only install leaves out: "
                        f"pip install 'superop[{extra}]'")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or with ``only`` of that command alone (the others are
    listed by name). Raises MissingExtra when ``only``'s module needs an absent extra."""
    p = argparse.ArgumentParser(prog="superop", description=(
        "Find, prove and apply shuffle-eliminating super-operator rewrites for Spark SQL."))
    p.add_argument("--version", action="version", version=f"superop {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log debug output to stderr")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, mod in COMMANDS.items():
        if only is not None and name != only:
            sub.add_parser(name)
            continue
        try:
            m = importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name == mod:
                raise
            missing = _missing(e)
            if only is not None:
                raise missing from None
            sub.add_parser(name, help=f"(not installed: {missing})")
            continue
        m.register(sub)
    return p


def _command_of(argv: list[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command_of(argv)
    try:
        parser = build_parser(command if command in COMMANDS else None)
    except MissingExtra as e:
        print(f"superop {command}: error: {e}", file=sys.stderr)
        return 2
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
        if args.verbose:
            raise
        print(f"superop {args.command}: error: {_missing(e)}", file=sys.stderr)
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
