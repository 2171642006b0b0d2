"""The `kraft-verify` command line: one module per command.

Exit codes everywhere (verifier/exitcodes.py): 0 = all checked properties hold, 1 = a
violation (counterexample printed and written) or a surviving mutant, 2 = usage or input
error (one line, no traceback), 3 = stopped by a bound, budget or interrupt before completion.
"""
from __future__ import annotations

import sys
from typing import Optional

from specs import ConfigError
from verifier.cli import availability, check, fuzz, listing, prove, replay, spark_check
from verifier.cli.common import Parser, UsageError
from verifier.exitcodes import EXIT_INPUT, EXIT_STOPPED

COMMANDS = (replay, check, fuzz, spark_check, prove, availability, listing)


def parser() -> Parser:
    top = Parser(prog="kraft-verify", description="Verify the KRaft partition leadership protocol model.")
    sub = top.add_subparsers(dest="command", parser_class=Parser)
    for command in COMMANDS:
        command.add_parser(sub)
    return top


def main(argv: Optional[list[str]] = None) -> int:
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        args = parser().parse_args(argv)
        args.argv = argv
        if not getattr(args, "command", None):
            raise UsageError("a command is required (check, spark-check, fuzz, prove, mutants, replay, availability, "
                             "list)")
        return args.func(args)
    except (UsageError, ConfigError) as exc:
        print(f"kraft-verify: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("kraft-verify: interrupted", file=sys.stderr)
        return EXIT_STOPPED


if __name__ == "__main__":
    sys.exit(main())
