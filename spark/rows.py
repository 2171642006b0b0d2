"""The bytes of spark-check's kernel path: a level's chunks and the blocks expand tasks send to
owners, as the compiled kernel's fixed-width rows (specs/kernel/layout.py). Data only, never a
pickle: little-endian columns and one JSON table.

    magic | u64 n | u64 width | fps (n x 2 u64) | parents (n x 2 u64) | nths (n x u32, blocks only)
          | labels (n x 5 i32) | rows (n x width i32) | u64 size + controller table

A fingerprint is two 64-bit lanes (a, b); as one number, (a << 64) | b, so that the order of
the numbers is the order of the rows in a chunk. A root's parent is all ones. A row's
controller column holds an index into the record's controller table (the distinct controller
values of its rows, one JSON text of `to_data` a line, parsed and checked where they are
used: spark/kernel_tasks.py), not a process's own controller id: every process
numbers the controller values it meets in its own order (specs/kernel/tables.py), so the
number alone would mean nothing to another executor.
"""
from __future__ import annotations

import hashlib
import struct
from typing import Optional

import numpy as np

from verifier.core.values import BadData

PART, BLOCK = b"KVROWS1\n", b"KVRBLK1\n"
LABEL = 5
_U64 = struct.Struct("<Q")
FP = np.dtype("<u8")
I32 = np.dtype("<i4")
ROOT = np.uint64(0xFFFFFFFFFFFFFFFF)


def encode(magic: bytes, fps, parents, labels, rows, ctrl_col: int, ctrls: list, nths=None) -> bytes:
    """A chunk (PART) or block (BLOCK, with `nths`). `rows` hold record-local controller
    indices into `ctrls` (each a controller value's JSON text)."""
    n, width = rows.shape
    head = [magic, _U64.pack(n), _U64.pack(width), np.ascontiguousarray(fps, FP).tobytes(),
            np.ascontiguousarray(parents, FP).tobytes()]
    if magic == BLOCK:
        head.append(np.ascontiguousarray(nths, "<u4").tobytes())
    table = "\n".join(ctrls).encode()
    return b"".join(head + [np.ascontiguousarray(labels, I32).tobytes(), np.ascontiguousarray(rows, I32).tobytes(),
                            _U64.pack(len(table)), table])


class Rows:
    """A chunk or block read back (views into its bytes, nothing copied); BadData if the bytes
    are not one whole record of `width`-wide rows."""

    def __init__(self, data: bytes, magic: bytes, width: Optional[int] = None, ctrl_col: Optional[int] = None):
        data = bytes(data)
        if not data.startswith(magic) or len(data) < len(magic) + 16:
            raise BadData("not a kraft-verify spark-check kernel record")
        at = len(magic)
        (n,), (w,) = _U64.unpack_from(data, at), _U64.unpack_from(data, at + 8)
        if width is not None and w != width:
            raise BadData(f"a record of rows {w} wide, not this config's {width}")
        at += 16
        sizes = [16 * n, 16 * n] + ([4 * n] if magic == BLOCK else []) + [4 * LABEL * n, 4 * w * n]
        if at + sum(sizes) + 8 > len(data):
            raise BadData("a record cut short")
        cols = []
        for size in sizes:
            cols.append(memoryview(data)[at:at + size])
            at += size
        (size,) = _U64.unpack_from(data, at)
        if at + 8 + size != len(data):
            raise BadData("a record's controller table is torn")
        self.n, self.width, self.data = n, w, data
        self.fps = np.frombuffer(cols[0], FP).reshape(n, 2)
        self.parents = np.frombuffer(cols[1], FP).reshape(n, 2)
        self.nths = np.frombuffer(cols[2], "<u4") if magic == BLOCK else None
        self.labels = np.frombuffer(cols[-2], I32).reshape(n, LABEL)
        self.rows = np.frombuffer(cols[-1], I32).reshape(n, w)
        try:
            self.ctrls = data[at + 8:].decode().split("\n") if size else []
        except UnicodeDecodeError:
            raise BadData("a record's controller table is not text") from None
        if ctrl_col is not None and n:
            col = self.rows[:, ctrl_col]
            if int(col.min()) < 0 or int(col.max()) >= len(self.ctrls):
                raise BadData("a record's controller indices are out of range")


def as_int(a, b) -> int:
    """The fingerprint (a, b) as one number."""
    return (int(a) << 64) | int(b)


def fp_sum(fps) -> int:
    """The sum of a chunk's fingerprints as numbers (the manifest's checksum of a chunk)."""
    return (sum(fps[:, 0].tolist()) << 64) + sum(fps[:, 1].tolist())


def visited_blob(fps) -> bytes:
    """Fingerprints sorted by (a, b), as the visited set holds them."""
    order = np.lexsort((fps[:, 1], fps[:, 0]))
    return np.ascontiguousarray(fps[order], FP).tobytes()


def visited_of_blob(blob: bytes):
    if len(blob) % 16:
        raise BadData("a visited entry torn")
    return np.frombuffer(blob, FP).reshape(-1, 2)


def chunk_measure(data: bytes) -> Optional[list]:
    """[states, fingerprint sum (hex), sha256] of a kernel part record; None if not whole."""
    try:
        rec = Rows(data, PART)
    except (BadData, ValueError, struct.error):
        return None
    return [rec.n, f"{fp_sum(rec.fps):x}", hashlib.sha256(data).hexdigest()]
