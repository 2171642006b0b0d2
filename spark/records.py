"""The bytes spark-check writes and reads: a level's part files and the blocks expand tasks
send to owners. Data only, never a pickle (verifier/values.py says why): fixed-width arrays
and JSON, read back through the model's own value types.

    b"KVPART1\\n" | u64 n | fps (n x 16 bytes) | parents (n x 16) | nths (n x 4, blocks only)
                  | u64 size + labels (JSON) | u64 size + tables (JSON) | id columns (fields x n x 4)

Fingerprints and parents are 128-bit little-endian (a root's parent is all ones); the states
are verifier/codec.py's packed form: per field a table of its distinct values (as data) and a
column of 32-bit ids. The fingerprints come first, so the visited-set check reads them alone.
"""
from __future__ import annotations

import hashlib
import json
import struct
import sys
from array import array
from typing import Any, Mapping, Optional

from verifier.values import BadData, from_data, to_data

PART, BLOCK = b"KVPART1\n", b"KVBLOCK1"
_U64 = struct.Struct("<Q")
ROOT = (1 << 128) - 1                 # a root state's parent


def _ints(values: list, width: int) -> bytes:
    return b"".join(v.to_bytes(width, "little") for v in values)


def _from_ints(raw: bytes, n: int, width: int) -> list:
    return [int.from_bytes(raw[i * width:(i + 1) * width], "little") for i in range(n)]


def _u32(col: array) -> bytes:
    if sys.byteorder != "little":
        col = array("I", col)
        col.byteswap()
    return col.tobytes()


def encode(magic: bytes, fps: list, parents: list, labels: list, packed: tuple, nths: Optional[list] = None) -> bytes:
    """A part file (magic PART, no `nths`) or a block (BLOCK, with the n-th successor of each)."""
    kind, tables, cols = packed
    n = len(fps)
    head = [magic, _U64.pack(n), _ints(fps, 16), _ints([ROOT if p is None else p for p in parents], 16)]
    if magic == BLOCK:
        head.append(_u32(array("I", nths)))
    lab = json.dumps([to_data(x) for x in labels], separators=(",", ":")).encode()
    tab = json.dumps({"kind": kind.__name__ if kind else None, "tables": [[to_data(v) for v in t] for t in tables]},
                     separators=(",", ":")).encode()
    return b"".join(head + [_U64.pack(len(lab)), lab, _U64.pack(len(tab)), tab] + list(cols))


class Record:
    """A part file or block read back; `fps` alone is cheap, the rest is read on demand."""

    def __init__(self, data: bytes, magic: bytes, types: Mapping[str, type]):
        if not data.startswith(magic) or len(data) < len(magic) + 8:
            raise BadData("not a kraft-verify spark-check record")
        self.data, self.types = data, types
        (self.n,) = _U64.unpack_from(data, len(magic))
        self._at = len(magic) + 8
        self.has_nths = magic == BLOCK
        needed = self._at + self.n * (32 + (4 if self.has_nths else 0))
        if needed > len(data):
            raise BadData("a record cut short")

    @property
    def fps(self) -> list:
        return _from_ints(self.data[self._at:self._at + 16 * self.n], self.n, 16)

    def keys(self) -> tuple[list, list, list, list]:
        """(fps, parents (None for a root), n-ths (blocks; [] in a part), labels)."""
        n, at, data = self.n, self._at, self.data
        parents = [None if p == ROOT else p for p in _from_ints(data[at + 16 * n:at + 32 * n], n, 16)]
        at += 32 * n
        nths: list = []
        if self.has_nths:
            col = array("I")
            col.frombytes(data[at:at + 4 * n])
            if sys.byteorder != "little":
                col.byteswap()
            nths, at = list(col), at + 4 * n
        size = _U64.unpack_from(data, at)[0]
        labels = [from_data(x, {}) for x in _json(data[at + 8:at + 8 + size])]
        self._tables_at = at + 8 + size
        return self.fps, parents, nths, labels

    def packed(self) -> tuple:
        """The states, in verifier/codec.py's packed form."""
        if not hasattr(self, "_tables_at"):
            self.keys()
        at = self._tables_at
        size = _U64.unpack_from(self.data, at)[0]
        tab = _json(self.data[at + 8:at + 8 + size])
        kind = self.types.get(tab.get("kind")) if isinstance(tab, dict) else None
        tables = tab.get("tables") if isinstance(tab, dict) else None
        if self.n == 0:
            return None, [], []
        if kind is None or not isinstance(tables, list) or len(tables) != len(kind._fields):
            raise BadData("a record's states are not the model's")
        at += 8 + size
        width = 4 * self.n
        if at + width * len(tables) != len(self.data):
            raise BadData("a record's id columns are torn")
        cols = [self.data[at + k * width:at + (k + 1) * width] for k in range(len(tables))]
        if sys.byteorder != "little":
            cols = [_u32(array("I", memoryview(c).cast("I"))) for c in cols]
        return kind, [[from_data(v, self.types) for v in t] for t in tables], cols


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise BadData(f"a record's JSON is torn: {exc}") from None


def measure(data: bytes) -> tuple[int, int, str]:
    """(states, fingerprint sum, sha256) of a part file's bytes (the manifest's record of it)."""
    rec = Record(data, PART, {})
    return rec.n, sum(rec.fps), hashlib.sha256(data).hexdigest()
