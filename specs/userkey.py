"""The user's key: 32 random bytes in the user's own configuration, readable by its owner only.

Everything kraft-verify trusts across runs is signed with it: a checkpoint's manifest
(verifier/core/signing.py) and every entry of the compiled kernel's cache (specs/kernel/cache.py;
numba's cache files are pickles, so an entry nobody signed is never loaded). It lives at
`$XDG_CONFIG_HOME/kraft-verify/key` (else `~/.config/kraft-verify/key`), or in the file
`$KRAFT_VERIFY_KEY` names, and is made on first use.
"""
from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

KEY_BYTES = 32
MAX_KEY_BYTES = 4096


class KeyError_(OSError):
    """The key cannot be read or made; str() is one line (without OSError's "[Errno n]")."""

    def __str__(self) -> str:
        return str(self.strerror if self.strerror is not None else super().__str__())


def key_path() -> Path:
    """Where the key lives. A relative KRAFT_VERIFY_KEY is refused (it would be made, without a
    word, in whatever directory the run starts in, or inside the checkpoint it signs); a relative
    XDG_CONFIG_HOME is ignored, as the XDG Base Directory specification says."""
    env = os.environ.get("KRAFT_VERIFY_KEY")
    if env:
        if not os.path.isabs(env):
            raise KeyError_(0, f"KRAFT_VERIFY_KEY={env!r} is not an absolute path: name the key file by its full path")
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or ""
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "kraft-verify" / "key"


def key() -> bytes:
    """The user's key, made on first use. Anything but a regular file (a directory, a FIFO that
    would block the run, /dev/zero that would fill memory) is refused without being read."""
    path = key_path()
    try:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(KEY_BYTES))
        data = _read(path)
    except FileExistsError:          # another run made it a moment ago
        data = _read(path)
    except KeyError_:
        raise
    except (OSError, ValueError) as exc:      # ValueError: a path with a NUL byte
        why = getattr(exc, "strerror", None) or str(exc)
        raise KeyError_(getattr(exc, "errno", 0) or 0,
                        f"cannot read or make the key {path} ({why})") from None
    if len(data) < 16:
        raise KeyError_(0, f"the key {path} is shorter than 16 bytes: remove it to make a new one")
    return data


def _read(path: Path) -> bytes:
    """At most MAX_KEY_BYTES of a regular file, opened without blocking (a FIFO put there
    after the check must not hang the run)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) else \
            "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file"
        raise KeyError_(0, f"the key {path} is {kind}, not a file: point KRAFT_VERIFY_KEY at a file "
                           f"or remove it to make a new one")
    if st.st_size > MAX_KEY_BYTES:
        raise KeyError_(0, f"the key {path} is {st.st_size} bytes, more than a key "
                           f"({MAX_KEY_BYTES} at most): remove it to make a new one")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise KeyError_(0, f"the key {path} changed into something other than a file")
        return os.read(fd, MAX_KEY_BYTES + 1)[:MAX_KEY_BYTES]
    finally:
        os.close(fd)
