"""Exhaustive explicit-state breadth-first search over the model's seam.

Level by level, so the first violation found is a shortest one. This module knows
nothing of Kafka: it sees opaque hashable states, labels, and named predicates.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Optional

import invariants as I
from specs.actions import init_states, successors
from specs.config import Config
from verifier.trace import Trace

COMPLETE = "complete"
VIOLATION = "violation"
STOPPED = "stopped"


@dataclass
class Limits:
    max_depth: Optional[int] = None
    max_states: Optional[int] = None
    time_budget: Optional[float] = None


@dataclass
class Result:
    status: str                                 # complete | violation | stopped
    distinct_states: int
    transitions: int
    depth: int                                  # deepest level fully explored
    seconds: float
    states_per_level: list[int] = field(default_factory=list)
    taken: Counter = field(default_factory=Counter)      # action name -> transitions
    counterexample: Optional[Trace] = None
    stop_reason: str = ""

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.seconds if self.seconds > 0 else float(self.distinct_states)


def _trace(cfg: Config, parents: dict, state, violated: list[str], invariants,
           last: Optional[tuple] = None) -> Trace:
    """Rebuild the path to `state` from parent links, plus a final (label, state) if given."""
    steps = []
    cur = state
    while parents[cur] is not None:
        prev, label = parents[cur]
        steps.append((label, cur))
        cur = prev
    steps.reverse()
    if last is not None:
        steps.append(last)
    return Trace(cfg, cur, steps, list(violated), engine="bfs", checked=_checked(invariants))


def _checked(invariants) -> Optional[list[str]]:
    names = [inv.name for inv in invariants]
    return None if set(names) == set(I.BY_NAME) else names


def explore(cfg: Config, invariants=None, limits: Limits = Limits(),
            progress: Optional[Callable[[int, int, int, float], None]] = None) -> Result:
    """BFS from the initial states; stops at the first level with a violation."""
    invariants = invariants if invariants is not None else I.REGISTRY
    state_invs = [inv for inv in invariants if inv.kind == "state"]
    step_invs = [inv for inv in invariants if inv.kind == "step"]
    start = time.monotonic()
    parents: dict = {}
    frontier = []
    for s in init_states(cfg):
        if s not in parents:
            parents[s] = None
            frontier.append(s)
            bad = I.state_violations(cfg, s, state_invs)
            if bad:
                return Result(VIOLATION, len(parents), 0, 0, time.monotonic() - start, [len(frontier)],
                              counterexample=Trace(cfg, s, [], bad))
    levels = [len(frontier)]
    taken: Counter = Counter()
    transitions = 0
    depth = 0
    while frontier:
        if limits.max_depth is not None and depth >= limits.max_depth:
            return Result(STOPPED, len(parents), transitions, depth, time.monotonic() - start, levels, taken,
                          stop_reason=f"max depth {limits.max_depth} reached")
        nxt = []
        for s in frontier:
            for label, n in successors(cfg, s):
                transitions += 1
                taken[label[0]] += 1
                bad = I.step_violations(cfg, s, label, n, step_invs)
                if n not in parents:
                    parents[n] = (s, label)
                    nxt.append(n)
                    bad = bad + I.state_violations(cfg, n, state_invs)
                    if bad:
                        trace = _trace(cfg, parents, n, bad, invariants)
                        return Result(VIOLATION, len(parents), transitions, depth + 1,
                                      time.monotonic() - start, levels + [len(nxt)], taken, trace)
                elif bad:
                    trace = _trace(cfg, parents, s, bad, invariants, last=(label, n))
                    return Result(VIOLATION, len(parents), transitions, depth + 1,
                                  time.monotonic() - start, levels + [len(nxt)], taken, trace)
                if limits.max_states is not None and len(parents) >= limits.max_states:
                    return Result(STOPPED, len(parents), transitions, depth, time.monotonic() - start,
                                  levels + [len(nxt)], taken, stop_reason=f"max states {limits.max_states} reached")
            if limits.time_budget is not None and time.monotonic() - start > limits.time_budget:
                return Result(STOPPED, len(parents), transitions, depth, time.monotonic() - start,
                              levels + [len(nxt)], taken, stop_reason=f"time budget {limits.time_budget}s spent")
        frontier = nxt
        if nxt:
            depth += 1
            levels.append(len(nxt))
        if progress:
            progress(len(parents), depth, len(frontier), time.monotonic() - start)
    return Result(COMPLETE, len(parents), transitions, depth, time.monotonic() - start, levels, taken)
