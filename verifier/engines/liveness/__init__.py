"""Liveness under weak fairness on the explored state graph (TLC's liveness checking, for
`premise ~> goal` properties).

A run violates `P ~> G` when it reaches a state where P holds and G does not, and from there
stays forever among states where G does not hold, while treating every fair action fairly:
weak fairness of A means that A is not enabled forever without being taken. On a finite graph
such a run is a lasso: a prefix to a state of the not-G subgraph, then a cycle in it. A cycle
is fair when, for each fair action, some state on it has the action disabled or the cycle
takes it; a single state where no fair action is enabled is a fair cycle by itself (the run
stutters there). So: the not-G subgraph's strongly connected components that can host a fair
cycle, and the not-G states that can reach one; any of those where P holds is a violation.

Budgets and epoch bounds make a fair action look disabled where the unbounded model would
enable it. Such a cycle is not reported as a violation: the property is `inconclusive` for
that bound, and the run says which action the bound blocked. The engine knows the model only
through `specs.Model` (its fair actions and enabled actions); the properties, each a
`premise ~> goal` with its documented exception (`by_design`), are the caller's
(invariants/liveness.py).
"""
from __future__ import annotations

import time
from collections import deque
from contextlib import nullcontext as _nothing
from dataclasses import dataclass
from typing import Callable, Optional


from specs import Trace
from verifier.core.exitcodes import EXIT_OK, EXIT_STOPPED, EXIT_VIOLATION
from verifier.core.result import (COMPLETE, EXCEPTED, HOLDS, INCONCLUSIVE, STOPPED, VIOLATED, VIOLATION, Progress,
                                  Result, Verdict)
from verifier.core.settings import Settings
from verifier.engines.liveness.graph import Pace, _Graph, explore  # noqa: F401  (Pace, _Graph: the tests' reference)


@dataclass
class Lasso:
    trace: Trace                 # prefix and one turn of the cycle
    loop: int                    # the state index (0 = initial) where the cycle starts
    stutter: bool                # the cycle is the last state repeated (no fair action enabled)
    reason: str = ""             # why the cycle is the documented behaviour (EXCEPTED), else ""


class LivenessResult(Result):
    """The base result, with the graph's size: `verdicts` are one per property, each lasso
    (violated or excepted) with its trace, `loop` and `stutter`."""

    def __init__(self, complete: bool, distinct_states: int, edges: int, **kw):
        super().__init__(engine="liveness", **kw)
        self.complete, self.distinct_states, self.edges = complete, distinct_states, edges


