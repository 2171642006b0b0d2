"""Symmetry reduction on rows: the compiled form of specs/symmetry.py's canonicalizer.

A row is rewritten to the one member of its orbit that `specs.symmetry.canonicalizer` picks:
the replicas are ranked by their signatures (everything the state says about a broker, without
its id: `_compare`, field for field in the order of `specs.symmetry._signature`, so that ties
and the lexicographic order of logs fall as Python's tuple order has them), and renamed so that
the ranked replicas take the replica ids in increasing order. The broker blocks move to their
new slots, the broker epochs they carry (clean-shutdown file, the epoch a follower fetched
with) follow their broker (`100 + id + 1000 * generation`), the AlterPartition in flight
renames its sender and members, and the controller value is the table's E_RENAME outcome,
filled by the algebra's own `permute_controller` when it is missing (MISS, as an event).
tests/specs/test_kernel_symmetry.py holds it to the Python canonicalizer state for state.

The scratch is the end of `work` past the guards' 2 * nb slots: a copy of the row, and the
slot order.
"""
from __future__ import annotations

from numba import njit

from specs.kernel.events import MISS
from specs.kernel.layout import (ALIVE, CLEAN_FILE, FETCH_EPOCH, FLUSHED, HWM, I_BROKER, I_BROKER_EPOCH, I_ISR,
                                 I_ISR_LEN, I_PRESENT, L_B0, L_BW, L_CTRL, L_INFL, L_NB, L_WIDTH, LEO, LOG, LOG_LEN,
                                 NONE)
from specs.kernel.mechanics import CV_IDS, CV_REPLICAS, facts_of
from specs.kernel.tables import (E_RENAME, F_ELR_MASK, F_EPOCHS, F_FENCED, F_ISR_MASK, F_LAST_KNOWN_ELR_MASK,
                                 F_LAST_KNOWN_LEADER, F_LEADER, F_SHUTTING_DOWN, O_CTRL, find)
from specs.state import NO_EPOCH


def scratch(nb: int, width: int) -> int:
    """The `work` slots canonical needs beyond the guards' 2 * nb and the refusal slot."""
    return width + 2 * nb


@njit(cache=True, inline="always", _nrt=False)
def _gen(e, b):
    return -1 if e == NO_EPOCH else (e - 100 - b) // 1000


@njit(cache=True, inline="always", _nrt=False)
def _moved(e, b, c):
    """Broker epoch e of broker b, renamed to c."""
    return e if e == NO_EPOCH or e == NONE else e - b + c


@njit(cache=True, inline="always", _nrt=False)
def _cmp(x, y):
    return -1 if x < y else (1 if x > y else 0)


@njit(cache=True, _nrt=False)
def _member_epoch(t, lay, i):
    """(whether broker index i is a member of the request in flight, its member epoch)."""
    infl, nb = lay[L_INFL], lay[L_NB]
    for k in range(t[infl + I_ISR_LEN]):
        if t[infl + I_ISR + k] == i:
            return True, t[infl + I_ISR + nb + k]
    return False, 0


@njit(cache=True, _nrt=False)
def _compare(t, lay, cv, f, i, j):
    """-1, 0 or 1: broker slot i's signature against slot j's (specs.symmetry._signature)."""
    bi, bj = cv[CV_IDS + i], cv[CV_IDS + j]
    for mask in (F_ISR_MASK, F_ELR_MASK, F_LAST_KNOWN_ELR_MASK):
        c = _cmp((f[mask] >> i) & 1, (f[mask] >> j) & 1)
        if c:
            return c
    for field in (F_LEADER, F_LAST_KNOWN_LEADER):
        c = _cmp(1 if f[field] == i else 0, 1 if f[field] == j else 0)
        if c:
            return c
    ei, ej = f[F_EPOCHS + i], f[F_EPOCHS + j]
    c = _cmp(-2 if ei == NONE else _gen(ei, bi), -2 if ej == NONE else _gen(ej, bj))
    if c:
        return c
    for mask in (F_FENCED, F_SHUTTING_DOWN):
        c = _cmp((f[mask] >> i) & 1, (f[mask] >> j) & 1)
        if c:
            return c
    oi, oj = lay[L_B0] + i * lay[L_BW], lay[L_B0] + j * lay[L_BW]
    c = _cmp(t[oi + ALIVE], t[oj + ALIVE])
    if c:
        return c
    ni, nj = t[oi + LOG_LEN], t[oj + LOG_LEN]
    for k in range(2 * min(ni, nj)):            # the logs: entry by entry, then the shorter first
        c = _cmp(t[oi + LOG + k], t[oj + LOG + k])
        if c:
            return c
    c = _cmp(ni, nj)
    if c:
        return c
    # then flushed, hwm, the clean-shutdown file's generation, the follower's leo and the
    # generation of the epoch it fetched with
    for field, generation in ((FLUSHED, 0), (HWM, 0), (CLEAN_FILE, 1), (LEO, 0), (FETCH_EPOCH, 1)):
        x, y = t[oi + field], t[oj + field]
        if generation:
            x, y = _gen(x, bi), _gen(y, bj)
        c = _cmp(x, y)
        if c:
            return c
    infl = lay[L_INFL]
    if not t[infl + I_PRESENT]:
        return 0
    sender = t[infl + I_BROKER]
    si, sj = 1 if sender == i else 0, 1 if sender == j else 0
    c = _cmp(si, sj)
    if c:
        return c
    epoch = t[infl + I_BROKER_EPOCH]
    c = _cmp(_gen(epoch, bi) if si else 0, _gen(epoch, bj) if sj else 0)
    if c:
        return c
    mi, ei = _member_epoch(t, lay, i)
    mj, ej = _member_epoch(t, lay, j)
    c = _cmp(1 if mi else 0, 1 if mj else 0)
    if c:
        return c
    return _cmp(_gen(ei, bi) if mi else 0, _gen(ej, bj) if mj else 0)


