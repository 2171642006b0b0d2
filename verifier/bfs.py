"""Exhaustive explicit-state breadth-first search over a `Model`.

Level by level, so the first violation found is a shortest one. The visited set
holds 128-bit fingerprints of canonical states; each state also gets an index,
a parent index and the id of the action label that reached it (two flat arrays),
which is all a counterexample needs: it is rebuilt by re-running the model along
that path. This module knows nothing of Kafka.
"""
from __future__ import annotations

import sys
import time
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Optional

from specs import Trace
from verifier.fingerprint import Fingerprinter, collision_probability

COMPLETE = "complete"
VIOLATION = "violation"
STOPPED = "stopped"
DEADLOCK = "Deadlock"
GRAPH_LIMIT = 50_000       # --dump-graph is for small runs


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
    queue: int
    seconds: float


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


class _Store:
    """Visited fingerprints plus parent links in flat arrays (about 100 bytes a state)."""

    def __init__(self, graph: bool):
        self.seen: set[int] | dict[int, int] = {} if graph else set()
        self.parent = array("q")
        self.via = array("I")
        self.labels: list = [None]
        self.label_ids: dict = {}
        self.edges: Optional[list] = [] if graph else None

    def add(self, fp: int, parent: int, label) -> int:
        index = len(self.parent)
        if isinstance(self.seen, dict):
            self.seen[fp] = index
        else:
            self.seen.add(fp)
        self.parent.append(parent)
        lid = self.label_ids.get(label)
        if lid is None:
            lid = self.label_ids[label] = len(self.labels)
            self.labels.append(label)
        self.via.append(lid)
        return index

    def path(self, index: int) -> tuple[int, list]:
        """(root index, labels from the root to `index`)."""
        labels = []
        while self.parent[index] >= 0:
            labels.append(self.labels[self.via[index]])
            index = self.parent[index]
        labels.reverse()
        return index, labels

    def __len__(self) -> int:
        return len(self.parent)

    def nbytes(self) -> int:
        """The set's table, one 128-bit int per key, and the two parallel arrays."""
        keys = sum(map(sys.getsizeof, self.seen))
        arrays = len(self.parent) * self.parent.itemsize + len(self.via) * self.via.itemsize
        return sys.getsizeof(self.seen) + keys + arrays


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


