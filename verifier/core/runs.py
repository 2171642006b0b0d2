"""Sorted runs of fingerprints: the visited set's form on disk, for a search whose memory is
bounded by a level rather than by every state it has seen (delayed duplicate detection, as in
Stern and Dill's and Korf's external-memory searches).

A run is a file of 128-bit fingerprints, two little-endian uint64 lanes (a, b) each, sorted by
(a, b), with no fingerprint twice. A level's candidates are sorted once (`by_fp`) and each run
is read front to back once against them (`drop_seen_sorted`), so the disk is read in long
sequential stretches and never looked up at random. spark-check's owners keep their visited
sets as the same runs (spark/local_files.py) and merge them the same way (`merge_runs`).
"""
from __future__ import annotations

import os

import numpy as np
from numba import njit

import specs.kernel  # noqa: F401  (the kernel's numba cache directory, before anything compiles)

FP = np.dtype("<u8")
NO_ORDER = np.empty(0, dtype=np.int64)      # the order of candidates already sorted (`direct`)


@njit(cache=True, _nrt=False)
def drop_seen_sorted(fp, order, keep, run):
    """drop_seen for candidates visited in fingerprint order (`order`): each look-up starts
    where the last ended, so the run is read front to back once (the whole run in memory)."""
    drop_seen_some(fp, order, 0, keep, run, True)


@njit(cache=True, _nrt=False)
def merge_runs(x, y, out):
    """out := the sorted runs x and y merged (fingerprints sorted by (a, b))."""
    i, j, k = merge_some(x, 0, y, 0, out, 0)
    for r in range(i, len(x)):             # one of the two tails is empty
        out[k, 0], out[k, 1] = x[r, 0], x[r, 1]
        k += 1
    for r in range(j, len(y)):
        out[k, 0], out[k, 1] = y[r, 0], y[r, 1]
        k += 1


@njit(cache=True, _nrt=False)
def _less(fp, i, j):
    return fp[i, 0] < fp[j, 0] or (fp[i, 0] == fp[j, 0] and fp[i, 1] < fp[j, 1])


@njit(cache=True, nogil=True, _nrt=False)
def sort_by_fp(fp, idx, direct, out, counts, shift, part, parts):
    """out := idx (or, `direct`, 0..len(fp)-1) in the order of fp[idx] (a, then b).
    Fingerprints are uniform, so a counting sort on a's top bits (len(counts) - 1 == 2 **
    (64 - shift) buckets, counts zeroed) leaves a few per bucket, then insertion-sorted:
    linear, where a comparison sort of 128-bit keys was most of an owner's time. `parts` 2:
    only those whose a's top bit is `part`, part 1's at out's end, so that two threads fill
    one answer at once, each reading every fingerprint (no serial split before them)."""
    sh = np.uint64(shift)
    n = len(fp) if direct else len(idx)
    half = (len(counts) - 1) // parts
    lo, hi = part * half, part * half + half
    for r in range(n):
        k = np.int64(fp[r if direct else idx[r], 0] >> sh)
        if lo <= k < hi:
            counts[k + 1] += 1
    for k in range(lo + 1, hi + 1):
        counts[k] += counts[k - 1]
    at = 0 if part == 0 else len(out) - counts[hi]
    for r in range(n):
        i = r if direct else idx[r]
        k = np.int64(fp[i, 0] >> sh)
        if lo <= k < hi:
            out[at + counts[k]] = i
            counts[k] += 1
    start = at
    for k in range(lo, hi):
        end = at + counts[k]
        for x in range(start + 1, end):
            v = out[x]
            y = x - 1
            while y >= start and _less(fp, v, out[y]):
                out[y + 1] = out[y]
                y -= 1
            out[y + 1] = v
        start = end


