"""The bytes of spark-check's kernel path: a level's chunks and the blocks expand tasks send to
owners, as the compiled kernel's fixed-width rows (specs/kernel/layout.py). Data only, never a
pickle: little-endian columns and a table of JSON texts.

    magic | u64 n | u64 width | fps (n x 2 u64) | parents (n x 2 u64) | nths (blocks only)
          | labels (n x 5) | rows (n x width) | u64 size + controller table

nths, labels and rows are narrowed column by column: a byte per column says how wide its
values are (1, 2 or 4 bytes, signed), then the columns of each width as one matrix. Most of a
row's fields are small (flags, epochs of a few steps, indices), so a row costs about a quarter
of its 4-byte form, and it is most of what crosses the shuffle and goes to the store.

A fingerprint is two 64-bit lanes (a, b); as one number, (a << 64) | b, so that the order of
the numbers is the order of the rows in a chunk. A root's parent is all ones. A row's
controller column holds an index into the record's controller table (the distinct controller
values of its rows, one JSON text of `to_data` a line, in the texts' order, parsed and
checked where they are used: spark/kernel_tasks.py), not a process's own controller id: every
process numbers the controller values it meets in its own order (specs/kernel/tables.py), so
the number alone would mean nothing to another executor. A block of the file exchange (magic
DBLOCK, or ZDBLOCK squeezed) names its values by digest instead, raw after the nths (u64 m,
then m x 16 bytes), and has no table after its rows: the texts are in the run's catalogue
(spark/catalogue.py says why). Nor has it fingerprints: its reader sums them from the rows
(spark/compiled.add_fields, the kernel's fingerprint is a sum of its fields' hashes, the
controller's through its digest), since those 16 random bytes a successor were a third of
what the exchange's blocks took on disk, and the disk is what spark-check's billion run ran
out of (BENCHMARKS.md, "The billion config on HDFS, run 3").

A squeezed record (magic ZPART or ZBLOCK) holds the same head, and after it, instead of the
labels, rows and table, one zstd frame of those bytes (its decoded size in the frame). Why:
a level's chunks stay on disk for the whole run (the checkpoint, or the files a trace is
walked through), at about 130 bytes a state, and a night's run outgrew this machine's disk at
a quarter of a billion states (BENCHMARKS.md, "The overnight default grown"). The rows are
most of those bytes and shrink about sevenfold; fingerprints and parents are random bits that
would not, so they stay raw and are read without decoding anything (a visited run, a trace's
link). A record squeezed is about 46 bytes a state against 128-131. zstd at level 1 takes a
level's raw blocks to 3.5x at 0.67 GB/s, against zlib's 3.1x at 0.15 GB/s (BENCHMARKS.md,
"Squeezed rows").
"""
from __future__ import annotations

import hashlib
import struct
import threading
from typing import Optional

import numpy as np

from verifier.core.values import BadData

PART, BLOCK, LINKS = b"KVROWS1\n", b"KVRBLK1\n", b"KVLINK2\n"
ZPART, ZBLOCK, ZLINKS = b"KVROWZ1\n", b"KVRBLZ1\n", b"KVLNKZ2\n"
DBLOCK, ZDBLOCK = b"KVRBLD2\n", b"KVRBDZ2\n"      # blocks whose table is digests, no fingerprints (below)
SQUEEZED = {PART: ZPART, BLOCK: ZBLOCK, DBLOCK: ZDBLOCK}
_KINDS = {PART: (PART, ZPART), BLOCK: (BLOCK, ZBLOCK, DBLOCK, ZDBLOCK)}   # what a reader of each kind takes
LEVEL = 1                  # zstd's level: its fastest that still shrinks the rows near its best
TABLE_MAX = 1 << 26        # the most a record's controller table may take, decoded
WIDTH_MAX = 1 << 16        # the widest row a record may say it holds
LABEL = 5
_U64 = struct.Struct("<Q")
FP = np.dtype("<u8")
ROOT = np.uint64(0xFFFFFFFFFFFFFFFF)
_ZSTD = threading.local()


def encode(magic: bytes, fps, parents, labels, rows, ctrl_col: int, ctrls: list, nths=None,
           squeeze: bool = False) -> bytes:
    """A chunk (PART) or block (BLOCK, with `nths`), squeezed if `squeeze` (the module says
    how). `rows` hold record-local controller indices into `ctrls` (each a controller value's
    JSON text)."""
    n, width = rows.shape
    return _record(magic, fps, parents, nths, _narrow(labels), _narrow(rows), n, width, ctrls, squeeze)


