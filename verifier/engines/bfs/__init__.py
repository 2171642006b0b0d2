"""Exhaustive explicit-state breadth-first search over a `Model`, interpreted, on one core: the
reference the compiled search (verifier/engines/kernel) is held to by the tests, and what
`check --engine python` runs (or a check the kernel cannot hold, which check says).

Level by level, so the first violation found is a shortest one. The visited set holds
128-bit fingerprints of canonical states (verifier/core/store.py); a counterexample is rebuilt by
re-running the model along the parent links. This module knows nothing of Kafka.
"""
from __future__ import annotations

import time
from collections import Counter
from typing import Callable, Optional

from verifier.core import knobs, levels, stop
from verifier.core.levels import GRAPH_LIMIT
from verifier.core.codec import Codec, Level
from verifier.core.fingerprint import collision_probability
from verifier.core.properties import split
from verifier.core.result import COMPLETE, DEADLOCK, STOPPED, VIOLATION, Progress, SearchResult
from verifier.core.settings import Limits, Options, Settings
from verifier.core.store import Store



class Search:
    """A BFS in progress: the visited set and parent links, the level being expanded and the
    position in it, the next level so far, and the counts."""

    def __init__(self, graph: bool = False):
        self.store = Store(graph)
        self.codec = Codec()              # held states are field ids (verifier/core/codec.py)
        self.roots: dict[int, object] = {}
        self.frontier = Level()           # the canonical states of the level being expanded
        self.pos = 0                      # how many of them are expanded
        self.nxt = Level()                # the next level so far
        self.transitions = self.terminal = self.depth = 0
        self.enabled: Counter = Counter()
        self.taken: Counter = Counter()
        self.states_per_level: list[int] = []
        self.found: dict[str, tuple] = {}     # invariant -> (index, names, final label), in order found


@knobs.declare("bfs")
class Knobs(knobs.Knobs):
    """None: the interpreted search has no knobs of its own (another engine's are refused)."""


def run(model, properties, settings: Settings = Settings(),
        progress: Optional[Callable[[Progress], None]] = None) -> SearchResult:
    """The engine interface: BFS of `model` checking `properties` under `settings` (its limits
    and options)."""
    Knobs.of(settings)
    return explore(model, properties, settings.limits, settings.options, progress)