def _sccs(nodes: set[int], succ: Callable[[int], list[int]]) -> list[list[int]]:
    """Tarjan's strongly connected components, iteratively, in a deterministic order."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on, stack, out = set(), [], []
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(succ(root)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(succ(w))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(sorted(comp))
    return out


def _fair_targets(g: _Graph, k: int):
    """For property k: {state: (cycle nodes or None for a stutter)} of fair cycles in the not-goal
    subgraph, and the fair actions a bound kept from making a cycle fair."""
    nodes = {i for i in g.out if not g.goal(i, k)}

    def succ(i):
        return [j for j, _ in g.out[i] if j in nodes]
    fair_names = g.fair
    targets: dict[int, Optional[list[int]]] = {}
    blocked: set[str] = set()
    for i in sorted(nodes):                          # stuttering: no fair action enabled at all
        bounded, unbounded = g.enabled[i]
        if unbounded == 0:
            targets[i] = None
        elif bounded == 0:
            blocked |= {a for a in fair_names if unbounded & g.fair_bit[a]}
    for comp in _sccs(nodes, succ):
        members = set(comp)
        if len(comp) == 1 and comp[0] not in {j for j, _ in g.out[comp[0]] if j in members}:
            continue
        taken = 0
        for i in comp:
            for j, a in g.out[i]:
                if j in members:
                    taken |= g.fair_bit.get(g.model.action_names[a], 0)
        unfair = [a for a in fair_names if not taken & g.fair_bit[a]
                  and all(g.enabled[i][1] & g.fair_bit[a] for i in comp)]
        if not unfair:
            for i in comp:
                targets.setdefault(i, comp)
        elif all(any(not g.enabled[i][0] & g.fair_bit[a] for i in comp) for a in unfair):
            blocked |= set(unfair)
    return nodes, targets, sorted(blocked)


def run(model, properties, settings: Settings = Settings(),
        progress: Optional[Callable[[Progress], None]] = None) -> LivenessResult:
    """The engine interface: the whole graph within `settings.limits` (max_states, time_budget)."""
    return check(model, properties, settings.limits.max_states, settings.limits.time_budget, progress)


def check(model, properties, max_states: Optional[int] = None, time_budget: Optional[float] = None,
          progress: Optional[Callable[[Progress], None]] = None, graph_of: Optional[Callable] = None
          ) -> LivenessResult:
    """`graph_of`: how the graph is explored (the kernel's `explore`; tests give graphs drawn by
    hand, which have no kernel, to the interpreted reference)."""
    props = list(properties)
    start = time.monotonic()
    compiling = _compiling(model, progress) if graph_of is None else None
    with compiling or _nothing():
        g, complete, reason, edges = (graph_of or explore)(model, props, model.fair_actions, max_states, time_budget,
                                                           progress)
    compiled = compiling.seconds if compiling is not None else 0.0
    verdicts = []
    for k, prop in enumerate(props):
        if not complete:
            verdicts.append(_verdict(prop, INCONCLUSIVE, f"the search stopped ({reason})"))
            continue
        nodes, targets, blocked = _fair_targets(g, k)
        reach = _backward(g, nodes, set(targets))
        bad = [i for i in sorted(reach) if g.premise(i, k)]
        if not bad:
            verdicts.append(_verdict(prop, INCONCLUSIVE if blocked else HOLDS, blocked=blocked,
                                     detail="a bound kept fair action(s) " + ", ".join(blocked) + " from a cycle: "
                                            "raise it" if blocked else ""))
            continue
        lasso = _lasso(g, k, nodes, targets, reach, min(bad, key=lambda i: (_depth(g, i), i)))
        verdicts.append(_verdict(prop, EXCEPTED if lasso.reason else VIOLATED, lasso=lasso, blocked=blocked,
                                 detail="documented exception: " + lasso.reason if lasso.reason else ""))
    statuses = [v.status for v in verdicts]
    code = EXIT_VIOLATION if VIOLATED in statuses else (EXIT_STOPPED if INCONCLUSIVE in statuses else EXIT_OK)
    result = LivenessResult(complete, len(g.keys), edges, seconds=time.monotonic() - start - compiled,
                            status={EXIT_OK: COMPLETE, EXIT_VIOLATION: VIOLATION}.get(code, STOPPED),
                            stop_reason=reason or ("" if code != EXIT_STOPPED else
                                                   "a bound kept a fair action from a cycle"),
                            explored_all=complete, verdicts=verdicts, exit_code=code)
    result.counterexamples = {v.name: v.trace for v in verdicts if v.status == VIOLATED}
    result.counts = {"distinct_states": result.distinct_states, "transitions": edges,
                     "seconds": round(result.seconds, 3), "compile_seconds": round(compiled, 3)}
    result.sections = {"fair_actions": list(model.fair_actions)}
    return result


def _compiling(model, progress):
    """The kernel's compile, said as it starts and kept out of the run's seconds."""
    from specs import config_label
    from specs.kernel import CACHE
    from verifier.core.compiling import Compiling
    say = (lambda text: progress(Progress(0, 0, 0, 0, 0.0, note=text))) if progress else None
    return Compiling(say, config_label(model.cfg), CACHE)


def _verdict(prop, status: str, detail: str = "", lasso: Optional[Lasso] = None, blocked=()) -> Verdict:
    return Verdict(prop.name, "liveness", status, quote=prop.quote, detail=detail,
                   trace=lasso.trace if lasso else None, loop=lasso.loop if lasso else None,
                   stutter=lasso.stutter if lasso else False, extra={"blocked_by_bounds": list(blocked)})


def _depth(g: _Graph, i: int) -> int:
    d = 0
    while g.parent[i] >= 0:
        i, d = g.parent[i], d + 1
    return d


def _backward(g: _Graph, nodes: set[int], targets: set[int]) -> set[int]:
    preds: dict[int, list[int]] = {}
    for i in nodes:
        for j, _ in g.out[i]:
            if j in nodes:
                preds.setdefault(j, []).append(i)
    seen, todo = set(targets), deque(sorted(targets))
    while todo:
        j = todo.popleft()
        for i in preds.get(j, ()):
            if i not in seen:
                seen.add(i)
                todo.append(i)
    return seen


def _path(g: _Graph, src: int, goal: Callable[[int], bool], allowed: set[int]) -> list[int]:
    """Shortest path (ids, src first) inside `allowed` to a state where `goal` holds."""
    back, todo = {src: -1}, deque([src])
    while todo:
        i = todo.popleft()
        if goal(i):
            out = [i]
            while back[out[-1]] >= 0:
                out.append(back[out[-1]])
            return out[::-1]
        for j, _ in g.out.get(i, ()):
            if j in allowed and j not in back:
                back[j] = i
                todo.append(j)
    raise AssertionError("no path inside the subgraph")


def _lasso(g: _Graph, k: int, nodes, targets, reach, start: int) -> Lasso:
    prefix = [start]
    while g.parent[prefix[-1]] >= 0:
        prefix.append(g.parent[prefix[-1]])
    prefix.reverse()
    to_loop = _path(g, start, lambda i: i in targets, reach)
    loop_at = to_loop[-1]
    ids = prefix + to_loop[1:]
    comp = targets[loop_at]
    stutter = comp is None
    if not stutter:
        members = set(comp)
        ids += _cycle(g, loop_at, members)[1:]
    trace = _rebuild(g, ids)
    loop = len(prefix) + len(to_loop) - 2
    cycle_states = [trace.initial] + [s for _, s in trace.steps]
    cycle_states = cycle_states[loop:]
    prop = g.props[k]
    reasons = {prop.by_design(g.model.cfg, s) for s in cycle_states}
    reason = reasons.pop() if len(reasons) == 1 and None not in reasons else ""
    trace.violated = [prop.name]
    return Lasso(trace, loop, stutter, reason or "")


def _cycle(g: _Graph, at: int, members: set[int]) -> list[int]:
    """A closed walk from `at` inside the component that takes every fair action the component
    enables everywhere (so the cycle is fair), then returns to `at`."""
    needed = [g.fair_bit[a] for a in g.fair if all(g.enabled[i][1] & g.fair_bit[a] for i in members)]
    walk, here = [at], at
    for bit in needed:
        edge = next(((i, j) for i in sorted(members) for j, a in g.out[i]
                     if j in members and g.fair_bit.get(g.model.action_names[a], 0) == bit), None)
        if edge is None:
            continue
        walk += _path(g, here, lambda i, e=edge: i == e[0], members)[1:] + [edge[1]]
        here = edge[1]
    if len(walk) == 1:             # no fair action to take: any step inside, then back
        here = next(j for j, _ in g.out[at] if j in members)
        walk.append(here)
    if here != at:
        walk += _path(g, here, lambda i: i == at, members)[1:]
    return walk


def _rebuild(g: _Graph, ids: list[int]) -> Trace:
    """The concrete run through `ids`, re-stepped from the initial state by matching keys."""
    model, key = g.model, g.key_of
    root = next(s for s in model.init_states() if key(s) == g.keys[ids[0]])
    steps, s = [], root
    for j in ids[1:]:
        label, t = next((label, t) for label, t in model.successors(s) if key(t) == g.keys[j])
        steps.append((label, t))
        s = t
    return Trace(model, root, steps, engine="liveness")
