"""The liveness engine's graph: the states (their keys, BFS parents, which premises and goals
hold) and, from the states where a goal fails, the edges and the fair actions enabled with and
without bounds; explored on the compiled kernel (`explore`).
"""
from __future__ import annotations

import time
from array import array
from typing import Callable, Optional

import numpy as np

from verifier.core.result import Progress


class _Graph:
    """The explored graph: per state its key (`key_of(state)`: the kernel's row bytes, or a
    fingerprint), BFS parent, which premises and goals hold, and (for states where some goal
    fails) the fair actions enabled with and without bounds; edges are kept only from such
    states."""

    def __init__(self, model, props, fair: tuple[str, ...], key_of: Callable):
        self.model, self.props, self.fair, self.key_of = model, props, fair, key_of
        self.fair_bit = {a: 1 << i for i, a in enumerate(fair)}
        self.action_index = {a: i for i, a in enumerate(model.action_names)}
        self.ids: dict = {}
        self.keys: list = []
        self.parent = array("i")
        self.flags = array("B")            # bit 2k: premise k, bit 2k+1: goal k
        self.enabled: dict[int, tuple[int, int]] = {}       # id -> (bounded mask, unbounded mask)
        self.out: dict[int, list[tuple[int, int]]] = {}     # id -> [(dst, action index)]

    def add(self, key, parent: int, state) -> int:
        """The new state's id (the interpreted reference's way to grow a graph; the kernel's
        graph is made whole, `_graph_of`)."""
        i = len(self.keys)
        self.ids[key] = i
        self.keys.append(key)
        self.parent.append(parent)
        self.flags.append(self.judge(state))
        return i

    def judge(self, state) -> int:
        cfg, bits = self.model.cfg, 0
        for k, p in enumerate(self.props):
            bits |= (p.premise(cfg, state) << (2 * k)) | (p.goal(cfg, state) << (2 * k + 1))
        return bits

    def goal(self, i: int, k: int) -> bool:
        return bool(self.flags[i] >> (2 * k + 1) & 1)

    def premise(self, i: int, k: int) -> bool:
        return bool(self.flags[i] >> (2 * k) & 1)

    def mask(self, names) -> int:
        return sum(self.fair_bit[a] for a in set(names) if a in self.fair_bit)


class Pace:
    """An exploration's limits (states, seconds) and its progress every half second."""

    def __init__(self, max_states: Optional[int], time_budget: Optional[float], progress):
        self.max_states, self.time_budget, self.progress = max_states, time_budget, progress
        self.start = time.monotonic()
        self.next = self.start + 0.5

    def stop(self, states: int, edges: int, queue: int) -> str:
        """Why the exploration stops now ("": it goes on)."""
        if self.max_states is not None and states >= self.max_states:
            return f"state limit {self.max_states:,} reached"
        now = time.monotonic()
        if now >= self.next:
            self.next = now + 0.5
            if self.time_budget is not None and now - self.start > self.time_budget:
                return f"time budget {self.time_budget:g}s spent"
            if self.progress:
                self.progress(Progress(edges, states, 0, queue, now - self.start))
        return ""


def explore(model, props, fair, max_states: Optional[int], time_budget: Optional[float],
            progress: Optional[Callable[[Progress], None]] = None) -> tuple[_Graph, bool, str, int]:
    """Breadth-first search of the whole graph on the compiled kernel; (graph, complete?, stop
    reason, edges). The kernel numbers the states and keeps every edge (verifier/engines/
    verifier/core/rowgraph.py); then each state's premises and goals are the properties' Python
    functions of a lazy view of its row (specs/kernel, Lazy), judged once per controller value
    where they read nothing else, and only the states where a goal fails ask for their
    unbounded successors (the fair actions a bound blocks). The graph, its order and its ids
    are those of the model's own successors, state by state
    (tests/verifier/engines/liveness_reference.py is the interpreted search it is held to)."""
    from specs.kernel import kernel_of
    from verifier.core.rowgraph import DONE, MAXED, Graph
    k = kernel_of(model.cfg)
    built = Graph(k, [k.pack(s) for s in model.init_states()])
    pace = Pace(max_states, time_budget, progress)
    why = ""
    while True:
        status = built.expand(max_states)
        if status == MAXED:
            why = f"state limit {max_states:,} reached"
        elif status != DONE:
            why = pace.stop(built.n_rows, built.n_edges, built.n_rows - built.head)
            if not why:
                continue
        return _graph_of(model, props, fair, k, built), not why, why, built.n_edges


class _RowKeys:
    """The kernel graph's keys: state i's row bytes, made when asked."""

    def __init__(self, rows: np.ndarray, n: int):
        self.rows, self.n = rows, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> bytes:
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.rows[i].tobytes()

    def __iter__(self):
        return (self.rows[i].tobytes() for i in range(self.n))


def _graph_of(model, props, fair, k, built) -> _Graph:
    """The _Graph of the kernel's arrays: flags of every state, edges and enabled fair actions
    of the expanded states where a goal fails."""
    n, head = built.n_rows, built.head
    g = _Graph(model, props, fair, lambda s: k.pack(s).tobytes())
    g.keys = _RowKeys(built.rows, n)
    g.parent = array("i", built.parents[:n].astype(np.int32).tobytes())
    flags = _flags(g, k, built.rows[:n])
    g.flags = array("B", flags.tobytes())
    goals = sum(1 << (2 * p + 1) for p in range(len(props)))
    keep = np.flatnonzero((flags[:head] & goals) != goals)
    fair_of = np.array([g.fair_bit.get(name, 0) for name in model.action_names], dtype=np.int64)
    unbounded = built.unbounded(keep.astype(np.int64), fair_of).tolist()
    first, fair_list = built.first, fair_of.tolist()
    for w, i in enumerate(keep.tolist()):
        dst = built.dst[first[i]:first[i + 1]].tolist()
        act = built.act[first[i]:first[i + 1]].tolist()
        bounded = 0
        for a in set(act):
            bounded |= fair_list[a]
        g.enabled[i] = (bounded, unbounded[w])
        g.out[i] = [(t, a) for t, a in zip(dst, act) if t != i]
    return g


def _flags(g: _Graph, k, rows: np.ndarray) -> np.ndarray:
    """Each row's premises and goals (_Graph.flags' bits): once per controller value where the
    properties read only it, else row by row."""
    ids, first, inverse = np.unique(rows[:, k.layout.ctrl], return_index=True, return_inverse=True)
    by_ctrl = np.full(len(ids), -1, dtype=np.int64)
    for u, i in enumerate(first.tolist()):
        view = k.view(rows[i])
        bits = g.judge(view)
        if not view.unpacked:
            by_ctrl[u] = bits
    out = by_ctrl[inverse]
    for i in np.flatnonzero(out < 0).tolist():
        out[i] = g.judge(k.view(rows[i]))
    return out.astype(np.uint8)
