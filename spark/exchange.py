"""The kernel path's exchange of successor blocks through files, where every executor runs on
the driver's machine (a `local[N]` master): expand tasks write each owner's blocks to a file of
a per-run directory and send the owner only its name; the owner reads the file.

Why: through Spark's shuffle a block crosses from the Python worker to the JVM, is compressed
and written by the JVM, read back and sent to the owner's Python worker: about half of a
level's time at 130 bytes a successor (BENCHMARKS.md, "Kernel executors"). On one machine a
file in the page cache does the same job without the copies. On a cluster the executors share
no disk, so the blocks take Spark's shuffle there (`Exchange.open` says which).

A task writes its files under temporary names of its own attempt and renames them when it
ends, so a retried (or a second, speculative) attempt replaces them with the same bytes (its blocks are a function of its chunks) and an owner never
reads a half-written file. A level's files are removed once the level is committed; the
directory when the run ends. A driver killed outright leaves its directory, so each run first
removes the directories of drivers no longer alive (the directory's name carries the pid).
"""
from __future__ import annotations

import mmap
import os
import shutil
import struct
import tempfile
import uuid
from typing import Optional

from verifier.core.values import BadData

PREFIX = "kraft-verify-exchange-"
_FRAME = struct.Struct("<Q")


def by_file(master: str) -> bool:
    """Whether blocks go by file under `master`: every executor on the driver's machine."""
    return master.startswith("local")


class Exchange:
    """A run's exchange directory, on the driver."""

    def __init__(self, root: str):
        self.root = root

    @classmethod
    def open(cls, sc) -> Optional["Exchange"]:
        """A new exchange directory (where Spark keeps its own scratch: SPARK_LOCAL_DIRS, else
        spark.local.dir, else the system's temporary directory), or None where the executors
        share no disk with the driver."""
        if not by_file(sc.master):
            return None
        parent = (os.environ.get("SPARK_LOCAL_DIRS") or sc.getConf().get("spark.local.dir", None)   # as Spark
                  or tempfile.gettempdir()).split(",")[0]
        sweep(parent)
        root = os.path.join(parent, f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}")
        os.makedirs(parent, exist_ok=True)
        os.mkdir(root, 0o700)          # the run's own: no other user reads or plants blocks
        return cls(root)

    def level(self, level: int) -> str:
        """Where the blocks of level `level` go (made by the first task that writes)."""
        return os.path.join(self.root, f"{level:05d}")

    def drop(self, level: int) -> None:
        shutil.rmtree(self.level(level), ignore_errors=True)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def sweep(parent: str) -> None:
    """Remove the exchange directories of drivers that are gone."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        pid = name[len(PREFIX):].split("-")[0]
        if name.startswith(PREFIX) and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Writer:
    """One expand task's files, one per owner: blocks appended as they are made, renamed into
    place by `close` (then the names are the task's output)."""

    def __init__(self, where: str, task: int):
        os.makedirs(where, exist_ok=True)
        self.where, self.task, self.files = where, task, {}
        self.tmp = f".tmp-{uuid.uuid4().hex[:12]}"     # this attempt's: two attempts never share one

    def add(self, owner: int, block: bytes) -> None:
        f = self.files.get(owner)
        if f is None:
            f = self.files[owner] = open(self._name(owner) + self.tmp, "wb")
        f.write(_FRAME.pack(len(block)))
        f.write(block)

    def close(self) -> dict:
        """owner -> the file's name, every file complete and in place."""
        out = {}
        for owner, f in sorted(self.files.items()):
            f.close()
            os.replace(self._name(owner) + self.tmp, self._name(owner))
            out[owner] = self._name(owner)
        self.files = {}
        return out

    def abort(self) -> None:
        for owner, f in self.files.items():
            f.close()
            try:
                os.unlink(self._name(owner) + self.tmp)
            except OSError:
                pass
        self.files = {}

    def _name(self, owner: int) -> str:
        return os.path.join(self.where, f"o{owner:05d}-t{self.task:05d}")


def blocks(path: str) -> list:
    """The blocks of one exchange file (BadData if it is not whole, RuntimeError if it is gone:
    a level's files are removed once the level is committed, so a task recomputed later cannot
    find them)."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            # mapped, not read: the owner's blocks are its largest holding (half its memory on the
            # overnight config's widest levels) and mapped pages are the page cache's, which the
            # kernel takes back under pressure instead of killing a worker; each block a view
            data = memoryview(mapped(f.fileno(), size) if size else b"")
    except FileNotFoundError:
        raise RuntimeError(f"the exchange file {path} is gone (its level was committed and its files removed)") \
            from None
    out, at = [], 0
    while at < len(data):
        if at + 8 > len(data):
            raise BadData(f"the exchange file {path} is torn")
        (size,) = _FRAME.unpack_from(data, at)
        if at + 8 + size > len(data):
            raise BadData(f"the exchange file {path} is torn")
        out.append(data[at + 8:at + 8 + size])
        at += 8 + size
    return out


def mapped(fd: int, size: int) -> mmap.mmap:
    """A file mapped read-only, its pages mapped up front (MAP_POPULATE, where there is one):
    every page is read anyway, and one call maps them for less than a fault each."""
    flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
    return mmap.mmap(fd, size, flags=flags, prot=mmap.PROT_READ)
