"""What this machine and this process hold in memory, read from /proc (Linux): the progress
line's figure (verifier/cli/common.rss_mb) and the compiled search's memory budget
(verifier/engines/kernel/memory.py) read it the same way."""
from __future__ import annotations

import os
from typing import Optional


def machine_bytes() -> Optional[int]:
    """MemTotal, or None where /proc/meminfo cannot be read."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def resident_bytes() -> int:
    """This process's resident set now (0 where it cannot be read)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
