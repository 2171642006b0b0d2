"""The compiled search on several threads: the same order, counts and counterexamples as one.

A level is taken in rounds of five phases; only the fourth is serial, and it does a few
counter updates a successor.
1. Expand (`expand_range`, one stretch a thread, the GIL released): each stretch of the
   frontier is expanded into its own buffers: successors, their fingerprints (each from its
   parent's) and the step properties' verdicts. A state that needs a controller event the
   table lacks is deferred and the stretch goes on; when a stretch ends its missing events are
   filled (the algebra, in Python) while the other threads still expand, and its deferred
   states are expanded again, until none is left. A stretch stopped by a full buffer ends the
   round at that state.
2. Dedupe (visited.dedupe, one job an owner): the visited set is split among owners by the
   fingerprint's bits; each owner walks every stretch in frontier order and marks which of its
   own fingerprints are new. The order is the one-thread loop's, so the first occurrence of a
   state is the same.
3. Check (`check_new`, one job a stretch): the state properties of the new states only.
4. Merge (`merge`, serial): the stretches in frontier order, exactly as
   verifier/engines/kernel/search.py's loop meets them: counts, state numbers, parents, labels,
   violations, max states.
5. Copy (`copy_rows`, one job a stretch): each stretch's new rows and fingerprints to their
   places in the next level.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from specs.kernel.properties import state_violations, step_violations
from specs.kernel.events import MISS
from specs.kernel.successors import BOUNDED, UNBOUNDED, successors
from verifier.engines.kernel.search import (C_TERMINAL, C_TRANSITIONS, DEADLOCK_SLOT, DONE, MAX_STATES,
                                            STEP_SLOT, STOP, STOP_NO_CUT, _found_mask, _record, keep)
from verifier.engines.kernel.visited import child_hash, dedupe

FULL = 6          # a stretch's buffer is full: the round ends at that state


DEFERRED = -1     # counts[i]: state lo+i waits for a controller event the table lacks


@njit(cache=True, nogil=True, _nrt=False)
def expand_range(frontier, frontier_fp, lo, hi, retry, used, lay, cv, plan, tables, out, labels, key, work, params,
                 rows, labs, fp, where, step_bad, counts, first, stuck, misses, step_check, deadlocks):
    """Expand frontier[lo:hi] (with `retry`, only its DEFERRED states) into the stretch's buffers
    after the `used` successors already there: (what ended it, the state it stopped at, the
    successors written, the states deferred). State lo+i's successors are
    rows[first[i]:first[i] + counts[i]]; stuck[i]: whether it is stuck. A state that needs a
    controller event the table lacks is DEFERRED, its key in misses, and the stretch goes on:
    the caller fills the keys and expands the deferred states again."""
    facts = tables[3]
    deferred = 0
    for p in range(lo, hi):
        if retry and counts[p - lo] != DEFERRED:
            continue
        row = frontier[p]
        fa, fb = frontier_fp[p, 0], frontier_fp[p, 1]
        n = successors(row, lay, cv, plan, tables, BOUNDED, -1, out, labels, key, work, params)
        if n != MISS and used + n > len(rows):
            return FULL, p, used, deferred
        stuck[p - lo] = False
        if n == 0 and deadlocks:
            m = successors(row, lay, cv, plan, tables, UNBOUNDED, -1, out, labels, key, work, params)
            n = MISS if m == MISS else 0
            stuck[p - lo] = m == 0
        if n == MISS:
            counts[p - lo] = DEFERRED
            for j in range(len(key)):
                misses[deferred, j] = key[j]
            deferred += 1
            continue
        first[p - lo] = used
        for k in range(n):
            t = out[k]
            for j in range(len(t)):
                rows[used + k, j] = t[j]
            for j in range(5):
                labs[used + k, j] = labels[k, j]
            a, b = child_hash(row, fa, fb, t)
            fp[used + k, 0], fp[used + k, 1] = a, b
            where[used + k] = -1
            step_bad[used + k] = step_violations(row, labels[k, 0], t, lay, facts, step_check) if step_check else 0
        counts[p - lo] = n
        used += n
    return DONE, hi, used, deferred


@njit(cache=True, nogil=True, _nrt=False)
def check_new(rows, is_new, upto, lay, facts, state_check, state_bad):
    """state_bad[k] := the state properties successor k violates, for the new ones (an old
    state was checked when it was found, as the one-thread loop does; checking every successor
    here cost two threads a quarter of their time)."""
    for k in range(upto):
        state_bad[k] = state_violations(rows[k], lay, facts, state_check) if is_new[k] and state_check else 0


@njit(cache=True, _nrt=False)
def merge(lo, hi, base, labs, is_new, where, step_bad, state_bad, counts, first, stuck, n_next, parents,
          labels_of, n_store, ctr, enabled, taken, found_index, found_group, found_label, opts, none):
    """Take the expanded states lo..hi-1 (state numbers base+lo...) in order, as search.expand
    does, the dedupe's verdicts in is_new; where[k] := the next-level row of successor k, or -1:
    (what ended it, the state after the last one taken, n_next, n_store)."""
    keep_going, max_states = opts[0], opts[2]
    for p in range(lo, hi):
        me = base + p
        n = counts[p - lo]
        at = first[p - lo]
        for k in range(at, at + n):
            action = labs[k, 0]
            ctr[C_TRANSITIONS] += 1
            enabled[action] += 1
            bad = step_bad[k] & ~_found_mask(found_index, STEP_SLOT, 5)
            if bad:
                _record(found_index, found_group, found_label, ctr, bad, STEP_SLOT, me, labs[k])
                if not keep_going:
                    return STOP, p + 1, n_next, n_store
            if not is_new[k]:
                continue
            keep(labs[k], me, parents, labels_of, n_store, ctr, taken)
            where[k] = n_next
            n_next += 1
            n_store += 1
            bad = state_bad[k] & ~_found_mask(found_index, 0, 10)
            if bad:
                _record(found_index, found_group, found_label, ctr, bad, 0, n_store - 1, none)
                if not keep_going:
                    return STOP, p + 1, n_next, n_store
            if max_states >= 0 and n_store >= max_states:
                return MAX_STATES, p + 1, n_next, n_store
        if n == 0:
            ctr[C_TERMINAL] += 1
            if opts[1] and stuck[p - lo] and found_index[DEADLOCK_SLOT] < 0:
                ctr[C_TERMINAL] -= 1
                _record(found_index, found_group, found_label, ctr, 1, DEADLOCK_SLOT, me, none)
                if not keep_going:
                    return STOP_NO_CUT, p + 1, n_next, n_store
    return DONE, hi, n_next, n_store


@njit(cache=True, nogil=True, _nrt=False)
def copy_rows(rows, fp, where, upto, nxt, nxt_fp):
    """Each new row of a stretch, and its fingerprint, to its place in the next level."""
    for k in range(upto):
        w = where[k]
        if w >= 0:
            for j in range(rows.shape[1]):
                nxt[w, j] = rows[k, j]
            nxt_fp[w, 0], nxt_fp[w, 1] = fp[k, 0], fp[k, 1]


def private(shape, dtype):
    """A zeroed array no other thread's array shares a cache line with: the scratch a thread
    writes on every step (two threads writing neighbouring small arrays took turns owning the
    line, and two threads ran no faster than one)."""
    shape = shape if isinstance(shape, tuple) else (shape,)
    n, pad = int(np.prod(shape)), 256 // np.dtype(dtype).itemsize
    return np.zeros(n + 2 * pad, dtype=dtype)[pad:pad + n].reshape(shape)


class Stretch:
    """One thread's buffers for a round."""

    def __init__(self, kernel, capacity: int, states: int):
        w = kernel.layout.width
        self.k = kernel
        self.out = private(kernel.out.shape, kernel.out.dtype)
        self.labels = private(kernel.labels.shape, kernel.labels.dtype)
        self.key = private(kernel.key.shape, kernel.key.dtype)
        self.work = private(kernel.work.shape, kernel.work.dtype)
        self.params = private(kernel.params.shape, kernel.params.dtype)
        self.rows = private((capacity, w), np.int32)
        self.labs = private((capacity, 5), np.int64)
        self.fp = private((capacity, 2), np.uint64)
        self.is_new = private(capacity, np.bool_)
        self.where = private(capacity, np.int64)
        self.step_bad = private(capacity, np.int64)
        self.state_bad = private(capacity, np.int64)
        self.counts = private(states, np.int64)
        self.first = private(states, np.int64)
        self.misses = private((states, len(kernel.key)), np.int64)
        self.stuck = private(states, np.bool_)
        self.result = (DONE, 0, 0)

    @property
    def nbytes(self) -> int:
        return sum(v.nbytes for v in vars(self).values() if isinstance(v, np.ndarray))

    def expand(self, frontier, frontier_fp, lo: int, hi: int, retry: bool, used: int, step_check: int,
               deadlocks: bool) -> None:
        k = self.k
        self.result = expand_range(frontier, frontier_fp, lo, hi, retry, used, k.layout.lay, k.cv, k.plan,
                                   k.table_args(), self.out, self.labels, self.key, self.work, self.params, self.rows,
                                   self.labs, self.fp, self.where, self.step_bad, self.counts, self.first, self.stuck,
                                   self.misses, step_check, deadlocks)


