"""The kernel's compile time, said as it starts and kept apart from the search's.

numba compiles a kernel entry point the first time it is called with a signature its cache
lacks (a new kernel source, or an entry point a run has not used before: the threaded round's
functions, the walks'). That was 40-60 s on this project's 2-core machine (19-29 s since
specs/kernel/specialise.py), and without a word the terminal stays blank and every states/s
figure includes it. numba announces each real compile (never a load from its cache) as a
"numba:compile" event; `Compiling` listens, says within the moment the first one starts that
the kernel is compiling (for which config, about how long, and where it is kept), and sums the
seconds of the outermost compiles, which the search subtracts from its own time. The last compile's length is kept beside the cache as a number
(read as data: anything else is ignored) for the next run's "about".
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable, Optional

from numba.core import event

LAST = "compile-seconds"       # the file beside the cache with the last compile's length
GUESS = 20.0                   # the "about" before any compile was measured here (2 cores, cold: 19-22 s in stop 67)


def last_seconds(cache: Path) -> Optional[float]:
    """The last compile's length measured on this machine, or None (no file, or not a number)."""
    try:
        text = (cache / LAST).read_text(encoding="ascii").strip()
        value = float(text)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return value if 0 < value < 3600 else None


class Compiling(event.Listener):
    """Outermost "numba:compile" events: their seconds, and one notice at the first."""

    def __init__(self, say: Optional[Callable[[str], None]], what: str, cache: Path):
        self.say, self.what, self.cache = say, what, cache
        self.seconds = 0.0
        self._depth, self._t0, self._said = 0, 0.0, False
        self._lock = threading.Lock()

    def on_start(self, ev) -> None:
        with self._lock:
            if self._depth == 0:
                self._t0 = time.monotonic()
                if not self._said:
                    self._said = True
                    if self.say is not None:
                        about = last_seconds(self.cache) or GUESS
                        self.say(f"compiling the kernel for {self.what} (about {about:.0f} s, once for this kernel's "
                                 f"source; kept in {self.cache}, where later runs load it in under a second)")
            self._depth += 1

    def on_end(self, ev) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                self.seconds += time.monotonic() - self._t0

    def __enter__(self) -> "Compiling":
        event.register("numba:compile", self)
        return self

    def __exit__(self, *exc) -> None:
        event.unregister("numba:compile", self)
        if self.seconds >= 1.0:
            try:
                self.cache.mkdir(parents=True, exist_ok=True)
                (self.cache / LAST).write_text(f"{self.seconds:.1f}\n", encoding="ascii")
            except OSError:
                pass          # only the next run's "about" is lost
