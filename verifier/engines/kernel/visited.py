"""The compiled search's visited set: 128-bit fingerprints in open-addressing tables, split
among owners.

A fingerprint is two 64-bit hashes of a row (`row_hash`); a table is one (slots, 2) array, so
a look-up touches one cache line (two parallel arrays cost two misses a look-up, which was
most of the search's time past a few million states). With several threads the set is split
into one table per owner, chosen by the fingerprint's bits (`owner`): each owner inserts only
its own fingerprints, so the owners dedupe a round's successors at the same time without a
lock, each in the one global order the one-thread loop meets them, and the first occurrence
of a state is the same whatever the number of owners.
"""
from __future__ import annotations

import numpy as np
from numba import njit

EMPTY = np.uint64(0)          # the first hash is never 0 (row_hash sets its low bit)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _mix(a, b, x):
    """One 64-bit word into the two hash lanes."""
    a = (a ^ x) * np.uint64(0x100000001B3)
    a ^= a >> np.uint64(29)
    b = (b + x + np.uint64(0x9E3779B97F4A7C15)) * np.uint64(0xBF58476D1CE4E5B9)
    b ^= b >> np.uint64(31)
    return a, b


@njit(cache=True, nogil=True, _nrt=False)
def row_hash(row):
    """Two independent 64-bit hashes of a row (a 128-bit fingerprint; the first never 0),
    over the row's int32 fields taken two at a time."""
    a = np.uint64(0x243F6A8885A308D3)
    b = np.uint64(0x13198A2E03707344)
    low = np.int64(0xFFFFFFFF)
    n = len(row)
    for j in range(0, n - 1, 2):
        a, b = _mix(a, b, np.uint64(np.int64(row[j]) & low) | (np.uint64(np.int64(row[j + 1]) & low) << np.uint64(32)))
    if n % 2:
        a, b = _mix(a, b, np.uint64(np.int64(row[n - 1]) & low) | (np.uint64(1) << np.uint64(63)))
    a = (a ^ (a >> np.uint64(33))) * np.uint64(0xFF51AFD7ED558CCD)
    a ^= a >> np.uint64(33)
    b = (b ^ (b >> np.uint64(29))) * np.uint64(0xC4CEB9FE1A85EC53)
    b ^= b >> np.uint64(32)
    return a | np.uint64(1), b


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def owner(a, owners):
    """The owner of fingerprint (a, _) among `owners` (its table's index)."""
    return np.int64((a >> np.uint64(40)) % np.uint64(owners))


@njit(cache=True, nogil=True, _nrt=False)
def visit(table, a, b):
    """Insert the fingerprint (a, b) into `table`; True if it was new."""
    mask = np.int64(len(table) - 1)
    slot = np.int64(b >> np.uint64(1)) & mask
    while True:
        if table[slot, 0] == EMPTY:
            table[slot, 0], table[slot, 1] = a, b
            return True
        if table[slot, 0] == a and table[slot, 1] == b:
            return False
        slot = (slot + 1) & mask


@njit(cache=True, nogil=True, _nrt=False)
def rehash(table, grown):
    for slot in range(len(table)):
        if table[slot, 0] != EMPTY:
            visit(grown, table[slot, 0], table[slot, 1])


@njit(cache=True, nogil=True, _nrt=False)
def dedupe(table, me, owners, fp, first, counts, states, is_new):
    """is_new[k] := whether fingerprint fp[k] is new, for those this owner owns, taken state by
    state (state i's are fp[first[i]:first[i] + counts[i]], i < states): the number of new ones."""
    found = 0
    for i in range(states):
        for k in range(first[i], first[i] + counts[i]):
            if owner(fp[k, 0], owners) == me:
                fresh = visit(table, fp[k, 0], fp[k, 1])
                is_new[k] = fresh
                found += fresh
    return found


class Visited:
    """The visited set: one table per owner, each kept at most half full."""

    def __init__(self, owners: int = 1, slots: int = 1 << 17):
        self.owners = owners
        self.tables = [np.zeros((slots, 2), dtype=np.uint64) for _ in range(owners)]
        self.counts = [0] * owners

    def _slots(self, o: int, more: int) -> int:
        """The slots table o needs to take `more` new fingerprints and stay half empty."""
        n = len(self.tables[o])
        while 2 * (self.counts[o] + more) > n:
            n *= 2
        return n

    def room(self, more: int) -> None:
        """Grow every table that could not take `more` new fingerprints and stay half empty."""
        for o, table in enumerate(self.tables):
            n = self._slots(o, more)
            if n > len(table):
                grown = np.zeros((n, 2), dtype=np.uint64)
                rehash(table, grown)
                self.tables[o] = grown

    def growth(self, more: int) -> int:
        """The bytes of the new tables `room(more)` would allocate."""
        return sum(16 * n for o, table in enumerate(self.tables) if (n := self._slots(o, more)) > len(table))

    def add(self, a, b) -> bool:
        """Insert one fingerprint from Python (the roots)."""
        o = owner(a, self.owners)
        self.room(1)
        fresh = visit(self.tables[o], a, b)
        self.counts[o] += int(fresh)
        return bool(fresh)

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.tables)