def links(fps, parents, labels, squeeze: bool = False) -> bytes:
    """A chunk of links only (magic LINKS, or ZLINKS with its labels squeezed): fingerprints,
    each parent's low lane (8 bytes) and labels, no rows. A local master's levels are expanded
    from their owners' memory (spark/chain.py); afterwards a level is read only by a trace's
    walk back and a resume's visited set, which need no more. (A store keeps the rows of its
    last two levels beside them, spark/store.py.) A parent's low lane names its owner and, but
    for a chance of 2^-64 a state of its level, the parent itself (spark/paths.py walks back
    through every state that has it and keeps the path that replays to the state): the parent's
    whole fingerprint cost 8 bytes more a state, a fifth of a billion-state run's store."""
    n = len(fps)
    tail = _narrow(labels)
    if squeeze:
        tail = _zstd().compress(tail)
    return b"".join([ZLINKS if squeeze else LINKS, _U64.pack(n), _U64.pack(0), np.ascontiguousarray(fps, FP).tobytes(),
                     np.ascontiguousarray(np.asarray(parents)[:, 1], FP).tobytes(), tail])


def block(fps, parents, nths, labels, rows: bytes, n: int, width: int, ctrls, squeeze: bool = False,
          digests: bool = False) -> bytes:
    """A BLOCK record whose `rows` are narrowed already, as _narrow lays them out (column
    widths, then each width's columns as one matrix): spark/emit.py writes them so. With
    `digests` (a DBLOCK) `ctrls` is an (m, 2) array of the values' digests, kept raw after the
    nths, and the texts are in the run's catalogue (spark/catalogue.py says why)."""
    return _record(DBLOCK if digests else BLOCK, fps, parents, nths, _narrow(labels), rows, n, width, ctrls, squeeze)


def _record(magic: bytes, fps, parents, nths, labels: bytes, rows: bytes, n: int, width: int, ctrls,
            squeeze: bool) -> bytes:
    head = [SQUEEZED[magic] if squeeze else magic, _U64.pack(n), _U64.pack(width)]
    if magic != DBLOCK:                  # a digest block's fingerprints are its rows' (the module says why)
        head.append(np.ascontiguousarray(fps, FP).tobytes())
    head.append(np.ascontiguousarray(parents, FP).tobytes())
    if magic in (BLOCK, DBLOCK):
        head.append(_narrow(np.asarray(nths).reshape(n, 1)))
    if magic == DBLOCK:
        head += [_U64.pack(len(ctrls)), np.ascontiguousarray(ctrls, FP).tobytes()]
        tail = [labels, rows]
    else:
        table = "\n".join(ctrls).encode()
        tail = [labels, rows, _U64.pack(len(table)), table]
    if squeeze:
        tail = [_zstd().compress(b"".join(tail))]
    return b"".join(head + tail)


def _zstd(decompress: bool = False):
    """This thread's zstd compressor (or decompressor), made once: a new one a block cost a
    context's allocation for each of a level's hundred thousand blocks."""
    import zstandard
    key = "d" if decompress else "c"
    made = getattr(_ZSTD, key, None)
    if made is None:
        made = zstandard.ZstdDecompressor() if decompress else zstandard.ZstdCompressor(level=LEVEL)
        setattr(_ZSTD, key, made)
    return made


def _unsqueeze(data, at: int, n: int, width: int) -> bytes:
    """The labels, rows and table a squeezed record's frame holds (BadData if it is not one
    whole frame of at most the bytes such rows can take)."""
    import zstandard
    frame = memoryview(data)[at:]
    most = 1 + LABEL + width + 4 * n * (LABEL + width) + 8 + TABLE_MAX
    try:
        size = zstandard.frame_content_size(frame)
        if size < 0 or size > most:
            raise BadData("a squeezed record's frame does not say its size, or says too much")
        out = _zstd(decompress=True).decompress(frame)
    except zstandard.ZstdError:
        raise BadData("a squeezed record's frame is torn") from None
    if len(out) != size:
        raise BadData("a squeezed record's frame is torn")
    return out


_WIDTHS = ((1, np.dtype("i1")), (2, np.dtype("<i2")), (4, np.dtype("<i4")))


def _narrow(m) -> bytes:
    """An (n, c) matrix of int32 values, each column in the fewest bytes its values need."""
    from spark.compiled import column_bounds, narrow_into
    m = np.ascontiguousarray(m, np.int32)
    if len(m):
        lo, hi = np.empty(m.shape[1], dtype=np.int64), np.empty(m.shape[1], dtype=np.int64)
        column_bounds(m, lo, hi)
        kinds = np.where((lo >= -128) & (hi <= 127), 1, np.where((lo >= -32768) & (hi <= 32767), 2, 4))
    else:
        kinds = np.ones(m.shape[1], dtype=np.int64)
    out = [kinds.astype(np.uint8).tobytes()]
    for k, dtype in _WIDTHS:
        cols = np.flatnonzero(kinds == k)
        if len(cols):
            part = np.empty((len(m), len(cols)), dtype)
            narrow_into(m, cols, part)
            out.append(part.tobytes())
    return b"".join(out)


