"""What spark-check's kernel tasks run compiled (numba): a portable fingerprint for each row
(the expand stage's loop, which writes successors into their owners' blocks, is
spark/emit.py), the best parent of each successor, the successors the visited runs already
hold, and the state properties of the new rows.

The fingerprint is the kernel's kind (two lanes, each a sum of its fields' hashes, so that a
child's is its parent's plus the fields the step changed) with one difference: the controller
column is hashed through a digest of the controller value (`dig`, by this process's controller
id) instead of the id itself, which differs from process to process (spark/rows.py says why).
"""
from __future__ import annotations

import numpy as np
from numba import njit

import specs.kernel  # noqa: F401  (the kernel's numba cache directory, before anything compiles)
from specs.kernel.properties import state_violations

NEED_EVENT = 1           # a compiled loop's answer: fill the controller table, call again
# ctr: transitions, terminal (not stuck), stuck, the first stuck state's position (-1: none)
T_TRANSITIONS, T_TERMINAL, T_STUCK, T_FIRST_STUCK = range(4)
SEED_A = np.uint64(0x452821E638D01377)
SEED_B = np.uint64(0xBE5466CF34E90C6C)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _mix(x):
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _field(j, v, ctrl_col, dig, lane, seed):
    """Field j holding v, in one lane: the controller's digest, or splitmix64 of (j, v)."""
    if j == ctrl_col:
        return _mix(dig[v, lane] + seed)
    return _mix(((np.uint64(j) << np.uint64(32)) | np.uint64(np.int64(v) & np.int64(0xFFFFFFFF))) + seed)


@njit(cache=True, nogil=True, _nrt=False)
def row_fp(row, ctrl_col, dig):
    a = np.uint64(0)
    b = np.uint64(0)
    for j in range(len(row)):
        a += _field(j, row[j], ctrl_col, dig, 0, SEED_A)
        b += _field(j, row[j], ctrl_col, dig, 1, SEED_B)
    return a, b


@njit(cache=True, nogil=True, _nrt=False)
def add_fields(m, cols, ctrl_col, dig, small, fps):
    """fps[i] += the hashes of the fields row i holds in the columns `cols` of a narrowed
    record (one width's matrix `m`, spark/rows.py): row_fp summed a width at a time, for the
    blocks that carry no fingerprints. The controller column holds the record's own indices
    into `dig`, its table of digests. A 1-byte column's hashes are looked up in `small`
    (field_table's): most columns are, and two splitmix64s a field made the owners' sums
    cost a twentieth of a level's time."""
    one = m.itemsize == 1
    for i in range(m.shape[0]):
        a, b = fps[i, 0], fps[i, 1]
        for g in range(m.shape[1]):
            j, v = cols[g], np.int64(m[i, g])
            if one and j != ctrl_col:
                a += small[j, v & 255, 0]
                b += small[j, v & 255, 1]
            else:
                a += _field(j, v, ctrl_col, dig, 0, SEED_A)
                b += _field(j, v, ctrl_col, dig, 1, SEED_B)
        fps[i, 0], fps[i, 1] = a, b


@njit(cache=True, nogil=True, _nrt=False)
def field_table(small, none):
    """small[j, v & 255] := the two lanes' hashes of field j holding v, for every 1-byte v
    (`none`: an empty digest table; the controller column is never looked up here)."""
    for j in range(small.shape[0]):
        for v in range(-128, 128):
            small[j, v & 255, 0] = _field(j, v, -1, none, 0, SEED_A)
            small[j, v & 255, 1] = _field(j, v, -1, none, 1, SEED_B)


@njit(cache=True, nogil=True, _nrt=False)
def child_fp(parent, a, b, t, ctrl_col, dig):
    """row_fp(t), from its parent's row and fingerprint."""
    for j in range(len(t)):
        if t[j] != parent[j]:
            a += _field(j, t[j], ctrl_col, dig, 0, SEED_A) - _field(j, parent[j], ctrl_col, dig, 0, SEED_A)
            b += _field(j, t[j], ctrl_col, dig, 1, SEED_B) - _field(j, parent[j], ctrl_col, dig, 1, SEED_B)
    return a, b


