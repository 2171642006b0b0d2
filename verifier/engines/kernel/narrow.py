"""A level's rows narrowed column by column, a chunk at a time: the form `check --visited disk`
keeps its levels in (external.py).

A row is the kernel's fixed width of int32 (specs/kernel/layout.py): 83 columns, 332 bytes, on
brokers 5, and most columns hold a few small values (flags, epochs of a few steps, indices, log
entries). A chunk keeps each column as its offset from the chunk's least value, in one, two or
four bytes, whichever holds the chunk's span; a column whose span needs four bytes is kept as
is. So a row costs about a quarter of its int32 form, and widening a chunk back is one pass.
"""
from __future__ import annotations

import numpy as np
from numba import njit

import specs.kernel  # noqa: F401  (the kernel's numba cache directory, before anything compiles)
from verifier.core.runs import as_bytes

WIDTHS = ((np.uint8, 1 << 8), (np.uint16, 1 << 16))


@njit(cache=True, nogil=True, _nrt=False)
def _bounds(rows, n, lo, hi):
    """lo, hi (int32) := each column's least and greatest of rows[:n] (no branch: vectorised,
    2.5x the loop that compared and branched)."""
    for j in range(rows.shape[1]):
        lo[j] = hi[j] = rows[0, j]
    for i in range(1, n):
        for j in range(rows.shape[1]):
            v = rows[i, j]
            lo[j] = min(lo[j], v)
            hi[j] = max(hi[j], v)


@njit(cache=True, nogil=True, _nrt=False)
def _pack(rows, lo, cols, out):
    for i in range(len(out)):
        for c in range(len(cols)):
            out[i, c] = rows[i, cols[c]] - lo[cols[c]]


@njit(cache=True, nogil=True, _nrt=False)
def _unpack(m, lo, cols, out):
    for i in range(len(m)):
        for c in range(len(cols)):
            out[i, cols[c]] = m[i, c] + lo[cols[c]]


