"""The compiled search's memory budget: stop with a report before the machine kills the run.

A search too big for memory used to end in Linux's OOM killer (brokers 6 on two threads, at
24 GB on this 23 GB machine): a SIGKILL, so no report and no exit code. The search's memory is
a few large arrays, so it checks each growth before it allocates. The store (parents, labels),
the visited tables, the level buffers and the threads' buffers, plus what the process held when
the search began, must stay within 90% of the machine's memory. When a growth of the store or
the next level would pass that, those arrays move to files (`Buffer.spill`, in
$KRAFT_VERIFY_SPILL or the temporary directory): they are written and read in order, so the OS
pages them well, and only the visited tables must stay in memory. If a growth would still pass
the budget, or fill the disk, the search stops like a time budget: exit 3, with a report of
what it reached and how much it needed.
"""
from __future__ import annotations

import os
import tempfile
from typing import Optional

import numpy as np

from specs.kernel.reserve import reserve
from verifier.core.machine import DISK_SPARE, disk_free, machine_bytes, resident_bytes

SHARE = 0.9           # of the machine's memory (MemTotal)


class MemoryBudget(Exception):
    """A growth the budget does not allow (its message is the report's stop reason)."""


class Budget:
    """Checks a planned growth against SHARE of the machine's memory, and one spilled to disk
    against the free space of the spill directory."""

    def __init__(self, limit: Optional[int] = None):
        total = machine_bytes()
        self.limit = limit if limit is not None else None if total is None else int(SHARE * total)
        self.base = resident_bytes()          # the interpreter, the model, the compiled code
        # where the levels and the store go when memory runs short (empty: they may not)
        self.spill = os.environ.get("KRAFT_VERIFY_SPILL", tempfile.gettempdir())

    def allow_disk(self, more: int, what: str, where=None) -> None:
        """Raise MemoryBudget if `more` bytes written to `where` (a directory; the spill directory
        if not given) would leave its disk less than DISK_SPARE free."""
        where = where or self.spill or tempfile.gettempdir()
        try:
            free = disk_free(where)
        except OSError as exc:               # the directory is gone (removed by another process)
            raise MemoryBudget(f"{where} cannot be written ({exc.strerror}): the search cannot go on") from None
        if more + DISK_SPARE > free:
            def size(n: int) -> str:
                return f"{n / (1 << 30):.1f} GB" if n >= 1 << 30 else f"{n / (1 << 20):.1f} MB"
            raise MemoryBudget(f"disk budget: growing {what} in {where} needs {size(more)} more, and it has "
                               f"{size(free)} free (the search leaves {DISK_SPARE >> 30} GB)")

    def allow(self, held: int, more: int, what: str) -> None:
        """Raise MemoryBudget if `held` bytes of arrays and `more` new ones would pass the limit."""
        if self.limit is not None and self.base + held + more > self.limit:
            gib = 1 << 30
            raise MemoryBudget(f"memory budget: growing {what} needs {more / gib:.1f} GB more, and the search holds "
                               f"{(self.base + held) / gib:.1f} GB of the {self.limit / gib:.1f} GB it may use "
                               f"({SHARE:.0%} of this machine's memory)")


class Collector:
    """Keeps CPython's cyclic garbage collector off what the controller table's fills keep.

    Each fill runs the algebra in Python and the memo keeps its outcome (87,857 events on
    brokers 4), so the objects the collector walks grow through the run, and its full
    collections took about 4% of a one-thread search (perf). After each batch of fills what
    exists is frozen (gc.freeze, constant time): the collector then walks only what later
    fills allocate. The frozen objects are handed back at the end, unless some caller had
    frozen objects before the search began."""

    def __init__(self):
        import gc
        self.gc = gc
        self.mine = gc.get_freeze_count() == 0

    def filled(self) -> None:
        self.gc.freeze()

    def close(self) -> None:
        if self.mine:
            self.gc.unfreeze()


class Buffer:
    """A zeroed array that grows in place. Its rows are a reservation of address space as large
    as the budget allows (specs/kernel/reserve.py), taken by the OS only where first written,
    so growing copies nothing and allocates nothing. The search's arrays used to double by
    copying into new ones; a first write to a page costs ten later writes here (0.39 s a GB,
    against 0.04 s), and doubling wrote about twice the pages a run keeps. Where the OS refuses
    the reservation (strict overcommit), it grows by copying as before."""

    def __init__(self, rows: int, shape: tuple, dtype, most: int):
        """`rows` rows to begin with, of `shape`; `most`: the bytes it may ever reach."""
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.row_bytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self.whole = reserve(max(rows, most // self.row_bytes), self.shape, self.dtype)
        self.array = self.whole[:rows] if self.whole is not None else np.zeros((rows,) + self.shape, self.dtype)
        self.spilled = False

    def spill(self, directory: str, keep: int, most: int) -> bool:
        """Move the array to a file in `directory` (its first `keep` rows kept): from then on
        the OS pages it out and in, and it takes no memory budget. False if the OS refused."""
        whole = reserve(max(len(self.array), most // self.row_bytes), self.shape, self.dtype, spill=directory)
        if whole is None:
            return False
        whole[:keep] = self.array[:keep]
        self.whole, self.array, self.spilled = whole, whole[:len(self.array)], True
        return True

    def grow(self, rows: int, keep: int) -> None:
        """At least `rows` rows, the first `keep` kept."""
        if rows <= len(self.array):
            return
        if self.whole is not None and rows <= len(self.whole):
            self.array = self.whole[:rows]
        else:
            grown = np.zeros((rows,) + self.shape, self.dtype)
            grown[:keep] = self.array[:keep]
            self.array = grown

    @property
    def nbytes(self) -> int:
        """The bytes of the rows in use (the reservation beyond them takes no memory)."""
        return len(self.array) * self.row_bytes

    @property
    def ram_bytes(self) -> int:
        """The bytes the memory budget counts: none once spilled to a file."""
        return 0 if self.spilled else self.nbytes


def release(array: np.ndarray) -> bool:
    """Give the pages of `array`, a leading part of a reservation (reserve.py), back to the OS:
    they read as zeros again, and take memory only where written again. False (nothing done)
    if the array is not in a reservation."""
    import mmap
    base = array
    while base is not None and not isinstance(base, mmap.mmap):
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    if base is None:
        return False
    size = array.nbytes - array.nbytes % mmap.PAGESIZE
    if size:
        base.madvise(mmap.MADV_DONTNEED, 0, size)
    array.reshape(-1)[size // array.itemsize:] = 0       # the last part page, kept
    return True

