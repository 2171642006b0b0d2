"""The whole state graph on the compiled kernel, for the liveness engine (verifier/engines/
liveness/) and the compiled search's --dump-graph (verifier/engines/kernel): every state's
row, BFS parent and bounded successors as edges (target id and action), numbered in the order
states are first met, as the model's own breadth-first search numbers them.

Why compiled: liveness needs every edge of the graph, not only the new states, and a loop in
Python over a million edges cost five times the safety check's whole search. Here Python only
fills the controller table when the kernel meets an event it lacks, grows the arrays, and asks
the caller between stretches (progress, budgets). A state's id is found by its 128-bit
fingerprint in an open-addressing table whose slots also hold the id.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from specs.kernel.events import MISS
from specs.kernel.successors import BOUNDED, UNBOUNDED, successors
from specs.kernel.symmetry import canonical_all
from verifier.core.rowhash import EMPTY, child_hash, row_hash

DONE, NEED_EVENT, GROW, MAXED, MORE = range(5)
STRETCH = 20_000          # states per call into the compiled loop


@njit(cache=True, _nrt=False)
def _id_of(table, a, b, new_id):
    """The id stored with fingerprint (a, b), or -1 after storing it with `new_id`."""
    a |= np.uint64(1)
    mask = np.int64(len(table) - 1)
    slot = np.int64(b >> np.uint64(1)) & mask
    while True:
        if table[slot, 0] == EMPTY:
            table[slot, 0], table[slot, 1], table[slot, 2] = a, b, np.uint64(new_id)
            return -1
        if table[slot, 0] == a and table[slot, 1] == b:
            return np.int64(table[slot, 2])
        slot = (slot + 1) & mask


@njit(cache=True, _nrt=False)
def _rehash(table, grown):
    for slot in range(len(table)):
        if table[slot, 0] != EMPTY:
            _id_of(grown, table[slot, 0], table[slot, 1], np.int64(table[slot, 2]))


@njit(cache=True, _nrt=False)
def _explore(rows, fps, parents, first, dst, act, labs, via, head, end, n_rows, n_edges, max_states, table,
             lay, cv, plan, tables, out, labels, key, work, params, symmetric):
    """Expand rows[head:end]: each successor's id into dst, its action into act (and its whole
    label into labs, if it has rows), a new state's row, fingerprint, parent (and the label it
    was first reached by, into via) kept; first[i + 1] is where state i's edges end. Returns
    (what stopped it, head, n_rows, n_edges)."""
    while head < end:
        row = rows[head]
        n = successors(row, lay, cv, plan, tables, BOUNDED, -1, out, labels, key, work, params)
        if n != MISS and symmetric is not None:
            n = canonical_all(out, n, lay, cv, tables, key, work)
        if n == MISS:
            return NEED_EVENT, head, n_rows, n_edges
        if (n_rows + n > len(rows) or n_edges + n > len(dst) or 2 * (n_rows + n) > len(table)
                or (len(labs) and (n_edges + n > len(labs) or n_rows + n > len(via)))):
            return GROW, head, n_rows, n_edges
        fa, fb = fps[head, 0], fps[head, 1]
        for k in range(n):
            a, b = child_hash(row, fa, fb, out[k])
            j = _id_of(table, a, b, n_rows)
            if j < 0:
                j = n_rows
                for c in range(rows.shape[1]):
                    rows[j, c] = out[k, c]
                fps[j, 0], fps[j, 1] = a, b
                parents[j] = head
                if len(via):
                    for c in range(5):
                        via[j, c] = labels[k, c]
                n_rows += 1
            dst[n_edges] = j
            act[n_edges] = labels[k, 0]
            if len(labs):
                for c in range(5):
                    labs[n_edges, c] = labels[k, c]
            n_edges += 1
        head += 1
        first[head] = n_edges
        if max_states >= 0 and n_rows >= max_states:
            return MAXED, head, n_rows, n_edges
    return DONE, head, n_rows, n_edges


@njit(cache=True, _nrt=False)
def _unbounded(rows, which, fair_of, masks, start, lay, cv, plan, tables, out, labels, key, work, params):
    """masks[w] := the fair actions enabled without bounds in rows[which[w]], from w = start:
    the first w still to do (len(which) when done; earlier, its event is missing)."""
    for w in range(start, len(which)):
        n = successors(rows[which[w]], lay, cv, plan, tables, UNBOUNDED, -1, out, labels, key, work, params)
        if n == MISS:
            return w
        m = 0
        for k in range(n):
            m |= fair_of[labels[k, 0]]
        masks[w] = m
    return len(which)


class Graph:
    """The graph's arrays as they grow: rows, fingerprints, parents; edges (dst, act) with
    first[i]:first[i + 1] state i's."""

    def __init__(self, k, roots: list, labels: bool = False):
        """`labels`: keep every edge's whole label, and the label each state was first reached
        by (--dump-graph writes them), not only the actions (liveness)."""
        self.k = k
        self.labs = np.zeros((1 << 14 if labels else 0, 5), dtype=np.int32)
        self.via = np.full((1 << 12 if labels else 0, 5), -1, dtype=np.int32)
        width = k.layout.width
        self.rows = np.zeros((1 << 12, width), dtype=np.int32)
        self.fps = np.zeros((1 << 12, 2), dtype=np.uint64)
        self.parents = np.full(1 << 12, -1, dtype=np.int32)
        self.first = np.zeros((1 << 12) + 1, dtype=np.int64)
        self.dst = np.zeros(1 << 14, dtype=np.int32)
        self.act = np.zeros(1 << 14, dtype=np.int8)
        self.table = np.zeros((1 << 13, 3), dtype=np.uint64)
        self.n_rows = self.n_edges = self.head = 0
        for row in roots:
            a, b = (np.uint64(h) for h in row_hash(row))       # (a Python int below 2**63 would be typed int64)
            if _id_of(self.table, a, b, np.int64(self.n_rows)) < 0:
                self.rows[self.n_rows], self.fps[self.n_rows] = row, (a, b)
                self.n_rows += 1

    def expand(self, max_states) -> int:
        """One stretch: DONE (all expanded), MAXED, or MORE (to be called again)."""
        k = self.k
        end = min(self.head + STRETCH, self.n_rows)
        status, self.head, self.n_rows, self.n_edges = _explore(
            self.rows, self.fps, self.parents, self.first, self.dst, self.act, self.labs, self.via, self.head, end,
            self.n_rows,
            self.n_edges, -1 if max_states is None else max_states, self.table, k.layout.lay, k.cv, k.plan,
            k.table_args(), k.out, k.labels, k.key, k.work, k.params, k.reduce)
        if status == NEED_EVENT:
            k.tables.fill(k.key)
        elif status == GROW:
            self._grow(k.max_successors)
        if status == MAXED:
            return MAXED
        return DONE if self.head >= self.n_rows else MORE

    def _grow(self, more: int) -> None:
        def bigger(a, need):
            n = len(a)
            while n < need:
                n *= 2
            if n == len(a):
                return a
            out = np.zeros((n,) + a.shape[1:], dtype=a.dtype)
            out[:len(a)] = a
            return out
        self.rows = bigger(self.rows, self.n_rows + more)
        self.fps = bigger(self.fps, self.n_rows + more)
        self.parents = bigger(self.parents, self.n_rows + more)
        self.first = bigger(self.first, len(self.rows) + 1)
        self.dst = bigger(self.dst, self.n_edges + more)
        self.act = bigger(self.act, self.n_edges + more)
        if len(self.labs):
            self.labs = bigger(self.labs, self.n_edges + more)
            self.via = bigger(self.via, self.n_rows + more)
        n = len(self.table)
        while 2 * (self.n_rows + more) > n:
            n *= 2
        if n > len(self.table):
            grown = np.zeros((n, 3), dtype=np.uint64)
            _rehash(self.table, grown)
            self.table = grown

    def unbounded(self, which: np.ndarray, fair_of: np.ndarray) -> np.ndarray:
        """The fair actions each of rows[which] enables without bounds, as bit masks."""
        k, masks, w = self.k, np.zeros(len(which), dtype=np.int64), 0
        while w < len(which):
            w = _unbounded(self.rows, which, fair_of, masks, w, k.layout.lay, k.cv, k.plan, k.table_args(), k.out,
                           k.labels, k.key, k.work, k.params)
            if w < len(which):
                k.tables.fill(k.key)
        return masks


