"""The bytes spark-check writes and reads: a level's chunks and the blocks expand tasks send
to owners. Data only, never a pickle (verifier/core/values.py says why): fixed-width arrays and
JSON, read back through the model's own value types.

    magic | u64 n | fps (n x 16) | parents (n x 16) | nths (n x 4, blocks only) | label ids (n x 4)
          | u64 size + label table (JSON) | u64 size + field tables (JSON) | id columns (fields x n x 4)

Fingerprints and parents are 128-bit little-endian (a root's parent is all ones). Labels and
states are held as tables of their distinct values (as data: `to_data`) and columns of 32-bit
ids (verifier/core/codec.py's packed form for states): a block of 100,000 successors has a few
hundred distinct labels, so decoding costs per distinct value, not per state.
"""
from __future__ import annotations

import hashlib
import json
import struct
import sys
from array import array
from bisect import bisect_left
from itertools import repeat
from typing import Any, Mapping, Optional

from verifier.core.values import BadData, from_data, to_data

PART, BLOCK = b"KVPART1\n", b"KVBLOCK1"
_U64 = struct.Struct("<Q")
ROOT = (1 << 128) - 1                 # a root state's parent
_LO = (1 << 64) - 1


def _fps_bytes(values: list) -> bytes:
    return b"".join(map(int.to_bytes, values, repeat(16), repeat("little")))


def _little(col: array) -> array:
    """`col` in little-endian order, the stored format's, whatever this machine's."""
    if sys.byteorder != "little":
        col.byteswap()
    return col


def _column(code: str, raw) -> array:
    col = array(code)
    col.frombytes(raw)
    return _little(col)


def _fps_from(raw, n: int) -> list:
    col = _column("Q", raw[:16 * n])
    return [lo | (hi << 64) for lo, hi in zip(col[0::2], col[1::2])]


def _u32(values) -> bytes:
    return _little(array("I", values)).tobytes()


def _u32_from(raw) -> array:
    return _column("I", raw)


def _dump(value) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def encode(magic: bytes, fps: list, parents: list, labels: list, packed: tuple, nths: Optional[list] = None) -> bytes:
    """A chunk (magic PART, no `nths`) or a block (BLOCK, with the n-th successor of each)."""
    kind, tables, cols = packed
    index: dict = {}
    label_ids = [index.setdefault(x, len(index)) for x in labels]
    head = [magic, _U64.pack(len(fps)), _fps_bytes(fps), _fps_bytes([ROOT if p is None else p for p in parents])]
    if magic == BLOCK:
        head.append(_u32(nths))
    head.append(_u32(label_ids))
    lab = _dump([to_data(x) for x in index])
    tab = _dump({"kind": kind.__name__ if kind else None, "tables": [[to_data(v) for v in t] for t in tables]})
    return b"".join(head + [_U64.pack(len(lab)), lab, _U64.pack(len(tab)), tab] + list(cols))


