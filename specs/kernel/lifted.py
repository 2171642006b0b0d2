"""Several partitions compiled: specs/partitions.py over rows. A state of P partitions is one
row of P one-partition rows side by side, each whole (what the partitions share, the broker
registry in the controller's value, each broker's process and the budgets spent, is repeated in
each), and its steps are joined from the one-partition kernel's successors of each part
(successors.successors with `only`), as specs/partitions.py joins them, in the same order:
tests/specs/test_lifted_kernel.py holds the two to each other on every state of small configs.
No rule is here: what is compiled is the join.

- A partition's own step (OWN) is taken in one partition; the others take the budgets it spent.
- A broker's or the topic's event (ALL) is the same step in every partition, keyed by the label
  without what is each partition's own (an elected broker; a lossy crash's kept prefix and a
  controlled shutdown's `elsewhere`, from the second parameter on); every combination of the
  partitions' choices is a step, the last partition's choice varying fastest. A partition
  without the key takes its FALLBACK (a lossy crash: a crash there, unbounded) or, for a
  controlled shutdown of a broker that leads another partition, the `elsewhere` step
  (control.controlled_shutdown_effect with p1 = 1) within the epoch bounds.
- The periodic unclean and preferred elections (WHERE) act in every partition where they apply;
  not at all where one would take a partition beyond the bounds.
The budgets of a joined step are those of the first partition that took the event itself.

A label is the one-partition kernel's five ints, its p2 (no one-partition step uses it) saying
which partitions took what: 0, every partition the same step (the label is that step's); 1 + p,
partition p alone; EACH | variants: the partitions' steps differ in what is their own, packed
per partition q: its p1 in p1's bits 5q..5q+4, its elected broker + 1 in prefer's bits
4q..4q+3, and in p2's bits 2q..2q+1 whether it took the event (0), its fallback (1) or nothing (2).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from specs.kernel.elr_index_rows import elr_index
from specs.kernel.events import MISS
from specs.kernel.mechanics import CV_BOUNDS, facts_of
from specs.kernel.successors import (BOUNDED, CONTROLLED_SHUTDOWN, CRASH, CRASH_LOSSY, GUARDS, N_ACTIONS,
                                     UNBOUNDED, apply, charged, successors, used_at, within_bounds)
from specs.kernel.tables import F_LEADER

OWN, ALL, WHERE = 0, 1, 2
FULL = -3                         # more steps than `out` holds (the caller gives a longer one)
EACH = 1 << 20
TOOK, FELL_BACK, NONE = 0, 1, 2


def scratch_size(parts: int, m1: int) -> int:
    """The ints lifted_successors' `scratch` needs (its last 4 * parts: `_tail`)."""
    return 4 * parts + parts * m1 * 2 + 4 * parts + 8


@njit(cache=True, inline="always", _nrt=False)
def _tail(scratch, parts):
    """scratch's last regions, `parts` ints each: where each part's steps of the action taken
    now begin in `sub`, how many steps each part has in all, where its next action's begin, and
    _combinations' digits."""
    end = len(scratch)
    return end - 4 * parts, end - 3 * parts, end - 2 * parts


def kinds(per_partition, where_enabled, names) -> np.ndarray:
    """Each action's kind, from specs/partitions.py's sets."""
    return np.array([OWN if n in per_partition else WHERE if n in where_enabled else ALL for n in names],
                    dtype=np.int64)


@njit(cache=True, _nrt=False)
def lifted_successors(r, parts, lay, cv, plan, tables, mode, only, out, labels, key, work, params, kind,
                      sub, sub_labels, scratch, index):
    """Fill out[:n] and labels[:n] with the successors of r, a row of `parts` one-partition rows:
    n, FULL, or MISS (the key to fill is in `key`). `sub`, `sub_labels`: each part's
    one-partition successors (rows p * m .. p * m + m - 1, m = len(sub_labels) // (2 * parts + 1);
    the fallbacks after them, then a guard's), and `parts` rows at the end of `sub` for the
    `elsewhere` steps; `scratch`: ints (`scratch_size`). `index`: the ELR index across partitions
    applied to every step (elr_index_rows.py; only config changes leave the entries it moves)."""
    w = len(r) // parts
    m1 = len(sub_labels) // (2 * parts + 1)
    nbud = len(r) // parts - used_at(lay)
    begin, total, cursor = _tail(scratch, parts)
    for p in range(parts):                  # every part's steps, once: in action order, so each action's are a run
        m = _part(r, p, w, m1, p, lay, cv, plan, tables, mode, only, sub, sub_labels, key, work, params)
        if m == MISS:
            return MISS
        scratch[total + p], scratch[cursor + p] = m, p * m1
    n = 0
    for action in range(N_ACTIONS):
        if only >= 0 and action != only:
            continue
        for p in range(parts):              # every part's steps of the action (a lossy crash's fallback too)
            at, end = scratch[cursor + p], p * m1 + scratch[total + p]
            m = 0
            while at + m < end and sub_labels[at + m, 0] == action:
                m += 1
            scratch[begin + p], scratch[cursor + p] = at, at + m
            scratch[p], scratch[parts + p] = m, 0
            if action == CRASH_LOSSY and kind[action] != OWN:
                m = _part(r, p, w, m1, parts + p, lay, cv, plan, tables, UNBOUNDED, CRASH, sub, sub_labels, key,
                          work, params)
                if m == MISS:
                    return MISS
                scratch[parts + p] = m
            if kind[action] == WHERE and mode == BOUNDED and m == 0:     # does it apply beyond the bounds?
                m = _part(r, p, w, m1, parts + p, lay, cv, plan, tables, UNBOUNDED, action, sub, sub_labels, key,
                          work, params)
                if m == MISS:
                    return MISS
                scratch[parts + p] = m
        if kind[action] == OWN:
            n = _own(r, parts, w, m1, nbud, out, labels, sub, sub_labels, scratch, n)
        else:
            n = _join(r, parts, w, m1, nbud, lay, cv, plan, tables, mode, action, kind[action], out, labels, key,
                      work, params, sub, sub_labels, scratch, n)
        if n < 0:
            return n
    if index and mode == BOUNDED:           # (an unbounded step's row is not asked for: lift.py)
        for k in range(n):
            if elr_index(r, out[k], parts, lay, tables, key) == MISS:
                return MISS
    return n


