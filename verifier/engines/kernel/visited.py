"""The compiled search's visited set: 128-bit fingerprints in open-addressing tables, split
among owners.

A fingerprint is two 64-bit hashes of a row (`row_hash`), kept beside each row of a level so
that a successor's is computed from its parent's and the fields the step changed. A table is
one (slots, 2) array, so a look-up touches one cache line (two parallel arrays cost two misses
a look-up, which was most of the search's time past a few million states). With several
threads every thread inserts into every table at once (`claim`, by compare-and-swap), and a
slot also holds the discovery key of the state in it, so that the least key wins whichever
thread came first; the set is split into one table per thread, chosen by the fingerprint's bits
(`owner`), only so that the tables grow at the same time.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from specs.kernel.reserve import reserve
from verifier.core.rowhash import EMPTY
from verifier.engines.kernel.atomic import cas, load_acquire, store_release

SHARED_WIDTH = 4              # a shared table's slot: the two hashes, the discovery key, a spare
AHEAD = 16                    # a growth asks for the slot this many insertions ahead (prefetch)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def owner(a, owners):
    """The owner of fingerprint (a, _) among `owners` (its table's index)."""
    return np.int64((a >> np.uint64(40)) % np.uint64(owners))


def prefetch(table, b):
    """Ask the CPU to start loading the slot where fingerprint (_, b) is looked up, so that
    several look-ups' cache misses overlap instead of coming one after the other (the miss
    was the search's costliest instruction, perf). Nothing when interpreted."""


@intrinsic
def _prefetch_row(typingctx, table, slot):
    """llvm.prefetch of table[slot, 0] (for reading, kept in every cache level)."""
    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        zero = context.get_constant(types.intp, 0)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1], zero])
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()
    return types.void(table, types.intp), codegen


@overload(prefetch, jit_options={"cache": True, "nogil": True, "_nrt": False})
def _prefetch(table, b):
    def compiled(table, b):
        _prefetch_row(table, np.int64(b >> np.uint64(1)) & np.int64(len(table) - 1))
    return compiled


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def visit(table, a, b):
    """Insert the fingerprint (a, b) into `table`; True if it was new. The first hash is
    stored with its low bit set, so that no fingerprint is EMPTY."""
    a |= np.uint64(1)
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


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def claim(table, a, b, key, first, lost):
    """Insert (a, b), found under `key`, into a table other threads insert into at once (a
    slot is a, b, the key it was found under, a spare): (what it did, the slot). 1 if it took
    a free slot; 2 if the state was found earlier in this round (its key >= first) under a
    larger key, which it now replaces (lost[that key - first] := 1: that finder lost); 0 if it
    was there before the round or under a smaller key. So after a round each new state holds the least key it was
    found under, as the one-thread loop, which meets it first, would have it.
    A slot is taken by swapping its first hash in; the key is written before the second hash,
    which is written last and read with acquire order, so a reader who sees it sees the key."""
    a |= np.uint64(1)
    mask = np.int64(len(table) - 1)
    slot = np.int64(b >> np.uint64(1)) & mask
    while True:
        seen = load_acquire(table, slot, 0)
        if seen == EMPTY:
            seen = cas(table, slot, 0, EMPTY, a)
            if seen == EMPTY:
                table[slot, 2] = key
                store_release(table, slot, 1, b)
                return 1, slot
        if seen == a:
            held_b = load_acquire(table, slot, 1)
            while held_b == EMPTY:          # taken a moment ago: its second hash is on the way
                held_b = load_acquire(table, slot, 1)
            if held_b == b:
                held = load_acquire(table, slot, 2)
                while held >= first and key < held:
                    was = cas(table, slot, 2, held, key)
                    if was == held:
                        lost[np.int64(held - first)] = 1
                        return 2, slot
                    held = was
                return 0, slot
        slot = (slot + 1) & mask


@njit(cache=True, nogil=True, _nrt=False)
def unclaim(table, slots, n):
    """Empty the slots a round took (slots[:n]): with every fingerprint inserted since a point
    removed, an open-addressing table is exactly what it was then."""
    for k in range(n):
        s = slots[k]
        table[s, 0], table[s, 1], table[s, 2] = EMPTY, EMPTY, EMPTY