def explore(model, invariants, limits: Limits = Limits(), options: Options = Options(),
            progress: Optional[Callable[[Progress], None]] = None, progress_every: float = 0.5) -> SearchResult:
    """BFS from the model's initial states. Stops at the first violation unless keep_going."""
    cfg = model.cfg
    state_invs, step_invs = split(invariants)
    canonical = model.canonical
    run = Search(options.graph)
    store, found, codec = run.store, run.found, run.codec
    start = time.monotonic()
    next_report = time.monotonic() + progress_every

    def elapsed() -> float:
        return time.monotonic() - start

    def record(index: int, names: list[str], final_label=None) -> bool:
        """Keep the first trace of each newly violated invariant; True = stop now."""
        new = tuple(n for n in names if n not in found)
        for n in new:
            found[n] = (index, new, final_label)
        return bool(new) and not options.keep_going

    def finish(status: str, reason: str = "", cut: bool = False) -> SearchResult:
        if cut:                 # stopped inside a level: count what the next level had so far
            run.states_per_level.append(len(run.nxt))
        res = SearchResult(VIOLATION if found else status, elapsed(), reason, "bfs", distinct_states=len(store),
                           transitions=run.transitions, depth=run.depth, states_per_level=list(run.states_per_level),
                           enabled=run.enabled, taken=run.taken, terminal_states=run.terminal,
                           deadlock_checked=options.check_deadlock)
        res.explored_all = status == COMPLETE
        levels.attach_traces(res, found, store.path, run.roots, model, invariants, "bfs", options.keep_going)
        res.store_bytes = store.nbytes()
        res.collision_probability = collision_probability(len(store), run.transitions + len(run.roots))
        if store.edges is not None:
            if len(store) <= GRAPH_LIMIT:
                bad = {key[0] for key in found.values()}
                res.graph = (_nodes(model, store, run.roots, bad), store.edges)
            else:
                res.graph_note = f"graph not written: {len(store)} states > {GRAPH_LIMIT}"
        return res.judge(invariants)

    for fp, (s, c) in levels.roots(model).items():
        ids = codec.encode(c)
        index = store.add(fp, -1, None)
        run.roots[index] = s
        run.frontier.append(index, ids)
        bad = [inv.name for inv in state_invs if inv.name not in found and not inv.check(cfg, c)]
        if bad and record(index, bad):
            run.states_per_level = [len(run.frontier)]
            return finish(VIOLATION)
    run.states_per_level = [len(run.frontier)]
    seen = store.seen
    while run.frontier:
        if run.pos == 0 and levels.depth_reached(limits, run.depth, len(run.frontier)):
            return finish(STOPPED, levels.depth_reached(limits, run.depth, len(run.frontier)))
        frontier, nxt = run.frontier, run.nxt
        while run.pos < len(frontier):
            i, known = frontier[run.pos]
            s = codec.decode(known)
            pfp = codec.fingerprint(known)
            run.pos += 1
            n_succ = 0
            for label, t in model.successors(s):
                n_succ += 1
                run.transitions += 1
                name = label[0]
                run.enabled[name] += 1
                if step_invs:
                    bad = [inv.name for inv in step_invs
                           if inv.name not in found and not inv.check(cfg, s, label, t)]
                    if bad and record(i, bad, label):
                        return finish(VIOLATION, cut=True)
                c = canonical(t) if canonical else t
                ids, fp = codec.child(c, s, known, pfp)
                if fp in seen:
                    if store.edges is not None:
                        store.edges.append((i, seen[fp], model.describe(label)))
                    continue
                run.taken[name] += 1
                index = store.add(fp, i, label)
                if store.edges is not None:
                    store.edges.append((i, index, model.describe(label)))
                nxt.append(index, ids)
                bad = [inv.name for inv in state_invs if inv.name not in found and not inv.check(cfg, c)]
                if bad and record(index, bad):
                    return finish(VIOLATION, cut=True)
                if limits.max_states is not None and len(store) >= limits.max_states:
                    return finish(STOPPED, f"max states {limits.max_states} reached", cut=True)
            if n_succ == 0:
                run.terminal += 1
                if options.check_deadlock and DEADLOCK not in found and model.stuck(s):
                    run.terminal -= 1
                    if record(i, [DEADLOCK]):
                        return finish(VIOLATION)
            if stop.requested():
                return finish(STOPPED, stop.reason(), cut=True)
            now = time.monotonic()
            if now >= next_report:
                next_report = now + progress_every
                if limits.time_budget is not None and elapsed() > limits.time_budget:
                    return finish(STOPPED, f"time budget {limits.time_budget:g}s spent", cut=True)
                if progress:
                    progress(_progress(run, elapsed()))
        run.frontier, run.nxt, run.pos = nxt, Level(), 0
        if nxt:
            run.depth += 1
            run.states_per_level.append(len(nxt))
    return finish(COMPLETE)


def _progress(run: Search, seconds: float) -> Progress:
    return levels.progress(run.transitions, run.states_per_level, run.depth, len(run.nxt), seconds,
                           level=len(run.frontier), level_done=run.pos, done=len(run.store))


def _nodes(model, store: Store, roots: dict, bad: set) -> list:
    """Graph nodes: index and the action that first reached it (full states are not kept)."""
    nodes = []
    for index in range(len(store)):
        label = store.labels[store.via[index]]
        nodes.append((index, {"label": f"s{index}" + ("" if label is None else f" via {model.describe(label)}"),
                              "init": str(index in roots).lower(), "violation": str(index in bad).lower()}))
    return nodes
