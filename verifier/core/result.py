"""What every engine returns: one base, `Result`, with the run's status, its per-property
verdicts (each violated one with its own trace) and its counts; a search adds its own
figures (`SearchResult`). One function turns any of them into summary.json
(verifier/reports/summary.py), and one writer into the run's files. No engine here knows
the protocol.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Optional

from specs import Trace

COMPLETE = "complete"
VIOLATION = "violation"
STOPPED = "stopped"
DEADLOCK = "Deadlock"

# A property's verdict, as summary.json states it.
HOLDS = "holds"
VIOLATED = "violated"
STOPPED_STATUS = "not checked to completion"
SAMPLED_STATUS = "not violated in sampled runs"     # random walks and Hypothesis: a sample, no proof
UNKNOWN_STATUS = "unknown"                          # z3: neither proved nor refuted within the depth
EXCEPTED = "excepted"                               # liveness: the documented exception, with its lasso
INCONCLUSIVE = "inconclusive"                       # liveness: a bound kept a fair action from a cycle

# One z3 size's verdict (verifier/engines/prove/), which its report reads too.
PROVED = "proved"
REFUTED = "refuted"
UNKNOWN = "unknown"         # not inductive, no violation within the BMC depth


@dataclass
class Progress:
    """What every engine reports while it runs (the command line's progress line reads it):
    a search's states and levels, a sampler's walks, a comparison's cases and steps."""
    generated: int                    # states generated (steps compared: conform; steps driven: a cluster)
    distinct: int                     # distinct states (cases finished: conform, cluster-conform)
    depth: int
    queue: int                        # states found so far for the next level (walks left: simulation)
    seconds: float
    level: int = 0                    # states of the level being expanded
    level_done: int = 0               # ... of which expanded so far
    eta: Optional[float] = None       # seconds left, once the level sizes allow a prediction
    predicted: Optional[int] = None   # distinct states predicted in all
    level_seconds: Optional[float] = None   # a level just finished, in this many seconds (one line per level)
    note: str = ""                    # the engine's own words for this step (a cluster's step, driven)
    status: str = ""                  # where a run without states stands (fuzz: examples, steps), for the line


@dataclass
class Verdict:
    """One property's verdict: its status, and for a violation (or a liveness lasso) its trace."""
    name: str
    kind: str                                   # state | step | liveness | ...
    status: str
    quote: str = ""
    assumes: str = ""
    trace: Optional[Trace] = None
    detail: str = ""
    loop: Optional[int] = None                  # a lasso: the state where its cycle starts
    stutter: bool = False                       # a lasso whose cycle is its last state repeated
    extra: dict = field(default_factory=dict)   # engine-specific fields of the summary's row
    file: str = ""                              # where its trace is saved (default counterexample-<P>.json)
    scenario: dict = field(default_factory=dict)  # what that file says beyond the model's scenario (None: drop)


@dataclass
class Result:
    """The base of every engine's result."""
    status: str = COMPLETE                       # complete | violation | stopped
    seconds: float = 0.0
    stop_reason: str = ""
    engine: str = ""
    counterexamples: dict = field(default_factory=dict)  # property -> its (shortest) trace
    counterexample: Optional[Trace] = None               # the first one found
    explored_all: bool = False                   # a "holds" is earned: nothing was left unexplored
    verdicts: list = field(default_factory=list)         # [Verdict], one per property checked
    warnings: list = field(default_factory=list)
    counts: dict = field(default_factory=dict)           # engine-specific figures (summary's counts)
    sections: dict = field(default_factory=dict)         # engine-specific top-level summary keys
    exit_code: Optional[int] = None              # when the engine decides it (else from status)
    facts: Any = None                            # the engine's own record (fuzz: its Recorder; conform: its Outcome)
    sampled: bool = False                        # random walks, Hypothesis: what ran is a sample, never a proof

    @property
    def violated(self) -> list[str]:
        return list(self.counterexamples)


@dataclass
class SearchResult(Result):
    """An explicit-state search (bfs, parallel, simulate, spark)."""
    distinct_states: int = 0
    transitions: int = 0
    depth: int = 0                                       # levels fully explored
    states_per_level: list = field(default_factory=list)
    enabled: Counter = field(default_factory=Counter)    # action -> transitions generated
    taken: Counter = field(default_factory=Counter)      # action -> transitions to a new state
    terminal_states: int = 0                    # no successor because a budget or bound is spent
    deadlock_checked: bool = True
    collision_probability: float = 0.0
    graph: Optional[tuple[list, list]] = None   # (nodes, edges) when asked and small enough
    graph_note: str = ""
    store_bytes: int = 0                        # the visited set and parent links, in bytes
    peak_resident_bytes: int = 0                # the process's peak resident set at the run's end
    peak_resident_own: bool = False             # ... started over at the run's start (else the process's)
    disk_bytes: int = 0                         # what the run keeps on disk: its checkpoint's files
    disk_of: str = "checkpoint"                 # ... or "visited runs and links" (check --visited disk)
    disk_peak_bytes: int = 0                    # check --visited disk: the most its files held at once
    extra: dict[str, Any] = field(default_factory=dict)

    def judge(self, properties) -> "SearchResult":
        """Each property's verdict: violated (with its trace), else holds if every reachable
        state was expanded, not violated in sampled runs for random walks, else not checked
        to completion."""
        from verifier.core.properties import verdicts
        sampled = self.sampled and self.status == COMPLETE
        otherwise = HOLDS if self.explored_all else (SAMPLED_STATUS if sampled else STOPPED_STATUS)
        self.verdicts = verdicts(properties, self.counterexamples, otherwise)
        return self

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.seconds if self.seconds > 0 else float(self.distinct_states)