class Rounds:
    """The threads' rounds of a Search (verifier/engines/kernel/__init__.py): its methods that
    run the five phases above."""

    def _round(self, frontier, pos: int, base: int, n_next: int, opts) -> tuple:
        """One round of the threads: each expands a stretch, the owners dedupe,
        the stretches are merged in frontier order up to the first that stopped early, and
        their new rows are copied."""
        per = max(1, min(len(self.stretches[0].counts), -(-(len(frontier) - pos) // self.threads)))
        spans = [(lo, min(lo + per, len(frontier))) for lo in range(pos, min(pos + per * self.threads,
                                                                               len(frontier)), per)]
        ended = self._expand_all(frontier, spans)
        last = len(spans) - 1             # this round's stretches: up to the first a full buffer stopped
        for t, (why, stop_at, _) in enumerate(ended):
            if why == FULL:
                if stop_at == pos:
                    raise RuntimeError("a state has more successors than a thread's buffer holds")
                last = t
                break
        stretches = self.stretches[:last + 1]
        used = [ended[t][2] for t in range(last + 1)]
        self._room(sum(used), n_next)
        self._grow(n_next, sum(used))     # both before the dedupe: a stop by the memory budget keeps nothing
        owners, tables = self.visited.owners, self.visited.tables

        def dedupe_owned(o: int) -> int:
            return sum(dedupe(tables[o], o, owners, st.fp, st.first, st.counts, ended[t][1] - spans[t][0], st.is_new)
                       for t, st in enumerate(stretches))

        for o, found in enumerate(self.pool.map(dedupe_owned, range(owners))):
            self.visited.counts[o] += found
        lay, facts = self.k.layout.lay, self.k.tables.facts
        list(self.pool.map(lambda t: check_new(stretches[t].rows, stretches[t].is_new, used[t], lay, facts,
                                                 self.state_check, stretches[t].state_bad), range(len(stretches))))
        status = DONE
        for t, st in enumerate(stretches):
            status, pos, n_next, self.n_store = merge(
                spans[t][0], ended[t][1], base, st.labs, st.is_new, st.where, st.step_bad, st.state_bad, st.counts,
                st.first, st.stuck, n_next, self.parents, self.labels, self.n_store, self.ctr, self.enabled,
                self.taken, self.found_index, self.found_group, self.found_label, opts, self.none)
            if status != DONE:
                break
        nxt, nxt_fp = self.nxt, self.nxt_fp
        list(self.pool.map(lambda t: copy_rows(stretches[t].rows, stretches[t].fp, stretches[t].where, used[t],
                                                 nxt, nxt_fp), range(len(stretches))))
        return status, pos, n_next

    def _expand_all(self, frontier, spans) -> list:
        """Every thread expands its stretch, deferring the states that need a controller event
        the table lacks; a stretch's events are filled (the algebra, in Python) as soon as it
        ends, while the other threads still expand theirs, and its deferred states are expanded
        again, until none is left: (why, the state it stopped at, successors written) per
        stretch. A stretch whose buffer filled up ends at that state. The fills are the run's
        serial part (1.8 s of brokers 4); waiting for every thread before filling left the
        other core idle through them. Where the table's facts could move (specs/kernel/tables.py,
        `fits`), a fill waits for every thread first."""
        from concurrent.futures import FIRST_COMPLETED, wait

        his = [hi for _, hi in spans]
        used = [0] * len(spans)
        why = [DONE] * len(spans)
        tables = self.k.tables

        def start(t: int, retry: bool):
            return self.pool.submit(self.stretches[t].expand, frontier, self._frontier_fp, spans[t][0], his[t], retry,
                                    used[t], self.step_check, bool(self.options.check_deadlock))

        running = {start(t, False): t for t in range(len(spans))}
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for job in done:
                job.result()
            for job in sorted(done, key=running.get):
                t = running.pop(job)
                st = self.stretches[t]
                ended, his[t], used[t], deferred = st.result
                if ended == FULL:
                    why[t] = FULL
                if deferred:
                    if not tables.fits(deferred):       # the facts may move: let no thread read them
                        wait(running)
                    for k in range(deferred):
                        tables.fill(st.misses[k])       # nothing for a key another stretch filled
                    self.collector.filled()
                    running[start(t, True)] = t
        return [(why[t], his[t], used[t]) for t in range(len(spans))]
