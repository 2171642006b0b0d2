"""The kernel path's exchange of successor blocks through files, where every executor runs on
the driver's machine (a `local[N]` master): expand tasks write each owner's blocks to a file of
a per-run directory and send the owner only its name; the owner reads the file.

Why: through Spark's shuffle a block crosses from the Python worker to the JVM, is compressed
and written by the JVM, read back and sent to the owner's Python worker: about half of a
level's time at 130 bytes a successor (BENCHMARKS.md, "Kernel executors"). On one machine a
file in the page cache does the same job without the copies. On a cluster the executors share
no disk, so the blocks take Spark's shuffle there (`Exchange.open` says which).

A level's blocks go to /dev/shm (a tmpfs: RAM, never written back to a disk) when the driver's
estimate of them (the bytes a state expanded took on the last level, times the level's states)
fits in half its free space and a third of the memory available; else beside the rest. On a
disk, a level's blocks are gigabytes of dirty pages the kernel starts writing back while the
level runs, only to delete them a few seconds later: that writing cost a large level 15% of its
time (BENCHMARKS.md, "Levels and visited runs as files").

A task writes its files under temporary names of its own attempt and renames them when it
ends, so a retried (or a second, speculative) attempt replaces them with the same bytes (its blocks are a function of its chunks) and an owner never
reads a half-written file. A level's files are removed once the level is committed; the
directory when the run ends. A driver killed outright leaves its directory, so each run first
removes the directories of drivers no longer alive (the directory's name carries the pid).

The disk's budget: a block, a level's file or a visited run written on a disk (not FAST) that
would leave it less than 2 GB free (verifier/core/machine.DISK_SPARE, check's too) fails its
task with "disk budget" (ENOSPC) instead, so the run stops as check's does, in one line, exit
3, resumable (spark/session.disk_full), and a store on the same disk (HDFS's DataNode here)
does not meet a full disk. Without it the billion run's fourth attempt wrote on to the last
megabyte, and HDFS's NameNode, out of room, refused the commit of the level before.
"""
from __future__ import annotations

import errno
import mmap
import os
import shutil
import struct
import tempfile
import uuid
from contextlib import contextmanager
from typing import Optional

from verifier.core.values import BadData
from verifier.core.machine import DISK_SPARE, available_bytes, disk_free

PREFIX = "kraft-verify-exchange-"
_FRAME = struct.Struct("<Q")
FAST = "/dev/shm"          # where a level's blocks go when they fit (a tmpfs on Linux)
PER_STATE = 600            # bytes of blocks a state expanded makes, until a level is measured
SQUEEZE_SHARE = 4          # a level's blocks on a disk are squeezed if they would take a quarter of its free space


def by_file(master: str) -> bool:
    """Whether blocks go by file under `master`: every executor on the driver's machine."""
    return master.startswith("local")