def _halves(n: int, each) -> list:
    """The row ranges narrowed or widened at once: two halves with a pool, else one."""
    return [(0, n // 2), (n // 2, n)] if each is not None and n >= 8192 else [(0, n)]


class Chunk:
    """n rows, narrowed: `lo` (each column's offset) and `parts`, (columns, matrix) by width."""
    __slots__ = ("n", "lo", "parts")

    def __init__(self, n: int, lo: np.ndarray, parts: list):
        self.n, self.lo, self.parts = n, lo, parts

    @classmethod
    def of(cls, rows: np.ndarray, n: int, each=None) -> "Chunk":
        """rows[:n] narrowed (rows: int32, n > 0); `each`: a thread pool's map, which narrows
        the two halves of the rows at once (the GIL released)."""
        width = rows.shape[1]
        halves = _halves(n, each)
        bounds = [(np.zeros(width, dtype=np.int32), np.zeros(width, dtype=np.int32)) for _ in halves]
        list((each or map)(lambda h: _bounds(rows[halves[h][0]:], halves[h][1] - halves[h][0], *bounds[h]),
                           range(len(halves))))
        lo = np.min([b[0] for b in bounds], axis=0).astype(np.int64)
        span = np.max([b[1] for b in bounds], axis=0).astype(np.int64) - lo
        parts, taken = [], np.zeros(width, dtype=np.bool_)
        for dtype, limit in WIDTHS:
            cols = np.flatnonzero(~taken & (span < limit))
            taken[cols] = True
            if len(cols):
                parts.append((cols, np.empty((n, len(cols)), dtype=dtype)))
        wide = np.flatnonzero(~taken)
        lo[wide] = 0
        if len(wide):
            parts.append((wide, np.empty((n, len(wide)), dtype=np.int32)))
        list((each or map)(lambda h: [_pack(rows[h[0]:], lo, cols, m[h[0]:h[1]]) for cols, m in parts], halves))
        return cls(n, lo, parts)

    def rows_into(self, out: np.ndarray, each=None) -> np.ndarray:
        """The chunk's rows widened into out[:n] (int32, as wide as the rows were); `each` as
        for `of`."""
        list((each or map)(lambda h: [_unpack(m[h[0]:h[1]], self.lo, cols, out[h[0]:]) for cols, m in self.parts],
                           _halves(self.n, each)))
        return out[:self.n]

    def select(self, keep: np.ndarray) -> "Chunk":
        """The rows `keep` marks, in order (narrowed as this chunk is)."""
        return Chunk(int(keep.sum()), self.lo, [(cols, m[keep]) for cols, m in self.parts])

    @property
    def nbytes(self) -> int:
        return sum(m.nbytes for _, m in self.parts) + self.lo.nbytes


class ChunkFile:
    """Chunks written one after another to a file and read back in order, one at a time: a
    level and its candidates go to the disk in long sequential writes and reads, and the
    process holds one chunk of them (the OS's page cache holds what it can spare, and gives
    it back when memory is short). The file is unlinked when closed."""

    def __init__(self, path, index: tuple = ()):
        """A new file at `path`, or (`index`: what `described` gave) the one there, kept."""
        self.path = path
        self.f = open(path, "rb+" if index else "wb+")
        self.index: list[tuple] = []      # (rows, lo, [(columns, dtype, width, offset)])
        self.n = 0
        self.nbytes = 0
        for n, lo, parts in index:
            self.index.append((n, np.array(lo, dtype=np.int64),
                               [(np.array(c, dtype=np.int64), np.dtype(d), w, at) for c, d, w, at in parts]))
            self.n += n
            self.nbytes += sum(len(c) * n * np.dtype(d).itemsize for c, d, _, _ in parts)

    def described(self) -> list:
        """The chunks' index as data (numbers, lists and dtype names), for a checkpoint: the
        file holds the bytes only. `narrow_index` checks one read back."""
        return [[n, lo.tolist(), [[c.tolist(), d.str, w, at] for c, d, w, at in parts]] for n, lo, parts in self.index]

    def append(self, chunk: Chunk) -> None:
        parts = []
        for cols, m in chunk.parts:
            parts.append((cols, m.dtype, m.shape[1], self.nbytes))
            self.f.write(as_bytes(m))
            self.nbytes += m.nbytes
        self.index.append((chunk.n, chunk.lo, parts))
        self.n += chunk.n

    def __iter__(self):
        self.f.flush()
        for n, lo, parts in self.index:
            read = []
            for cols, dtype, width, offset in parts:
                self.f.seek(offset)
                m = np.fromfile(self.f, dtype=dtype, count=n * width)
                if len(m) != n * width:
                    raise OSError(f"{self.path} ends {n * width - len(m)} values early: another process changed it")
                read.append((cols, m.reshape(n, width)))
            yield Chunk(n, lo, read)

    def close(self, unlink: bool = True) -> None:
        """Closed, and the file removed (`unlink`) or left where a checkpoint names it."""
        if not self.f.closed:
            self.f.close()
            if unlink:
                try:
                    self.path.unlink()
                except OSError:
                    pass


def narrow_index(index, width: int, size: int) -> tuple:
    """A ChunkFile's index read back from a checkpoint, as its constructor takes it: ValueError
    unless each chunk's columns are each of a row's columns once, in a width the file can
    hold, and the chunks lie end to end over exactly `size` bytes."""
    out, at = [], 0
    names = {np.dtype(t).str: np.dtype(t) for t, _ in WIDTHS} | {np.dtype(np.int32).str: np.dtype(np.int32)}
    for n, lo, parts in index:
        if type(n) is not int or n <= 0 or len(lo) != width or not all(type(v) is int for v in lo):
            raise ValueError("a chunk's rows or offsets are not a chunk's")
        cols = []
        for c, d, w, where in parts:
            if d not in names or w != len(c) or where != at or not all(type(v) is int for v in c):
                raise ValueError("a chunk's columns are not where its index says")
            cols += c
            at += n * w * names[d].itemsize
        if sorted(cols) != list(range(width)):
            raise ValueError("a chunk does not hold each column once")
        out.append((n, lo, parts))
    if at != size:
        raise ValueError(f"the rows file holds {size} bytes, and its chunks {at}")
    return tuple(out)