class Record:
    """A chunk or block read back; `fps` alone is cheap, the rest is read on demand."""

    def __init__(self, data: bytes, magic: bytes, types: Mapping[str, type]):
        if not data.startswith(magic) or len(data) < len(magic) + 8:
            raise BadData("not a kraft-verify spark-check record")
        self.data, self.types = data, types
        (self.n,) = _U64.unpack_from(data, len(magic))
        self._at = len(magic) + 8
        self.has_nths = magic == BLOCK
        self._labels_at = self._at + self.n * (36 + (4 if self.has_nths else 0))
        if self._labels_at + 8 > len(data):
            raise BadData("a record cut short")

    @property
    def fps(self) -> list:
        return _fps_from(memoryview(self.data)[self._at:], self.n)

    def keys(self) -> tuple[list, list, list, list]:
        """(fps, parents (None for a root), n-ths (blocks; [] in a chunk), labels)."""
        n, at, data = self.n, self._at + 16 * self.n, memoryview(self.data)
        parents = [None if p == ROOT else p for p in _fps_from(data[at:], n)]
        at += 16 * n
        nths: list = []
        if self.has_nths:
            nths, at = list(_u32_from(data[at:at + 4 * n])), at + 4 * n
        ids = _u32_from(data[at:at + 4 * n])
        size = _U64.unpack_from(data, self._labels_at)[0]
        table = _json(data[self._labels_at + 8:self._labels_at + 8 + size])
        if not isinstance(table, list):
            raise BadData("a record's label table is not a list")
        table = [from_data(x, {}) for x in table]
        if n and max(ids) >= len(table):
            raise BadData("a record's label ids are out of range")
        self._tables_at = self._labels_at + 8 + size
        return self.fps, parents, nths, [table[i] for i in ids]

    def _tables(self):
        if not hasattr(self, "_tables_at"):
            self.keys()
        at = self._tables_at
        if at + 8 > len(self.data):
            raise BadData("a record cut short")
        size = _U64.unpack_from(self.data, at)[0]
        tab = _json(memoryview(self.data)[at + 8:at + 8 + size])
        tables = tab.get("tables") if isinstance(tab, dict) else None
        if not isinstance(tables, list) or not all(isinstance(t, list) for t in tables):
            raise BadData("a record's states are not the model's")
        if self.n and at + 8 + size + 4 * self.n * len(tables) != len(self.data):
            raise BadData("a record's id columns are torn")
        return tab, tables, at + 8 + size

    def packed_shape(self) -> None:
        """Checks the tables and id columns are laid out whole (BadData if not)."""
        self._tables()

    def packed(self) -> tuple:
        """The states, in verifier/core/codec.py's packed form."""
        tab, tables, at = self._tables()
        if self.n == 0:
            return None, [], []
        kind = self.types.get(tab.get("kind"))
        if kind is None or len(tables) != len(kind._fields):
            raise BadData("a record's states are not the model's")
        width = 4 * self.n
        cols = [self.data[at + k * width:at + (k + 1) * width] for k in range(len(tables))]
        if sys.byteorder != "little":
            cols = [_u32(_u32_from(c)) for c in cols]
        return kind, [[from_data(v, self.types) for v in t] for t in tables], cols


def _json(raw: bytes) -> Any:
    try:
        return json.loads(bytes(raw))
    except (ValueError, RecursionError) as exc:
        raise BadData(f"a record's JSON is torn: {exc}") from None


def fps_of(data: bytes) -> list:
    """A part record's fingerprints."""
    return Record(data, PART, {}).fps


def visited_blob(fps) -> bytes:
    """Fingerprints as the visited set holds them: (low 64 bits, high 64 bits) pairs, sorted by
    the low half, so `drop_visited` finds candidates with a set intersection done in C and a
    binary search per hit, never a Python loop over the visited states."""
    col = array("Q")
    for fp in sorted(fps, key=lambda f: f & _LO):
        col.append(fp & _LO)
        col.append(fp >> 64)
    return _little(col).tobytes()


def drop_visited(best: dict, blobs) -> None:
    """Remove from `best` (fingerprint -> anything) the fingerprints the blobs hold."""
    wanted = None
    for blob in blobs:
        if not best:
            return
        view = memoryview(_column("Q", blob))
        los = view[0::2]
        if wanted is None:
            wanted = {fp & _LO for fp in best}
        for lo in wanted.intersection(los):
            i = bisect_left(los, lo)
            while i < len(los) and los[i] == lo:
                best.pop(lo | (view[2 * i + 1] << 64), None)
                i += 1


def chunk_measure(data: bytes) -> Optional[list]:
    """[states, fingerprint sum (hex), sha256] of a part record's bytes (what the manifest
    records of a chunk); None if the bytes are not a whole part record."""
    try:
        rec = Record(data, PART, {})
        rec.keys()
        rec.packed_shape()
    except (BadData, ValueError, struct.error):
        return None
    return [rec.n, f"{sum(rec.fps):x}", hashlib.sha256(data).hexdigest()]