class Exchange:
    """A run's exchange directory, on the driver (and its directory in FAST, if it has one)."""

    def __init__(self, root: str, fast: Optional[str] = None):
        self.root, self.fast = root, fast
        self.where: dict = {}               # level -> (the directory of its blocks, states expanded)
        self.per_state = PER_STATE

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
        name = f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        root = os.path.join(parent, name)
        os.makedirs(parent, exist_ok=True)
        os.mkdir(root, 0o700)          # the run's own: no other user reads or plants blocks
        fast = None
        if os.path.isdir(FAST) and os.access(FAST, os.W_OK):
            sweep(FAST)
            fast = os.path.join(FAST, name)
            os.mkdir(fast, 0o700)
        return cls(root, fast)

    def level(self, level: int, states: int = 0) -> str:
        """Where the blocks of level `level` go (made by the first task that writes), the
        expansion of `states` states: FAST if the estimate of them fits (the module says why)."""
        if level not in self.where:
            size = states * self.per_state * 5 // 4
            base = self.fast if self.fast and self._fits(size) else self.root
            squeeze = base == self.root and size * SQUEEZE_SHARE > free(self.root)
            self.where[level] = (os.path.join(base, f"{level:05d}"), states, squeeze)
        return self.where[level][0]

    def expanded(self, level: int, states: int) -> None:
        """Level `level`'s blocks are written whole, the expansion of `states` states (they were
        placed by an estimate, spark/chain.py): their size a state is the next estimate,
        measured now (their owners may remove them as they read them)."""
        if level in self.where:
            where, _, squeeze = self.where[level]
            self._measure(where, states)
            self.where[level] = (where, 0, squeeze)

    def _measure(self, where: str, states: int) -> None:
        if states and self.fast and where.startswith(self.fast):
            try:
                size = sum(e.stat().st_size for e in os.scandir(where))
            except OSError:
                size = 0
            if size:
                self.per_state = max(1, size // states)

    def squeeze(self, level: int) -> bool:
        """Whether the level's blocks are squeezed (spark/rows.py): on a disk whose free space
        is short of SQUEEZE_SHARE times the estimate of them. Squeezing costs the CPU of
        compressing every block once and decoding it once (about 5% of a run whose largest
        levels went to the disk: BENCHMARKS.md, "Squeezed rows"), so it is spent only where the
        disk is what runs short."""
        self.level(level)
        return self.where[level][2]

    def fallback(self, level: int) -> Optional[str]:
        """Where the level's blocks go if FAST fills up under them (None: they are not in FAST)."""
        where = self.level(level)
        disk = os.path.join(self.root, f"{level:05d}")
        return disk if where != disk else None

    def _fits(self, size: int) -> bool:
        try:
            room_there = disk_free(self.fast)
        except OSError:
            return False
        return size <= room_there // 2 and size <= available() // 3

    def drop(self, level: int) -> None:
        """The level's blocks removed, once its owners have them; their size per state is the
        next estimate if they were in FAST (raw: on a disk they are squeezed, spark/rows.py)."""
        where, states, _ = self.where.pop(level, (os.path.join(self.root, f"{level:05d}"), 0, False))
        self._measure(where, states)
        shutil.rmtree(where, ignore_errors=True)
        shutil.rmtree(os.path.join(self.root, f"{level:05d}"), ignore_errors=True)   # a fall back's

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        if self.fast:
            shutil.rmtree(self.fast, ignore_errors=True)


def free(path: str) -> int:
    """The bytes free to this user on the file system of `path` (0 if it cannot be asked)."""
    try:
        return disk_free(path)
    except OSError:
        return 0


def room(where: str, more: int) -> None:
    """OSError ENOSPC ("disk budget") if `more` bytes more under `where` would leave its disk
    less than DISK_SPARE free (the module says why); nothing if its room cannot be asked (the
    write itself then says what is wrong)."""
    try:
        left = disk_free(where)
    except OSError:
        return
    if more + DISK_SPARE > left:
        raise OSError(errno.ENOSPC, f"disk budget: {more:,} bytes more in {where} would leave less than "
                                    f"{DISK_SPARE >> 30} GB of its disk free ({left:,} bytes free)")


def available() -> int:
    """The memory the kernel says is available (MemAvailable), 0 if it does not say."""
    return available_bytes()


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
    place by `close` (then the names are the task's output). If the directory fills up (FAST,
    shared with other programs) and there is a `fallback`, the task's remaining blocks go
    there: an owner then has two files, read one after the other."""

    def __init__(self, where: str, task: int, fallback: Optional[str] = None, squeeze: bool = False,
                 catalogue: Optional[str] = None):
        os.makedirs(where, exist_ok=True)
        self.where, self.task, self.fallback = where, task, fallback
        self.squeeze = squeeze            # the blocks squeezed (Exchange.squeeze says when)
        self.catalogue = catalogue        # the run's catalogue (spark/catalogue.py), where the blocks' values are
        self.files: dict = {}             # owner -> (file, bytes of whole frames)
        self.done: dict = {}              # owner -> the names of its files the fallback closed
        self.tmp = f".tmp-{uuid.uuid4().hex[:12]}"     # this attempt's: two attempts never share one

    def add(self, owner: int, block: bytes) -> None:
        if owner not in self.files:
            self.files[owner] = (open(self._name(owner) + self.tmp, "wb"), 0)
        f, size = self.files[owner]
        if self.fallback is None:         # on a disk (FAST's own limit is its fallback)
            room(self.where, 8 + len(block))
        try:
            f.write(_FRAME.pack(len(block)))
            f.write(block)
            f.flush()
        except OSError as exc:
            if exc.errno != errno.ENOSPC or self.fallback is None:
                raise
            self._fall_back(owner, size)
            return self.add(owner, block)
        self.files[owner] = (f, size + 8 + len(block))

    def _fall_back(self, owner: int, size: int) -> None:
        """The files so far closed whole (the torn frame cut off), the rest to the fallback."""
        failed = self.files[owner][0]
        try:
            failed.close()
        except OSError:
            pass
        os.truncate(self._name(owner) + self.tmp, size)
        self.files[owner] = (None, size)
        for o, (f, _) in sorted(self.files.items()):
            if f is not None:
                f.close()
            self.done[o] = [self._place(o)]
        self.files, self.where, self.fallback, self.squeeze = {}, self.fallback, None, True   # FAST ran short
        os.makedirs(self.where, exist_ok=True)

    def close(self) -> dict:
        """owner -> the names of its files (one, or two after a fall back), each whole and in place."""
        out = {o: list(names) for o, names in self.done.items()}
        for owner, (f, _) in sorted(self.files.items()):
            f.close()
            out.setdefault(owner, []).append(self._place(owner))
        self.files, self.done = {}, {}
        return dict(sorted(out.items()))

    def abort(self) -> None:
        for names in self.done.values():
            for name in names:
                _unlink(name)
        for owner, (f, _) in self.files.items():
            f.close()
            _unlink(self._name(owner) + self.tmp)
        self.files, self.done = {}, {}

    def _place(self, owner: int) -> str:
        os.replace(self._name(owner) + self.tmp, self._name(owner))
        return self._name(owner)

    def _name(self, owner: int) -> str:
        return os.path.join(self.where, f"o{owner:05d}-t{self.task:05d}")


@contextmanager
def placed(path: str):
    """A temporary name of this attempt's own beside `path`, renamed to `path` when the block
    ends (removed if it raises): a reader never sees a half-written file, and a retried
    attempt replaces a first one's file whole."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{uuid.uuid4().hex[:12]}"
    try:
        yield tmp
    except BaseException:
        _unlink(tmp)
        raise
    os.replace(tmp, path)


def write_framed(path: str, items) -> None:
    """A file of framed blocks (as a Writer leaves them, `blocks` reads them), written whole
    and placed."""
    with placed(path) as tmp, open(tmp, "wb") as f:
        for data in items:
            room(os.path.dirname(path), 8 + len(data))
            f.write(_FRAME.pack(len(data)))
            f.write(data)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


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