@njit(cache=True, inline="always", _nrt=False)
def _part(r, p, w, m1, region, lay, cv, plan, tables, mode, action, sub, sub_labels, key, work, params):
    """Part p's one-partition steps of the action into sub's and sub_labels' rows of `region`."""
    at = region * m1
    return successors(r[p * w:(p + 1) * w], lay, cv, plan, tables, mode, action, sub[at:at + m1],
                      sub_labels[at:at + m1], key, work, params)


@njit(cache=True, _nrt=False)
def _own(r, parts, w, m1, nbud, out, labels, sub, sub_labels, scratch, n):
    """A partition's own steps, partition by partition: the others keep their rows and take the
    budgets spent. The new n, or FULL."""
    begin = _tail(scratch, parts)[0]
    for p in range(parts):
        for j in range(scratch[begin + p], scratch[begin + p] + scratch[p]):
            if n >= len(out):
                return FULL
            t = out[n]
            for k in range(len(r)):
                t[k] = r[k]
            for k in range(w):
                t[p * w + k] = sub[j, k]
            _budgets_from(t, p, parts, w, nbud)
            for k in range(5):
                labels[n, k] = sub_labels[j, k]
            labels[n, 3] = 1 + p
            n += 1
    return n


@njit(cache=True, inline="always", _nrt=False)
def _budgets_from(t, p, parts, w, nbud):
    """Every part of t takes part p's budgets spent."""
    for q in range(parts):
        if q != p:
            for k in range(nbud):
                t[q * w + w - nbud + k] = t[p * w + w - nbud + k]


@njit(cache=True, _nrt=False)
def _join(r, parts, w, m1, nbud, lay, cv, plan, tables, mode, action, kind, out, labels, key, work, params, sub,
          sub_labels, scratch, n):
    """The event's joined steps, key by key in the order of first appearance (a controlled
    shutdown's in its guard's order): out[n:], labels[n:]; the new n, or MISS."""
    own_from = 2 if action == CRASH_LOSSY or action == CONTROLLED_SHUTDOWN else 4
    facts = tables[3]
    # scratch: [0, parts) counts, [parts, 2 parts) fallback counts, then per part its options'
    # start and count, then the options (a row of sub; -1: its own row, no step; -2: its elsewhere)
    starts, counts, opts = 2 * parts, 3 * parts, 4 * parts
    keys_at = 2 * parts * m1                 # a controlled shutdown's guard: the brokers it enables
    nkeys = 0
    if action == CONTROLLED_SHUTDOWN:
        nkeys = successors(r[0:w], lay, cv, plan, tables, GUARDS, action, sub[keys_at:keys_at + m1],
                           sub_labels[keys_at:keys_at + m1], key, work, params)
        if nkeys == MISS:
            return MISS
    begin = _tail(scratch, parts)[0]
    kp, kj = 0, scratch[begin] - 1          # the key's step: the next of part kp's, or the guard's x-th
    for x in range(nkeys if action == CONTROLLED_SHUTDOWN else 1 << 62):
        if action == CONTROLLED_SHUTDOWN:
            kp, kj = -1, keys_at + x
        else:
            kj += 1
            while kp < parts and kj >= scratch[begin + kp] + scratch[kp]:
                kp += 1
                kj = scratch[begin + kp] if kp < parts else 0
            if kp >= parts:
                break
            if _seen_before(sub_labels, scratch, parts, own_from, kp, kj):
                continue
        b = sub_labels[kj, 1]
        leads = False
        if action == CONTROLLED_SHUTDOWN:
            for q in range(parts):
                leads = leads or facts_of(r[q * w:(q + 1) * w], lay, facts)[F_LEADER] == b
        o = opts
        ok = True
        for q in range(parts):
            scratch[starts + q], c = o, 0
            rq = r[q * w:(q + 1) * w]
            if action == CONTROLLED_SHUTDOWN and leads and facts_of(rq, lay, facts)[F_LEADER] != b:
                budget = charged(rq, lay, plan, action, b)
                if mode == UNBOUNDED or budget < 0 or rq[used_at(lay) + budget] < cv[CV_BOUNDS + budget]:
                    row = len(sub) - parts + q
                    if apply(rq, sub[row], lay, cv, plan, tables, action, b, 1, 0, -1, key, work) == MISS:
                        return MISS
                    if mode == UNBOUNDED or within_bounds(sub[row], lay, cv, facts):
                        scratch[o] = -2
                        o += 1
                        c += 1
            else:
                for j in range(scratch[begin + q], scratch[begin + q] + scratch[q]):
                    if _same_key(sub_labels, j, kj, own_from):
                        scratch[o] = j
                        o += 1
                        c += 1
                if c == 0 and action == CRASH_LOSSY:
                    fb = (parts + q) * m1
                    for j in range(fb, fb + scratch[parts + q]):
                        if sub_labels[j, 1] == b:
                            scratch[o] = j
                            o += 1
                            c += 1
                if c == 0 and kind == WHERE and scratch[parts + q] == 0:    # (else: only beyond the bounds)
                    scratch[o] = -1
                    o += 1
                    c += 1
            scratch[counts + q] = c
            if c == 0:
                ok = False
                break
        if ok:
            n = _combinations(r, parts, w, nbud, action, b, out, labels, sub, sub_labels, scratch, n)
            if n == FULL:
                return FULL
    return n


