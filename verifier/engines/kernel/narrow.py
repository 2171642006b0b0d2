"""A level's rows narrowed column by column, a chunk at a time: the form `check --visited disk`
keeps its levels in (external.py).

A row is the kernel's fixed width of int32 (specs/kernel/layout.py): 81 columns, 324 bytes, on
brokers 4, and most columns hold a few small values (flags, epochs of a few steps, indices, log
entries). A chunk keeps each column as its offset from the chunk's least value in as many bits
as the chunk's span needs (none for a column the same in every row), the columns of a row
packed into 64-bit words (a column never across two). On the billion config's level 11
(BENCHMARKS.md, "A search bounded by a level"): 29 bytes a row against 89 when each column
took one, two or four whole bytes; a level's rows and candidates are what a level adds to
the disk while it is made.
"""
from __future__ import annotations

import os
from typing import Optional

import numpy as np
from numba import njit

import specs.kernel  # noqa: F401  (the kernel's numba cache directory, before anything compiles)
from verifier.core.runs import as_bytes, pwrite_all

WORD = 64


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
def _pack(rows, lo, cols, word, shift, out):
    for i in range(out.shape[0]):
        for w in range(out.shape[1]):
            out[i, w] = 0
        for c in range(len(cols)):
            out[i, word[c]] |= np.uint64(np.int64(rows[i, cols[c]]) - lo[cols[c]]) << shift[c]


@njit(cache=True, nogil=True, _nrt=False)
def _unpack(m, lo, cols, word, shift, mask, const, out):
    for i in range(m.shape[0]):
        for c in range(len(cols)):
            out[i, cols[c]] = np.int32(np.int64((m[i, word[c]] >> shift[c]) & mask[c]) + lo[cols[c]])
        for c in range(len(const)):
            out[i, const[c]] = np.int32(lo[const[c]])


@njit(cache=True, nogil=True, _nrt=False)
def _select(words, keep, out) -> int:
    """out[:k] := the words of the rows `keep` marks, in order; k (numpy's mask held the GIL)."""
    k = 0
    for i in range(len(keep)):
        if keep[i]:
            for w in range(words.shape[1]):
                out[k, w] = words[i, w]
            k += 1
    return k