@njit(cache=True, _nrt=False)
def canonical(t, lay, cv, tables, key, work):
    """Rewrite row t as its orbit's canonical member: 0, or MISS (the renamed controller value
    is not in the table yet; `key` names it)."""
    nb, width, bw, b0 = lay[L_NB], lay[L_WIDTH], lay[L_BW], lay[L_B0]
    old, ranked, order = 2 * nb, 2 * nb + width, 2 * nb + width + nb
    f = facts_of(t, lay, tables[3])
    # work[order:order + n]: the replica slots in id order; work[ranked:ranked + n]: the same,
    # stably sorted by signature (insertion sorts: stable, as sorted() is)
    n = 0
    for i in range(nb):
        if (cv[CV_REPLICAS] >> i) & 1:
            at = n
            while at > 0 and cv[CV_IDS + work[order + at - 1]] > cv[CV_IDS + i]:
                work[order + at] = work[order + at - 1]
                at -= 1
            work[order + at] = i
            n += 1
    for k in range(n):
        at, s = k, work[order + k]
        while at > 0 and _compare(t, lay, cv, f, work[ranked + at - 1], s) > 0:
            work[ranked + at] = work[ranked + at - 1]
            at -= 1
        work[ranked + at] = s
    same = True
    for k in range(n):
        if work[ranked + k] != work[order + k]:
            same = False
    if same:
        return 0
    # the k-th ranked slot takes the k-th replica id's slot: key[i] := old slot i's new slot
    # (key is rebuilt below), then work[order + i] := key[i]; `code` says it in base 16
    for i in range(nb):
        key[i] = i
    for k in range(n):
        key[work[ranked + k]] = work[order + k]
    code = 0
    for i in range(nb):
        code += (key[i] + 1) * 16 ** i
        work[order + i] = key[i]
    for c in range(width):
        work[old + c] = t[c]
    for i in range(nb):
        j = work[order + i]
        for c in range(bw):
            t[b0 + j * bw + c] = work[old + b0 + i * bw + c]
        bi, bj = cv[CV_IDS + i], cv[CV_IDS + j]
        t[b0 + j * bw + CLEAN_FILE] = _moved(t[b0 + j * bw + CLEAN_FILE], bi, bj)
        t[b0 + j * bw + FETCH_EPOCH] = _moved(t[b0 + j * bw + FETCH_EPOCH], bi, bj)
    infl = lay[L_INFL]
    if t[infl + I_PRESENT]:
        sender = t[infl + I_BROKER]
        if sender < nb:
            t[infl + I_BROKER] = work[order + sender]
            t[infl + I_BROKER_EPOCH] = _moved(t[infl + I_BROKER_EPOCH], cv[CV_IDS + sender],
                                              cv[CV_IDS + work[order + sender]])
        m = t[infl + I_ISR_LEN]
        for k in range(m):                # renamed, then sorted by (id, epoch) (insertion sort)
            b = work[old + infl + I_ISR + k]
            e = work[old + infl + I_ISR + nb + k]
            if b < nb:
                e = _moved(e, cv[CV_IDS + b], cv[CV_IDS + work[order + b]])
                b = work[order + b]
            at = k
            while at > 0 and _after(cv, nb, t[infl + I_ISR + at - 1], t[infl + I_ISR + nb + at - 1], b, e):
                t[infl + I_ISR + at] = t[infl + I_ISR + at - 1]
                t[infl + I_ISR + nb + at] = t[infl + I_ISR + nb + at - 1]
                at -= 1
            t[infl + I_ISR + at] = b
            t[infl + I_ISR + nb + at] = e
    # the controller value renamed: the table's, or MISS
    for k in range(len(key)):
        key[k] = 0
    key[0], key[1], key[2], key[5] = work[old + lay[L_CTRL]], E_RENAME, code, -1
    slot = find(tables[0], tables[2], key)
    if slot < 0:
        for c in range(width):
            t[c] = work[old + c]
        return MISS
    t[lay[L_CTRL]] = tables[1][slot, O_CTRL]
    return 0


@njit(cache=True, _nrt=False)
def canonical_all(out, n, lay, cv, tables, key, work):
    """out[:n] rewritten as their orbits' canonical rows: n, or MISS. The compiled search loops
    call it under `if symmetric is not None`, and a search without symmetry passes None: numba
    prunes a branch on a None argument before typing, so only the searches that reduce compile
    it (2 s of every cold compile otherwise). A flag, not the function as an argument: a
    dispatcher in a signature never matches the cache's entry in a later process (its pickle
    names a per-process id), so every run compiled the loop again (1.3 s) and the cache's
    index grew by an entry a run."""
    for k in range(n):
        if canonical(out[k], lay, cv, tables, key, work) == MISS:
            return MISS
    return n


@njit(cache=True, inline="always", _nrt=False)
def _after(cv, nb, b1, e1, b2, e2):
    """Whether member (b1, e1) sorts after (b2, e2): by id, then epoch. A stranger (an index
    past the config's brokers, which only a raw request names, never the model's search)
    sorts after every broker, in the order met."""
    id1 = cv[CV_IDS + b1] if b1 < nb else (1 << 40) + b1
    id2 = cv[CV_IDS + b2] if b2 < nb else (1 << 40) + b2
    return id1 > id2 or (id1 == id2 and e1 > e2)
