"""Arrays in reserved address space: their pages are taken by the OS only where first written.

The compiled search grows its large arrays by taking more of a reservation instead of copying
into new ones (verifier/engines/kernel/memory.Buffer), and the controller table's facts never
move, so that a fill may write a new row while other threads' compiled code reads the table.
"""
from __future__ import annotations

import mmap
import os
import tempfile
from typing import Optional

import numpy as np

MAP_NORESERVE = 0x4000      # Linux's value; Python's mmap module does not name it


def reserve(rows: int, shape: tuple, dtype, spill: Optional[str] = None) -> Optional[np.ndarray]:
    """A zeroed array of `rows` rows of `shape`, or None where the OS refuses the reservation
    (strict overcommit). With `spill` (a directory), its pages are a file's there instead of
    anonymous memory: the OS writes them out and reads them back as memory runs short. The file
    is unlinked at once, so nothing is left behind however the process ends."""
    row_bytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    try:
        if spill is None:
            mem = mmap.mmap(-1, rows * row_bytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE)
            mem.madvise(mmap.MADV_HUGEPAGE)
        else:
            fd, path = tempfile.mkstemp(prefix="kraft-verify-spill-", dir=spill)
            try:
                os.unlink(path)
                os.ftruncate(fd, rows * row_bytes)          # sparse: disk is taken only where written
                mem = mmap.mmap(fd, rows * row_bytes, flags=mmap.MAP_SHARED)
            finally:
                os.close(fd)
    except (OSError, ValueError, OverflowError):
        return None
    return np.frombuffer(mem, dtype=dtype).reshape((rows,) + tuple(shape))
