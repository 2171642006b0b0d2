"""What every search engine (BFS, parallel BFS, random walks, Spark) returns, and how a trace
is rebuilt from the labels along a path. No engine here knows the protocol."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from specs import Trace

COMPLETE = "complete"
VIOLATION = "violation"
STOPPED = "stopped"
DEADLOCK = "Deadlock"


@dataclass
class Limits:
    max_depth: Optional[int] = None
    max_states: Optional[int] = None
    time_budget: Optional[float] = None


@dataclass
class Options:
    check_deadlock: bool = True
    keep_going: bool = False          # record the first counterexample of every invariant, explore on
    graph: bool = False               # keep nodes and edges for --dump-graph


@dataclass
class Progress:
    generated: int
    distinct: int
    depth: int
    queue: int                        # states found so far for the next level (walks left: simulation)
    seconds: float
    level: int = 0                    # states of the level being expanded
    level_done: int = 0               # ... of which expanded so far
    eta: Optional[float] = None       # seconds left, once the level sizes allow a prediction
    predicted: Optional[int] = None   # distinct states predicted in all


@dataclass
class Result:
    status: str                                 # complete | violation | stopped
    distinct_states: int
    transitions: int
    depth: int                                  # levels fully explored
    seconds: float
    states_per_level: list[int] = field(default_factory=list)
    enabled: Counter = field(default_factory=Counter)    # action -> transitions generated
    taken: Counter = field(default_factory=Counter)      # action -> transitions to a new state
    counterexample: Optional[Trace] = None               # the first (shortest) one
    counterexamples: dict = field(default_factory=dict)  # invariant -> its shortest trace
    stop_reason: str = ""
    terminal_states: int = 0                    # no successor because a budget or bound is spent
    deadlock_checked: bool = True
    collision_probability: float = 0.0
    graph: Optional[tuple[list, list]] = None   # (nodes, edges) when asked and small enough
    graph_note: str = ""
    store_bytes: int = 0                        # the visited set and parent links, in bytes
    explored_all: bool = False                  # every reachable state was expanded (keep_going too)

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.seconds if self.seconds > 0 else float(self.distinct_states)

    @property
    def violated(self) -> list[str]:
        return list(self.counterexamples)


def concrete_trace(model, root, labels: list, final_label=None, canonical=None) -> list:
    """Steps (label, state) from the concrete initial state `root`. Without symmetry the
    stored labels replay as they are; with it they were taken from orbit representatives,
    so each step is matched to the concrete successor whose canonical form agrees."""
    if canonical is None:
        steps, s = [], root
        for label in labels + ([final_label] if final_label is not None else []):
            s = model.step(s, label)
            steps.append((label, s))
        return steps
    rep = canonical(root)
    targets = []
    for label in labels:
        rep = canonical(model.step(rep, label))
        targets.append(rep)
    if final_label is not None:
        targets.append(canonical(model.step(rep, final_label)))
    steps, s = [], root
    for target in targets:
        s_label, s_next = next((lb, t) for lb, t in model.successors(s) if canonical(t) == target)
        steps.append((s_label, s_next))
        s = s_next
    return steps