def _halves(n: int, each) -> list:
    """The row ranges narrowed or widened at once: two halves with a pool, else one."""
    return [(0, n // 2), (n // 2, n)] if each is not None and n >= 8192 else [(0, n)]


class Layout:
    """Where each column's bits lie in a row's words, from the columns' bit counts alone (so a
    file need keep only those): the widest first, each into the first word with room."""
    __slots__ = ("cols", "word", "shift", "mask", "const", "words")

    def __init__(self, bits: np.ndarray):
        used: list[int] = []
        cols, word, shift = [], [], []
        for j in sorted(np.flatnonzero(bits), key=lambda j: (-int(bits[j]), j)):
            w = next((w for w, u in enumerate(used) if u + int(bits[j]) <= WORD), len(used))
            if w == len(used):
                used.append(0)
            cols.append(j)
            word.append(w)
            shift.append(used[w])
            used[w] += int(bits[j])
        self.cols, self.word = np.array(cols, dtype=np.int64), np.array(word, dtype=np.int64)
        self.shift = np.array(shift, dtype=np.uint64)
        self.mask = np.array([(1 << int(bits[j])) - 1 for j in cols], dtype=np.uint64)
        self.const = np.flatnonzero(bits == 0).astype(np.int64)
        self.words = len(used)


class Chunk:
    """n rows, narrowed: `lo` (each column's offset), `bits` (each column's bits) and `words`,
    the rows' packed words (n, as many as the bits take)."""
    __slots__ = ("n", "lo", "bits", "words", "layout")

    def __init__(self, n: int, lo: np.ndarray, bits: np.ndarray, words: np.ndarray, layout: Optional[Layout] = None):
        self.n, self.lo, self.bits, self.words = n, lo, bits, words
        self.layout = layout or Layout(bits)

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
        bits = np.array([int(v).bit_length() for v in span], dtype=np.int64)
        lay = Layout(bits)
        words = np.empty((n, lay.words), dtype=np.uint64)
        list((each or map)(lambda h: _pack(rows[h[0]:], lo, lay.cols, lay.word, lay.shift, words[h[0]:h[1]]),
                           halves))
        return cls(n, lo, bits, words, lay)

    def rows_into(self, out: np.ndarray, each=None) -> np.ndarray:
        """The chunk's rows widened into out[:n] (int32, as wide as the rows were); `each` as
        for `of`."""
        lay = self.layout
        list((each or map)(lambda h: _unpack(self.words[h[0]:h[1]], self.lo, lay.cols, lay.word, lay.shift,
                                             lay.mask, lay.const, out[h[0]:]),
                           _halves(self.n, each)))
        return out[:self.n]

    def select(self, keep: np.ndarray) -> "Chunk":
        """The rows `keep` marks, in order (narrowed as this chunk is; the GIL released)."""
        out = np.empty((int(np.count_nonzero(keep)), self.words.shape[1]), dtype=np.uint64)
        _select(self.words, keep, out)
        return Chunk(len(out), self.lo, self.bits, out, self.layout)

    @property
    def nbytes(self) -> int:
        return self.words.nbytes + self.lo.nbytes


class ChunkFile:
    """Chunks written one after another to a file and read back in order, one at a time: a
    level and its candidates go to the disk in long sequential writes and reads, and the
    process holds one chunk of them (the OS's page cache holds what it can spare, and gives
    it back when memory is short). The file is unlinked when closed."""

    def __init__(self, path, index: tuple = ()):
        """A new file at `path`, or (`index`: what `described` gave) the one there, kept."""
        self.path = path
        self.f = open(path, "rb+" if index else "wb+")
        self.index: list[tuple] = []      # (rows, lo, bits, offset, layout)
        self.n = 0
        self.nbytes = 0
        for n, lo, bits, at in index:
            lay = Layout(np.array(bits, dtype=np.int64))
            self.index.append((n, np.array(lo, dtype=np.int64), np.array(bits, dtype=np.int64), at, lay))
            self.n += n
            self.nbytes += n * lay.words * 8

    def described(self) -> list:
        """The chunks' index as data (numbers and lists), for a checkpoint: the file holds the
        bytes only. `narrow_index` checks one read back."""
        return [[n, lo.tolist(), bits.tolist(), at] for n, lo, bits, at, _ in self.index]

    def append(self, chunk: Chunk, each=None) -> None:
        """The chunk's words at the file's end (`each`: a pool's map, its two halves at once)."""
        pwrite_all(self.f.fileno(), as_bytes(chunk.words), self.nbytes, each)
        self.index.append((chunk.n, chunk.lo, chunk.bits, self.nbytes, chunk.layout))
        self.nbytes += chunk.words.nbytes
        self.n += chunk.n

    def __iter__(self):
        self.f.flush()
        for i in range(len(self.index)):
            yield self.chunk(i)

    def chunk(self, i: int) -> Chunk:
        """The i-th chunk, read where it lies (no file position: threads may read at once)."""
        n, lo, bits, offset, lay = self.index[i]
        m = np.empty((n, lay.words), dtype="<u8")
        got = os.preadv(self.f.fileno(), [m], offset) if m.nbytes else 0
        if got != m.nbytes:
            raise OSError(f"{self.path} ends {(m.nbytes - got) // 8} words early: another process changed it")
        return Chunk(n, lo, bits, m, lay)

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
    unless each chunk has an int32 offset and a bit count (0-32) for each of a row's columns,
    and the chunks lie end to end over exactly `size` bytes. (What the bits hold is checked
    where rows are read back: diskpoint hashes them and looks each up in the runs.)"""
    out, at = [], 0
    for entry in index:
        if not isinstance(entry, list) or len(entry) != 4:
            raise ValueError("a chunk's entry is not a chunk's")
        n, lo, bits, where = entry
        if (type(n) is not int or n <= 0 or not isinstance(lo, list) or not isinstance(bits, list)
                or len(lo) != width or len(bits) != width
                or not all(type(v) is int for v in lo + bits)):
            raise ValueError("a chunk's rows, offsets or bits are not a chunk's")
        if not all(0 <= b <= 32 and -(1 << 31) <= v < (1 << 31) for v, b in zip(lo, bits)):
            raise ValueError("a chunk's offsets or bits are out of an int32 column's range")
        if where != at:
            raise ValueError("a chunk is not where its index says")
        at += n * Layout(np.array(bits, dtype=np.int64)).words * 8
        out.append((n, lo, bits, where))
    if at != size:
        raise ValueError(f"the rows file holds {size} bytes, and its chunks {at}")
    return tuple(out)