def state_graph(k, model, n: int, transitions: int, roots: dict, bad: set) -> tuple[list, list]:
    """(nodes, edges) of --dump-graph: the states a check numbered 0..n-1 and the first
    `transitions` transitions it took (this graph numbers states and orders transitions as the
    kernel's breadth-first search does), each node named by the step that first reached it;
    `roots` the initial states' numbers, `bad` those of the states a violation was found at;
    `k` the search's kernel, whose tables hold every event the search met already."""
    from verifier.core import levels
    g = Graph(k, [k.pack(c) for _, c in levels.roots(model).values()], labels=True)
    while g.n_edges < transitions and g.expand(None) != DONE:
        pass
    label = {}

    def said(code) -> str:
        key = tuple(int(v) for v in code)
        if key not in label:
            label[key] = model.describe(k.label(code))
        return label[key]
    nodes = [(i, {"label": f"s{i}" + ("" if g.parents[i] < 0 else f" via {said(g.via[i])}"),
                  "init": str(i in roots).lower(), "violation": str(i in bad).lower()}) for i in range(n)]
    src = np.repeat(np.arange(g.head), np.diff(g.first[:g.head + 1]))
    edges = [(int(src[e]), int(g.dst[e]), said(g.labs[e])) for e in range(transitions)]
    return nodes, edges
