"""The expand stage's successors, written straight into their owners' blocks (spark/rows.py's
BLOCK records), narrowed as they are made.

Why: the batch form this replaces computed a successor's row into a batch of 4-byte rows,
copied the batch again split by owner, scanned each owner's part for its columns' bounds,
narrowed it into a third copy and joined that into a fourth: on 4 brokers about 2 KB of
memory moved for each successor's 131 bytes shipped, a third of an expand task's time and
the reason two tasks ran only 1.35x faster than one (BENCHMARKS.md, "Successors emitted into
their blocks"). Here `emit_rows` writes each successor once, in the bytes its block ships.

A block's column widths (1, 2 or 4 bytes, as spark/rows.py narrows a column) are the task's:
every column starts at one byte, the controller column at two, and a column widens when one of
its values does not fit, after the open blocks are closed, so each block holds one width per
column. A block's controller column holds indices into the block's own table, in the order
its rows first name each value. A block closes when the next state's successors might not
fit, when a column widens, and when the task ends: each decided by the task's chunks alone,
so a retried task writes the same blocks.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from spark import rows as R
from spark.compiled import NEED_EVENT, T_FIRST_STUCK, T_STUCK, T_TERMINAL, T_TRANSITIONS, child_fp
from specs.kernel.events import MISS
from specs.kernel.properties import step_verdict, steps_then_canonical
from specs.kernel.successors import BOUNDED, UNBOUNDED, successors

DONE, FULL, WIDEN, GROW = 0, 2, 3, 4     # emit_rows' other answers (NEED_EVENT is compiled.py's)
SUCCESSORS = 1 << 17     # successors a task's open blocks hold in all (its owners' share each)


@njit(cache=True, _nrt=False, inline="always")
def _width(v):
    """The fewest bytes (1, 2 or 4) that hold v, signed."""
    if -128 <= v <= 127:
        return 1
    if -32768 <= v <= 32767:
        return 2
    return 4


@njit(cache=True, _nrt=False, inline="always")
def _put(g, o, at, d):
    g[o, at] = d


@njit(cache=True, _nrt=False)
def emit_rows(rows, fps, pos, end, lay, cv, plan, tables, out, labels, key, work, params, ctrl_col, dig,
              step_check, deadlocks, found, parts, kind, lo, hi, slot, cols1, cols2, cols4, counts, e_fp, e_parent,
              e_nth, e_label, g1, g2, g4, place, used, n_used, t_fp, t_owner, enabled, ctr, info, step_bad, symmetric):
    """Every successor of rows[pos:end] appended to its owner's open block: (what ended it,
    pos). Ends early with NEED_EVENT (fill the controller table, call again at pos), FULL (the
    block of owner info[0] may not take rows[pos]'s successors: close it), WIDEN (column
    info[0] needs info[1] bytes: close every block, widen it) or GROW (`place` lacks a
    controller id). A state's successors are appended all at once or not at all. `lo`, `hi`:
    the values each column's width holds (the controller column's: any, its block indices are
    checked apart). found[s] := (position, n-th) of the first transition violating step
    property s; ctr: compiled.T_*. `symmetric`: True, the successors as their orbits'
    canonical rows; None (a run without symmetry) has numba prune the reduction away."""
    facts = tables[3]
    cap = e_fp.shape[1]
    c1, c2, c4 = len(cols1), len(cols2), len(cols4)
    width = out.shape[1]
    while pos < end:
        row = rows[pos]
        n = successors(row, lay, cv, plan, tables, BOUNDED, -1, out, labels, key, work, params)
        if n != MISS and symmetric is not None:      # each step judged before it is renamed
            n = steps_then_canonical(row, out, labels, n, lay, cv, tables, key, work, step_check, step_bad, 0)
        if n == MISS:
            return NEED_EVENT, pos
        stuck = False
        if n == 0 and deadlocks:
            m = successors(row, lay, cv, plan, tables, UNBOUNDED, -1, out, labels, key, work, params)
            if m == MISS:
                return NEED_EVENT, pos
            stuck = m == 0
        fa, fb = fps[pos, 0], fps[pos, 1]
        for k in range(n):                  # where each goes, and whether it fits there
            a, b = child_fp(row, fa, fb, out[k], ctrl_col, dig)
            t_fp[k, 0], t_fp[k, 1] = a, b
            o = np.int64(b % np.uint64(parts))
            t_owner[k] = o
            if counts[o] + n > cap:
                info[0] = o
                return FULL, pos
            bad = False
            for j in range(width):
                v = out[k, j]
                bad |= (v < lo[j]) | (v > hi[j])
            if bad:
                for j in range(width):
                    w = _width(np.int64(out[k, j]))
                    if w > kind[j]:
                        info[0], info[1] = j, w
                        return WIDEN, pos
            c = out[k, ctrl_col]
            if c >= place.shape[1]:
                return GROW, pos
            w = _width(np.int64(place[o, c] if place[o, c] >= 0 else n_used[o] + n - 1))   # at most this
            if w > kind[ctrl_col]:
                info[0], info[1] = ctrl_col, w
                return WIDEN, pos
        for k in range(n):
            t = out[k]
            action = labels[k, 0]
            ctr[T_TRANSITIONS] += 1
            enabled[action] += 1
            if step_check:
                if symmetric is not None:
                    bad_steps = step_bad[k]
                else:
                    bad_steps = step_verdict(row, action, t, lay, facts, step_check)
                s = 0
                while bad_steps:
                    if bad_steps & 1 and found[s, 0] < 0:
                        found[s, 0], found[s, 1] = pos, k
                    bad_steps >>= 1
                    s += 1
            o = t_owner[k]
            r = counts[o]
            counts[o] = r + 1
            e_fp[o, r, 0], e_fp[o, r, 1] = t_fp[k, 0], t_fp[k, 1]
            e_parent[o, r, 0], e_parent[o, r, 1] = fa, fb
            e_nth[o, r] = k
            for j in range(labels.shape[1]):
                e_label[o, r, j] = labels[k, j]
            at = r * c1
            for s in range(c1):
                g1[o, at + s] = t[cols1[s]]
            at = r * c2
            for s in range(c2):
                g2[o, at + s] = t[cols2[s]]
            at = r * c4
            for s in range(c4):
                g4[o, at + s] = t[cols4[s]]
            c = t[ctrl_col]                 # the block's index of its controller value
            d = place[o, c]
            if d < 0:
                d = n_used[o]
                place[o, c] = d
                used[o, d] = c
                n_used[o] = d + 1
            w = kind[ctrl_col]
            if w == 1:
                _put(g1, o, r * c1 + slot[ctrl_col], d)
            elif w == 2:
                _put(g2, o, r * c2 + slot[ctrl_col], d)
            else:
                _put(g4, o, r * c4 + slot[ctrl_col], d)
        if n == 0:
            if stuck:
                ctr[T_STUCK] += 1
                if ctr[T_FIRST_STUCK] < 0:
                    ctr[T_FIRST_STUCK] = pos
            else:
                ctr[T_TERMINAL] += 1
        pos += 1
    return DONE, pos


class Blocks:
    """One process's open blocks, one per owner, and the column widths of the task under way
    (reset at its start: the widths are the task's own, so its blocks depend on its chunks)."""

    def __init__(self, parts: int, width: int, ctrl_col: int, max_successors: int, cap: int = 0):
        cap = max(cap or SUCCESSORS // parts, max_successors)     # a state's successors always fit
        self.parts, self.width, self.ctrl, self.cap = parts, width, ctrl_col, cap
        self.counts = np.zeros(parts, np.int64)
        self.e_fp = np.zeros((parts, cap, 2), np.uint64)
        self.e_parent = np.zeros((parts, cap, 2), np.uint64)
        self.e_nth = np.zeros((parts, cap), np.int32)
        self.e_label = np.zeros((parts, cap, R.LABEL), np.int32)
        self.g = (np.zeros((parts, cap * width), np.int8), np.zeros((parts, cap * width), "<i2"),
                  np.zeros((parts, cap * width), "<i4"))
        self.place = np.full((parts, 256), -1, np.int32)
        self.used = np.zeros((parts, cap), np.int32)
        self.n_used = np.zeros(parts, np.int64)
        self.t_fp = np.zeros((max_successors, 2), np.uint64)
        self.t_owner = np.zeros(max_successors, np.int64)
        self.info = np.zeros(2, np.int64)
        self.reset()

    def reset(self) -> None:
        """No open block, every column at its first width."""
        for o in range(self.parts):
            self.place[o, self.used[o, :self.n_used[o]]] = -1
        self.counts[:] = 0
        self.n_used[:] = 0
        self.kind = np.ones(self.width, np.int64)
        self.kind[self.ctrl] = 2
        self._slots()

    def _slots(self) -> None:
        """Each column's place in its width's group, in column order (as spark/rows.py reads),
        and the values its width holds."""
        self.slot = np.zeros(self.width, np.int64)
        self.cols = []
        for w in (1, 2, 4):
            cols = np.flatnonzero(self.kind == w)
            self.slot[cols] = np.arange(len(cols))
            self.cols.append(cols.astype(np.int64))
        top = np.where(self.kind == 1, 127, np.where(self.kind == 2, 32767, 2**31 - 1))
        self.lo, self.hi = -top - 1, top
        self.lo[self.ctrl], self.hi[self.ctrl] = -2**31, 2**31 - 1     # its indices: checked apart

    def widen(self, col: int, width: int) -> None:
        """Column `col` at `width` bytes from now on (every block closed first)."""
        assert not self.counts.any()
        self.kind[col] = max(int(self.kind[col]), width)
        self._slots()

    def room(self, ctrls: int) -> None:
        """`place` can take controller ids below `ctrls`."""
        if ctrls > self.place.shape[1]:
            grown = np.full((self.parts, max(ctrls, 2 * self.place.shape[1])), -1, np.int32)
            grown[:, :self.place.shape[1]] = self.place
            self.place = grown

    def args(self) -> tuple:
        """emit_rows' arguments from `parts` to `t_owner`."""
        return (self.parts, self.kind, self.lo, self.hi, self.slot, *self.cols, self.counts, self.e_fp, self.e_parent,
                self.e_nth, self.e_label, *self.g, self.place, self.used, self.n_used, self.t_fp, self.t_owner)

    def open(self) -> list:
        return [int(o) for o in np.flatnonzero(self.counts)]

    def close(self, o: int, texts: list, squeeze: bool, catalogue=None) -> bytes:
        """Owner o's open block as a BLOCK record (spark/rows.py), its controller table the
        values' texts, or with a `catalogue` (spark/catalogue.py) their digests; the owner's
        block is empty after."""
        n, used = int(self.counts[o]), self.used[o, :self.n_used[o]]
        rows = [self.kind.astype(np.uint8).tobytes()]
        for g, cols in enumerate(self.cols):
            if len(cols):
                rows.append(self.g[g][o, :n * len(cols)].tobytes())
        table = catalogue.table(used) if catalogue is not None else [texts[c] for c in used]
        block = R.block(self.e_fp[o, :n], self.e_parent[o, :n], self.e_nth[o, :n], self.e_label[o, :n],
                        b"".join(rows), n, self.width, table, squeeze, digests=catalogue is not None)
        self.place[o, used] = -1
        self.counts[o] = self.n_used[o] = 0
        return block
