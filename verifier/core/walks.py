"""What every random-walk engine shares: its knobs, its violating walk and how it ends.

Two engines walk: `simulate` (the Python model, verifier/engines/simulate.py) and
`kernel-simulate` (the compiled kernel, verifier/engines/kernel/walks.py). They make the same
walks for the same knobs, so they take the same knobs and report a walk and its end with the
same code here.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

from specs import Trace
from verifier.core import knobs, stop
from verifier.core.fingerprint import collision_probability
from verifier.core.levels import concrete_trace
from verifier.core.properties import names
from verifier.core.result import DEADLOCK, Progress, SearchResult
from verifier.core.shrink import shrink_steps


@dataclass(frozen=True)
class WalkKnobs(knobs.Knobs):
    """The knobs of a random-walk engine (each declares its own class of these fields)."""
    walks: int = knobs.knob(1000, least=1)  # random walks
    depth: int = knobs.knob(100, least=1)  # steps per walk at the most
    seed: int = 0  # walk i of seed S is the same on every run
    shrink: bool = True  # shrink a failing walk (the mutation gate needs only the kill)


def found(model, invariants, res: SearchResult, root, labels: list, bad: list, shrink: bool) -> None:
    """res.counterexample := the walk from `root` along `labels` that broke `bad`, run again on
    the model and, unless it is a deadlock, shrunk by deleting steps while the same property
    still fails (verifier/core/shrink.py, as fuzz shrinks): short, not necessarily shortest."""
    steps = concrete_trace(model, root, labels)
    if shrink and DEADLOCK not in bad and steps:
        steps = shrink_steps(model, root, steps, bad, invariants)
    trace = Trace(model, root, steps, bad, engine="simulate", checked=names(invariants),
                  properties=tuple(invariants))
    res.counterexample = trace
    res.counterexamples = {n: trace for n in bad}


def ended(res: SearchResult, invariants, status: str, reason: str, distinct: int, walks: int,
          seconds: float) -> SearchResult:
    """res with how the walks ended, judged. A sample never covers the state space, so it is
    never `explored_all`, whatever it found."""
    res.status, res.stop_reason = status, reason
    res.explored_all = False
    res.distinct_states = distinct
    res.seconds = seconds
    res.collision_probability = collision_probability(distinct, res.transitions + walks)
    return res.judge(invariants)


class Pace:
    """Between walks: whether to stop (a stop request, the time budget, looked at when progress
    is due) and the progress line, every `every` seconds."""

    def __init__(self, walks: int, time_budget: Optional[float], progress: Optional[Callable[[Progress], None]],
                 every: float):
        self.walks, self.time_budget, self.progress, self.every = walks, time_budget, progress, every
        self.start = time.monotonic()
        self.due = self.start + every

    def stop_reason(self, done: int, figures: Callable[[], tuple]) -> str:
        """Why to stop after `done` walks ("" : go on); `figures()`: (walk steps, distinct
        states, depth) for the progress line."""
        if stop.requested():
            return f"{stop.reason()} after {done} of {self.walks} walks"
        now = time.monotonic()
        if now >= self.due:
            self.due = now + self.every
            if self.time_budget is not None and now - self.start > self.time_budget:
                return f"time budget {self.time_budget:g}s spent after {done} of {self.walks} walks"
            if self.progress:
                self.progress(Progress(*figures(), self.walks - done, now - self.start))
        return ""

    def seconds(self) -> float:
        return time.monotonic() - self.start