@njit(cache=True, _nrt=False)
def _before(parents, nth, i, j):
    """Whether candidate i's (parent, n-th) comes before candidate j's."""
    if parents[i, 0] != parents[j, 0]:
        return parents[i, 0] < parents[j, 0]
    if parents[i, 1] != parents[j, 1]:
        return parents[i, 1] < parents[j, 1]
    return nth[i] < nth[j]


@njit(cache=True, _nrt=False)
def best_parents(fp, parents, nth, slots, keep):
    """keep[i] := whether candidate i has the least (parent, n-th) among the candidates of its
    fingerprint (`slots`: a zeroed scratch table, a power of two at least twice len(fp))."""
    mask = np.uint64(len(slots) - 1)
    for i in range(len(fp)):
        s = fp[i, 1] & mask
        while True:
            j = slots[s] - 1
            if j < 0:
                slots[s] = i + 1
                keep[i] = True
                break
            if fp[j, 0] == fp[i, 0] and fp[j, 1] == fp[i, 1]:
                if _before(parents, nth, i, j):
                    keep[j], keep[i] = False, True
                    slots[s] = i + 1
                else:
                    keep[i] = False
                break
            s = (s + np.uint64(1)) & mask


@njit(cache=True, _nrt=False)
def first_violations(rows, fps, lay, facts, check, first):
    """first[s] := the row of the least fingerprint violating state property s."""
    for i in range(len(rows)):
        bad = state_violations(rows[i], lay, facts, check)
        s = 0
        while bad:
            if bad & 1:
                j = first[s]
                if j < 0 or fps[i, 0] < fps[j, 0] or (fps[i, 0] == fps[j, 0] and fps[i, 1] < fps[j, 1]):
                    first[s] = i
            bad >>= 1
            s += 1


@njit(cache=True, _nrt=False)
def narrow_into(rows, cols, out):
    """out[i, j] := rows[i, cols[j]] (out of the narrower type: the values fit, _narrow chose it)."""
    for i in range(len(rows)):
        for j in range(len(cols)):
            out[i, j] = rows[i, cols[j]]


@njit(cache=True, _nrt=False)
def column_bounds(m, lo, hi):
    """lo[j], hi[j] := the least and greatest of column j (m not empty)."""
    for j in range(m.shape[1]):
        lo[j] = m[0, j]
        hi[j] = m[0, j]
    for i in range(1, len(m)):
        for j in range(m.shape[1]):
            v = m[i, j]
            if v < lo[j]:
                lo[j] = v
            elif v > hi[j]:
                hi[j] = v


@njit(cache=True, _nrt=False)
def mark_column(rows, col, used):
    """used[v] := True for each value v of column col."""
    for i in range(len(rows)):
        used[rows[i, col]] = True


@njit(cache=True, _nrt=False)
def remap_column(rows, col, place):
    """rows[i, col] := place[rows[i, col]]."""
    for i in range(len(rows)):
        rows[i, col] = place[rows[i, col]]


@njit(cache=True, _nrt=False)
def widen_to(m, cols, sel, dest, out):
    """out[dest[r], cols[j]] := m[sel[r], j]: a narrowed column group's rows `sel`, widened
    back into their places `dest`."""
    for r in range(len(sel)):
        i, d = sel[r], dest[r]
        for j in range(len(cols)):
            out[d, cols[j]] = m[i, j]


@njit(cache=True, _nrt=False)
def remap_range(rows, lo, hi, col, place):
    """rows[d, col] := place[rows[d, col]] for lo <= d < hi."""
    for d in range(lo, hi):
        rows[d, col] = place[rows[d, col]]
