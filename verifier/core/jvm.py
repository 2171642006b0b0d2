"""What the engines that run Kafka's own code in a JVM (the conform oracle, the real cluster's
distribution and metadata tail) share beyond Maven (maven.py): the `python -m` entry that
builds them, and how a child JVM is closed. Here because an engine never imports another
(docs/ARCHITECTURE.md)."""
from __future__ import annotations

import subprocess
import sys
from typing import Callable, Optional


def build_main(argv: Optional[list], build: Callable[[str], str], error: type, every: tuple = ()) -> int:
    """Build each name of `argv` (default: the command line's arguments, or else `every`) with
    `build`, which returns the line that says what it built; exit 2 with `error`'s one line at
    the first that cannot be built."""
    for name in list(sys.argv[1:] if argv is None else argv) or list(every):
        try:
            print(build(name))
        except error as exc:
            print(f"kraft-verify: error: {exc}", file=sys.stderr)
            return 2
    return 0


def close(proc: subprocess.Popen, timeout: float) -> None:
    """Close a child's stdin (its cue to end) and wait up to `timeout` seconds for it to exit;
    kill it if it does not, or if the pipe is already gone."""
    try:
        proc.stdin.close()
        proc.wait(timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()
