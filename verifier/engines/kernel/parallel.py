"""The compiled search on several threads: the same order, counts and counterexamples as one.

A level is taken in rounds. In a round each thread expands its own contiguous stretch of the
frontier with the GIL released (`expand_range`): successors, their fingerprints and every
property's verdict, into its own buffers. Then one thread `merge`s the stretches in frontier
order, exactly as verifier/engines/kernel/search.py's loop would have met them: it counts,
dedupes against the one visited table, numbers the new states and records violations. Only
the merge is serial (a table look-up and a row copy per successor), so the expansion, most of
the work, scales with the cores. A stretch stopped by a controller event the table lacks
goes on from that state once the table is filled (every thread's missing events are filled
together, then the stopped stretches go on together); one stopped by a full buffer ends the
round at that state, and what follows it is expanded in the next round.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from specs.kernel.properties import state_violations, step_violations
from specs.kernel.events import MISS
from specs.kernel.successors import BOUNDED, UNBOUNDED, successors
from verifier.engines.kernel.search import (C_TERMINAL, C_TRANSITIONS, DEADLOCK_SLOT, DONE, MAX_STATES,
                                            NEED_EVENT, STEP_SLOT, STOP, STOP_NO_CUT, _found_mask, _record, row_hash,
                                            take, visit)

FULL = 6          # a stretch's buffer is full: the round ends at that state


@njit(cache=True, nogil=True, _nrt=False)
def expand_range(frontier, lo, start, hi, used, lay, cv, plan, tables, out, labels, key, work, params,
                 rows, labs, fp1, fp2, step_bad, state_bad, counts, stuck, state_check, step_check, deadlocks):
    """Expand frontier[start:hi] into the buffers of the stretch that begins at lo, after the
    `used` successors already there: (what ended it, the state it stopped at, the successors
    written). counts[i], stuck[i]: state lo+i's successors, whether it is stuck."""
    facts = tables[3]
    for p in range(start, hi):
        row = frontier[p]
        n = successors(row, lay, cv, plan, tables, BOUNDED, -1, out, labels, key, work, params)
        if n == MISS:
            return NEED_EVENT, p, used
        if used + n > len(rows):
            return FULL, p, used
        stuck[p - lo] = False
        if n == 0 and deadlocks:
            m = successors(row, lay, cv, plan, tables, UNBOUNDED, -1, out, labels, key, work, params)
            if m == MISS:
                return NEED_EVENT, p, used
            stuck[p - lo] = m == 0
        for k in range(n):
            t = out[k]
            for j in range(len(t)):
                rows[used + k, j] = t[j]
            for j in range(5):
                labs[used + k, j] = labels[k, j]
            a, b = row_hash(t)
            fp1[used + k], fp2[used + k] = a, b
            step_bad[used + k] = step_violations(row, labels[k, 0], t, lay, facts, step_check) if step_check else 0
            state_bad[used + k] = state_violations(t, lay, facts, state_check) if state_check else 0
        counts[p - lo] = n
        used += n
    return DONE, hi, used


@njit(cache=True, _nrt=False)
def merge(lo, hi, base, rows, labs, fp1, fp2, step_bad, state_bad, counts, stuck, nxt, n_next, parents, labels_of,
          n_store, vk1, vk2, ctr, enabled, taken, found_index, found_group, found_label, opts, none):
    """Take the expanded states lo..hi-1 (state numbers base+lo...) in order, as search.expand
    does: (what ended it, the state after the last one taken, n_next, n_store)."""
    keep_going, max_states = opts[0], opts[2]
    at = 0
    for p in range(lo, hi):
        me = base + p
        n = counts[p - lo]
        for k in range(at, at + n):
            action = labs[k, 0]
            ctr[C_TRANSITIONS] += 1
            enabled[action] += 1
            bad = step_bad[k] & ~_found_mask(found_index, STEP_SLOT, 5)
            if bad:
                _record(found_index, found_group, found_label, ctr, bad, STEP_SLOT, me, labs[k])
                if not keep_going:
                    return STOP, p + 1, n_next, n_store
            if not visit(vk1, vk2, fp1[k], fp2[k]):
                continue
            take(rows[k], labs[k], me, nxt, n_next, parents, labels_of, n_store, ctr, taken)
            n_next += 1
            n_store += 1
            bad = state_bad[k] & ~_found_mask(found_index, 0, 10)
            if bad:
                _record(found_index, found_group, found_label, ctr, bad, 0, n_store - 1, none)
                if not keep_going:
                    return STOP, p + 1, n_next, n_store
            if max_states >= 0 and n_store >= max_states:
                return MAX_STATES, p + 1, n_next, n_store
        at += n
        if n == 0:
            ctr[C_TERMINAL] += 1
            if opts[1] and stuck[p - lo] and found_index[DEADLOCK_SLOT] < 0:
                ctr[C_TERMINAL] -= 1
                _record(found_index, found_group, found_label, ctr, 1, DEADLOCK_SLOT, me, none)
                if not keep_going:
                    return STOP_NO_CUT, p + 1, n_next, n_store
    return DONE, hi, n_next, n_store


class Stretch:
    """One thread's buffers for a round."""

    def __init__(self, kernel, capacity: int, states: int):
        w = kernel.layout.width
        self.k = kernel
        self.out = np.zeros_like(kernel.out)
        self.labels = np.zeros_like(kernel.labels)
        self.key = np.zeros_like(kernel.key)
        self.work = np.zeros_like(kernel.work)
        self.params = np.zeros_like(kernel.params)
        self.rows = np.zeros((capacity, w), dtype=np.int32)
        self.labs = np.zeros((capacity, 5), dtype=np.int64)
        self.fp1 = np.zeros(capacity, dtype=np.uint64)
        self.fp2 = np.zeros(capacity, dtype=np.uint64)
        self.step_bad = np.zeros(capacity, dtype=np.int64)
        self.state_bad = np.zeros(capacity, dtype=np.int64)
        self.counts = np.zeros(states, dtype=np.int64)
        self.stuck = np.zeros(states, dtype=np.bool_)
        self.result = (DONE, 0, 0)

    def expand(self, frontier, lo: int, start: int, hi: int, used: int, state_check: int, step_check: int,
               deadlocks: bool) -> None:
        k = self.k
        self.result = expand_range(frontier, lo, start, hi, used, k.layout.lay, k.cv, k.plan, k.table_args(), self.out,
                                   self.labels, self.key, self.work, self.params, self.rows, self.labs, self.fp1,
                                   self.fp2, self.step_bad, self.state_bad, self.counts, self.stuck, state_check,
                                   step_check, deadlocks)