class _Narrow:
    """An (n, c) matrix as _narrow wrote it, read back a row selection at a time."""

    def __init__(self, data: bytes, at: int, n: int, c: int):
        if at + c > len(data):
            raise BadData("a record cut short")
        kinds = np.frombuffer(data, np.uint8, c, at)
        if not np.isin(kinds, (1, 2, 4)).all():
            raise BadData("a record's column widths are not 1, 2 or 4")
        at += c
        self.n, self.c, self.parts = n, c, []
        for k, dtype in _WIDTHS:
            cols = np.flatnonzero(kinds == k)
            if not len(cols):
                continue
            size = n * len(cols) * k
            if at + size > len(data):
                raise BadData("a record cut short")
            self.parts.append((np.frombuffer(data, dtype, n * len(cols), at).reshape(n, len(cols)), cols))
            at += size
        self.end = at

    def to(self, sel, dest, out) -> None:
        """The rows `sel` (positions) widened into out[dest]."""
        from spark.compiled import widen_to
        for m, cols in self.parts:
            widen_to(m, cols, sel, dest, out)

    def all(self) -> np.ndarray:
        """Every row, as int32."""
        out = np.empty((self.n, self.c), dtype=np.int32)
        every = np.arange(self.n, dtype=np.int64)
        self.to(every, every, out)
        return out


class Rows:
    """A chunk or block read back; BadData if the bytes are not one whole record of
    `width`-wide rows whose controller indices name its table."""

    def __init__(self, data: bytes, magic: bytes, width: Optional[int] = None, ctrl_col: Optional[int] = None,
                 links: bool = False):
        """`magic` PART or BLOCK: a record of that kind, squeezed or not; with `links`, a
        LINKS record is read too (its `rows` then empty)."""
        data = data if isinstance(data, (bytes, memoryview)) else bytes(data)
        head = bytes(data[:len(magic)])
        if len(data) < len(magic) + 16 or head not in _KINDS[magic] + ((LINKS, ZLINKS) if links else ()):
            raise BadData("not a kraft-verify spark-check kernel record")
        self.squeezed, self.links = head in (ZPART, ZBLOCK, ZDBLOCK, ZLINKS), head in (LINKS, ZLINKS)
        self.digests, self._fps = None, None
        at = len(magic)
        (n,), (w,) = _U64.unpack_from(data, at), _U64.unpack_from(data, at + 8)
        if self.links:
            self._links(data, at + 16, n, w)
            return
        if width is not None and w != width:
            raise BadData(f"a record of rows {w} wide, not this config's {width}")
        if w > WIDTH_MAX:
            raise BadData(f"a record of rows {w} wide")
        at += 16
        summed = head in (DBLOCK, ZDBLOCK)       # fingerprints summed from the rows, not carried
        if at + (16 if summed else 32) * n > len(data):
            raise BadData("a record cut short")
        self.n, self.width, self._ctrl_col = n, w, ctrl_col
        if not summed:
            self._fps = np.frombuffer(data, FP, 2 * n, at).reshape(n, 2)
            at += 16 * n
        self.parents = np.frombuffer(data, FP, 2 * n, at).reshape(n, 2)
        self.parent_lanes = self.parents[:, 1]
        at += 16 * n
        self.nths = None
        if magic == BLOCK:
            nths = _Narrow(data, at, n, 1)
            self.nths, at = nths.all()[:, 0], nths.end
        if head in (DBLOCK, ZDBLOCK):
            at = self._digests(data, at)
        if self.squeezed:
            data, at = _unsqueeze(data, at, n, w), 0
        self._labels = _Narrow(data, at, n, LABEL)
        self._rows = _Narrow(data, self._labels.end, n, w)
        at = self._rows.end
        if self.digests is not None:
            if at != len(data):
                raise BadData("a record with bytes after its rows")
            self.ctrls = None
            self._check_ctrl(ctrl_col, len(self.digests))
            return
        if at + 8 > len(data):
            raise BadData("a record cut short")
        (size,) = _U64.unpack_from(data, at)
        if at + 8 + size != len(data):
            raise BadData("a record's controller table is torn")
        try:
            self.ctrls = bytes(data[at + 8:]).decode().split("\n") if size else []
        except UnicodeDecodeError:
            raise BadData("a record's controller table is not text") from None
        self._check_ctrl(ctrl_col, len(self.ctrls))

    def _digests(self, data, at: int) -> int:
        if at + 8 > len(data):
            raise BadData("a record cut short")
        (m,) = _U64.unpack_from(data, at)
        if at + 8 + 16 * m > len(data):
            raise BadData("a record's controller digests are cut short")
        self.digests = np.frombuffer(data, FP, 2 * m, at + 8).reshape(m, 2)
        return at + 8 + 16 * m

    def _check_ctrl(self, ctrl_col: Optional[int], m: int) -> None:
        if ctrl_col is not None and self.n:
            for rows, cols in self._rows.parts:
                if ctrl_col in cols:
                    col = rows[:, int(np.flatnonzero(cols == ctrl_col)[0])]
                    if int(col.min()) < 0 or int(col.max()) >= m:
                        raise BadData("a record's controller indices are out of range")

    def _links(self, data, at: int, n: int, w: int) -> None:
        if w != 0 or at + 24 * n > len(data):
            raise BadData("a links record cut short" if w == 0 else "a links record with rows")
        self.n, self.width, self.nths, self.ctrls = n, 0, None, []
        self._fps = np.frombuffer(data, FP, 2 * n, at).reshape(n, 2)
        self.parents = None                  # each parent's low lane only (links says why)
        self.parent_lanes = np.frombuffer(data, FP, n, at + 16 * n)
        at += 24 * n
        if self.squeezed:
            data, at = _unsqueeze(data, at, n, 0), 0
        self._labels = _Narrow(data, at, n, LABEL)
        self._rows = _Narrow(b"", 0, n, 0)
        if self._labels.end != len(data):
            raise BadData("a links record with bytes after its labels")

    @property
    def fps(self) -> np.ndarray:
        """The records' fingerprints: carried, or (a digest block) summed from its rows once."""
        if self._fps is None:
            if self._ctrl_col is None:
                raise ValueError("a digest block's fingerprints need its controller column")
            from spark.compiled import add_fields
            fps, small = np.zeros((self.n, 2), np.uint64), _small(self.width)
            for m, cols in self._rows.parts:
                add_fields(m, cols, self._ctrl_col, self.digests, small, fps)
            self._fps = fps
        return self._fps

    @property
    def rows(self) -> np.ndarray:
        return self._rows.all()

    @property
    def labels(self) -> np.ndarray:
        return self._labels.all()

    def rows_to(self, sel, dest, out) -> None:
        """The rows `sel` widened into out[dest] (record-local controller indices)."""
        self._rows.to(sel, dest, out)

    def labels_to(self, sel, dest, out) -> None:
        self._labels.to(sel, dest, out)


