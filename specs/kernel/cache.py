"""Where numba keeps the compiled kernel, keyed by its sources.

numba's own cache checks only the file of the function it compiled: a cached function keeps
the code of the functions it calls in other files, so an edit of a rule in mechanics.py would
leave successors.py's cached machine code running the old rule. The kernel's cache therefore
lives in a directory named after a hash of every source file it is compiled from; an edit of
any of them compiles afresh (tests/specs/test_kernel.py checks it). Set before any kernel
module is compiled (specs/kernel/__init__.py imports this first).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*(ROOT / "specs" / "kernel").glob("*.py"), *(ROOT / "verifier" / "engines" / "kernel").glob("*.py"),
                  ROOT / "specs" / "state.py", ROOT / "specs" / "config.py"])


def source_hash() -> str:
    h = hashlib.sha256()
    for path in SOURCES:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    """$KRAFT_VERIFY_CACHE (or ~/.cache/kraft-verify)/kernel-<hash of the sources>."""
    base = Path(os.environ.get("KRAFT_VERIFY_CACHE") or Path.home() / ".cache" / "kraft-verify")
    return base / f"kernel-{source_hash()}"


def install() -> Path:
    """Point numba's cache at this kernel's directory."""
    from numba.core import config
    where = cache_dir()
    config.CACHE_DIR = str(where)
    return where
