"""The compiled breadth-first loop: expand a stretch of one level's rows, check the properties,
keep the new rows, in exactly the order of verifier/engines/bfs (frontier order, each state's
successors in the model's order, the first parent wins), so counts, levels and shortest
counterexamples are that engine's.

The visited set is one table of 128-bit fingerprints (visited.py);
parents and labels are arrays indexed by a state's number (its discovery order). The loop
returns to Python at the end of a stretch, when a table or buffer must grow, when the
controller table lacks an event (the state is then expanded again from scratch: nothing of
it was kept), on a violation that stops the search, and at max states.
"""
from __future__ import annotations

from numba import njit

from specs.kernel.properties import state_violations, step_verdict, steps_then_canonical
from specs.kernel.events import MISS
from specs.kernel.successors import BOUNDED, UNBOUNDED, successors
from verifier.core.rowhash import child_hash
from verifier.engines.kernel.visited import prefetch, visit

# what a stretch ended with
DONE, NEED_EVENT, GROW, STOP, STOP_NO_CUT, MAX_STATES = range(6)
# counters
C_TRANSITIONS, C_TERMINAL, C_GROUPS, C_VISITED = range(4)
DEADLOCK_SLOT = 15       # found slots: 0-9 state invariants (specs/kernel/properties.STATE), 10-14 step, 15 deadlock
STEP_SLOT = 10
SLOTS = 16


@njit(cache=True, _nrt=False)
def _record(found_index, found_group, found_label, ctr, bits, first_slot, index, label):
    """Keep the first trace of each newly violated property (one group per call)."""
    group = ctr[C_GROUPS]
    ctr[C_GROUPS] += 1
    k = 0
    while bits:
        if bits & 1:
            found_index[first_slot + k] = index
            found_group[first_slot + k] = group
            for j in range(5):
                found_label[first_slot + k, j] = label[j] if label[0] >= 0 else -1
        bits >>= 1
        k += 1


@njit(cache=True, _nrt=False)
def expand(frontier, frontier_fp, pos, end, base, nxt, nxt_fp, n_next, parents, labels_of, n_store, table,
           lay, cv, plan, tables, out, labels, key, ctr, enabled, taken, state_check, step_check, found_index,
           found_group, found_label, opts, work, params, none, fps, step_bad, symmetric, ks):
    """Expand frontier[pos:end] (state numbers base+pos..., fingerprints frontier_fp) into nxt
and nxt_fp: (what ended it, pos, n_next, n_store).
    `opts`: keep going after a violation, check deadlocks, max states (-1: none); `work`,
    `params`: the successors' scratch; `none`: a label of -1s; `fps`: the successors' fingerprints;
    `ks`: empty, or where a kept state's place among its parent's successors goes (the search
    with its store on disk keeps that, not the label: external.py).
    A state's successors are all fingerprinted and their slots asked for (prefetch) before the
    first is looked up, so that their cache misses overlap."""
    facts = tables[3]
    keep_going, deadlocks, max_states = opts[0], opts[1], opts[2]
    while pos < end:
        row = frontier[pos]
        fa, fb = frontier_fp[pos, 0], frontier_fp[pos, 1]
        me = base + pos
        n = successors(row, lay, cv, plan, tables, BOUNDED, -1, out, labels, key, work, params)
        if n != MISS and symmetric is not None:      # each step judged before it is renamed
            n = steps_then_canonical(row, out, labels, n, lay, cv, tables, key, work, step_check, step_bad, 0)
        if n == MISS:
            return NEED_EVENT, pos, n_next, n_store
        if n_next + n > len(nxt) or n_store + n > len(parents) or 2 * (ctr[C_VISITED] + n) > len(table):
            return GROW, pos, n_next, n_store
        stuck = False
        if n == 0 and deadlocks and found_index[DEADLOCK_SLOT] < 0:
            m = successors(row, lay, cv, plan, tables, UNBOUNDED, -1, out, labels, key, work, params)
            if m == MISS:
                return NEED_EVENT, pos, n_next, n_store
            stuck = m == 0
        pos += 1
        for k in range(n):
            a, b = child_hash(row, fa, fb, out[k])
            fps[k, 0], fps[k, 1] = a, b
            prefetch(table, b)
        for k in range(n):
            t = out[k]
            action = labels[k, 0]
            ctr[C_TRANSITIONS] += 1
            enabled[action] += 1
            open_steps = step_check & ~_found_mask(found_index, STEP_SLOT, 5)
            if open_steps:
                if symmetric is not None:
                    bad = step_bad[k] & open_steps
                else:
                    bad = step_verdict(row, action, t, lay, facts, open_steps)
                if bad:
                    _record(found_index, found_group, found_label, ctr, bad, STEP_SLOT, me, labels[k])
                    if not keep_going:
                        return STOP, pos, n_next, n_store
            a, b = fps[k, 0], fps[k, 1]
            if not visit(table, a, b):
                continue
            take(t, labels[k], me, nxt, n_next, parents, labels_of, n_store, ctr, taken)
            if len(ks):
                ks[n_store] = k
            nxt_fp[n_next, 0], nxt_fp[n_next, 1] = a, b
            n_next += 1
            n_store += 1
            open_states = state_check & ~_found_mask(found_index, 0, 10)
            if open_states:
                bad = state_violations(t, lay, facts, open_states)
                if bad:
                    _record(found_index, found_group, found_label, ctr, bad, 0, n_store - 1, none)
                    if not keep_going:
                        return STOP, pos, n_next, n_store
            if max_states >= 0 and n_store >= max_states:
                return MAX_STATES, pos, n_next, n_store
        if n == 0:
            ctr[C_TERMINAL] += 1
            if stuck:
                ctr[C_TERMINAL] -= 1
                _record(found_index, found_group, found_label, ctr, 1, DEADLOCK_SLOT, me, none)
                if not keep_going:
                    return STOP_NO_CUT, pos, n_next, n_store
    return DONE, pos, n_next, n_store


@njit(cache=True, inline="always", _nrt=False)
def take(t, label, parent, nxt, n_next, parents, labels_of, n_store, ctr, taken):
    """Keep a new state: number n_store, reached from `parent` by `label`, row n_next of the
    next level."""
    keep(label, parent, parents, labels_of, n_store, ctr, taken)
    for j in range(len(t)):
        nxt[n_next, j] = t[j]


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def keep(label, parent, parents, labels_of, n_store, ctr, taken):
    """Number a new state n_store, reached from `parent` by `label` (the one-thread loop and the
    threads' merge both number states so; its row is copied by the caller)."""
    ctr[C_VISITED] += 1
    taken[label[0]] += 1
    parents[n_store] = parent
    for j in range(5):
        labels_of[n_store, j] = label[j]


@njit(cache=True, inline="always", _nrt=False)
def _found_mask(found_index, first, count):
    m = 0
    for k in range(count):
        if found_index[first + k] >= 0:
            m |= 1 << k
    return m


@njit(cache=True, _nrt=False)
def root_violations(row, lay, facts, check):
    return state_violations(row, lay, facts, check)