_SMALL: dict = {}


def _small(width: int) -> np.ndarray:
    """The hashes of every 1-byte field of rows `width` wide (spark/compiled.field_table), made
    once a process."""
    if width not in _SMALL:
        from spark.compiled import field_table
        small = np.zeros((width, 256, 2), np.uint64)
        field_table(small, np.zeros((0, 2), np.uint64))
        _SMALL[width] = small
    return _SMALL[width]


def as_int(a, b) -> int:
    """The fingerprint (a, b) as one number."""
    return (int(a) << 64) | int(b)


def fp_sum(fps) -> int:
    """The sum of a chunk's fingerprints as numbers (the manifest's checksum of a chunk)."""
    return (_exact_sum(fps[:, 0]) << 64) + _exact_sum(fps[:, 1])


def _exact_sum(lane) -> int:
    """The sum of uint64 values as a Python int, by 32-bit halves (numpy's sums of halves of
    fewer than 2**32 values cannot wrap): a chunk's list of Python ints cost 1.8% of a worker."""
    lane = np.asarray(lane, np.uint64)
    low = int((lane & np.uint64(0xFFFFFFFF)).sum(dtype=np.uint64))
    high = int((lane >> np.uint64(32)).sum(dtype=np.uint64))
    return (high << 32) + low


def visited_blob(fps) -> bytes:
    """Fingerprints sorted by (a, b), as the visited set holds them."""
    order = np.lexsort((fps[:, 1], fps[:, 0]))
    return np.ascontiguousarray(fps[order], FP).tobytes()


def visited_of_blob(blob: bytes):
    if len(blob) % 16:
        raise BadData("a visited entry torn")
    return np.frombuffer(blob, FP).reshape(-1, 2)


def chunk_measure(data: bytes) -> Optional[list]:
    """[states, fingerprint sum (hex), sha256 of its bytes as stored] of a kernel part record,
    squeezed or not, or links; None if not whole."""
    try:
        rec = Rows(data, PART, links=True)
    except (BadData, ValueError, struct.error):
        return None
    return [rec.n, f"{fp_sum(rec.fps):x}", hashlib.sha256(data).hexdigest()]
