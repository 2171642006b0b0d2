"""How a long command speaks while it works: a line within about a second of its start, then at
least every 10 s, whether or not its engine has said anything yet.

A run's `Progress` (an engine's figures), or a command's own phase (`status`: the matrix row, the
mutant, the proof under way), is the latest news; a ticker thread shows it: on a terminal one
live line, redrawn four times a second and fitted to the terminal's width (the less important
figures dropped first, never cut mid-figure), in a log (CI) a plain `progress:` line every 10 s.
A finished level (`level_seconds`) and an engine's note are lines of their own, printed as they
come, quiet or not.
"""
from __future__ import annotations

import threading
import time
from typing import Optional

FIRST = 0.5            # seconds after the start: the first line, news or not
EVERY = 10.0           # seconds between plain lines


def rss_mb() -> float:
    from verifier.core.machine import resident_bytes
    now = resident_bytes()
    if now:
        return now / 2**20
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def fit(parts: list[str], width: Optional[int]) -> str:
    """The parts joined by ", ", in order of importance: the first (the phase, or the leading
    figure) and the last (the time) always, the first shortened with an ellipsis when the two
    alone are too wide; then as many of the others, in order, as the width holds."""
    if width is None or len(parts) < 2:
        return ", ".join(parts)[:width]
    head, last = parts[0], parts[-1]
    room = width - len(last) - 2
    if len(head) > room:
        return (head[:max(room - 1, 0)] + "…, " + last)[-width:] if room > 1 else last[:width]
    kept = [head]
    for part in parts[1:-1]:
        if len(", ".join(kept + [part, last])) <= width:
            kept.append(part)
    return ", ".join(kept + [last])


class ProgressLine:
    """The console's progress line for one command (see the module's docstring). `what`: the
    command's words before any news ("fuzz", "matrix"); `walks`, `compared`: how the engine's
    figures read (simulate's walks left, conform's steps compared)."""

    def __init__(self, console_, enabled: bool, walks: bool = False, compared: bool = False, what: str = "working"):
        self.console, self.enabled, self.walks, self.compared = console_, enabled, walks, compared
        self.live = None
        self._parts = [what]
        self._phase: Optional[str] = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._t0 = time.monotonic()
        self._last_plain: Optional[float] = None

    def __enter__(self):
        self._t0 = time.monotonic()
        if self.enabled:
            if self.console.is_terminal:
                from rich.live import Live
                self.live = Live("", console=self.console, auto_refresh=False, transient=True)
                self.live.__enter__()
            self._thread = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self.live is not None:
            self.live.__exit__(*exc)

    def status(self, text: str) -> None:
        """The command's phase ("mutant 4 of 21: NAME"), shown before the engine's figures."""
        with self._lock:
            self._phase = text

    def __call__(self, p) -> None:
        if p.note:
            self.console.print(p.note, markup=False)
            return
        if not self.enabled:
            return
        if p.level_seconds is not None:
            self.console.print(f"level {p.depth:>3}: {p.queue:>10,} new  {p.distinct:>12,} total  "
                               f"{p.queue / max(1e-9, p.level_seconds):>9,.0f} states/s  "
                               f"{p.seconds:>8.1f}s elapsed", markup=False)
            return
        with self._lock:
            self._parts = self._figures(p)

    def _figures(self, p) -> list[str]:
        if p.status:             # a run without states (fuzz) says where it stands in its own words
            return [p.status]
        if self.compared:        # conform: steps compared with Kafka's code, traces done, walks to go
            return [f"{p.generated:,} steps compared", f"{p.distinct:,} traces", f"{p.queue:,} walks left"]
        rate = p.distinct / p.seconds if p.seconds > 0 else 0.0
        parts = [f"{p.distinct:,} distinct", f"depth {p.depth}",
                 f"{'walks left' if self.walks else 'queue'} {p.queue:,}", f"{rate:,.0f} distinct/s"]
        if p.eta is not None:
            parts.append(f"about {p.predicted:,} states in all, ETA {duration(p.eta)} (a forecast)")
        if p.level:
            parts.append(f"level {p.depth + 1}: {p.level_done:,} of {p.level:,} expanded")
        return parts + [f"{p.generated:,} states generated", f"{rss_mb():,.0f} MB"]

    def _tick(self) -> None:
        while not self._stop.wait(0.25):
            try:
                self.show()
            except Exception:          # a console gone (a closed pipe) must not end the run
                return

    def show(self) -> None:
        now = time.monotonic()
        elapsed = now - self._t0
        if elapsed < FIRST:
            return
        with self._lock:
            parts = ([self._phase] if self._phase else []) + self._parts + [duration(elapsed)]
        if self.live is not None:
            from rich.text import Text
            self.live.update(Text(fit(parts, self.console.width - 1), no_wrap=True, overflow="crop"), refresh=True)
        elif self._last_plain is None or now - self._last_plain >= EVERY:
            self._last_plain = now
            self.console.print("progress: " + fit(parts, None), markup=False, soft_wrap=True)
