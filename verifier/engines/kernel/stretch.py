"""A thread's buffers for the rounds of verifier/engines/kernel/parallel.py, sized for the config.

A round's buffers hold each successor's label and verdicts and each candidate's row, and a flag
for every discovery key a round can hand out (`lost`: a state's place in the round times the
most successors a state can have, plus its successor's place). Sized for the largest state the
kernel can meet, twelve spare brokers (531,200 successors a state at most, where a state has a
few hundred) took 32 GB for the flags and more for the buffers, and the run died allocating
them: the flags are now held to a fixed size by taking fewer states a round, and a stretch
starts with room for a round's usual successors and is widened when one state's successors
fill it, within the memory budget.
"""
from __future__ import annotations

import threading

import numpy as np

from verifier.engines.kernel.search import DONE

LOST_BYTES = 1 << 26      # a thread's share of a round's discovery-key flags
START_ROWS = 1 << 14      # a stretch's first room for one state's successors (the most it can need: widened)
_LOCAL = threading.local()


def scratch(k) -> tuple:
    """This thread's scratch for one state's successors (out, labels, key, work, params and
    fingerprints, each as large as the most successors a state can have): a thread's, not a
    stretch's, as a thread expands one stretch at a time (sixteen stretches' copies took 7 GB
    where a state can have 531,200 successors)."""
    mine = getattr(_LOCAL, "scratch", None)
    if mine is None or mine[0] is not k:
        mine = _LOCAL.scratch = (k, *(private(a.shape, a.dtype) for a in (k.out, k.labels, k.key, k.work, k.params)),
                                 private((k.max_successors, 2), np.uint64))
    return mine[1:]


def private(shape, dtype):
    """A zeroed array no other thread's array shares a cache line with: the scratch a thread
    writes on every step (two threads writing neighbouring small arrays took turns owning the
    line, and two threads ran no faster than one)."""
    shape = shape if isinstance(shape, tuple) else (shape,)
    n, pad = int(np.prod(shape)), 256 // np.dtype(dtype).itemsize
    return np.zeros(n + 2 * pad, dtype=dtype)[pad:pad + n].reshape(shape)


class Stretch:
    """One thread's buffers for a round."""

    def __init__(self, kernel, capacity: int, states: int, owners: int, actions: int):
        self.k, w = kernel, kernel.layout.width
        self.rows = private((capacity, w), np.int32)          # the candidates'
        self.fp = private((capacity, 2), np.uint64)
        self.slots = private(capacity, np.int64)
        self.labs = private((capacity, 5), np.int64)          # every successor's
        self.cand = private(capacity, np.int64)
        self.is_new = private(capacity, np.bool_)
        self.where = private(capacity, np.int64)
        self.step_bad = private(capacity, np.int64)
        self.state_bad = private(capacity, np.int64)
        self.counts = private(states, np.int64)
        self.first = private(states, np.int64)
        self.misses = private((states, len(kernel.key)), np.int64)
        self.stuck = private(states, np.bool_)
        self.claimed = private(owners + 1, np.int64)
        self.enabled = private(actions, np.int64)
        self.taken = private(actions, np.int64)
        self.sums = private(3, np.int64)
        self.result = (DONE, 0, 0, 0, 0)
        self.nbytes = sum(v.nbytes for v in vars(self).values() if isinstance(v, np.ndarray))   # never grow

    def expand(self, frontier, frontier_fp, lo: int, hi: int, retry: bool, used: int, ncand: int, shared,
               step_check: int, state_check: int, deadlocks: bool) -> None:
        """`shared`: the round's (visited tables, quota, first key, stride, base, lost)."""
        from verifier.engines.kernel.parallel import expand_claim
        k = self.k
        visited, quota, first_key, stride, base, lost = shared
        out, labels, key, work, params, fps = scratch(k)
        self.result = expand_claim(frontier, frontier_fp, lo, hi, retry, used, ncand, k.layout.lay, k.cv, k.plan,
                                   k.table_args(), out, labels, key, work, params,
                                   visited, quota, self.claimed, self.slots, first_key, stride, base, lost,
                                   self.rows, self.labs, self.fp, self.cand, self.step_bad, self.state_bad,
                                   self.counts, self.first, self.stuck, self.misses, fps, step_check, state_check,
                                   deadlocks, k.reduce)


def stretches(search, threads: int, p_states: int, p_successors: int, pieces: int) -> int:
    """The search's stretches (`pieces` a thread) and lost-key flags: the states a thread takes a
    round (p_states, or fewer where the flags would pass LOST_BYTES)."""
    k = search.k
    p_states = max(pieces, min(p_states, LOST_BYTES // k.max_successors // pieces * pieces))
    search._widths = (p_states // pieces, max(p_states * p_successors // pieces, min(k.max_successors, START_ROWS)))
    search.stretches = [Stretch(k, search._widths[1], search._widths[0], search.visited.owners, len(search.enabled))
                        for _ in range(threads * pieces)]
    search.stride = k.max_successors        # a discovery key: (parent's number + 1) * stride + k
    search.lost = np.zeros(threads * p_states * search.stride, dtype=np.uint8)
    return p_states


def widen(search, n_next: int) -> None:
    """Twice the room in every stretch (a state's successors filled one), within the memory
    budget (MemoryBudget if refused)."""
    states, rows = search._widths
    if rows >= search.k.max_successors:
        raise RuntimeError("a state has more successors than the kernel says a state can have")
    rows = min(2 * rows, search.k.max_successors)
    more = sum(st.nbytes for st in search.stretches) * (rows / search._widths[1] - 1)
    search._within(lambda: int(more), "the threads' buffers", search._growth(n_next, 0))
    search._widths = (states, rows)
    search.stretches = [Stretch(search.k, rows, states, search.visited.owners, len(search.enabled))
                        for _ in search.stretches]
