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

import numpy as np
from numba import njit

from specs.kernel.properties import state_violations, step_verdict, steps_then_canonical
from specs.kernel.events import MISS
from specs.kernel.lifted import FULL, lifted_successors
from specs.kernel.lifted_rows import judge_then_sort, violations
from specs.kernel.successors import BOUNDED, UNBOUNDED, successors
from verifier.core.rowhash import child_hash
from verifier.engines.kernel.visited import prefetch, visit

# what a stretch ended with
DONE, NEED_EVENT, GROW, STOP, STOP_NO_CUT, MAX_STATES, NEED_ROOM = range(7)   # NEED_ROOM: a state has more
# successors than the buffers hold (rows of several partitions: specs/kernel/lifted_rows.py)
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
           found_group, found_label, opts, work, params, none, fps, step_bad, symmetric, ks, out2, labels2, fps2,
           step_bad2, lifted):
    """Expand frontier[pos:end] (state numbers base+pos..., fingerprints frontier_fp) into nxt
and nxt_fp: (what ended it, pos, n_next, n_store).
    `opts`: keep going after a violation, check deadlocks, max states (-1: none); `work`,
    `params`: the successors' scratch; `none`: a label of -1s; `fps`: the successors' fingerprints;
    `ks`: empty, or where a kept state's place among its parent's successors goes (the search
    with its store on disk keeps that, not the label: external.py). `lifted`: None, or rows of
    several partitions (specs/kernel/lifted_rows.LiftedRows.lifted; numba prunes it away for one).

    Pipelined one state deep: a state's successors are made, fingerprinted and their slots
    asked for (prefetch) while the state before it still waits to be looked up; that one is
    taken next, its slots loaded by then. On --brokers 5 the visited table is gigabytes, and
    a look-up a miss to memory that a state's own prefetches, issued just before, could not
    hide. Two sets of buffers (out, labels, fps, step_bad and their ...2 twins) hold the two
    states' successors. The states are taken in frontier order all the same: only the making
    of a state's successors, which reads nothing the taking writes, moves ahead."""
    deadlocks = opts[1]
    held = -1                        # the state whose successors wait in the buffers of parity `side`
    held_n, held_stuck, side, mine, stuck = 0, False, 0, 0, False
    while True:
        if pos < end:
            mine = 1 - side if held >= 0 else 0
            o, lb, f, sb = _buffers(mine, out, labels, fps, step_bad, out2, labels2, fps2, step_bad2)
            row = frontier[pos]
            n = _successors(row, lay, cv, plan, tables, BOUNDED, o, lb, key, work, params, lifted)
            if n >= 0 and symmetric is not None:      # each step judged before it is renamed
                if lifted is None:
                    n = steps_then_canonical(row, o, lb, n, lay, cv, tables, key, work, step_check, sb, 0)
                else:
                    judge_then_sort(row, o, lb, n, lifted[0], lay, tables[3], step_check, sb, lifted[5])
            stuck = False
            if n == 0 and deadlocks and found_index[DEADLOCK_SLOT] < 0:
                m = _successors(row, lay, cv, plan, tables, UNBOUNDED, o, lb, key, work, params, lifted)
                n = m if m < 0 else 0
                stuck = m == 0
            if n >= 0:
                fa, fb = frontier_fp[pos, 0], frontier_fp[pos, 1]
                for k in range(n):
                    a, b = child_hash(row, fa, fb, o[k])
                    f[k, 0], f[k, 1] = a, b
                    prefetch(table, b)
        else:
            n = 0
        if held >= 0:
            o, lb, f, sb = _buffers(side, out, labels, fps, step_bad, out2, labels2, fps2, step_bad2)
            why, n_next, n_store = _take_state(frontier[held], base + held, held_n, held_stuck, o, lb, f, sb, nxt,
                                               nxt_fp, n_next, parents, labels_of, n_store, table, lay, tables,
                                               ctr, enabled, taken, state_check, step_check, found_index,
                                               found_group, found_label, opts, none, symmetric, ks, lifted)
            if why == GROW:
                return GROW, held, n_next, n_store
            if why != DONE:
                return why, held + 1, n_next, n_store
            held = -1
        if pos >= end:
            return DONE, pos, n_next, n_store
        if n == MISS:
            return NEED_EVENT, pos, n_next, n_store
        if n == FULL:
            return NEED_ROOM, pos, n_next, n_store
        held, held_n, held_stuck, side = pos, n, stuck, mine
        pos += 1


@njit(cache=True, inline="always", _nrt=False)
def _successors(row, lay, cv, plan, tables, mode, out, labels, key, work, params, lifted):
    """row's successors (n, MISS, or FULL: rows of several partitions that out cannot hold)."""
    if lifted is None:
        return successors(row, lay, cv, plan, tables, mode, -1, out, labels, key, work, params)
    return lifted_successors(row, lifted[0], lay, cv, plan, tables, mode, -1, out, labels, key, work, params,
                             lifted[1], lifted[2], lifted[3], lifted[4], lifted[6])


@njit(cache=True, inline="always", _nrt=False)
def _buffers(parity, out, labels, fps, step_bad, out2, labels2, fps2, step_bad2):
    """expand's successor buffers of `parity` (0: the first set, 1: its twins)."""
    return (out2, labels2, fps2, step_bad2) if parity else (out, labels, fps, step_bad)


@njit(cache=True, inline="always", _nrt=False)
def _take_state(row, me, n, stuck, out, labels, fps, step_bad, nxt, nxt_fp, n_next, parents, labels_of, n_store,
                table, lay, tables, ctr, enabled, taken, state_check, step_check, found_index, found_group,
                found_label, opts, none, symmetric, ks, lifted):
    """State `me`'s n successors (made, fingerprinted and prefetched) looked up, checked and
    the new ones kept, in order: (DONE, or GROW before any is taken if the buffers or the table
    lack room for them, or what stopped it; n_next; n_store)."""
    facts = tables[3]
    keep_going, max_states = opts[0], opts[2]
    if n_next + n > len(nxt) or n_store + n > len(parents) or 2 * (ctr[C_VISITED] + n) > len(table):
        return GROW, n_next, n_store
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
                    return STOP, n_next, n_store
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
            bad = state_violations(t, lay, facts, open_states) if lifted is None else \
                violations(t, lifted[0], lay, facts, open_states)
            if bad:
                _record(found_index, found_group, found_label, ctr, bad, 0, n_store - 1, none)
                if not keep_going:
                    return STOP, n_next, n_store
        if max_states >= 0 and n_store >= max_states:
            return MAX_STATES, n_next, n_store
    if n == 0:
        ctr[C_TERMINAL] += 1
        if stuck and found_index[DEADLOCK_SLOT] < 0:     # (made before the state ahead of it was taken)
            ctr[C_TERMINAL] -= 1
            _record(found_index, found_group, found_label, ctr, 1, DEADLOCK_SLOT, me, none)
            if not keep_going:
                return STOP_NO_CUT, n_next, n_store
    return DONE, n_next, n_store


def twins(search) -> tuple:
    """The second set of successor buffers `expand`'s pipeline fills while the first waits (out,
    labels, fps, step_bad), shaped as the Search's kernel's own (a longer log remakes them)."""
    k, twin = search.k, getattr(search, "_twin", None)
    if twin is None or twin[0].shape != k.out.shape:
        twin = search._twin = tuple(np.zeros_like(a) for a in (k.out, k.labels, search.fps, k.step_bad))
    return twin


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
def root_violations(row, lay, facts, check, parts):
    return state_violations(row, lay, facts, check) if parts == 1 else violations(row, parts, lay, facts, check)