@njit(cache=True, inline="always", _nrt=False)
def _same_key(sub_labels, a, b, own_from):
    if sub_labels[a, 0] != sub_labels[b, 0]:
        return False
    for k in range(1, own_from):
        if sub_labels[a, k] != sub_labels[b, k]:
            return False
    return True


@njit(cache=True, _nrt=False)
def _seen_before(sub_labels, scratch, parts, own_from, kp, kj):
    """Whether a step before (part, row) kj in order has kj's key."""
    begin = _tail(scratch, parts)[0]
    for p in range(kp + 1):
        for j in range(scratch[begin + p], scratch[begin + p] + scratch[p]):
            if j >= kj:
                return False
            if _same_key(sub_labels, j, kj, own_from):
                return True
    return False


@njit(cache=True, _nrt=False)
def _combinations(r, parts, w, nbud, action, b, out, labels, sub, sub_labels, scratch, n):
    """Every combination of the parts' options (scratch), the last part's varying fastest."""
    starts, counts = 2 * parts, 3 * parts
    digit = scratch[len(scratch) - parts:]        # (_tail's last region)
    for q in range(parts):
        digit[q] = 0
    while True:
        if n >= len(out):
            return FULL
        t = out[n]
        ref = -1
        p1s, prefers, variants = 0, 0, 0
        for q in range(parts):
            j = scratch[scratch[starts + q] + digit[q]]
            variant = TOOK
            if j == -1:
                variant = NONE
                for k in range(w):
                    t[q * w + k] = r[q * w + k]
            elif j == -2:
                row = len(sub) - parts + q
                for k in range(w):
                    t[q * w + k] = sub[row, k]
            else:
                for k in range(w):
                    t[q * w + k] = sub[j, k]
                if sub_labels[j, 0] != action:
                    variant = FELL_BACK
            if variant == TOOK and ref < 0:
                ref = q
            p1s |= (1 if j == -2 else sub_labels[j, 2] if j >= 0 else 0) << (5 * q)
            prefers |= ((sub_labels[j, 4] if j >= 0 else -1) + 1) << (4 * q)
            variants |= variant << (2 * q)
        _budgets_from(t, ref, parts, w, nbud)
        j0 = scratch[scratch[starts] + digit[0]]
        if _alike(scratch, parts, digit, sub_labels):
            for k in range(5):
                labels[n, k] = sub_labels[j0, k]
        else:
            labels[n, 0], labels[n, 1], labels[n, 2], labels[n, 3], labels[n, 4] = \
                action, b, p1s, EACH | variants, prefers
        n += 1
        q = parts - 1                    # the next combination: the last part's option first
        while q >= 0:
            digit[q] += 1
            if digit[q] < scratch[counts + q]:
                break
            digit[q] = 0
            q -= 1
        if q < 0:
            return n


@njit(cache=True, _nrt=False)
def _alike(scratch, parts, digit, sub_labels):
    """Whether every part took the same one-partition step (the same label, none elsewhere nor
    fallen back nor without a step)."""
    starts = 2 * parts
    j0 = scratch[scratch[starts] + digit[0]]
    if j0 < 0:
        return False
    for q in range(1, parts):
        j = scratch[scratch[starts + q] + digit[q]]
        if j < 0:
            return False
        for k in range(5):
            if sub_labels[j, k] != sub_labels[j0, k]:
                return False
    return True
