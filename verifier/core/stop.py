"""SIGINT and SIGTERM as a request to stop, so that every exit path writes a report.

Why not Python's default: SIGINT raises KeyboardInterrupt wherever the program happens to be,
and SIGTERM kills it outright, so an interrupted run left nothing behind (or, worse, an older
green JUnit file at the same path). Here the first signal is recorded. An engine that polls
(`requested()`, inside `polled()`) stops at its next consistent point and returns a result
marked stopped, which the command reports like a budget stop (exit 3). Anywhere else the
signal raises `Interrupted`, which the command turns into an "interrupted" report. A second
signal always raises: a user who presses Ctrl-C twice gets out at once.
"""
from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

_requested: Optional[str] = None
_polling = 0
_reported = False


class Interrupted(KeyboardInterrupt):
    """The run was interrupted by a signal (its name is `signal`)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.signal = name


def _handler(signum, frame) -> None:
    global _requested
    if _reported:
        return                  # the run's report is written: its exit code stands
    first = _requested is None
    _requested = signal.Signals(signum).name
    if not first or not _polling:
        raise Interrupted(_requested)


def install() -> None:
    """Route SIGINT and SIGTERM here (the command line calls it once, at start)."""
    global _requested, _reported
    _requested, _reported = None, False
    if threading.current_thread() is not threading.main_thread():
        return                  # only the main thread may set handlers (an embedding caller's choice)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _handler)


def reported() -> None:
    """The run's report is written: a signal from now on changes nothing (a Ctrl-C as the
    process exits left a green report beside exit 130)."""
    global _reported
    _reported = True


def exiting() -> None:
    """The process is about to exit with its run's code: signals are ignored from here on, as
    Python puts the default handlers back while it shuts down and a signal then killed it (exit
    130 after the report). Only for the process's own entry point: the disposition is inherited
    by the processes a caller starts later."""
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)


def ignore_in_worker() -> None:
    """Worker processes leave interrupts to the parent, which stops them in order."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)


def requested() -> Optional[str]:
    """The name of the signal that asked the run to stop, or None."""
    return _requested


def reason(name: Optional[str] = None) -> str:
    return f"interrupted by {name or _requested or 'SIGINT'}"


@contextmanager
def polled() -> Iterator[None]:
    """Within this block the engine polls `requested()`: the first signal does not raise."""
    global _polling
    _polling += 1
    try:
        yield
    finally:
        _polling -= 1


def cut(start: float, budget: Optional[float], spent: Callable[[], str]) -> Optional[str]:
    """Why a loop stops before its next turn: a signal, or a time budget of `budget` seconds from
    `start` (time.monotonic()) spent (`spent()` says after what), else None."""
    if requested():
        return reason()
    if budget is not None and time.monotonic() - start > budget:
        return spent()
    return None
