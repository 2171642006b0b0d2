"""Controller values named by digest in the blocks of the file exchange: a run's catalogue of
their texts, one append-only file per process beside the exchange's levels.

Why: a block's controller table held each controller value its rows name as JSON text, and on
the overnight config's deep levels a block of about 7,000 successors names about 2,600 of them:
49 bytes of text a successor, half of what zstd squeezed, and every owner split and looked up
each text of every block it read (with the list of texts made per block, about 17% of the
workers' time at level 17 of the billion run; BENCHMARKS.md, "The store on HDFS, against
check"). Through the file exchange every process shares the driver's disk, so a block names a
value by its 16-byte digest (blake2b of its text, as spark/kernel_tasks._Side keeps them) and
the text goes once per process to the catalogue. A process that meets a digest it does not
know reads the catalogue's files for it: rare after the first levels, where every worker has
met nearly every value.

The order that keeps a reader from missing a text: a writer appends (and flushes) the texts of
a block's new values to its own file before the block is written, and a block's file is placed
only when its task ends (spark/exchange.Writer). A file's last frame may be torn (its process
died writing it): a reader stops at it, and no placed block names a value only a torn frame
holds. The files are data: each text read is checked against its digest, and parsed and checked
as a controller value by the reader's kernel (_Side.local); a block naming a value no file holds
is BadData. Blocks through Spark's shuffle (no shared disk) keep their texts.
"""
from __future__ import annotations

import hashlib
import os
import struct
import uuid

import numpy as np

from verifier.core.values import BadData

DIR = "ctrls"                     # under the exchange's root (spark/local_files.Files.root)
_HEAD = struct.Struct("<I16s")    # a frame: its text's length, its digest; then the text
TEXT_MAX = 1 << 20                # the longest text a frame may hold


def digest(text: bytes) -> bytes:
    """A controller value's digest, of its text's bytes (spark/kernel_tasks._Side.sync's lanes)."""
    return hashlib.blake2b(text, digest_size=16).digest()


class Catalogue:
    """One process's view of a run's catalogue at `root` (the exchange's directory), for its
    kernel `side`: which of its controller ids it has published (or read from the catalogue),
    its digests sorted for look-ups, and the texts it has read from other processes' files."""

    def __init__(self, root: str, side):
        self.dir = os.path.join(root, DIR)
        self.side = side
        self.published = np.zeros(0, dtype=np.bool_)
        self.mine = None                  # this process's file, made when it first publishes
        self.offsets: dict = {}           # file name -> bytes read of it (whole frames)
        self.texts: dict = {}             # digest -> text, read from the files
        self._keys = self._ids = None     # this process's digests' first lanes sorted, their ids
        self._known = 0

    def table(self, used: np.ndarray) -> np.ndarray:
        """The digests of controller ids `used` (a block's table, in its order), their texts
        published first where this process has not yet."""
        self._grow()
        new = used[~self.published[used]]
        if len(new):
            self._publish([int(c) for c in new])
        return self.side.dig[used]

    def _grow(self) -> None:
        """A published flag for each controller id this process has (its tables only grow)."""
        more = len(self.side.texts) - len(self.published)
        if more > 0:
            self.published = np.concatenate([self.published, np.zeros(more, np.bool_)])

    def _publish(self, ids: list) -> None:
        os.makedirs(self.dir, exist_ok=True)
        if self.mine is None:
            self.mine = os.path.join(self.dir, f"{os.getpid()}-{uuid.uuid4().hex[:12]}")
        frames = []
        for c in ids:
            text = self.side.texts[c].encode()
            frames.append(_HEAD.pack(len(text), self.side.dig[c].astype("<u8").tobytes()) + text)
        with open(self.mine, "ab") as f:
            f.write(b"".join(frames))
        self.published[ids] = True

    def ids(self, digests: np.ndarray) -> np.ndarray:
        """This process's controller ids of a block's table (n x 2 digest lanes); values it has
        not met are read from the catalogue and met (BadData if no file holds one)."""
        out = self._look_up(digests)
        missing = np.flatnonzero(out < 0)
        if len(missing):
            for i in missing:
                key = digests[i].astype("<u8").tobytes()
                text = self.texts.get(key)
                if text is None:
                    self._read()
                    text = self.texts.get(key)
                if text is None:
                    raise BadData("a block names a controller value no catalogue file holds")
                (cid,) = self.side.local([text])
                self._grow()
                self.published[cid] = True       # its text is in the catalogue already
                out[i] = cid
        return out

    def _look_up(self, digests: np.ndarray) -> np.ndarray:
        dig = self.side.dig
        if self._keys is None or self._known != len(dig):
            order = np.argsort(dig[:, 0], kind="stable")
            self._keys, self._ids, self._known = dig[order, 0], order.astype(np.int32), len(dig)
        if not len(self._keys):
            return np.full(len(digests), -1, dtype=np.int32)
        at = np.minimum(np.searchsorted(self._keys, digests[:, 0]), len(self._keys) - 1)
        ids = self._ids[at]
        hit = (self._keys[at] == digests[:, 0]) & (dig[ids, 1] == digests[:, 1])
        return np.where(hit, ids, -1).astype(np.int32)

    def _read(self) -> None:
        """The whole frames every file has gained since the last read (a torn last frame is left
        for the next), each text checked against its digest."""
        try:
            names = sorted(os.listdir(self.dir))
        except FileNotFoundError:
            return
        for name in names:
            path = os.path.join(self.dir, name)
            at = self.offsets.get(name, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(at)
                    data = f.read()
            except FileNotFoundError:
                continue
            pos = 0
            while pos + _HEAD.size <= len(data):
                size, key = _HEAD.unpack_from(data, pos)
                if size > TEXT_MAX:
                    raise BadData(f"a catalogue file's frame says {size} bytes: {path}")
                end = pos + _HEAD.size + size
                if end > len(data):
                    break
                raw = data[pos + _HEAD.size:end]
                if digest(raw) != key:
                    raise BadData(f"a catalogue file's text does not match its digest: {path}")
                try:
                    self.texts[key] = raw.decode()
                except UnicodeDecodeError:
                    raise BadData(f"a catalogue file's text is not text: {path}") from None
                pos = end
            self.offsets[name] = at + pos
