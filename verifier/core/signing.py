"""A key outside every checkpoint location, and the MACs made with it.

A checkpoint or cache proves to itself only that it is whole (each file's sha256 in a
manifest); anyone who can write to its directory (a co-tenant of a shared disk, every user of
an HDFS path or an S3 bucket) could write a consistent forgery with checksums that match. So
the manifest is signed (HMAC-SHA256) with a key kept in the user's own configuration,
`$XDG_CONFIG_HOME/kraft-verify/key` (else `~/.config/kraft-verify/key`), or the file
`$KRAFT_VERIFY_KEY` names: created on first use, 32 random bytes, readable by its owner only.
What is left to a forger who also holds the key: docs/spark.md, "What a checkpoint proves".
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

KEY_BYTES = 32


class KeyError_(OSError):
    """The key cannot be read or made; str() is one line."""


def key_path() -> Path:
    if os.environ.get("KRAFT_VERIFY_KEY"):
        return Path(os.environ["KRAFT_VERIFY_KEY"])
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "kraft-verify" / "key"


def key() -> bytes:
    """The user's key, made on first use."""
    path = key_path()
    try:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(KEY_BYTES))
        data = path.read_bytes()
    except FileExistsError:          # another run made it a moment ago
        data = path.read_bytes()
    except OSError as exc:
        raise KeyError_(exc.errno, f"cannot read or make the checkpoint key {path} ({exc.strerror})") from None
    if len(data) < 16:
        raise KeyError_(0, f"the checkpoint key {path} is shorter than 16 bytes: remove it to make a new one")
    return data


def mac(data: Any) -> str:
    """HMAC-SHA256 of `data` (JSON, keys sorted) with the user's key."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
    return hmac.new(key(), text, hashlib.sha256).hexdigest()


def signed(data: Any, tag: Any) -> bool:
    return isinstance(tag, str) and hmac.compare_digest(mac(data), tag)
