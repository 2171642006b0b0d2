"""The compiled search's memory budget: stop with a report before the machine kills the run.

A search too big for memory used to end in Linux's OOM killer (brokers 6 on two threads, at
24 GB on this 23 GB machine): a SIGKILL, so no report and no exit code. The search's memory is
a few large arrays, so it checks each growth before it allocates. The store (parents, labels),
the visited tables, the level buffers and the threads' buffers, plus what the process held when
the search began, must stay within 90% of the machine's memory. If a growth would pass that,
the search stops like a time budget: exit 3, with a report of what it reached and how much it
needed.
"""
from __future__ import annotations

from typing import Optional

from verifier.core.machine import machine_bytes, resident_bytes

SHARE = 0.9           # of the machine's memory (MemTotal)


class MemoryBudget(Exception):
    """A growth the budget does not allow (its message is the report's stop reason)."""


class Budget:
    """Checks a planned growth against SHARE of the machine's memory."""

    def __init__(self, limit: Optional[int] = None):
        total = machine_bytes()
        self.limit = limit if limit is not None else None if total is None else int(SHARE * total)
        self.base = resident_bytes()          # the interpreter, the model, the compiled code

    def allow(self, held: int, more: int, what: str) -> None:
        """Raise MemoryBudget if `held` bytes of arrays and `more` new ones would pass the limit."""
        if self.limit is not None and self.base + held + more > self.limit:
            gib = 1 << 30
            raise MemoryBudget(f"memory budget: growing {what} needs {more / gib:.1f} GB more, and the search holds "
                               f"{(self.base + held) / gib:.1f} GB of the {self.limit / gib:.1f} GB it may use "
                               f"({SHARE:.0%} of this machine's memory)")
