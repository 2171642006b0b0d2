"""A kernel row's 128-bit fingerprint (specs/kernel/layout.py's rows), compiled: what the
compiled search's visited set (verifier/engines/kernel/visited.py), its checkpoints and the
graph builder (rowgraph.py) tell states apart by.

A fingerprint is two 64-bit lanes, each the sum (mod 2^64) of the row's fields' hashes, so
that a successor's is its parent's plus the fields the step changed (`child_hash`).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from specs.kernel.layout import BLOCK, block_differs

EMPTY = np.uint64(0)          # a stored first hash is never 0 (a table sets its low bit)
SEED_A = np.uint64(0x243F6A8885A308D3)
SEED_B = np.uint64(0x13198A2E03707344)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _field(j, v, seed):
    """The hash of field j holding v in one lane (splitmix64 of the pair)."""
    x = ((np.uint64(j) << np.uint64(32)) | np.uint64(np.int64(v) & np.int64(0xFFFFFFFF))) + seed
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True, nogil=True, _nrt=False)
def row_hash(row):
    """A row's 128-bit fingerprint: in each of two lanes, the sum (mod 2^64) of its fields'
    hashes. A sum, so that a successor's fingerprint is its parent's plus the fields the step
    changed (`child_hash`): a step changes a few of a row's 60-100 fields."""
    a = np.uint64(0)
    b = np.uint64(0)
    for j in range(len(row)):
        a += _field(j, row[j], SEED_A)
        b += _field(j, row[j], SEED_B)
    return a, b


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _moved(ha, hb, j, new, old):
    """The fingerprint (ha, hb) with field j changed from old to new."""
    return (ha + _field(j, new, SEED_A) - _field(j, old, SEED_A),
            hb + _field(j, new, SEED_B) - _field(j, old, SEED_B))


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def child_hash(parent, a, b, t):
    """The fingerprint of row t from its parent's row and fingerprint (a, b): row_hash(t).

    Only the fields that changed are hashed (about 4 of a --brokers 5 row's 83). They are found
    a block of eight at a time (specs/kernel/layout.block_differs: one vector compare), and only
    a block that differs is looked into. Written as one loop with the hashing under an `if`,
    LLVM vectorised it into hashing all 83 fields every time (masked AVX-512 multiplies): 212 ns a
    successor against 133 for a loop leaving at each difference (bench/fingerprint_bench.py);
    the blocks, inlined into the search loops, made the fingerprints 1.58-1.69x faster again
    (bench/phase_bench.py; BENCHMARKS.md)."""
    ha, hb = np.uint64(a), np.uint64(b)      # (a Python int below 2**63 would be typed int64)
    n = len(t)
    full = n - n % BLOCK
    for s in range(0, full, BLOCK):
        if block_differs(t, parent, s):
            for j in range(s, s + BLOCK):
                if t[j] != parent[j]:
                    ha, hb = _moved(ha, hb, j, t[j], parent[j])
    for j in range(full, n):
        if t[j] != parent[j]:
            ha, hb = _moved(ha, hb, j, t[j], parent[j])
    return ha, hb