def by_fp(fp, idx=None, each=None) -> np.ndarray:
    """The positions of fp's rows (or of those `idx` names) in the order of their fingerprints
    (a, then b). `each`: a thread pool's map, which sorts those whose a's top bit is 0 and those
    whose is 1 at once (the GIL released), one after the other in the answer."""
    direct = idx is None
    idx = NO_ORDER if direct else idx.astype(np.int64, copy=False)
    n = len(fp) if direct else len(idx)
    bits = max(1, min(24, (n // 4).bit_length()))
    out = np.empty(n, dtype=np.int64)
    parts = 2 if each is not None and n >= 1 << 20 else 1
    list((each or map)(lambda part: sort_by_fp(fp, idx, direct, out, np.zeros((1 << bits) + 1, dtype=np.int64),
                                                64 - bits, part, parts), range(parts)))
    return out


def write_run(path: str, fps: np.ndarray, each=None) -> None:
    """Write sorted fingerprints as a run (flushed to the file, not yet to the disk), from
    the array itself, not a copy of its bytes; in two halves at once with `each`."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        pwrite_all(fd, as_bytes(np.ascontiguousarray(fps, dtype=FP)), 0, each)
    finally:
        os.close(fd)


def pwrite_all(fd: int, data: np.ndarray, at: int, each=None) -> None:
    """data (uint8) written at the file's offset `at`; with a pool's `each`, its two halves at
    once (the kernel's copy into the page cache was a serial step of a level's end). A write
    stops at 2 GB, so each goes on until its half is written."""
    def put(part: tuple) -> None:
        view, off = memoryview(data[part[0]:part[1]]), at + part[0]
        while len(view):
            done = os.pwrite(fd, view, off)
            view, off = view[done:], off + done
    half = len(data) // 2
    list((each or map)(put, [(0, half), (half, len(data))] if each is not None and half >= 1 << 20
                       else [(0, len(data))]))


def read_run(path: str) -> np.ndarray:
    """A run as an (n, 2) array read into memory (not mapped: a mapped file's pages would count
    as the process's own memory while the run is read)."""
    size = os.path.getsize(path)
    if size % 16:
        raise ValueError(f"{path}: {size} bytes is not a whole number of fingerprints")
    return np.fromfile(path, dtype=FP).reshape(-1, 2)


CHUNK = 1 << 20           # fingerprints read or written at a time (16 MB)


@njit(cache=True, nogil=True, _nrt=False)
def drop_seen_some(fp, order, r, keep, run, last):
    """drop_seen_sorted over one stretch of a run read in stretches, from candidate order[r]:
    the candidates up to the stretch's last fingerprint (all of them if `last`, the run's last
    stretch): where the next stretch goes on."""
    return _drop_some(fp, order, False, r, keep, run, last)


@njit(cache=True, nogil=True, _nrt=False)
def _drop_some(fp, order, direct, r, keep, run, last):
    """drop_seen_some; `direct`: fp is itself sorted, candidate r is fp[r] (order unread)."""
    n = len(run)
    lo = 0
    while r < (len(fp) if direct else len(order)):
        i = r if direct else order[r]
        a, b = fp[i, 0], fp[i, 1]
        if not last and (a > run[n - 1, 0] or (a == run[n - 1, 0] and b > run[n - 1, 1])):
            return r
        r += 1
        if not keep[i]:
            continue
        step = 1
        hi = lo
        while hi < n and (run[hi, 0] < a or (run[hi, 0] == a and run[hi, 1] < b)):
            lo = hi + 1
            hi = lo + step
            step *= 2
        if hi > n:
            hi = n
        while lo < hi:
            mid = (lo + hi) // 2
            if run[mid, 0] < a or (run[mid, 0] == a and run[mid, 1] < b):
                lo = mid + 1
            else:
                hi = mid
        if lo < n and run[lo, 0] == a and run[lo, 1] == b:
            keep[i] = False
    return r


@njit(cache=True, nogil=True, _nrt=False)
def merge_some(x, i, y, j, out, k):
    """Merge x[i:] and y[j:] into out[k:] until one of the three ends: (i, j, k)."""
    while i < len(x) and j < len(y) and k < len(out):
        if x[i, 0] < y[j, 0] or (x[i, 0] == y[j, 0] and x[i, 1] <= y[j, 1]):
            out[k, 0], out[k, 1] = x[i, 0], x[i, 1]
            i += 1
        else:
            out[k, 0], out[k, 1] = y[j, 0], y[j, 1]
            j += 1
        k += 1
    return i, j, k


def stretches(path: str, count: int, chunk: int = CHUNK, start: int = 0):
    """A run of `count` fingerprints read CHUNK at a time from fingerprint `start` (ValueError
    if it holds fewer)."""
    with open(path, "rb") as f:
        f.seek(16 * start)
        done = start
        while done < count:
            want = min(chunk, count - done)
            part = np.fromfile(f, dtype=FP, count=2 * want)
            if len(part) != 2 * want:
                raise ValueError(f"{path} ends after {done + len(part) // 2} fingerprints")
            done += want
            yield part.reshape(-1, 2), done == count


def drop_seen_file(fp, order, keep, path: str, count: int, chunk: int = CHUNK, each=None) -> None:
    """keep[i] := False for each candidate the run at `path` holds, reading it in stretches.
    `order` None: fp is sorted itself (`sorted_rows`), keep in its order. `each`: a thread
    pool's map, which takes the candidates and the run's fingerprints whose a's top bit is 0,
    and those whose is 1, at once (the GIL released)."""
    if each is None or len(fp if order is None else order) < 1 << 16:
        drop_seen_range(fp, order, keep, path, 0, count, chunk)
        return
    top = np.uint64(1) << np.uint64(63)
    at = first_at_least(path, count, top)
    if order is None:
        split = int(np.searchsorted(fp[:, 0], top))
        halves = [(fp[:split], None, keep[:split], path, 0, at), (fp[split:], None, keep[split:], path, at, count)]
    else:
        split = int(np.searchsorted(fp[order, 0] >= top, True))
        halves = [(fp, order[:split], keep, path, 0, at), (fp, order[split:], keep, path, at, count)]
    list(each(lambda h: drop_seen_range(*h, chunk), halves))


def drop_seen_range(fp, order, keep, path: str, start: int, end: int, chunk: int = CHUNK) -> None:
    """drop_seen_file against the run's fingerprints start..end-1 only (the candidates `order`
    names, or fp's all, lie in their part of the key space)."""
    r = 0
    for run, last in stretches(path, end, chunk, start):
        r = _drop_some(fp, NO_ORDER if order is None else order, order is None, r, keep, run, last)


@njit(cache=True, nogil=True, _nrt=False)
def take_rows(fp, order, out):
    """out := fp[order] (numpy's fancy indexing of rows took 2.5 times as long)."""
    for x in range(len(order)):
        i = order[x]
        out[x, 0], out[x, 1] = fp[i, 0], fp[i, 1]


def sorted_rows(fp, order, each=None) -> np.ndarray:
    """fp's rows in `order`, a copy (in two halves at once with a pool's `each`): walked against
    every run in turn, where each walk through `order` read fp at random (a cache miss a
    candidate, 2.0 s a run for 50 million candidates against 0.17 sorted)."""
    out = np.empty((len(order), 2), dtype=np.uint64)
    half = len(order) // 2
    parts = [(0, half), (half, len(order))] if each is not None and half >= 1 << 16 else [(0, len(order))]
    list((each or map)(lambda p: take_rows(fp, order[p[0]:p[1]], out[p[0]:p[1]]), parts))
    return out


def first_at_least(path: str, count: int, a) -> int:
    """The place of the run's first fingerprint whose first hash is at least `a` (a binary
    search reading one fingerprint at a time)."""
    lo, hi = 0, count
    with open(path, "rb") as f:
        while lo < hi:
            mid = (lo + hi) // 2
            f.seek(16 * mid)
            got = np.fromfile(f, dtype=FP, count=1)
            if len(got) != 1:
                raise ValueError(f"{path} ends before fingerprint {mid}")
            if got[0] < a:
                lo = mid + 1
            else:
                hi = mid
    return lo


def merge_files(older: tuple, newer: tuple, path: str, chunk: int = CHUNK, each=None) -> int:
    """Merge two runs, each (path, count), into a run at `path`, CHUNK at a time: its count.
    `each`: a thread pool's map, which merges the two halves of the key space at once, each
    into its own part of the file."""
    (xp, nx), (yp, ny) = older, newer
    halves = [((xp, 0, nx), (yp, 0, ny), 0)]
    if each is not None and nx + ny >= 1 << 22:
        top = np.uint64(1) << np.uint64(63)
        ax, ay = first_at_least(xp, nx, top), first_at_least(yp, ny, top)
        halves = [((xp, 0, ax), (yp, 0, ay), 0), ((xp, ax, nx), (yp, ay, ny), ax + ay)]
    with open(path, "wb"):
        pass
    return sum((each or map)(lambda h: _merge_range(*h, path, chunk), halves))


def as_bytes(a: np.ndarray) -> np.ndarray:
    """An array's bytes as a flat uint8 view, to write without a copy first."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def _merge_range(x_run: tuple, y_run: tuple, at: int, path: str, chunk: int) -> int:
    """Merge x_run and y_run, each (path, first, end), into `path` from fingerprint `at`."""
    xs, ys = stretches(x_run[0], x_run[2], chunk, x_run[1]), stretches(y_run[0], y_run[2], chunk, y_run[1])
    x, y = next(xs, (np.zeros((0, 2), FP), True))[0], next(ys, (np.zeros((0, 2), FP), True))[0]
    out = np.empty((chunk, 2), dtype=FP)
    i = j = k = total = 0
    with open(path, "r+b") as f:
        f.seek(16 * at)
        while True:
            i, j, k = merge_some(x, i, y, j, out, k)
            if k == len(out):
                f.write(as_bytes(out))
                total, k = total + k, 0
            if i == len(x):
                x, i = next(xs, (None, True))[0], 0
            if j == len(y):
                y, j = next(ys, (None, True))[0], 0
            if x is None or y is None:
                break
        f.write(as_bytes(out[:k]))
        total += k
        for rest, at, more in ((x, i, xs), (y, j, ys)):
            while rest is not None:
                f.write(as_bytes(rest[at:]))
                total += len(rest) - at
                rest, at = next(more, (None, True))[0], 0
    return total
