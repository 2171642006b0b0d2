"""The `kraft-verify` command line: one module per command.

Exit codes everywhere (verifier/core/exitcodes.py): 0 = all checked properties hold, 1 = a
violation (counterexample printed and written) or a surviving mutant, 2 = usage or input
error (one line, no traceback), 3 = stopped by a bound, budget or interrupt before completion.
"""
from __future__ import annotations

import os
import sys
from typing import Optional

from specs import ConfigError
from verifier.core import stop
from verifier.cli.common import (RUN, Parser, UsageError, abandon_run, begin_junit, distinct_paths, one_line,
                                 write_interrupted)
from verifier.core.exitcodes import EXIT_INPUT, EXIT_STOPPED, InputError
from verifier.core.knobs import KnobError
from verifier.core.files import WriteError
from verifier.core.signing import KeyError_
from verifier.core.checkpoint import CheckpointError
from verifier.core.levels import UnconfirmedViolation

def parser() -> Parser:
    from verifier.cli.options import add_commands
    top = Parser(prog="kraft-verify", description="Verify the KRaft partition leadership protocol model.")
    add_commands(top.add_subparsers(dest="command", parser_class=Parser))
    return top


def _warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A model warning (an old preset name) is one line, not Python's two with a source line."""
    print(f"kraft-verify: warning: {one_line(message)}", file=sys.stderr)


def main(argv: Optional[list[str]] = None) -> int:
    """The command line; with no `argv`, the process's own entry point (the console script,
    `python -m verifier.cli`), which then ignores signals while it exits: the run is over."""
    code = _main(argv)
    if argv is None:
        stop.exiting()
    try:
        sys.stdout.flush()    # a terminal that cannot take the output (stdout on /dev/full) is one line
    except OSError as exc:
        failed = exc
    else:
        failed = getattr(sys.stdout, "failed", None)
    if failed is not None:
        sys.stdout = open(os.devnull, "w")      # nothing more to flush at exit
        print(f"kraft-verify: error: cannot write to standard output ({failed.strerror or failed})",
              file=sys.stderr)
        return EXIT_INPUT
    return code


class _GuardedStdout:
    """Standard output that keeps the first error of a write instead of raising it in the
    middle of the run (rich flushes after every line): the run goes on and writes its report,
    and `main` says once that the terminal could not take it (exit 2)."""

    def __init__(self, inner):
        self.inner, self.failed = inner, None

    def write(self, text: str) -> int:
        if self.failed is None:
            try:
                return self.inner.write(text)
            except OSError as exc:
                self.failed = exc
        return len(text)

    def flush(self) -> None:
        if self.failed is None:
            try:
                self.inner.flush()
            except OSError as exc:
                self.failed = exc

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _main(argv: Optional[list[str]]) -> int:
    import warnings
    warnings.showwarning = _warning
    stop.install()
    RUN.clear()
    argv = list(sys.argv[1:] if argv is None else argv)
    _tolerant_streams()
    try:
        try:
            os.getcwd()       # relative paths (reports/, Hypothesis' database) need a working directory
        except FileNotFoundError:
            raise UsageError("the working directory no longer exists (it was deleted): cd to one that does") from None
        except OSError as exc:
            raise UsageError(f"the working directory cannot be used ({exc.strerror}): cd to another") from None
        for arg in argv:      # bytes that are not UTF-8 arrive as surrogates, which no report can hold
            if not _utf8(arg):
                raise UsageError(f"argument {arg!r} is not valid UTF-8 (it would go into UTF-8 reports)")
        args = parser().parse_args(argv)
        args.argv = argv
        if not getattr(args, "command", None):
            raise UsageError("a command is required (" + ", ".join(_commands()) + ")")
        empty = next((k for k, v in vars(args).items() if v == "" or (isinstance(v, list) and "" in v)), None)
        if empty is not None:          # an empty name or path means nothing: never "the default"
            raise UsageError("a file name is empty" if empty == "files" else f"--{empty.replace('_', '-')} is empty")
        distinct_paths(args)
        begin_junit(getattr(args, "junit", None))
        return args.func(args)
    except (UsageError, ConfigError) as exc:
        abandon_run()
        print(f"kraft-verify: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_INPUT
    except (KeyError_, CheckpointError, UnconfirmedViolation, KnobError, InputError) as exc:
        # the key (verifier/core/signing.py), a checkpoint directory that failed under the run,
        # a violation that does not replay (verifier/core/levels.py), an engine's knob out of
        # range or an engine refusing its input, wherever a command did not catch it first:
        # never a verdict
        abandon_run()
        print(f"kraft-verify: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_INPUT
    except WriteError as exc:     # the run's files could not be written: never a verdict (exit 2)
        print(f"kraft-verify: error: {one_line(exc)} (the run's report is incomplete; exit 2)", file=sys.stderr)
        return EXIT_INPUT
    except Exception as exc:
        if not stop.requested():
            return _crashed(exc, argv)
        return _interrupted(stop.requested(), argv)    # e.g. z3 wraps the interrupt in its own error
    except KeyboardInterrupt as exc:
        return _interrupted(getattr(exc, "signal", "SIGINT"), argv)


def _commands() -> list[str]:
    """Every command, as options.toml declares them (the usage line cannot leave one out)."""
    from verifier.cli.options import table
    return list(table()["command"])


def _tolerant_streams() -> None:
    """A console that is not UTF-8 (LC_ALL=C without coercion, PYTHONIOENCODING=ascii) gets
    unencodable characters escaped, not a UnicodeEncodeError after the run."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass              # not a text stream we may change (a test's capture): leave it
    if sys.stderr is None:          # started with stderr closed: its one lines go nowhere, not into a crash
        sys.stderr = open(os.devnull, "w")
    if sys.stdout is None:          # started with stdout closed (`>&-`): the run goes on and says so at the end
        guarded = _GuardedStdout(open(os.devnull, "w"))
        guarded.failed = OSError(9, "it is closed")
        sys.stdout = guarded
    elif not isinstance(sys.stdout, _GuardedStdout):
        sys.stdout = _GuardedStdout(sys.stdout)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _crashed(exc: Exception, argv: list[str]) -> int:
    """An error no part of the run expected: a bug in kraft-verify, never a verdict. Python's
    own exit (1, a violation's code) read as a violation to CI; now the traceback (what to
    report), a report that says the run did not finish, and exit 2."""
    import traceback
    traceback.print_exception(exc, file=sys.stderr)
    what = f"{type(exc).__name__}: {one_line((str(exc).strip().splitlines() or [''])[0])[:300]}"
    try:
        where = write_interrupted(f"an internal error ({what})", " ".join(["kraft-verify"] + argv), EXIT_INPUT)
    except (KeyboardInterrupt, OSError):
        where = None
    print(f"kraft-verify: internal error: {what}: a bug in kraft-verify, not a verdict (exit 2)"
          + (f"; report: {where}" if where else ""), file=sys.stderr)
    return EXIT_INPUT


def _interrupted(name: str, argv: list[str]) -> int:
    """One line on stderr, a report marked interrupted, exit 3."""
    try:
        where = write_interrupted(name, " ".join(["kraft-verify"] + argv))
    except (KeyboardInterrupt, OSError):
        where = None
    print(f"kraft-verify: interrupted by {name}" + (f"; report: {where}" if where else ""), file=sys.stderr)
    return EXIT_STOPPED

if __name__ == "__main__":
    sys.exit(main())