def explore(model, invariants, limits: Limits = Limits(), options: Options = Options(),
            progress: Optional[Callable[[Progress], None]] = None, progress_every: float = 0.5) -> Result:
    """BFS from the model's initial states. Stops at the first violation unless keep_going."""
    cfg = model.cfg
    state_invs = [inv for inv in invariants if inv.kind == "state"]
    step_invs = [inv for inv in invariants if inv.kind == "step"]
    checked = None if len(invariants) == len(model.properties) else [inv.name for inv in invariants]
    canonical = model.canonical
    fpr = Fingerprinter()
    store = _Store(options.graph)
    roots: dict[int, object] = {}
    found: dict[str, Trace] = {}
    bad_nodes: set[int] = set()
    res = Result(COMPLETE, 0, 0, 0, 0.0, deadlock_checked=options.check_deadlock)
    start = time.monotonic()
    next_report = start + progress_every

    def trace_to(index: int, violated: list[str], final_label=None) -> Trace:
        root, labels = store.path(index)
        steps = concrete_trace(model, roots[root], labels, final_label, canonical)
        return Trace(model, roots[root], steps, violated, engine="bfs", checked=checked)

    def record(index: int, names: list[str], final_label=None) -> bool:
        """Keep the first trace of each newly violated invariant; True = stop now."""
        new = [n for n in names if n not in found]
        if not new:
            return False
        trace = trace_to(index, new, final_label)
        if options.keep_going:      # earlier states may break invariants already reported
            trace.checked = list(new)
        bad_nodes.add(index)
        for n in new:
            found[n] = trace
        if res.counterexample is None:
            res.counterexample = trace
        return not options.keep_going

    def finish(status: str, reason: str = "") -> Result:
        res.status = VIOLATION if found else status     # a violation is definite, even in a cut-short run
        res.explored_all = status == COMPLETE
        res.stop_reason = reason
        res.distinct_states = len(store)
        res.seconds = time.monotonic() - start
        res.counterexamples = found
        res.store_bytes = store.nbytes()
        res.collision_probability = collision_probability(len(store), res.transitions + len(roots))
        if store.edges is not None:
            if len(store) <= GRAPH_LIMIT:
                res.graph = (_nodes(model, store, roots, bad_nodes), store.edges)
            else:
                res.graph_note = f"graph not written: {len(store)} states > {GRAPH_LIMIT}"
        return res

    frontier: list[tuple[int, object]] = []
    for s in model.init_states():
        c = canonical(s) if canonical else s
        fp = fpr(c)
        if fp in store.seen:
            continue
        index = store.add(fp, -1, None)
        roots[index] = s
        frontier.append((index, c))
        bad = [inv.name for inv in state_invs if inv.name not in found and not inv.check(cfg, c)]
        if bad and record(index, bad):
            res.states_per_level = [len(frontier)]
            return finish(VIOLATION)
    res.states_per_level = [len(frontier)]
    seen = store.seen
    while frontier:
        if limits.max_depth is not None and res.depth >= limits.max_depth:
            return finish(STOPPED, f"max depth {limits.max_depth} reached with {len(frontier)} states unexplored")
        nxt: list[tuple[int, object]] = []
        for i, s in frontier:
            n_succ = 0
            known = fpr.fields(s)
            for label, t in model.successors(s):
                n_succ += 1
                res.transitions += 1
                name = label[0]
                res.enabled[name] += 1
                if step_invs:
                    bad = [inv.name for inv in step_invs if inv.name not in found and not inv.check(cfg, s, label, t)]
                    if bad and record(i, bad, label):
                        res.states_per_level.append(len(nxt))
                        return finish(VIOLATION)
                c = canonical(t) if canonical else t
                fp = fpr.mix(fpr.fields(c, s, known))
                if fp in seen:
                    if store.edges is not None:
                        store.edges.append((i, seen[fp], model.describe(label)))
                    continue
                res.taken[name] += 1
                index = store.add(fp, i, label)
                if store.edges is not None:
                    store.edges.append((i, index, model.describe(label)))
                nxt.append((index, c))
                bad = [inv.name for inv in state_invs if inv.name not in found and not inv.check(cfg, c)]
                if bad and record(index, bad):
                    res.states_per_level.append(len(nxt))
                    return finish(VIOLATION)
                if limits.max_states is not None and len(store) >= limits.max_states:
                    res.states_per_level.append(len(nxt))
                    return finish(STOPPED, f"max states {limits.max_states} reached")
            if n_succ == 0:
                res.terminal_states += 1
                if options.check_deadlock and DEADLOCK not in found and model.stuck(s):
                    res.terminal_states -= 1
                    if record(i, [DEADLOCK]):
                        return finish(VIOLATION)
            now = time.monotonic()
            if now >= next_report:
                next_report = now + progress_every
                if limits.time_budget is not None and now - start > limits.time_budget:
                    res.states_per_level.append(len(nxt))
                    return finish(STOPPED, f"time budget {limits.time_budget:g}s spent")
                if progress:
                    progress(Progress(res.transitions, len(store), res.depth, len(nxt), now - start))
        frontier = nxt
        if nxt:
            res.depth += 1
            res.states_per_level.append(len(nxt))
    return finish(COMPLETE)


def _nodes(model, store: _Store, roots: dict, bad: set) -> list:
    """Graph nodes: index and the action that first reached it (full states are not kept)."""
    nodes = []
    for index in range(len(store)):
        label = store.labels[store.via[index]]
        nodes.append((index, {"label": f"s{index}" + ("" if label is None else f" via {model.describe(label)}"),
                              "init": str(index in roots).lower(), "violation": str(index in bad).lower()}))
    return nodes
