"""What this machine and this process hold in memory, read from /proc (Linux): the progress
line's figure (verifier/cli/common.rss_mb) and the compiled search's memory budget
(verifier/engines/kernel/memory.py) read it the same way."""
from __future__ import annotations

import os
from typing import Optional

DISK_SPARE = 2 << 30    # bytes a search leaves free on a disk it writes (check's spills, spark-check's scratch)


def _kb_field(path: str, key: str) -> Optional[int]:
    """The bytes of `path`'s "key: N kB" line (/proc/meminfo, /proc/self/status), or None
    where the file or the line cannot be read."""
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def disk_free(path) -> int:
    """The bytes free to this user on the file system of `path` (statvfs: f_bavail); OSError
    where it cannot be asked (the directory gone). Every disk budget reads this one figure:
    check's spills (verifier/engines/kernel/memory.py), spark-check's scratch (spark/exchange.py)."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def available_bytes() -> int:
    """The memory the kernel says is available (MemAvailable), 0 where it does not say."""
    return _kb_field("/proc/meminfo", "MemAvailable") or 0


def machine_bytes() -> Optional[int]:
    """MemTotal, or None where /proc/meminfo cannot be read."""
    return _kb_field("/proc/meminfo", "MemTotal")


def resident_bytes() -> int:
    """This process's resident set now (0 where it cannot be read)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def reset_peak_resident() -> bool:
    """Start this process's peak resident set over (Linux: "5" written to /proc/self/clear_refs),
    so that the next peak_resident_bytes is one run's own, not an earlier run's in the same
    process (matrix rows, mutants); False where it cannot, and the peak is the process's."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def peak_resident_bytes() -> int:
    """This process's peak resident set (VmHWM) since it started or since reset_peak_resident
    (0 where /proc/self/status cannot be read)."""
    return _kb_field("/proc/self/status", "VmHWM") or 0


def tree_bytes(path) -> int:
    """The bytes of every file under `path` (a checkpoint directory): 0 where it is gone."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total