@njit(cache=True, nogil=True, _nrt=False)
def regrow(whole, old, new, scratch):
    """Grow the table whole[:old] to whole[:new] in place (whole[old:new] was never written, so
    it is zero): its fingerprints go to scratch and their slots are cleared, then each is
    inserted again. Only the new slots' pages are fresh; a new table beside the old had all of
    its pages fresh, and fresh pages were almost all of a growth's time."""
    n = 0
    for slot in range(old):
        if whole[slot, 0] != EMPTY:
            scratch[n, 0], scratch[n, 1] = whole[slot, 0], whole[slot, 1]
            whole[slot, 0], whole[slot, 1] = EMPTY, EMPTY
            n += 1
    table = whole[:new]
    for k in range(n):
        if k + AHEAD < n:
            prefetch(table, scratch[k + AHEAD, 1])
        visit(table, scratch[k, 0], scratch[k, 1])


class Visited:
    """The visited set: one table per owner, each kept at most half full. A table is a view of
    an address-space reservation (specs/kernel/reserve.py) as large as the memory budget, and
    grows in place (`regrow`); where the OS refuses the reservation, or the table outgrows it,
    into a new array (`rehash`)."""

    def __init__(self, owners: int = 1, slots: int = 1 << 17, most: int = 1 << 36, shared: bool = False):
        """`most`: the bytes a table may ever reach; `shared`: threads insert into every table
        at once (`claim`): a slot then holds a key and a spare beside the two hashes."""
        self.owners = owners
        self.width = SHARED_WIDTH if shared else 2
        self.slot_bytes = 8 * self.width
        self._whole = [reserve(max(slots, most // self.slot_bytes), (self.width,), np.uint64) for _ in range(owners)]
        self._scratch = [reserve(max(slots, most // 16) // 2, (2,), np.uint64) for _ in range(owners)]
        self._scratched = [0] * owners        # the scratch rows ever written (the memory they hold)
        self.tables = [w[:slots] if w is not None else np.zeros((slots, self.width), dtype=np.uint64)
                       for w in self._whole]
        self.counts = [0] * owners

    def _slots(self, o: int, more: int) -> int:
        """The slots table o needs to take `more` new fingerprints and stay half empty."""
        n = len(self.tables[o])
        while 2 * (self.counts[o] + more) > n:
            n *= 2
        return n

    def _in_place(self, o: int, n: int) -> bool:
        whole, scratch = self._whole[o], self._scratch[o]
        return (whole is not None and scratch is not None and n <= len(whole)
                and len(self.tables[o]) // 2 <= len(scratch))

    def room(self, more: int, each=map) -> None:
        """Grow every table that could not take `more` new fingerprints and stay half empty.
        `each` maps the growth over the owners: a thread pool's map grows the tables at once
        (the growths release the GIL), where one after the other was a serial part of every
        level."""
        def grow(o: int) -> None:
            n, old = self._slots(o, more), len(self.tables[o])
            if n <= old:
                return
            if self._in_place(o, n):
                regrow(self._whole[o], old, n, self._scratch[o])
                self.tables[o] = self._whole[o][:n]
                self._scratched[o] = max(self._scratched[o], old // 2)
            else:
                grown = np.zeros((n, self.width), dtype=np.uint64)
                rehash(self.tables[o], grown)
                self.tables[o], self._whole[o] = grown, None
        for _ in each(grow, range(self.owners)):
            pass

    def empty_to(self, o: int, entries: int) -> None:
        """Make empty table o (every slot zero) as long as `entries` fingerprints need, at once:
        nothing to move. A growth moves every fingerprint again (the disk search's level table
        grew to its share every level: 15% of its time)."""
        whole, n = self._whole[o], 1 << 17
        while 2 * entries > n:
            n *= 2
        if whole is not None and self.counts[o] == 0 and n <= len(whole):
            self.tables[o] = whole[:n]

    def growth(self, more: int) -> int:
        """The bytes of memory `room(more)` would take (at most)."""
        total = 0
        for o, table in enumerate(self.tables):
            n = self._slots(o, more)
            if n > len(table):
                total += (self.slot_bytes * (n - len(table)) + 16 * max(0, len(table) // 2 - self._scratched[o])
                          if self._in_place(o, n) else self.slot_bytes * n)
        return total

    def add(self, a, b) -> bool:
        """Insert one fingerprint from Python (the roots)."""
        o = owner(a, self.owners)
        self.room(1)
        fresh = visit(self.tables[o], a, b)
        self.counts[o] += int(fresh)
        return bool(fresh)

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.tables) + 16 * sum(self._scratched)
